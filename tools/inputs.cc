#include "tools/inputs.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>

namespace ctxprof::tools {
namespace {

constexpr size_t kStartNanosOffset = 32;  // in a JFR chunk header, big-endian

struct Input {
  std::string path;
  uint64_t start_nanos;  // of the first chunk; 0 when the header cannot be read
};

uint64_t FirstChunkStart(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char bytes[8];
  in.seekg(kStartNanosOffset);
  if (!in.read(reinterpret_cast<char*>(bytes), sizeof(bytes))) return 0;
  uint64_t value = 0;
  for (unsigned char byte : bytes) value = value << 8 | byte;
  return value;
}

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The *.jfr regular files directly in `folder`.
bool ListFolder(const std::string& folder, std::vector<std::string>* paths, std::string* error) {
  DIR* dir = opendir(folder.c_str());
  if (dir == nullptr) {
    *error = "cannot read folder " + folder + ": " + strerror(errno);
    return false;
  }
  while (const dirent* entry = readdir(dir)) {
    const std::string path = folder + "/" + entry->d_name;
    struct stat info;
    if (EndsWith(entry->d_name, ".jfr") && stat(path.c_str(), &info) == 0 &&
        S_ISREG(info.st_mode)) {
      paths->push_back(path);
    }
  }
  closedir(dir);
  if (paths->empty()) {
    *error = folder + ": no .jfr files in this folder (give a recording or a repository folder)";
    return false;
  }
  return true;
}

}  // namespace

bool ExpandInputs(const std::vector<std::string>& arguments, std::vector<std::string>* files,
                  std::vector<std::string>* notes, std::string* error) {
  std::vector<Input> inputs;
  for (const std::string& argument : arguments) {
    struct stat info;
    if (stat(argument.c_str(), &info) != 0) {
      *error = "cannot read " + argument + ": " + strerror(errno);
      return false;
    }
    std::vector<std::string> paths;
    if (S_ISDIR(info.st_mode)) {
      if (!ListFolder(argument, &paths, error)) return false;
    } else {
      paths.push_back(argument);
    }
    for (const std::string& path : paths) {
      struct stat file;
      const uint64_t size = stat(path.c_str(), &file) == 0 ? file.st_size : 0;
      if (size == 0) {
        notes->push_back(path +
                         ": empty, skipped (a recording publishes its first chunk at its "
                         "first flush)");
        continue;
      }
      inputs.push_back(Input{path, FirstChunkStart(path)});
    }
  }
  if (inputs.empty()) {
    *error = "nothing to read: every input is empty";
    return false;
  }
  std::stable_sort(inputs.begin(), inputs.end(), [](const Input& a, const Input& b) {
    return a.start_nanos != b.start_nanos ? a.start_nanos < b.start_nanos : a.path < b.path;
  });
  for (const Input& input : inputs) files->push_back(input.path);
  return true;
}

}  // namespace ctxprof::tools
