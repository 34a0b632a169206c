#include "tools/report.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ctxprof::tools {

namespace {

struct MethodCounts {
  int64_t self = 0;
  int64_t total = 0;
};

struct Section {
  std::string title;
  int64_t samples = 0;
  // Samples are summed per stack first: methods are then counted once per distinct stack,
  // not once per sample.
  std::unordered_map<uint32_t, int64_t> stack_samples;
  std::map<std::string, MethodCounts> methods;
};

// A weight in the profile's unit, as the report prints it.
std::string Amount(int64_t value, WeightUnit unit) {
  char buffer[48];
  switch (unit) {
    case WeightUnit::kSamples:
    case WeightUnit::kNumber:
      snprintf(buffer, sizeof(buffer), "%" PRId64, value);
      break;
    case WeightUnit::kBytes:
      if (value >= (1 << 20)) {
        snprintf(buffer, sizeof(buffer), "%.2f MiB", static_cast<double>(value) / (1 << 20));
      } else if (value >= (1 << 10)) {
        snprintf(buffer, sizeof(buffer), "%.2f KiB", static_cast<double>(value) / (1 << 10));
      } else {
        snprintf(buffer, sizeof(buffer), "%" PRId64 " B", value);
      }
      break;
    case WeightUnit::kNanoseconds:
      snprintf(buffer, sizeof(buffer), "%.3f ms", static_cast<double>(value) / 1e6);
      break;
  }
  return buffer;
}

// "5 samples", "1.50 MiB allocated", "2.000 ms blocked"; with --events TYPE the value field's
// name instead ("1.50 MiB bytesRead").
std::string Quantity(int64_t value, WeightUnit unit, const std::string& value_field) {
  if (!value_field.empty()) return Amount(value, unit) + " " + value_field;
  switch (unit) {
    case WeightUnit::kSamples:
      return Amount(value, unit) + " samples";
    case WeightUnit::kBytes:
      return Amount(value, unit) + " allocated";
    case WeightUnit::kNanoseconds:
    case WeightUnit::kNumber:
      break;
  }
  return Amount(value, unit) + " blocked";
}

std::string Share(int64_t part, int64_t whole) {
  char buffer[32];
  snprintf(buffer, sizeof(buffer), "%.2f%%", whole == 0 ? 0.0 : 100.0 * part / whole);
  return buffer;
}

void Count(const Sample& sample, Section* section) {
  section->samples += sample.weight;
  section->stack_samples[sample.stack] += sample.weight;
}

// The distinct method names of a stack (each once, however often it recurses), leaf first.
std::vector<std::string> MethodsOf(const Profile& profile, uint32_t stack) {
  std::vector<std::string> names;
  std::unordered_set<std::string> seen;
  for (uint32_t frame : profile.stacks()[stack]) {
    std::string name = profile.frames()[frame].Name();
    if (seen.insert(name).second) names.push_back(std::move(name));
  }
  return names;
}

void CountMethods(const std::vector<std::vector<std::string>>& methods_of_stack, Section* section) {
  for (const auto& [stack, samples] : section->stack_samples) {
    const std::vector<std::string>& names = methods_of_stack[stack];
    for (const std::string& name : names) section->methods[name].total += samples;
    if (!names.empty()) section->methods[names.front()].self += samples;
  }
}

void WriteSection(const Section& section, int64_t all, WeightUnit unit,
                  const std::string& value_field, size_t top, std::string* out) {
  char line[256];
  *out += "\n== " + section.title + ": " + Quantity(section.samples, unit, value_field) + " (" +
          Share(section.samples, all) + " of all)\n";
  std::vector<std::pair<std::string, MethodCounts>> rows(section.methods.begin(),
                                                         section.methods.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    if (a.second.self != b.second.self) return a.second.self > b.second.self;
    if (a.second.total != b.second.total) return a.second.total > b.second.total;
    return a.first < b.first;
  });
  if (rows.size() > top) rows.resize(top);
  // Samples keep the narrower columns they always had.
  const int width = unit == WeightUnit::kSamples ? 10 : 12;
  snprintf(line, sizeof(line), "%*s %8s %8s %*s %8s %8s  %s\n", width, "self", "self%", "all%",
           width, "total", "total%", "all%", "method");
  *out += line;
  for (const auto& [name, counts] : rows) {
    snprintf(line, sizeof(line), "%*s %8s %8s %*s %8s %8s  ", width,
             Amount(counts.self, unit).c_str(), Share(counts.self, section.samples).c_str(),
             Share(counts.self, all).c_str(), width, Amount(counts.total, unit).c_str(),
             Share(counts.total, section.samples).c_str(), Share(counts.total, all).c_str());
    *out += line + name + "\n";
  }
}

}  // namespace

std::string QuoteJson(const std::string& value) {
  std::string quoted = "\"";
  for (unsigned char c : value) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char escaped[8];
      snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      quoted += escaped;
    } else {
      quoted += static_cast<char>(c);
    }
  }
  return quoted + "\"";
}

void WriteReport(const Profile& profile, const ReportOptions& options, std::string* out) {
  const int64_t all = profile.total_weight();
  const bool by_attribute = options.attribute >= 0 && !options.by_thread;
  const std::string attribute = by_attribute ? profile.attribute_names()[options.attribute] : "";

  // Keyed sections: attribute values, or thread indices.
  std::map<std::string, Section> by_key;
  Section unset;
  unset.title = by_attribute ? attribute + " (unset)" : "(context)";
  Section no_context;
  no_context.title = "(no context)";
  std::map<SampleKind, int64_t> by_kind;  // samples (cpu, wall) or events (alloc, lock)
  for (const Sample& sample : profile.samples()) {
    by_kind[sample.kind] += Profile::CountOf(sample);
    if (options.by_thread) {
      char key[16];  // zero-padded: ties sort in order of the threads' first samples
      snprintf(key, sizeof(key), "%010u", sample.thread);
      Section& section = by_key[key];
      if (section.title.empty()) {
        const Thread& thread = profile.threads()[sample.thread];
        section.title =
            "thread " + QuoteJson(thread.name) + " tid=" + std::to_string(thread.os_thread_id);
      }
      Count(sample, &section);
      continue;
    }
    if (sample.context < 0) {
      Count(sample, &no_context);
      continue;
    }
    const std::string& value = profile.ValueOf(sample, options.attribute);
    if (value.empty()) {
      Count(sample, &unset);
    } else {
      Section& section = by_key[value];
      if (section.title.empty()) section.title = attribute + " = " + QuoteJson(value);
      Count(sample, &section);
    }
  }

  std::vector<std::vector<std::string>> methods_of_stack;
  for (uint32_t stack = 0; stack < profile.stacks().size(); stack++) {
    methods_of_stack.push_back(MethodsOf(profile, stack));
  }
  for (auto& [key, section] : by_key) CountMethods(methods_of_stack, &section);
  CountMethods(methods_of_stack, &unset);
  CountMethods(methods_of_stack, &no_context);

  const WeightUnit unit = profile.unit();
  // --events TYPE: "events: jdk.FileRead 3, jdk.SocketRead 2; bytesRead: 1.50 MiB".
  std::string value_field;
  if (!profile.event_types().empty()) {
    value_field = profile.value_field();
    std::map<int32_t, int64_t> by_type;
    for (const Sample& sample : profile.samples()) by_type[sample.event_type]++;
    std::string types;
    for (size_t i = 0; i < profile.event_types().size(); i++) {
      types += (i ? ", " : "") + profile.event_types()[i].name + " " +
               std::to_string(by_type[static_cast<int32_t>(i)]);
    }
    *out += "events: " + types + "; " + value_field + ": " + Amount(all, unit) + "\n";
  } else {
    switch (unit) {
      case WeightUnit::kSamples:
        *out += "samples: " + std::to_string(all) + " (cpu " +
                std::to_string(by_kind[SampleKind::kCpu]) + ", wall " +
                std::to_string(by_kind[SampleKind::kWall]) + ")\n";
        break;
      case WeightUnit::kBytes:
        *out += "allocated: " + Amount(all, unit) + " in " +
                std::to_string(by_kind[SampleKind::kAllocation]) + " samples\n";
        break;
      case WeightUnit::kNanoseconds:
        *out += "blocked: " + Amount(all, unit) + " in " +
                std::to_string(profile.samples().size()) + " events (monitor " +
                std::to_string(by_kind[SampleKind::kMonitorEnter]) + ", park " +
                std::to_string(by_kind[SampleKind::kThreadPark]) + ")\n";
        break;
      case WeightUnit::kNumber:
        break;
    }
  }
  *out += "by: " +
          (options.by_thread ? std::string("thread")
           : by_attribute    ? attribute
                             : std::string("(the recording has no attributes)")) +
          "\n";
  std::vector<const Section*> sections;
  for (const auto& [key, section] : by_key) sections.push_back(&section);
  // by_key iterates in key order; a stable sort by samples keeps that as the tie-break.
  std::stable_sort(sections.begin(), sections.end(),
                   [](const Section* a, const Section* b) { return a->samples > b->samples; });
  sections.push_back(&unset);
  sections.push_back(&no_context);
  for (const Section* section : sections) {
    if (section->samples > 0) {
      WriteSection(*section, all, unit, value_field, options.top, out);
    }
  }
}

void WriteLatencyReport(const Profile& profile, int attribute, std::string* out) {
  const std::string attribute_name = attribute < 0 ? "" : profile.attribute_names()[attribute];
  const std::map<std::string, LatencyHistogram> histograms = profile.LatencyBy(attribute);
  std::map<std::string, int64_t> cpu_nanos;
  for (const Sample& sample : profile.samples()) {
    if (sample.kind == SampleKind::kCpu && sample.context >= 0) {
      cpu_nanos[profile.ValueOf(sample, attribute)] += profile.MeasureOf(sample);
    }
  }
  int64_t spans = 0;
  for (const auto& [value, histogram] : histograms) spans += histogram.count();
  *out += "spans: " + std::to_string(spans) + " (all closed spans, from ctxprof.SpanLatency)\n";
  *out +=
      "by: " +
      (attribute_name.empty() ? std::string("(the recording has no attributes)") : attribute_name) +
      "\n\n";
  std::vector<std::pair<std::string, const LatencyHistogram*>> rows;
  for (const auto& [value, histogram] : histograms) {
    if (!value.empty() && histogram.count() > 0) rows.emplace_back(value, &histogram);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second->count() > b.second->count();
  });
  auto unset = histograms.find("");
  if (unset != histograms.end() && unset->second.count() > 0) rows.emplace_back("", &unset->second);
  auto milliseconds = [](int64_t nanos) {
    char text[32];
    snprintf(text, sizeof(text), "%.3f ms", static_cast<double>(nanos) / 1e6);
    return std::string(text);
  };
  char line[256];
  snprintf(line, sizeof(line), "%10s %14s %14s %14s %14s %14s  %s\n", "spans", "p50", "p90", "p99",
           "max", "cpu/span", "value");
  *out += line;
  for (const auto& [value, histogram] : rows) {
    const int64_t cpu_per_span = profile.period(SampleKind::kCpu) > 0
                                     ? cpu_nanos[value] / std::max<int64_t>(histogram->count(), 1)
                                     : -1;
    snprintf(
        line, sizeof(line), "%10lld %14s %14s %14s %14s %14s  ",
        static_cast<long long>(histogram->count()), milliseconds(histogram->Percentile(50)).c_str(),
        milliseconds(histogram->Percentile(90)).c_str(),
        milliseconds(histogram->Percentile(99)).c_str(), milliseconds(histogram->max()).c_str(),
        cpu_per_span < 0 ? "-" : milliseconds(cpu_per_span).c_str());
    *out += line;
    *out +=
        (value.empty() ? attribute_name + " (unset)" : attribute_name + " = " + QuoteJson(value)) +
        "\n";
  }
}

}  // namespace ctxprof::tools
