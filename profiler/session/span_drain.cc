#include "profiler/session/span_drain.h"

#include <time.h>

#include <cstring>
#include <vector>

#include "context/span_log.h"

namespace ctxprof {

namespace {

uint64_t MonotonicNanos() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);  // cannot fail for CLOCK_MONOTONIC with a valid pointer
  return static_cast<uint64_t>(now.tv_sec) * kNanosPerSecond + now.tv_nsec;
}

// The TSC where it exists; on other machines span times are all monotonic nanoseconds, so the
// TSC half of a pair is never used.
uint64_t ReadTsc() {
  const uint64_t ticks = SpanTicks();
  return (ticks & kMonotonicFlag) != 0 ? 0 : ticks;
}

}  // namespace

SpanDrain::SpanDrain(ContextMap* map, const Clock* clock)
    : map_(map),
      clock_(clock),
      session_is_tsc_(strcmp(clock->Name(), "tsc") == 0),
      origin_(clock->MonotonicOrigin()),
      tsc_per_nano_(session_is_tsc_ ? static_cast<double>(clock->TicksPerSecond()) / 1e9 : 0) {
  latest_ = ReadPair();
  previous_ = latest_;
  UpdateRate();
  // What the logs hold from before the recording (spans, and drops while nobody read them) is
  // not the recording's.
  uint64_t ignored = 0;
  map_->span_logs().Drain([](int32_t, const SpanRecord&, uint64_t) {}, &ignored);
}

SpanDrain::Pair SpanDrain::ReadPair() {
  Pair best;
  uint64_t best_gap = UINT64_MAX;
  for (int attempt = 0; attempt < 4; attempt++) {
    const uint64_t before = ReadTsc();
    const uint64_t nanos = MonotonicNanos();
    const uint64_t after = ReadTsc();
    if (after - before < best_gap) {
      best_gap = after - before;
      best = Pair{before + (after - before) / 2, nanos};
    }
  }
  return best;
}

void SpanDrain::UpdateRate() {
  // The rate between the last two pairs, or the calibration while there is only one.
  const double nanos_apart =
      static_cast<double>(latest_.monotonic_nanos) - static_cast<double>(previous_.monotonic_nanos);
  tsc_per_nano_now_ =
      nanos_apart > 1e6
          ? (static_cast<double>(latest_.tsc) - static_cast<double>(previous_.tsc)) / nanos_apart
          : (tsc_per_nano_ > 0 ? tsc_per_nano_ : 1.0);
}

uint64_t SpanDrain::ToSessionTicks(uint64_t span_ticks) const {
  const bool monotonic = (span_ticks & kMonotonicFlag) != 0;
  const uint64_t value = span_ticks & ~kMonotonicFlag;
  if (monotonic != session_is_tsc_) return monotonic ? value - origin_ : value;  // the session's
  if (monotonic) {
    const double offset = static_cast<double>(value) - static_cast<double>(latest_.monotonic_nanos);
    return static_cast<uint64_t>(static_cast<double>(latest_.tsc) + offset * tsc_per_nano_now_);
  }
  const double offset = static_cast<double>(value) - static_cast<double>(latest_.tsc);
  return static_cast<uint64_t>(static_cast<double>(latest_.monotonic_nanos) +
                               offset / tsc_per_nano_now_) -
         origin_;
}

void SpanDrain::Drain(const std::function<void(const SpanInterval&)>& emit,
                      std::unordered_set<int32_t>* timed,
                      const std::function<void(const OpenInterval&)>& open) {
  // No thread has written a timed context yet (a process that does not use the context API): no
  // clock pair is needed either, and the next one read spans the time to the first span.
  if (map_->span_logs().claimed() == 0) {
    timed->clear();
    return;
  }
  // Every span drained now was stamped before this pair, most after the last drain's: they are
  // mapped between the two, not extrapolated far from one with the calibration's rate. A pair
  // is exact to the gap of its TSC reads, so pairs a millisecond apart already give the rate.
  const Pair pair = ReadPair();
  if (pair.monotonic_nanos - latest_.monotonic_nanos > kNanosPerMilli) {
    previous_ = latest_;
    latest_ = pair;
    UpdateRate();
  }
  // The open intervals first: a span that ended before one of them began was appended before
  // its begin was stored, so the drain below sees it. Their begins are converted after the
  // records that may end where they begin.
  std::vector<OpenInterval> intervals = ReadOpenIntervals(timed);
  SpanLogPool& pool = map_->span_logs();
  // The pool hands a log's records over together, and most are its own thread's: the owner's
  // entry is looked up once per run of records, not per record.
  uint64_t cached_key = 0;  // no SpanOwnerKey is 0
  Boundary* cached = nullptr;
  pool.Drain(
      [&](int32_t tid, const SpanRecord& record, uint64_t lost_since) {
        SpanInterval span;
        span.tid = tid;
        span.virtual_thread_id = record.owner & ~kAfterLoss;
        // One lookup for both: the previous interval's end is this one's begin, then this end.
        const uint64_t key = SpanOwnerKey(tid, span.virtual_thread_id);
        if (key != cached_key) {
          cached = &last_end_[key];  // nodes stay put until the clear below
          cached_key = key;
        }
        Boundary& last = *cached;
        if (lost_since != 0) {
          span.lost_since =
              last.span_ticks == lost_since ? last.session_ticks : ToSessionTicks(lost_since);
        }
        span.begin_ticks = last.span_ticks == record.begin_ticks
                               ? last.session_ticks
                               : ToSessionTicks(record.begin_ticks);
        span.end_ticks = ToSessionTicks(record.end_ticks);
        last = Boundary{record.end_ticks, span.end_ticks};
        span.context.trace_id_high = record.trace_id_high;
        span.context.trace_id_low = record.trace_id_low;
        span.context.span_id = record.span_id;
        for (int i = 0; i < kAttributeSlots; i++) span.context.attributes[i] = record.attributes[i];
        emit(span);
      },
      &dropped_);
  for (OpenInterval& interval : intervals) {
    interval.begin_ticks =
        BeginTicks(interval.tid, interval.virtual_thread_id, interval.begin_ticks);
    open(interval);
  }
  // Bounded: the entries of virtual threads that ended are never looked up again.
  if (last_end_.size() > kMaxBoundaries) last_end_.clear();
}

uint64_t SpanDrain::BeginTicks(int32_t tid, uint64_t virtual_thread_id, uint64_t span_ticks) {
  auto last = last_end_.find(SpanOwnerKey(tid, virtual_thread_id));
  return last != last_end_.end() && last->second.span_ticks == span_ticks
             ? last->second.session_ticks
             : ToSessionTicks(span_ticks);
}

std::vector<SpanDrain::OpenInterval> SpanDrain::ReadOpenIntervals(
    std::unordered_set<int32_t>* timed) const {
  std::vector<OpenInterval> intervals;
  if (timed != nullptr) timed->clear();
  SpanLogPool& pool = map_->span_logs();
  const uint64_t now = clock_->Now();
  for (size_t i = 0; i < pool.claimed(); i++) {
    const SpanLog* log = pool.log(i);
    if (log->state.load(std::memory_order_acquire) != SpanLog::kOwned) continue;
    const int32_t tid = log->tid.load(std::memory_order_relaxed);
    if (timed != nullptr) timed->insert(tid);
    const ContextBlock* block = map_->BlockFor(tid);
    OpenInterval interval{tid, 0, 0, now, {}};
    if (block != nullptr &&
        ReadOpenInterval(*block, *log, &interval.begin_ticks, &interval.virtual_thread_id,
                         &interval.context) &&
        interval.begin_ticks != 0) {
      intervals.push_back(interval);
    }
  }
  return intervals;
}

void SpanDrain::DrainOpen(const std::function<void(const SpanInterval&)>& emit) {
  for (const OpenInterval& open : ReadOpenIntervals(nullptr)) {
    if (open.context.empty()) continue;
    SpanInterval span;
    span.tid = open.tid;
    span.virtual_thread_id = open.virtual_thread_id;
    span.context = open.context;
    span.begin_ticks = BeginTicks(open.tid, open.virtual_thread_id, open.begin_ticks);
    span.end_ticks = open.read_ticks;
    span.closed = false;
    emit(span);
  }
}

}  // namespace ctxprof
