#include "profiler/export/pyroscope_ingest.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "profiler/wire/protobuf.h"

namespace ctxprof {

namespace {

std::string PercentEncode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      snprintf(hex, sizeof(hex), "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// LabelsSnapshot / Context field numbers (jfr-parser's jfr_labels.proto); map entries are
// messages with key = 1 and value = 2.
constexpr int kSnapshotContexts = 1, kSnapshotStrings = 2, kContextLabels = 1;
constexpr int kEntryKey = 1, kEntryValue = 2;

}  // namespace

std::string PyroscopeName(const std::string& application,
                          const std::vector<std::pair<std::string, std::string>>& labels) {
  if (labels.empty()) return application;
  std::string name = application + "{";
  for (size_t i = 0; i < labels.size(); i++) {
    name += (i ? "," : "") + labels[i].first + "=" + labels[i].second;
  }
  return name + "}";
}

std::string PyroscopeIngestTarget(const std::string& path_prefix, const std::string& name,
                                  int64_t from_nanos, int64_t until_nanos,
                                  uint64_t sample_rate_hz) {
  const int64_t from_millis = from_nanos / 1000000;
  // A chunk shorter than a millisecond still gets until > from.
  const int64_t until_millis = std::max(until_nanos / 1000000, from_millis + 1);
  return path_prefix + "/ingest?name=" + PercentEncode(name) +
         "&from=" + std::to_string(from_millis) + "&until=" + std::to_string(until_millis) +
         "&sampleRate=" + std::to_string(sample_rate_hz) + "&spyName=ctxprof&format=jfr";
}

std::string PyroscopeLabelsSnapshot(const std::vector<FinishedChunk::Context>& contexts) {
  if (contexts.empty()) return "";
  std::map<std::string, int64_t> string_ids;
  std::vector<const std::string*> strings;
  auto id_of = [&](const std::string& text) {
    auto inserted = string_ids.emplace(text, static_cast<int64_t>(strings.size() + 1));
    if (inserted.second) strings.push_back(&inserted.first->first);
    return inserted.first->second;
  };
  ProtoWriter snapshot;
  for (const FinishedChunk::Context& context : contexts) {
    ProtoWriter labels;
    for (const FinishedChunk::Label& label : context.labels) {
      ProtoWriter entry;
      entry.AlwaysVarintField(kEntryKey, id_of(label.name));
      entry.AlwaysVarintField(kEntryValue, id_of(label.value));
      labels.AlwaysBytesField(kContextLabels, entry.bytes());
    }
    ProtoWriter entry;
    entry.AlwaysVarintField(kEntryKey, static_cast<int64_t>(context.id));
    entry.AlwaysBytesField(kEntryValue, labels.bytes());
    snapshot.AlwaysBytesField(kSnapshotContexts, entry.bytes());
  }
  for (size_t i = 0; i < strings.size(); i++) {
    ProtoWriter entry;
    entry.AlwaysVarintField(kEntryKey, static_cast<int64_t>(i + 1));
    entry.AlwaysBytesField(kEntryValue, *strings[i]);
    snapshot.AlwaysBytesField(kSnapshotStrings, entry.bytes());
  }
  return snapshot.bytes();
}

std::string PyroscopeMultipartBody(const std::string& boundary, const std::string& jfr,
                                   const std::string& labels) {
  auto part = [&boundary](const char* name, const char* type, const std::string& content) {
    return "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + name +
           "\"; filename=\"" + name + "\"\r\nContent-Type: " + type + "\r\n\r\n" + content + "\r\n";
  };
  std::string body = part("jfr", "application/octet-stream", jfr);
  if (!labels.empty()) body += part("labels", "application/x-protobuf", labels);
  return body + "--" + boundary + "--\r\n";
}

}  // namespace ctxprof
