#include "tools/flame.h"

#include <cstdio>
#include <map>

namespace ctxprof::tools {

namespace {

// The page around the data; @TITLE@, @BY@ and @DATA@ are replaced.
constexpr const char* kPage = R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>@TITLE@</title>
<style>
body { font: 12px sans-serif; margin: 8px; }
h1 { font-size: 14px; margin: 0 0 6px 0; }
#controls { margin-bottom: 6px; }
#controls > * { margin-right: 8px; }
#graph { position: relative; width: 100%; }
.frame { position: absolute; height: 16px; line-height: 16px; overflow: hidden;
  white-space: nowrap; box-sizing: border-box; border: 1px solid #fff; padding: 0 2px;
  cursor: pointer; background: #e8a35a; }
.frame.jit { background: #7fc66b; }
.frame.interpreted { background: #d4c94a; }
.frame.inlined { background: #63c4c4; }
.frame.native { background: #e57a6b; }
.frame.klass { background: #8fa8d8; }
.frame.match { background: #d35fd3; }
</style></head><body>
<h1>@TITLE@</h1>
<div id="controls">
<label>@BY@: <select id="group"></select></label>
<input id="search" placeholder="search frames" size="30">
<button id="reset">reset</button>
<span id="status"></span>
<span id="matched"></span>
</div>
<div id="graph"></div>
<script type="application/json" id="profile-data">@DATA@</script>
<script>
(function() {
  "use strict";
  var data = JSON.parse(document.getElementById("profile-data").textContent);
  var unit = " " + data.unit;  // what the counts are: samples, bytes or ns
  var select = document.getElementById("group");
  var search = document.getElementById("search");
  var graph = document.getElementById("graph");
  var status = document.getElementById("status");
  var matched = document.getElementById("matched");
  var typeClass = {J: "jit", I: "interpreted", L: "inlined", N: "native", C: "klass"};
  var rowHeight = 17;
  var minWidth = 0.001;  // of the shown root: narrower frames are not drawn
  var root = null, zoom = null, group = -1;

  function addOption(value, text) {
    var option = document.createElement("option");
    option.value = String(value);
    option.textContent = text;
    select.appendChild(option);
  }
  var totals = data.groups.map(function() { return 0; });
  data.samples.forEach(function(s) { totals[s[1]] += s[2]; });
  var all = totals.reduce(function(a, b) { return a + b; }, 0);
  addOption(-1, "all (" + all + ")");
  data.groups.forEach(function(label, i) {
    if (totals[i] > 0) addOption(i, label + " (" + totals[i] + ")");
  });

  function percent(part, whole) {
    return (whole ? 100 * part / whole : 0).toFixed(2) + "%";
  }
  function build(selected) {
    var top = {name: "all", type: "", value: 0, children: new Map(), parent: null};
    data.samples.forEach(function(s) {
      if (selected >= 0 && s[1] !== selected) return;
      var node = top;
      node.value += s[2];
      data.stacks[s[0]].forEach(function(f) {
        var child = node.children.get(f);
        if (!child) {
          child = {name: data.frames[f][0], type: data.frames[f][1], value: 0,
                   children: new Map(), parent: node};
          node.children.set(f, child);
        }
        child.value += s[2];
        node = child;
      });
    });
    return top;
  }
  function sortedChildren(node) {
    return Array.from(node.children.values()).sort(function(a, b) {
      return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
    });
  }
  function matchedValue(node, term) {
    if (node !== root && node.name.indexOf(term) >= 0) return node.value;
    var sum = 0;
    node.children.forEach(function(child) { sum += matchedValue(child, term); });
    return sum;
  }
  function render() {
    graph.textContent = "";
    var term = search.value;
    var depth = 0;
    function draw(node, x, width, row) {
      var div = document.createElement("div");
      div.className = "frame" + (typeClass[node.type] ? " " + typeClass[node.type] : "") +
          (term && node !== root && node.name.indexOf(term) >= 0 ? " match" : "");
      div.style.left = (100 * x) + "%";
      div.style.width = (100 * width) + "%";
      div.style.top = (row * rowHeight) + "px";
      div.textContent = node.name;
      div.title = node.name + " \u2014 " + node.value + unit + " (" +
          percent(node.value, root.value) + ")";
      div.addEventListener("click", function() { zoom = node; render(); });
      graph.appendChild(div);
      depth = Math.max(depth, row + 1);
    }
    var ancestors = [];
    for (var a = zoom.parent; a; a = a.parent) ancestors.unshift(a);
    ancestors.forEach(function(node, row) { draw(node, 0, 1, row); });
    function walk(node, x, row) {
      var width = zoom.value ? node.value / zoom.value : 0;
      if (width < minWidth) return;
      draw(node, x, width, row);
      sortedChildren(node).forEach(function(child) {
        walk(child, x, row + 1);
        x += zoom.value ? child.value / zoom.value : 0;
      });
    }
    walk(zoom, 0, ancestors.length);
    graph.style.height = (depth * rowHeight) + "px";
    var label = group < 0 ? "all" : data.groups[group];
    status.textContent = label + ": " + root.value + unit;
    matched.textContent = term ? "matched: " + matchedValue(root, term) + unit + " (" +
        percent(matchedValue(root, term), root.value) + ")" : "";
  }
  function updateHash() {
    var parts = ["by=" + encodeURIComponent(group < 0 ? "all" : data.groups[group])];
    if (search.value) parts.push("search=" + encodeURIComponent(search.value));
    try { history.replaceState(null, "", "#" + parts.join("&")); } catch (e) {}
  }
  function show(selected) {
    group = selected;
    select.value = String(selected);
    root = zoom = build(selected);
    render();
  }
  select.addEventListener("change", function() { show(Number(select.value)); updateHash(); });
  search.addEventListener("input", function() { render(); updateHash(); });
  document.getElementById("reset").addEventListener("click", function() {
    zoom = root;
    render();
  });

  var initial = -1;
  location.hash.replace(/^#/, "").split("&").forEach(function(part) {
    var eq = part.indexOf("=");
    if (eq < 0) return;
    var key = part.slice(0, eq), value = decodeURIComponent(part.slice(eq + 1));
    if (key === "by") initial = data.groups.indexOf(value);
    if (key === "search") search.value = value;
  });
  show(initial >= 0 && totals[initial] > 0 ? initial : -1);
})();
</script>
</body></html>
)html";

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
std::string FillPage(const std::string& page, const std::map<std::string, std::string>& values) {
  std::string out;
  size_t at = 0;
  while (at < page.size()) {
    const size_t marker = page.find('@', at);
    if (marker == std::string::npos) break;
    const size_t end = page.find('@', marker + 1);
    auto value = end == std::string::npos ? values.end()
                                          : values.find(page.substr(marker, end + 1 - marker));
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

void WriteFlameGraph(const Profile& profile, int attribute, const std::string& title,
                     std::string* out) {
  // Groups: the attribute's values in byte order, then "(unset)" and "(no context)".
  std::map<std::string, int> value_group;
  for (const Sample& sample : profile.samples()) {
    const std::string& value = profile.ValueOf(sample, attribute);
    if (!value.empty()) value_group.emplace(value, 0);
  }
  std::vector<std::string> groups;
  for (auto& [value, index] : value_group) {
    index = static_cast<int>(groups.size());
    groups.push_back(value);
  }
  const int unset_group = static_cast<int>(groups.size());
  groups.push_back(attribute >= 0 ? "(unset)" : "(context)");
  const int no_context_group = unset_group + 1;
  groups.push_back("(no context)");

  std::map<std::pair<uint32_t, int>, int64_t> counts;  // (stack, group) -> samples
  for (const Sample& sample : profile.samples()) {
    const std::string& value = profile.ValueOf(sample, attribute);
    const int group = sample.context < 0 ? no_context_group
                      : value.empty()    ? unset_group
                                         : value_group[value];
    counts[{sample.stack, group}] += sample.weight;
  }

  const char* unit = profile.unit() == WeightUnit::kBytes         ? "bytes"
                     : profile.unit() == WeightUnit::kNanoseconds ? "ns"
                                                                  : "samples";
  std::string json = "{\"unit\":\"" + std::string(unit) + "\",\"frames\":[";
  for (size_t f = 0; f < profile.frames().size(); f++) {
    const Frame& frame = profile.frames()[f];
    json +=
        (f ? ",[" : "[") + JsonStringForScript(frame.Name()) + ",\"" + TypeCode(frame.type) + "\"]";
  }
  json += "],\"stacks\":[";
  for (size_t s = 0; s < profile.stacks().size(); s++) {
    const std::vector<uint32_t>& stack = profile.stacks()[s];
    json += s ? ",[" : "[";
    for (auto frame = stack.rbegin(); frame != stack.rend(); ++frame) {  // root first
      json += (frame == stack.rbegin() ? "" : ",") + std::to_string(*frame);
    }
    json += "]";
  }
  json += "],\"groups\":[";
  for (size_t g = 0; g < groups.size(); g++) {
    json += (g ? "," : "") + JsonStringForScript(groups[g]);
  }
  json += "],\"samples\":[";
  bool first = true;
  for (const auto& [key, count] : counts) {
    json += (first ? "[" : ",[") + std::to_string(key.first) + "," + std::to_string(key.second) +
            "," + std::to_string(count) + "]";
    first = false;
  }
  json += "]}";

  const std::string by = attribute >= 0 ? profile.attribute_names()[attribute] : "context";
  *out +=
      FillPage(kPage, {{"@TITLE@", EscapeHtml(title)}, {"@BY@", EscapeHtml(by)}, {"@DATA@", json}});
}

}  // namespace ctxprof::tools
