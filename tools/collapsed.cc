#include "tools/collapsed.h"

#include <cstdio>
#include <map>

namespace ctxprof::tools {

std::string EscapeCollapsed(const std::string& text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '%' || c == ';' || c == ' ' || c == '[' || c == ']' || c == '=' || c < 0x20 ||
        c == 0x7f) {
      char hex[4];
      snprintf(hex, sizeof(hex), "%%%02X", c);
      escaped += hex;
    } else {
      escaped += static_cast<char>(c);
    }
  }
  return escaped;
}

void WriteCollapsed(const Profile& profile, std::string* out) {
  // Context prefixes and stacks are built once per interned index, not once per sample.
  std::vector<std::string> context_prefix(profile.contexts().size());
  for (size_t c = 0; c < profile.contexts().size(); c++) {
    const std::vector<std::string>& values = profile.contexts()[c].values;
    for (size_t a = 0; a < values.size(); a++) {
      if (values[a].empty()) continue;
      context_prefix[c] += "[" + EscapeCollapsed(profile.attribute_names()[a]) + "=" +
                           EscapeCollapsed(values[a]) + "];";
    }
  }
  std::vector<std::string> stack_text(profile.stacks().size());
  for (size_t s = 0; s < profile.stacks().size(); s++) {
    const std::vector<uint32_t>& stack = profile.stacks()[s];
    if (stack.empty()) stack_text[s] = "[no frames]";  // a stack walk that found nothing
    for (auto frame = stack.rbegin(); frame != stack.rend(); ++frame) {
      if (frame != stack.rbegin()) stack_text[s] += ';';
      stack_text[s] += EscapeCollapsed(profile.frames()[*frame].Name());
    }
  }
  std::map<std::string, int64_t> counts;
  for (const Sample& sample : profile.samples()) {
    std::string line = sample.context < 0 ? "" : context_prefix[sample.context];
    counts[line + stack_text[sample.stack]] += sample.weight;
  }
  for (const auto& [line, count] : counts) {
    *out += line + " " + std::to_string(count) + "\n";
  }
}

}  // namespace ctxprof::tools
