#include "tools/flame.h"

#include <cstdio>
#include <map>
#include <string_view>

#include "tools/flame_page.h"

namespace ctxprof::tools {

namespace {

void AppendCodeUnit(unsigned value, std::string* out) {
  char escaped[8];
  snprintf(escaped, sizeof(escaped), "\\u%04x", value);
  *out += escaped;
}

// Decodes one UTF-8 sequence at text[*i]; advances *i. Invalid input gives U+FFFD for one byte.
uint32_t NextCodePoint(const std::string& text, size_t* i) {
  const unsigned char lead = text[*i];
  int length = lead < 0x80           ? 1
               : (lead >> 5) == 0x6  ? 2
               : (lead >> 4) == 0xe  ? 3
               : (lead >> 3) == 0x1e ? 4
                                     : 0;
  uint32_t code = length == 1   ? lead
                  : length == 2 ? lead & 0x1f
                  : length == 3 ? lead & 0x0f
                                : lead & 0x07;
  bool valid = length > 0 && *i + length <= text.size();
  for (int k = 1; valid && k < length; k++) {
    const unsigned char next = text[*i + k];
    valid = (next & 0xc0) == 0x80;
    code = code << 6 | (next & 0x3f);
  }
  // Overlong forms, surrogates and values beyond U+10FFFF are invalid too.
  static const uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (valid && (code < kMinimum[length] || (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff)) {
    valid = false;
  }
  if (!valid) {
    *i += 1;
    return 0xfffd;
  }
  *i += length;
  return code;
}

// Replaces each "@NAME@" marker of `page` in one pass, so inserted text is never rescanned.
// The page (tools/flame.html, embedded at build time) has @TITLE@, @BY@ and @DATA@. With
// data.base (a diff page) every node also has a "before" value, frames are coloured by the
// change of their share, and #widths chooses which profile sizes them.
std::string FillPage(std::string_view page, const std::map<std::string, std::string>& values) {
  std::string out;
  size_t at = 0;
  while (at < page.size()) {
    const size_t marker = page.find('@', at);
    if (marker == std::string::npos) break;
    const size_t end = page.find('@', marker + 1);
    auto value = end == std::string::npos
                     ? values.end()
                     : values.find(std::string(page.substr(marker, end + 1 - marker)));
    if (value == values.end()) {
      out.append(page, at, marker + 1 - at);
      at = marker + 1;
    } else {
      out.append(page, at, marker - at);
      out += value->second;
      at = end + 1;
    }
  }
  out.append(page, at, std::string::npos);
  return out;
}

std::string EscapeHtml(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    switch (c) {
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '&':
        escaped += "&amp;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

// One letter per frame type, matched by the page's typeClass.
const char* TypeCode(const std::string& type) {
  if (type == "JIT compiled") return "J";
  if (type == "Interpreted") return "I";
  if (type == "Inlined") return "L";
  if (type == "Native") return "N";
  if (type == "Class") return "C";  // the class frame of an allocation or lock event
  return "";
}

}  // namespace

std::string JsonStringForScript(const std::string& text) {
  std::string out = "\"";
  size_t i = 0;
  while (i < text.size()) {
    const uint32_t code = NextCodePoint(text, &i);
    if (code == '"' || code == '\\') {
      out += '\\';
      out += static_cast<char>(code);
    } else if (code < 0x20 || code >= 0x7f || code == '<' || code == '>' || code == '&') {
      if (code >= 0x10000) {  // a UTF-16 surrogate pair
        AppendCodeUnit(0xd800 + ((code - 0x10000) >> 10), &out);
        AppendCodeUnit(0xdc00 + ((code - 0x10000) & 0x3ff), &out);
      } else {
        AppendCodeUnit(code, &out);
      }
    } else {
      out += static_cast<char>(code);
    }
  }
  return out + "\"";
}

namespace {

// The page's data: frames merged by (name, type), stacks root first, groups and per
// (stack, group) sample counts of one profile ("samples") or two ("base" = before).
class FlameData {
 public:
  // Adds the samples of `profile` grouped by the attribute named `attribute` ("" = none) to
  // series 0 (shown) or 1 (base).
  void Add(const Profile& profile, const std::string& attribute, int series) {
    unit_ = profile.unit();
    value_field_ = profile.value_field();
    const int index = attribute.empty() ? -1 : profile.AttributeIndex(attribute);
    std::vector<uint32_t> stack_of(profile.stacks().size());
    for (size_t s = 0; s < profile.stacks().size(); s++) {
      std::vector<uint32_t> frames;
      const std::vector<uint32_t>& stack = profile.stacks()[s];
      for (auto frame = stack.rbegin(); frame != stack.rend(); ++frame) {  // root first
        const Frame& f = profile.frames()[*frame];
        auto inserted = frame_index_.emplace(std::make_pair(f.Name(), TypeCode(f.type)),
                                             static_cast<uint32_t>(frame_index_.size()));
        if (inserted.second) frames_.push_back(inserted.first->first);
        frames.push_back(inserted.first->second);
      }
      auto inserted = stack_index_.emplace(frames, static_cast<uint32_t>(stack_index_.size()));
      if (inserted.second) stacks_.push_back(std::move(frames));
      stack_of[s] = inserted.first->second;
    }
    for (const Sample& sample : profile.samples()) {
      const std::string& value = profile.ValueOf(sample, index);
      // Group keys sort values first, then "(unset)", then "(no context)".
      const std::string key = sample.context < 0 ? "\2"
                              : value.empty()    ? "\1"
                                                 : std::string("\0", 1) + value;
      counts_[series][{stack_of[sample.stack], key}] += sample.weight;
    }
  }

  std::string Json(bool with_attribute) const {
    std::map<std::string, int> group_of_key;
    for (const auto& series : counts_) {
      for (const auto& [stack_and_key, count] : series)
        group_of_key.emplace(stack_and_key.second, 0);
    }
    // A plain number (--value FIELD) is named by its field.
    const std::string unit = unit_ == WeightUnit::kBytes         ? "bytes"
                             : unit_ == WeightUnit::kNanoseconds ? "ns"
                             : unit_ == WeightUnit::kNumber      ? value_field_
                                                                 : "samples";
    std::string json = "{\"unit\":" + JsonStringForScript(unit) + ",\"frames\":[";
    for (size_t f = 0; f < frames_.size(); f++) {
      json += (f ? ",[" : "[") + JsonStringForScript(frames_[f].first) + ",\"" + frames_[f].second +
              "\"]";
    }
    json += "],\"stacks\":[";
    for (size_t s = 0; s < stacks_.size(); s++) {
      json += s ? ",[" : "[";
      for (size_t f = 0; f < stacks_[s].size(); f++) {
        json += (f ? "," : "") + std::to_string(stacks_[s][f]);
      }
      json += "]";
    }
    // Every group is listed, even one only the base has, so indices mean the same in both.
    json += "],\"groups\":[";
    int group = 0;
    for (auto& [key, index] : group_of_key) {
      const std::string label = key[0] == '\2'   ? "(no context)"
                                : key[0] == '\1' ? (with_attribute ? "(unset)" : "(context)")
                                                 : key.substr(1);
      json += (group ? "," : "") + JsonStringForScript(label);
      index = group++;
    }
    json += "]";
    for (int series = 0; series < 2; series++) {
      if (series == 1 && !diff_) break;
      json += series == 0 ? ",\"samples\":[" : ",\"base\":[";
      bool first = true;
      for (const auto& [stack_and_key, count] : counts_[series]) {
        json += (first ? "[" : ",[") + std::to_string(stack_and_key.first) + "," +
                std::to_string(group_of_key.at(stack_and_key.second)) + "," +
                std::to_string(count) + "]";
        first = false;
      }
      json += "]";
    }
    return json + "}";
  }

  void set_diff() { diff_ = true; }

 private:
  std::map<std::pair<std::string, std::string>, uint32_t> frame_index_;
  std::vector<std::pair<std::string, std::string>> frames_;  // (name, type code)
  std::map<std::vector<uint32_t>, uint32_t> stack_index_;
  std::vector<std::vector<uint32_t>> stacks_;
  std::map<std::pair<uint32_t, std::string>, int64_t> counts_[2];  // (stack, group key)
  bool diff_ = false;
  WeightUnit unit_ = WeightUnit::kSamples;  // of both profiles: they load the same selection
  std::string value_field_;
};

}  // namespace

void WriteFlameGraph(const Profile& profile, const std::string& attribute, const std::string& title,
                     std::string* out) {
  FlameData data;
  data.Add(profile, attribute, 0);
  *out += FillPage(kFlamePage, {{"@TITLE@", EscapeHtml(title)},
                                {"@BY@", EscapeHtml(attribute.empty() ? "context" : attribute)},
                                {"@DATA@", data.Json(!attribute.empty())}});
}

void WriteDiffFlameGraph(const Profile& before, const Profile& after, const std::string& attribute,
                         const std::string& title, std::string* out) {
  FlameData data;
  data.set_diff();
  data.Add(after, attribute, 0);
  data.Add(before, attribute, 1);
  *out += FillPage(kFlamePage, {{"@TITLE@", EscapeHtml(title)},
                                {"@BY@", EscapeHtml(attribute.empty() ? "context" : attribute)},
                                {"@DATA@", data.Json(!attribute.empty())}});
}

}  // namespace ctxprof::tools
