// Interleaved overhead measurement shared by the sampler benches: every configuration runs once
// per round, in an order rotated by the round number so that no configuration always runs first
// (or right after another one), and machine noise hits all of them alike. Configuration 0 is the
// unprofiled baseline; each round's ratio is taken against the baseline of the same round.
#ifndef CTXPROF_BENCH_SAMPLER_INTERLEAVED_ROUNDS_H_
#define CTXPROF_BENCH_SAMPLER_INTERLEAVED_ROUNDS_H_

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace ctxprof {
namespace bench {

inline double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

struct ConfigurationResults {
  std::vector<double> cpu_seconds;  // one per round
  std::vector<double> events;       // samples or signals taken, one per round
  std::vector<double> ratio;        // cpu_seconds / the baseline's in the same round
};

// run(index, &events) runs configuration `index` once and returns its CPU seconds.
template <typename Run>
std::vector<ConfigurationResults> RunInterleaved(size_t configurations, int rounds, Run&& run) {
  std::vector<ConfigurationResults> results(configurations);
  for (int round = 0; round < rounds; ++round) {
    std::vector<double> this_round(configurations);
    for (size_t k = 0; k < configurations; ++k) {
      const size_t index = (k + static_cast<size_t>(round)) % configurations;
      uint64_t events = 0;
      this_round[index] = run(index, &events);
      results[index].events.push_back(static_cast<double>(events));
    }
    for (size_t i = 0; i < configurations; ++i) {
      results[i].cpu_seconds.push_back(this_round[i]);
      results[i].ratio.push_back(this_round[i] / this_round[0]);
    }
  }
  return results;
}

// Prints one line per configuration, the format bench/report.py reads:
//   NAME  median-CPU-s  median-events  median-ratio  +overhead%  extra-CPU-per-event us
inline void PrintOverheadTable(const char* name_column, const char* events_column,
                               const std::vector<std::string>& names,
                               const std::vector<ConfigurationResults>& results) {
  printf("%-36s %12s %9s %12s %10s %16s\n", name_column, "median CPU s", events_column,
         "median ratio", "overhead", "CPU per event");
  const double baseline = Median(results[0].cpu_seconds);
  for (size_t i = 0; i < results.size(); ++i) {
    const double events = Median(results[i].events);
    const double extra = Median(results[i].cpu_seconds) - baseline;
    const double per_event_us = events > 0 ? extra / events * 1e6 : 0;
    const double ratio = Median(results[i].ratio);
    printf("%-36s %12.4f %9.0f %12.4f %+9.2f%% %13.1f us\n", names[i].c_str(),
           Median(results[i].cpu_seconds), events, ratio, (ratio - 1) * 100, per_event_us);
  }
}

}  // namespace bench
}  // namespace ctxprof

#endif  // CTXPROF_BENCH_SAMPLER_INTERLEAVED_ROUNDS_H_
