#include "profiler/symbols/symbolizer.h"

#include <cxxabi.h>
#include <elf.h>
#include <sys/auxv.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace ctxprof {

std::string Symbolizer::Demangle(const char* name) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return name;
  std::string result(demangled);
  free(demangled);
  return result;
}

const ElfSymbols* Symbolizer::LoadFile(const std::string& path) {
  auto found = files_.find(path);
  if (found != files_.end()) return found->second.get();
  std::unique_ptr<ElfSymbols> loaded;
  std::unique_ptr<ElfImage> image = ElfImage::Open(path);
  if (image != nullptr) {
    loaded = std::make_unique<ElfSymbols>();
    loaded->ReadSegments(*image);
    if (image->HasSection(SHT_SYMTAB)) {
      loaded->AddFunctions(*image, SHT_SYMTAB);
    } else if (std::unique_ptr<ElfImage> debug = OpenDebugFile(*image, path, debug_root_)) {
      loaded->AddFunctions(*debug, SHT_SYMTAB);
    } else {
      loaded->AddUnwindStarts(*image);  // static functions: at least where they start
    }
    loaded->AddFunctions(*image, SHT_DYNSYM);
    loaded->Finish();
  }
  const ElfSymbols* result = loaded.get();
  files_[path] = std::move(loaded);
  return result;
}

const ElfSymbols* Symbolizer::LoadVdso(uint64_t start, uint64_t end) {
  if (!vdso_loaded_) {
    vdso_loaded_ = true;
    // The kernel maps the vDSO as one readable image that holds its section headers; only the
    // one this process was given (AT_SYSINFO_EHDR) is read.
    if (getauxval(AT_SYSINFO_EHDR) == start) {
      std::unique_ptr<ElfImage> image =
          ElfImage::InMemory(reinterpret_cast<const char*>(start), end - start);
      if (image != nullptr) {
        vdso_ = std::make_unique<ElfSymbols>();
        vdso_->ReadSegments(*image);
        // The image has only .dynsym; its static functions (x86-64's pvclock reader under
        // kvm-clock) are named only where the kernel's unstripped vDSO is installed as a
        // debug file (by build id).
        if (std::unique_ptr<ElfImage> debug = OpenDebugFile(*image, "[vdso]", debug_root_)) {
          vdso_->AddFunctions(*debug, SHT_SYMTAB);
        } else {
          vdso_->AddUnwindStarts(*image);
        }
        vdso_->AddFunctions(*image, SHT_DYNSYM);
        vdso_->Finish();
      }
    }
  }
  return vdso_.get();
}

void Symbolizer::RefreshMaps() {
  last_refresh_ = std::chrono::steady_clock::now();
  refreshed_once_ = true;
  std::ifstream maps("/proc/self/maps");
  std::vector<Module> modules;
  std::string line;
  while (std::getline(maps, line)) {
    uint64_t start = 0, end = 0, offset = 0;
    char permissions[8] = {0};
    int path_start = 0;
    if (sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &start, &end,
               permissions, &offset, &path_start) < 4) {
      continue;
    }
    if (permissions[2] != 'x') continue;
    const std::string path = path_start > 0 && static_cast<size_t>(path_start) < line.size()
                                 ? line.substr(static_cast<size_t>(path_start))
                                 : std::string();
    if (!path.empty() && path[0] == '/') {
      modules.push_back({start, end, offset, path, LoadFile(path)});
    } else if (path == "[vdso]") {
      modules.push_back({start, end, offset, path, LoadVdso(start, end)});
    } else if (path.empty() || path.compare(0, 6, "[anon:") == 0) {
      modules.push_back({start, end, offset, "[jit]", nullptr});
    }  // [vsyscall] (legacy, kernel-emulated) and other pseudo-mappings
  }
  std::sort(modules.begin(), modules.end(),
            [](const Module& a, const Module& b) { return a.start < b.start; });
  modules_ = std::move(modules);
}

const Symbolizer::Module* Symbolizer::FindModule(uint64_t address) const {
  auto it = std::upper_bound(modules_.begin(), modules_.end(), address,
                             [](uint64_t value, const Module& m) { return value < m.start; });
  if (it == modules_.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

std::string Symbolizer::Lookup(uint64_t address, bool* cacheable) {
  const Module* module = FindModule(address);
  if (module == nullptr &&
      (!refreshed_once_ || std::chrono::steady_clock::now() - last_refresh_ >= kRefreshInterval)) {
    RefreshMaps();
    module = FindModule(address);
  }
  *cacheable = module != nullptr;
  if (module == nullptr) return "[unknown]";
  if (module->path == "[jit]") return module->path;
  const uint64_t file_offset = address - module->start + module->file_offset;
  uint64_t virtual_address = 0;
  uint64_t offset = file_offset;
  if (module->symbols != nullptr &&
      module->symbols->VirtualAddressOf(file_offset, &virtual_address)) {
    const std::string* name = module->symbols->FunctionAt(virtual_address);
    if (name != nullptr) return Demangle(name->c_str());
    // Unnamed code: the start of its function by the unwind table, so that the samples of one
    // function share one name.
    uint64_t start = 0;
    if (module->symbols->FunctionStartAt(virtual_address, &start) &&
        virtual_address - start <= file_offset) {
      offset = file_offset - (virtual_address - start);
    }
  }
  // "[libz.so.1+0x5f00]", "[vdso+0x780]": the file offset of the function's start, or of the
  // address itself when no unwind table lists the function.
  const std::string module_name = ModuleName(address);
  const bool pseudo = module_name.size() > 2 && module_name.front() == '[';
  char offset_text[32];
  snprintf(offset_text, sizeof(offset_text), "+0x%" PRIx64 "]", offset);
  return "[" + (pseudo ? module_name.substr(1, module_name.size() - 2) : module_name) + offset_text;
}

std::string Symbolizer::ModuleName(uint64_t pc) const {
  const Module* module = FindModule(pc);
  if (module == nullptr) return "";
  const size_t slash = module->path.rfind('/');
  return slash == std::string::npos ? module->path : module->path.substr(slash + 1);
}

const std::string& Symbolizer::Resolve(uint64_t pc, bool is_return_address) {
  const uint64_t address = is_return_address && pc > 0 ? pc - 1 : pc;
  auto found = cache_.find(address);
  if (found != cache_.end()) return found->second;
  bool cacheable = false;
  std::string name = Lookup(address, &cacheable);
  if (!cacheable) {
    uncached_ = std::move(name);
    return uncached_;
  }
  return cache_.emplace(address, std::move(name)).first->second;
}

const std::string& Symbolizer::ResolveKernel(uint64_t pc, bool is_return_address) {
  const uint64_t address = is_return_address && pc > 0 ? pc - 1 : pc;
  auto found = kernel_cache_.find(address);
  if (found != kernel_cache_.end()) return found->second;
  if (kernel_ == nullptr) kernel_ = KernelSymbols::Shared();
  return kernel_cache_.emplace(address, kernel_->Resolve(address)).first->second;
}

}  // namespace ctxprof
