// The `ctxprof report` text: per value of one context attribute, the hottest methods.
//
// Sections, in this order: one per value of the attribute (most samples first, ties by value
// bytes), "(unset)" for samples whose context lacks the attribute, "(no context)" for samples
// without context. With by_thread, one section per thread instead ("thread <name> tid=<OS thread
// id>", most samples first). Sections with no samples are left out. Samples = sum of sample
// weights: for allocations bytes ("1.50 MiB allocated", columns in B/KiB/MiB), for lock waits
// time ("2.000 ms blocked", columns in ms); the class frame of those events (profile.h) is their
// leaf, so the top self rows are the classes allocated or waited for.
// Per method ("class.method", overloads merged): self = samples whose leaf frame is the method,
// total = samples whose stack contains it (once per sample, however often it recurses). Rows
// are the top N by self, then total, then name; shares are printed with two decimals of the
// section's samples and of all samples. Values are quoted JSON-style (\" \\ \uXXXX for control
// characters), so any value, however odd, stays on one line and parses back.
#ifndef CTXPROF_TOOLS_REPORT_H_
#define CTXPROF_TOOLS_REPORT_H_

#include <string>

#include "profiler/export/profile.h"

namespace ctxprof::tools {

struct ReportOptions {
  int attribute = 0;       // index into Profile::attribute_names(); -1 when the file has none
  size_t top = 10;         // rows per section
  bool by_thread = false;  // sections per thread instead of per attribute value
};

// Appends the report of `profile` to *out.
void WriteReport(const Profile& profile, const ReportOptions& options, std::string* out);

// Appends the latency report (`report --latency`) to *out: per value of attribute `attribute`
// (most spans first, ties by value bytes; then "(unset)"), the spans that closed, their p50,
// p90, p99 and max from the ctxprof.SpanLatency histograms (LatencyHistogram: within 0.8 %), and
// the CPU time of the value's CPU samples per span. Durations in ms with three decimals.
void WriteLatencyReport(const Profile& profile, int attribute, std::string* out);

// `value` as a JSON string literal (quotes included), non-ASCII bytes kept as they are.
std::string QuoteJson(const std::string& value);

}  // namespace ctxprof::tools

#endif  // CTXPROF_TOOLS_REPORT_H_
