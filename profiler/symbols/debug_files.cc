#include "profiler/symbols/debug_files.h"

#include <array>
#include <vector>

namespace ctxprof {
namespace {

std::string Hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  for (unsigned char byte : bytes) {
    text += kDigits[byte >> 4];
    text += kDigits[byte & 15];
  }
  return text;
}

}  // namespace

uint32_t DebugLinkCrc(const char* data, size_t size) {
  static const std::array<uint32_t, 256> kTable = [] {
    std::array<uint32_t, 256> table{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t value = i;
      for (int bit = 0; bit < 8; ++bit) value = (value >> 1) ^ (value & 1 ? 0xedb88320u : 0);
      table[i] = value;
    }
    return table;
  }();
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < size; ++i) {
    crc = kTable[(crc ^ static_cast<unsigned char>(data[i])) & 0xff] ^ (crc >> 8);
  }
  return crc ^ 0xffffffffu;
}

std::unique_ptr<ElfImage> OpenDebugFile(const ElfImage& object, const std::string& path,
                                        const std::string& root) {
  const std::string build_id = object.BuildId();
  if (build_id.size() >= 2) {
    const std::string hex = Hex(build_id);
    std::unique_ptr<ElfImage> debug =
        ElfImage::Open(root + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug");
    if (debug != nullptr && debug->BuildId() == build_id) return debug;
  }
  std::string link;
  uint32_t crc = 0;
  if (!object.DebugLink(&link, &crc)) return nullptr;
  const size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::vector<std::string> candidates = {folder + "/" + link, folder + "/.debug/" + link,
                                               root + folder + "/" + link};
  for (const std::string& candidate : candidates) {
    if (candidate == path) continue;  // a link naming the object itself
    std::unique_ptr<ElfImage> debug = ElfImage::Open(candidate);
    if (debug == nullptr) continue;
    const bool same = build_id.empty() ? DebugLinkCrc(debug->data(), debug->size()) == crc
                                       : debug->BuildId() == build_id;
    if (same) return debug;
  }
  return nullptr;
}

}  // namespace ctxprof
