#include "tools/flame.h"

#include <cstdio>
#include <map>

namespace ctxprof::tools {

namespace {

// The page around the data; @TITLE@, @BY@ and @DATA@ are replaced. With data.base (a diff page)
// every node also has a "before" value, frames are coloured by the change of their share, and
// #widths chooses which profile sizes them.
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
.diff-only { display: none; }
.diff .diff-only { display: inline; }
</style></head><body>
<h1>@TITLE@</h1>
<div id="controls">
<label>@BY@: <select id="group"></select></label>
<label class="diff-only">widths: <select id="widths"><option value="after">after</option>
<option value="before">before</option></select></label>
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
  var diff = Array.isArray(data.base);
  if (diff) document.body.className = "diff";
  var widths = document.getElementById("widths");
  var select = document.getElementById("group");
  var search = document.getElementById("search");
  var graph = document.getElementById("graph");
  var status = document.getElementById("status");
  var matched = document.getElementById("matched");
  var typeClass = {J: "jit", I: "interpreted", L: "inlined", N: "native", C: "klass"};
  var rowHeight = 17;
  var minWidth = 0.001;  // of the shown root: narrower frames are not drawn
  var root = null, zoom = null, group = -1;
  // The value that sizes a node: its samples, or in a diff page with widths=before its
  // samples in the base profile.
  function size(node) { return diff && widths.value === "before" ? node.base : node.value; }

  function addOption(value, text) {
    var option = document.createElement("option");
    option.value = String(value);
    option.textContent = text;
    select.appendChild(option);
  }
  function groupTotals(samples) {
    var sums = data.groups.map(function() { return 0; });
    samples.forEach(function(s) { sums[s[1]] += s[2]; });
    return sums;
  }
  function sum(values) { return values.reduce(function(a, b) { return a + b; }, 0); }
  var totals = groupTotals(data.samples);
  var baseTotals = diff ? groupTotals(data.base) : totals;
  function counts(i) {
    var after = i < 0 ? sum(totals) : totals[i];
    var before = i < 0 ? sum(baseTotals) : baseTotals[i];
    return diff ? " (" + before + " \u2192 " + after + ")" : " (" + after + ")";
  }
  addOption(-1, "all" + counts(-1));
  data.groups.forEach(function(label, i) {
    if (totals[i] > 0 || baseTotals[i] > 0) addOption(i, label + counts(i));
  });

  function percent(part, whole) {
    return (whole ? 100 * part / whole : 0).toFixed(2) + "%";
  }
  function build(selected) {
    var top = {name: "all", type: "", value: 0, base: 0, children: new Map(), parent: null};
    function add(samples, key) {
      samples.forEach(function(s) {
        if (selected >= 0 && s[1] !== selected) return;
        var node = top;
        node[key] += s[2];
        data.stacks[s[0]].forEach(function(f) {
          var child = node.children.get(f);
          if (!child) {
            child = {name: data.frames[f][0], type: data.frames[f][1], value: 0, base: 0,
                     children: new Map(), parent: node};
            node.children.set(f, child);
          }
          child[key] += s[2];
          node = child;
        });
      });
    }
    add(data.samples, "value");
    if (diff) add(data.base, "base");
    return top;
  }
  // Diff pages: the change of a node's share of its profile, in percentage points.
  function change(node) {
    return 100 * ((root.value ? node.value / root.value : 0) -
                  (root.base ? node.base / root.base : 0));
  }
  function largestChange(node) {
    var largest = Math.abs(change(node));
    node.children.forEach(function(child) { largest = Math.max(largest, largestChange(child)); });
    return largest;
  }
  function sortedChildren(node) {
    return Array.from(node.children.values()).sort(function(a, b) {
      return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
    });
  }
  function matchedValue(node, term) {
    if (node !== root && node.name.indexOf(term) >= 0) return size(node);
    var total = 0;
    node.children.forEach(function(child) { total += matchedValue(child, term); });
    return total;
  }
  function render() {
    graph.textContent = "";
    var term = search.value;
    var depth = 0;
    var scale = diff ? largestChange(root) : 0;
    function draw(node, x, width, row) {
      var div = document.createElement("div");
      var match = term && node !== root && node.name.indexOf(term) >= 0;
      div.className = "frame" + (typeClass[node.type] && !diff ? " " + typeClass[node.type] : "") +
          (match ? " match" : "");
      div.style.left = (100 * x) + "%";
      div.style.width = (100 * width) + "%";
      div.style.top = (row * rowHeight) + "px";
      div.textContent = node.name;
      if (diff) {
        // Red: a larger share after than before; blue: smaller; white: unchanged.
        var delta = change(node), strength = scale ? Math.abs(delta) / scale : 0;
        var fade = Math.round(255 * (1 - strength));
        if (!match) {
          div.style.background = delta >= 0 ? "rgb(255," + fade + "," + fade + ")"
                                             : "rgb(" + fade + "," + fade + ",255)";
        }
        div.setAttribute("data-change", delta.toFixed(2));
        div.title = node.name + " \u2014 before " + node.base + " (" +
            percent(node.base, root.base) + "), after " + node.value + " (" +
            percent(node.value, root.value) + "), " + (delta >= 0 ? "+" : "") +
            delta.toFixed(2) + " points";
      } else {
        div.title = node.name + " \u2014 " + node.value + unit + " (" +
            percent(node.value, root.value) + ")";
      }
      div.addEventListener("click", function() { zoom = node; render(); });
      graph.appendChild(div);
      depth = Math.max(depth, row + 1);
    }
    var ancestors = [];
    for (var a = zoom.parent; a; a = a.parent) ancestors.unshift(a);
    ancestors.forEach(function(node, row) { draw(node, 0, 1, row); });
    function walk(node, x, row) {
      var width = size(zoom) ? size(node) / size(zoom) : 0;
      if (width < minWidth) return;
      draw(node, x, width, row);
      sortedChildren(node).forEach(function(child) {
        walk(child, x, row + 1);
        x += size(zoom) ? size(child) / size(zoom) : 0;
      });
    }
    walk(zoom, 0, ancestors.length);
    graph.style.height = (depth * rowHeight) + "px";
    var label = group < 0 ? "all" : data.groups[group];
    status.textContent = label + ": " + (diff ? "before " + root.base + ", after " + root.value
                                              : root.value) + unit;
    matched.textContent = term ? "matched: " + matchedValue(root, term) + unit + " (" +
        percent(matchedValue(root, term), size(root)) + ")" : "";
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
  widths.addEventListener("change", function() { zoom = root; render(); });
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
  show(initial >= 0 && (totals[initial] > 0 || baseTotals[initial] > 0) ? initial : -1);
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

namespace {

// The page's data: frames merged by (name, type), stacks root first, groups and per
// (stack, group) sample counts of one profile ("samples") or two ("base" = before).
class FlameData {
 public:
  // Adds the samples of `profile` grouped by the attribute named `attribute` ("" = none) to
  // series 0 (shown) or 1 (base).
  void Add(const Profile& profile, const std::string& attribute, int series) {
    unit_ = profile.unit();
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
    const char* unit = unit_ == WeightUnit::kBytes         ? "bytes"
                       : unit_ == WeightUnit::kNanoseconds ? "ns"
                                                           : "samples";
    std::string json = "{\"unit\":\"" + std::string(unit) + "\",\"frames\":[";
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
};

}  // namespace

void WriteFlameGraph(const Profile& profile, const std::string& attribute, const std::string& title,
                     std::string* out) {
  FlameData data;
  data.Add(profile, attribute, 0);
  *out += FillPage(kPage, {{"@TITLE@", EscapeHtml(title)},
                           {"@BY@", EscapeHtml(attribute.empty() ? "context" : attribute)},
                           {"@DATA@", data.Json(!attribute.empty())}});
}

void WriteDiffFlameGraph(const Profile& before, const Profile& after, const std::string& attribute,
                         const std::string& title, std::string* out) {
  FlameData data;
  data.set_diff();
  data.Add(after, attribute, 0);
  data.Add(before, attribute, 1);
  *out += FillPage(kPage, {{"@TITLE@", EscapeHtml(title)},
                           {"@BY@", EscapeHtml(attribute.empty() ? "context" : attribute)},
                           {"@DATA@", data.Json(!attribute.empty())}});
}

}  // namespace ctxprof::tools
