#include "jni/vm_structs.h"

#include <dlfcn.h>

#include <cstring>

namespace ctxprof {
namespace {

// dlopen handle of the library that defines the running VM's JNI functions, or nullptr.
void* OpenLibjvm(JNIEnv* jni, std::string* error) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(jni->functions->GetVersion), &info) == 0 ||
      info.dli_fname == nullptr) {
    *error = "cannot tell which library implements the JVM's JNI functions (dladdr failed)";
    return nullptr;
  }
  void* handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) *error = std::string("cannot reopen ") + info.dli_fname + ": " + dlerror();
  return handle;
}

// The value of the uint64_t or pointer data symbol `name`; false when it is not exported.
template <typename T>
bool ReadSymbol(void* handle, const char* name, T* out, std::string* error) {
  const void* address = dlsym(handle, name);
  if (address == nullptr) {
    *error = std::string("the JVM does not export ") + name + " (not HotSpot?)";
    return false;
  }
  memcpy(out, address, sizeof(T));
  return true;
}

}  // namespace

bool VmStructs::Open(JNIEnv* jni, VmStructs* out, std::string* error) {
  void* handle = OpenLibjvm(jni, error);
  if (handle == nullptr) return false;
  VmStructs tables;
  const bool found =
      ReadSymbol(handle, "gHotSpotVMTypes", &tables.types_, error) &&
      ReadSymbol(handle, "gHotSpotVMTypeEntryArrayStride", &tables.stride_, error) &&
      ReadSymbol(handle, "gHotSpotVMTypeEntryTypeNameOffset", &tables.name_offset_, error) &&
      ReadSymbol(handle, "gHotSpotVMTypeEntrySizeOffset", &tables.size_offset_, error);
  dlclose(handle);  // drops only the reference RTLD_NOLOAD took; libjvm stays loaded
  if (!found) return false;
  if (tables.types_ == nullptr || tables.stride_ == 0 || tables.stride_ % 8 != 0 ||
      tables.name_offset_ + sizeof(const char*) > tables.stride_ ||
      tables.size_offset_ + sizeof(uint64_t) > tables.stride_) {
    *error = "the JVM's type table has an unexpected layout (stride " +
             std::to_string(tables.stride_) + ", name at " + std::to_string(tables.name_offset_) +
             ", size at " + std::to_string(tables.size_offset_) + ")";
    return false;
  }
  *out = tables;
  return true;
}

uint64_t VmStructs::TypeSize(const std::string& type) const {
  if (types_ == nullptr) return 0;
  for (int i = 0; i < kMaxTypes; i++) {
    const char* entry = types_ + static_cast<uint64_t>(i) * stride_;
    const char* name = nullptr;
    memcpy(&name, entry + name_offset_, sizeof(name));
    if (name == nullptr) return 0;
    if (type == name) {
      uint64_t size = 0;
      memcpy(&size, entry + size_offset_, sizeof(size));
      return size;
    }
  }
  return 0;
}

}  // namespace ctxprof
