#include "profiler/export/otlp_exporter.h"

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ctxprof_version.h"
#include "profiler/export/labels.h"
#include "profiler/export/otlp_profile.h"
#include "profiler/export/profile.h"
#include "profiler/notice.h"
#include "profiler/wire/gzip.h"

namespace ctxprof {

namespace {

constexpr char kProfilesPath[] = "/v1development/profiles";

// The variable's value; "" when unset (the spec: an empty value means unset).
std::string Environment(const char* name) {
  const char* value = getenv(name);
  return value == nullptr ? "" : value;
}

// The first of `variables` that is set (not empty) and its value; {"", ""} when none is.
std::pair<std::string, std::string> FirstSet(std::initializer_list<const char*> variables) {
  for (const char* variable : variables) {
    std::string value = Environment(variable);
    if (!value.empty()) return {variable, value};
  }
  return {"", ""};
}

std::string Trim(const std::string& text) {
  const size_t start = text.find_first_not_of(" \t");
  if (start == std::string::npos) return "";
  return text.substr(start, text.find_last_not_of(" \t") - start + 1);
}

// %XX -> the byte; false on a '%' not followed by two hex digits.
bool PercentDecode(const std::string& text, std::string* out) {
  out->clear();
  for (size_t i = 0; i < text.size(); i++) {
    if (text[i] != '%') {
      *out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return false;
    const std::string hex = text.substr(i + 1, 2);
    if (!isxdigit(static_cast<unsigned char>(hex[0])) ||
        !isxdigit(static_cast<unsigned char>(hex[1]))) {
      return false;
    }
    *out += static_cast<char>(std::stoi(hex, nullptr, 16));
    i += 2;
  }
  return true;
}

// "k=v,k=v" with percent-encoded keys and values (OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_RESOURCE_ATTRIBUTES). False + *error saying which item is bad, never its text: the
// values may be secrets.
bool ParsePairs(const std::string& text, std::vector<std::pair<std::string, std::string>>* out,
                std::string* error) {
  size_t start = 0, item = 1;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string part =
        Trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!part.empty()) {
      const size_t equals = part.find('=');
      std::string key, value;
      if (equals == std::string::npos || !PercentDecode(Trim(part.substr(0, equals)), &key) ||
          !PercentDecode(Trim(part.substr(equals + 1)), &value) || key.empty()) {
        *error =
            "item " + std::to_string(item) + " is not key=value with percent-encoded key and value";
        return false;
      }
      out->emplace_back(std::move(key), std::move(value));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
    item++;
  }
  return true;
}

// The headers of OTEL_EXPORTER_OTLP_HEADERS, then OTEL_EXPORTER_OTLP_PROFILES_HEADERS (which
// replaces a header of the same name).
StatusOr<std::vector<std::pair<std::string, std::string>>> Headers() {
  std::map<std::string, size_t> position;  // lower-case name -> index in `headers`
  std::vector<std::pair<std::string, std::string>> headers;
  for (const char* variable :
       {"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_PROFILES_HEADERS"}) {
    std::vector<std::pair<std::string, std::string>> pairs;
    std::string error;
    if (!ParsePairs(Environment(variable), &pairs, &error)) {
      return Status::InvalidArgument(std::string("otlp=: the environment variable ") + variable +
                                     ": " + error + "; write name=value,name=value");
    }
    for (auto& [name, value] : pairs) {
      const bool token = name.find_first_of(" \t\r\n:()<>@,;\\\"/[]?={}") == std::string::npos;
      if (!token || value.find_first_of("\r\n") != std::string::npos) {
        return Status::InvalidArgument(std::string("otlp=: the environment variable ") + variable +
                                       ": a header name or value holds characters HTTP does not "
                                       "allow there (a line break, or a separator in the name)");
      }
      std::string lower;
      for (char c : name) lower += static_cast<char>(tolower(static_cast<unsigned char>(c)));
      auto known = position.emplace(lower, headers.size());
      if (known.second) {
        headers.emplace_back(std::move(name), std::move(value));
      } else {
        headers[known.first->second].second = std::move(value);
      }
    }
  }
  return headers;
}

// The endpoint otlp= names: the URL's parts and the request path.
StatusOr<HttpUrl> Endpoint(const Options& options) {
  HttpUrl url;
  if (options.otlp.url != "env") {
    if (Status parsed = ParseHttpUrl("otlp", options.otlp.url, kOtlpUrlHints, &url); !parsed.ok()) {
      return parsed;
    }
    url.path += kProfilesPath;
    return url;
  }
  auto [variable, value] =
      FirstSet({"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"});
  const bool per_signal = variable == "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT";
  if (value.empty()) {
    variable = "OTEL_EXPORTER_OTLP_ENDPOINT";
    value = "http://localhost:4318";  // the spec's default
  }
  if (Status parsed = ParseHttpUrl(variable, value, kOtlpUrlHints, &url); !parsed.ok()) {
    return Status::InvalidArgument("otlp=env: " + parsed.message());
  }
  if (!per_signal) {
    url.path += kProfilesPath;
  } else if (url.path.empty()) {
    url.path = "/";
  } else if (value.back() == '/') {
    url.path += '/';  // as is: ParseHttpUrl took the trailing '/' off
  }
  return url;
}

// Reads a varint at *at of `bytes`; false when it runs past the end.
bool ReadVarint(const std::string& bytes, size_t* at, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64 && *at < bytes.size(); shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(bytes[(*at)++]);
    *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

// The fields of protobuf message `bytes` as (number, varint value or bytes); stops at the
// first field it cannot read (a body cut at HttpClient::kMaxBodyStart).
struct ProtoField {
  int number;
  uint64_t varint;
  std::string bytes;
};
std::vector<ProtoField> ReadFields(const std::string& bytes) {
  std::vector<ProtoField> fields;
  size_t at = 0;
  uint64_t tag, value;
  while (at < bytes.size() && ReadVarint(bytes, &at, &tag)) {
    ProtoField field{static_cast<int>(tag >> 3), 0, ""};
    switch (tag & 7) {
      case 0:
        if (!ReadVarint(bytes, &at, &field.varint)) return fields;
        break;
      case 2:
        if (!ReadVarint(bytes, &at, &value) || value > bytes.size() - at) return fields;
        field.bytes = bytes.substr(at, value);
        at += value;
        break;
      case 1:
      case 5: {
        const size_t width = (tag & 7) == 1 ? 8 : 4;
        if (width > bytes.size() - at) return fields;
        at += width;
        break;
      }
      default:
        return fields;
    }
    fields.push_back(std::move(field));
  }
  return fields;
}

// ExportProfilesServiceResponse { ExportProfilesPartialSuccess partial_success = 1; } with
// { int64 rejected_profiles = 1; string error_message = 2; }: what the collector rejected or
// warns about (the spec: log it, never retry).
std::string PartialSuccessNote(const std::string& body) {
  for (const ProtoField& response : ReadFields(body)) {
    if (response.number != 1) continue;
    uint64_t rejected = 0;
    std::string message;
    for (const ProtoField& field : ReadFields(response.bytes)) {
      if (field.number == 1) rejected = field.varint;
      if (field.number == 2) message = field.bytes;
    }
    std::string printable;
    for (char c : message.substr(0, 200)) printable += (c >= 0x20 && c < 0x7f) ? c : ' ';
    if (rejected > 0) {
      return "the collector rejected " + std::to_string(rejected) + " profile(s): " + printable;
    }
    if (!printable.empty()) return "accepted with a warning: " + printable;
  }
  return "";
}

StatusOr<ChunkRequest> OtlpRequest(const FinishedChunk& chunk, std::string file,
                                   const std::string& path,
                                   const std::vector<ResourceAttribute>& resource) {
  Profile profile;
  std::string error;
  if (!profile.LoadBytes(chunk.path, std::vector<uint8_t>(file.begin(), file.end()),
                         EventSelection::kEvery, &error)) {
    return Status::InvalidArgument("cannot read the chunk: " + error);
  }
  StatusOr<std::string> body = Gzip(EncodeOtlp(profile, DefaultLabels(profile), resource), 6);
  if (!body.ok()) return body.status();
  ChunkRequest request;
  request.target = path;
  request.content_type = "application/x-protobuf";
  request.body = std::move(body.value());
  request.headers = {{"Content-Encoding", "gzip"},
                     {"User-Agent", std::string("ctxprof-otlp-exporter/") + kCtxprofVersion}};
  return request;
}

// OTEL_EXPORTER_OTLP_[PROFILES_]TIMEOUT: milliseconds, 0 = no limit (an hour: the stop bound
// still ends a request); anything else that is not a whole number gets a notice and the default.
std::chrono::milliseconds Timeout(std::chrono::milliseconds fallback) {
  const auto [variable, value] =
      FirstSet({"OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"});
  if (value.empty()) return fallback;
  if (value.size() > 9 || value.find_first_not_of("0123456789") != std::string::npos) {
    PrintNotice("otlp: " + variable + "='" + value +
                "' is not a whole number of milliseconds; using " +
                std::to_string(fallback.count()) + " ms");
    return fallback;
  }
  const long long millis = std::stoll(value);
  return millis == 0 ? std::chrono::milliseconds(3600 * 1000) : std::chrono::milliseconds(millis);
}

}  // namespace

// The resource attributes (otlp_exporter.h).
std::vector<ResourceAttribute> OtelResourceAttributes(const std::string& option) {
  std::vector<std::pair<std::string, std::string>> given;
  std::string error;
  if (!ParsePairs(Environment("OTEL_RESOURCE_ATTRIBUTES"), &given, &error)) {
    PrintNotice(option + ": OTEL_RESOURCE_ATTRIBUTES ignored: " + error);
    given.clear();
  }
  std::string service = Environment("OTEL_SERVICE_NAME");
  std::vector<ResourceAttribute> resource;
  std::map<std::string, size_t> position;
  auto set = [&](const std::string& key, const std::string& value) {
    auto known = position.emplace(key, resource.size());
    if (known.second) {
      resource.emplace_back(key, value);
    } else {
      resource[known.first->second].second = value;
    }
  };
  set("service.name", "");
  for (const auto& [key, value] : given) set(key, value);
  if (!service.empty()) set("service.name", service);
  if (resource[0].second.empty()) {
    char path[4096];
    const ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
    std::string executable = length > 0 ? std::string(path, static_cast<size_t>(length)) : "";
    executable = executable.substr(executable.rfind('/') + 1);
    resource[0].second = executable.empty() ? "unknown_service" : "unknown_service:" + executable;
  }
  if (position.count("process.pid") == 0) set("process.pid", std::to_string(getpid()));
  if (position.count("telemetry.sdk.name") == 0) set("telemetry.sdk.name", "ctxprof");
  if (position.count("telemetry.sdk.version") == 0) set("telemetry.sdk.version", kCtxprofVersion);
  return resource;
}

StatusOr<UploaderConfig> OtlpConfigFromOptions(const Options& options) {
  StatusOr<HttpUrl> url = Endpoint(options);
  if (!url.ok()) return url.status();
  StatusOr<std::vector<std::pair<std::string, std::string>>> headers = Headers();
  if (!headers.ok()) return headers.status();
  UploaderConfig config;
  const auto [ca_source, ca_file] =
      FirstSet({"OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE"});
  config.server = HttpServer{url.value().https, url.value().host, url.value().port, ca_file,
                             ca_source.empty() ? "OTEL_EXPORTER_OTLP_CERTIFICATE" : ca_source};
  config.request_timeout = Timeout(config.request_timeout);
  config.option = "otlp";
  config.what = "POST " + url.value().path;
  config.retry_statuses = {429, 502, 503, 504};
  config.credentials_hint = " (check the headers in OTEL_EXPORTER_OTLP_HEADERS)";
  config.accepted_note = PartialSuccessNote;
  config.headers = std::move(headers.value());
  config.make_request = [path = url.value().path, resource = OtelResourceAttributes("otlp")](
                            const FinishedChunk& chunk, std::string file) {
    return OtlpRequest(chunk, std::move(file), path, resource);
  };
  return config;
}

}  // namespace ctxprof
