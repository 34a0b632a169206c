// LatencyHistogram: span durations in log-linear buckets, the one bucket scheme of the JFR
// writer (ctxprof.SpanLatency events, profiler/jfr_events/span_latencies.h) and of the ctxprof
// tool that reads them back (`report --latency`).
//
// Buckets: a duration below 128 ns has a bucket of its own (width 1 ns); above, each power of
// two [2^e, 2^(e+1)) is cut into 64 equal buckets, so a bucket is at most 1/64 (1.6 %) of its
// floor wide. The event names a bucket by its index in that order (IndexOf), each as the step from
// the previous non-empty one: two to four characters a bucket where its floor in nanoseconds took
// eight to ten. Percentile() answers with the middle of the bucket that holds the rank (clamped
// to the exact max), within 1/128 (0.8 %) of the true value.
//
// Thread safety: none; a value type.
#ifndef CTXPROF_PROFILER_BASE_LATENCY_HISTOGRAM_H_
#define CTXPROF_PROFILER_BASE_LATENCY_HISTOGRAM_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ctxprof {

class LatencyHistogram {
 public:
  static constexpr int kSubBucketBits = 6;  // 64 buckets per power of two

  // The floor of the bucket that holds `nanos` (negative counts as 0).
  static int64_t FloorOf(int64_t nanos) {
    if (nanos < (int64_t{2} << kSubBucketBits)) return std::max<int64_t>(nanos, 0);
    const int shift = 63 - __builtin_clzll(static_cast<uint64_t>(nanos)) - kSubBucketBits;
    return (nanos >> shift) << shift;
  }
  // The width of the bucket whose floor is `floor` (1 below 128 ns).
  static int64_t WidthOf(int64_t floor) {
    if (floor < (int64_t{2} << kSubBucketBits)) return 1;
    return int64_t{1} << (63 - __builtin_clzll(static_cast<uint64_t>(floor)) - kSubBucketBits);
  }

  // Bucket indexes: a floor below 128 ns is its own index; above, 64 per power of two, in order.
  static constexpr int kBucketCount = 128 + 64 * (62 - 6);  // floors up to 2^63 - 1
  static int IndexOf(int64_t floor) {
    if (floor < (int64_t{2} << kSubBucketBits)) {
      return static_cast<int>(std::max<int64_t>(floor, 0));
    }
    const int top = 63 - __builtin_clzll(static_cast<uint64_t>(floor));
    return 128 + 64 * (top - 7) + static_cast<int>((floor >> (top - kSubBucketBits)) - 64);
  }
  static int64_t FloorOfIndex(int index) {
    if (index < 128) return index;
    const int top = 7 + (index - 128) / 64;
    return (int64_t{64} + (index - 128) % 64) << (top - kSubBucketBits);
  }

  void Add(int64_t nanos) { AddBucket(FloorOf(nanos), 1, nanos, nanos); }
  // Adds `count` durations of the bucket with floor `floor`, whose sum and max are given (a
  // histogram read back from an event, one bucket at a time; sum and max once, with count 0).
  void AddBucket(int64_t floor, int64_t count, int64_t sum, int64_t max) {
    if (count > 0) counts_[floor] += count;
    count_ += count;
    sum_ += sum;
    max_ = std::max(max_, max);
  }
  void Merge(const LatencyHistogram& other) {
    for (const auto& [floor, count] : other.counts_) counts_[floor] += count;
    count_ += other.count_;
    sum_ += other.sum_;
    max_ = std::max(max_, other.max_);
  }

  // The `percent` percentile (nearest rank, 0 < percent <= 100): the middle of its bucket,
  // at most max(). 0 when empty.
  int64_t Percentile(double percent) const {
    if (count_ == 0) return 0;
    const int64_t rank =
        std::max<int64_t>(1, static_cast<int64_t>(std::ceil(percent / 100.0 * count_ - 1e-9)));
    int64_t seen = 0;
    for (const auto& [floor, count] : counts_) {
      seen += count;
      if (seen >= rank) return std::min(floor + WidthOf(floor) / 2, max_);
    }
    return max_;
  }

  // The buckets as ctxprof.SpanLatency's `bucketDeltas` carries them: per non-empty bucket, in
  // order, its index minus the previous one's (the first: its index), then ":COUNT" unless the
  // count is 1; space-separated. A string, not arrays, because JDK 17's `jfr print` fails on
  // primitive arrays.
  std::string BucketDeltasText() const {
    std::string text;
    int previous = 0;
    for (const auto& [floor, count] : counts_) {
      if (!text.empty()) text += ' ';
      const int index = IndexOf(floor);
      text += std::to_string(index - previous);
      if (count != 1) text += ':' + std::to_string(count);
      previous = index;
    }
    return text;
  }
  // Adds the buckets of `text` (BucketDeltasText's form); false, adding nothing, when it is not
  // that form (a step of 0 after the first, an index past the last bucket, a count of 0, a
  // negative number, trailing bytes).
  bool AddBucketDeltasText(const std::string& text) {
    std::vector<std::pair<int64_t, int64_t>> buckets;
    size_t at = 0;
    int64_t index = 0;
    while (at < text.size()) {
      int64_t step = 0, count = 1;
      if (!ParseNumber(text, &at, &step) || (!buckets.empty() && step == 0)) return false;
      index += step;
      if (index >= kBucketCount) return false;
      if (at < text.size() && text[at] == ':') {
        at++;
        if (!ParseNumber(text, &at, &count) || count == 0) return false;
      }
      buckets.emplace_back(FloorOfIndex(static_cast<int>(index)), count);
      if (at < text.size() && (text[at++] != ' ' || at == text.size())) return false;
    }
    for (const auto& [floor, count] : buckets) AddBucket(floor, count, 0, 0);
    return true;
  }
  // Adds the buckets of the `buckets` field of recordings written before `bucketDeltas`:
  // "FLOOR:COUNT" per non-empty bucket, space-separated; false, adding nothing, when it is not
  // that form.
  bool AddBucketsText(const std::string& text) {
    std::vector<std::pair<int64_t, int64_t>> buckets;
    size_t at = 0;
    while (at < text.size()) {
      int64_t floor = 0, count = 0;
      if (!ParseNumber(text, &at, &floor) || at >= text.size() || text[at++] != ':' ||
          !ParseNumber(text, &at, &count)) {
        return false;
      }
      buckets.emplace_back(floor, count);
      if (at < text.size() && (text[at++] != ' ' || at == text.size())) return false;
    }
    for (const auto& [floor, count] : buckets) AddBucket(floor, count, 0, 0);
    return true;
  }

  const std::map<int64_t, int64_t>& counts() const { return counts_; }  // floor -> count
  int64_t count() const { return count_; }
  int64_t sum() const { return sum_; }
  int64_t max() const { return max_; }
  bool empty() const { return count_ == 0; }
  void Clear() { *this = LatencyHistogram(); }

 private:
  // A decimal number without sign at text[*at], at most 18 digits; advances *at past it.
  static bool ParseNumber(const std::string& text, size_t* at, int64_t* out) {
    const size_t start = *at;
    int64_t value = 0;
    while (*at < text.size() && text[*at] >= '0' && text[*at] <= '9' && *at - start < 18) {
      value = value * 10 + (text[(*at)++] - '0');
    }
    *out = value;
    return *at > start && (*at >= text.size() || text[*at] < '0' || text[*at] > '9');
  }

  std::map<int64_t, int64_t> counts_;
  int64_t count_ = 0;
  int64_t sum_ = 0;
  int64_t max_ = 0;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_BASE_LATENCY_HISTOGRAM_H_
