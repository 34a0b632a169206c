#include "profiler/sampler/event_recorder.h"

#include <time.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <string>

#include "profiler/sampler/in_flight.h"

namespace ctxprof {
namespace {

EventRecorder::Session g_session;
uint64_t g_session_start_ticks = 0;  // the session clock at Activate
uint64_t g_sampling_interval = 0;    // SamplingInterval(g_session.rules)
std::atomic<bool> g_enabled{false};
InFlight g_in_flight;

// The thinning draws: xorshift64* per thread, seeded on first use. Initial-exec TLS, like the
// rest of the per-thread state the runtime's callbacks touch (no lazy allocation).
__thread uint64_t t_random __attribute__((tls_model("initial-exec"))) = 0;

// A uniform draw in [0, 1).
double NextUniform() {
  if (t_random == 0) {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    t_random = (static_cast<uint64_t>(CachedTid()) * 0x9E3779B97F4A7C15ULL) ^
               static_cast<uint64_t>(now.tv_nsec) ^ 1;
  }
  t_random ^= t_random >> 12;
  t_random ^= t_random << 25;
  t_random ^= t_random >> 27;
  return static_cast<double>((t_random * 0x2545F4914F6CDD1DULL) >> 11) * 0x1.0p-53;
}

// p(s, I) = 1 - exp(-s / I), without cancellation for small s / I.
double SampledProbability(uint64_t object_bytes, uint64_t interval_bytes) {
  return -std::expm1(-static_cast<double>(object_bytes) / static_cast<double>(interval_bytes));
}

// Reads the calling thread's context; *flags gets the record flags of a failed read.
void ReadOwnContext(ContextMap* map, ContextSnapshot* context, uint8_t* flags) {
  *flags = 0;
  ContextBlock* block = map->BlockFor(CachedTid());
  if (block == nullptr) {
    memset(context, 0, sizeof(*context));
    return;
  }
  const ReadStatus status = ReadBlock(*block, context, kSameThreadReadAttempts);
  if (status == ReadStatus::kBusy) *flags |= kSampleContextBusy;
  if (status == ReadStatus::kTorn) *flags |= kSampleContextTorn;
}

}  // namespace

EventRecorder::Event::~Event() {
  if (record_ != nullptr) Publish();
  if (in_flight_ != nullptr) InFlight::Leave(in_flight_);
}

void EventRecorder::Event::Publish() {
  if (record_ == nullptr) return;
  buffer_->Publish(record_);
  record_ = nullptr;
}

void EventRecorder::Activate(const Session& session) {
  g_session = session;
  g_session_start_ticks = session.clock->Now();
  g_sampling_interval = SamplingInterval(session.rules);
  g_enabled.store(true, std::memory_order_seq_cst);
}

void EventRecorder::Deactivate() {
  g_enabled.store(false, std::memory_order_seq_cst);
  g_in_flight.Drain();
}

uint64_t EventRecorder::SamplingInterval(const EventRules& rules) {
  if (rules.alloc_interval_bytes == 0) return 0;
  if (!rules.if_context) return rules.alloc_interval_bytes;
  const uint64_t fine = rules.alloc_interval_bytes / kContextIntervalDivisor;
  return fine > 0 ? fine : 1;
}

uint64_t EventRecorder::WaitStartTicks() {
  Event event;  // in flight while the session's clock is read
  return Enter(&event) ? g_session.clock->Now() : 0;
}

uint64_t EventRecorder::AllocationWeight(uint64_t object_bytes, uint64_t interval_bytes) {
  if (object_bytes == 0) return interval_bytes;
  return static_cast<uint64_t>(std::llround(static_cast<double>(object_bytes) /
                                            SampledProbability(object_bytes, interval_bytes)));
}

double EventRecorder::KeepProbability(uint64_t object_bytes, uint64_t coarse_interval,
                                      uint64_t fine_interval) {
  if (object_bytes == 0) return static_cast<double>(fine_interval) / coarse_interval;
  const double keep = SampledProbability(object_bytes, coarse_interval) /
                      SampledProbability(object_bytes, fine_interval);
  return keep < 1 ? keep : 1;
}

Dictionary* EventRecorder::class_names() {
  static Dictionary* const names = [] {
    Dictionary::Options options;
    options.max_values = 65536;
    options.max_total_bytes = 8u << 20;
    options.max_value_bytes = 1024;
    std::string ignored;
    return Dictionary::Create(options, &ignored).release();
  }();
  return names;
}

void EventRecorder::SeedThreadRandom(uint64_t seed) { t_random = seed; }

bool EventRecorder::Enter(Event* event) {
  std::atomic<int32_t>* stripe = g_in_flight.Enter(CachedTid());
  if (!g_enabled.load(std::memory_order_seq_cst)) {
    InFlight::Leave(stripe);
    return false;
  }
  event->in_flight_ = stripe;
  return true;
}

bool EventRecorder::Claim(SampleKind kind, uint64_t ticks, const ContextSnapshot& context,
                          uint8_t context_flags, Event* event) {
  SampleBuffer* buffer = g_session.buffer;
  SampleRecord* record = buffer->TryClaim();
  if (record == nullptr) {
    buffer->CountDrop();
    return false;
  }
  record->ticks = ticks;
  record->tid = CachedTid();
  record->kind = kind;
  record->engine = Engine::kRuntime;
  record->flags = context_flags;
  record->state = ThreadState::kUnknown;
  record->weight = 1;
  record->context = context;
  memset(&record->event, 0, sizeof(record->event));
  record->frame_count = 0;
  event->buffer_ = buffer;
  event->record_ = record;
  event->max_frames_ = g_session.depth;
  return true;
}

bool EventRecorder::BeginAllocation(uint64_t object_bytes, Event* event) {
  if (!Enter(event)) return false;
  const EventRules& rules = g_session.rules;
  if (rules.alloc_interval_bytes == 0) return false;
  ContextSnapshot context;
  uint8_t flags;
  ReadOwnContext(g_session.context_map, &context, &flags);
  uint64_t interval = g_sampling_interval;
  if (rules.if_context && context.empty()) {
    // Thin the finer sampling down to alloc= outside contexts (see the header).
    if (NextUniform() >=
        KeepProbability(object_bytes, rules.alloc_interval_bytes, g_sampling_interval)) {
      return false;
    }
    interval = rules.alloc_interval_bytes;
  }
  if (!Claim(SampleKind::kAllocation, g_session.clock->Now(), context, flags, event)) return false;
  event->record_->event.amount = AllocationWeight(object_bytes, interval);
  event->record_->event.object_bytes = object_bytes;
  return true;
}

bool EventRecorder::BeginWait(SampleKind kind, uint64_t start_ticks, Event* event) {
  if (!Enter(event)) return false;
  const EventRules& rules = g_session.rules;
  const uint64_t ticks = g_session.clock->Now();
  if (!rules.lock_enabled || start_ticks < g_session_start_ticks || start_ticks > ticks) {
    return false;
  }
  const uint64_t waited_nanos =
      static_cast<uint64_t>(static_cast<long double>(ticks - start_ticks) * kNanosPerSecond /
                            g_session.clock->TicksPerSecond());
  ContextSnapshot context;
  uint8_t flags;
  ReadOwnContext(g_session.context_map, &context, &flags);
  const bool in_context = rules.if_context && !context.empty();
  if (waited_nanos < rules.lock_threshold_ns && !in_context) return false;
  if (!Claim(kind, ticks, context, flags, event)) return false;
  event->record_->event.amount = ticks - start_ticks;
  return true;
}

}  // namespace ctxprof
