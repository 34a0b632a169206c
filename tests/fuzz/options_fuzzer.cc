// libFuzzer target for the option parser (profiler/options.h): ParseOptions, ParseDuration,
// ParseBytes and ParseSignal on arbitrary text. Beyond "no crash" it checks the parser's
// contract: a successful parse yields values within the documented ranges, a failed parse
// explains itself (kInvalidArgument naming an option), a failed value parse leaves its output
// untouched, and parsing is deterministic.
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "context/context_block.h"
#include "profiler/options.h"

namespace ctxprof {
namespace {

// Aborts with the input and the broken invariant, so the crash report says what went wrong.
void Check(bool condition, const char* invariant, std::string_view input) {
  if (condition) return;
  fprintf(stderr, "invariant violated: %s\ninput: '%.*s'\n", invariant,
          static_cast<int>(input.size()), input.data());
  abort();
}

bool SameOptions(const Options& a, const Options& b) {
  return a.cpu_engine == b.cpu_engine && a.cpu_interval_ns == b.cpu_interval_ns &&
         a.wall_enabled == b.wall_enabled && a.wall_interval_ns == b.wall_interval_ns &&
         a.filter_context == b.filter_context &&
         a.wall_threads_per_tick == b.wall_threads_per_tick && a.depth == b.depth &&
         a.unwind == b.unwind && a.clock == b.clock && a.signal == b.signal &&
         a.wall_signal == b.wall_signal && a.buffer_slots == b.buffer_slots && a.file == b.file &&
         a.repository == b.repository && a.attributes_given == b.attributes_given &&
         a.attributes == b.attributes && a.jfr.chunk_size_bytes == b.jfr.chunk_size_bytes &&
         a.jfr.chunk_time_ns == b.jfr.chunk_time_ns &&
         a.jfr.max_size_bytes == b.jfr.max_size_bytes && a.jfr.max_age_ns == b.jfr.max_age_ns &&
         a.jfr.flush_interval_ns == b.jfr.flush_interval_ns &&
         a.jfr.cpu_samples_as_ctxprof == b.jfr.cpu_samples_as_ctxprof;
}

bool IsUsableSignal(int signal) {
  return signal > 0 && signal <= SIGRTMAX && signal != SIGKILL && signal != SIGSTOP &&
         signal != SIGSEGV && signal != SIGBUS && signal != SIGILL && signal != SIGFPE &&
         signal != SIGABRT;
}

// A JFR writer duration: 0 (writer default) or [1ms, 365 days].
bool IsWriterDuration(uint64_t nanos) {
  return nanos == 0 || (nanos >= kNanosPerMilli && nanos <= 365ull * 24 * 3600 * kNanosPerSecond);
}

void CheckParsedOptions(const Options& options, std::string_view text) {
  Check(options.cpu_interval_ns >= Options::kMinCpuIntervalNs &&
            options.cpu_interval_ns <= Options::kMaxIntervalNs,
        "interval within [100us, 1h]", text);
  Check(options.wall_interval_ns >= Options::kMinWallIntervalNs &&
            options.wall_interval_ns <= Options::kMaxIntervalNs,
        "wall interval within [1ms, 1h]", text);
  Check(options.wall_threads_per_tick >= 1 &&
            options.wall_threads_per_tick <= Options::kMaxWallThreadsPerTick,
        "threads within [1, 4096]", text);
  Check(options.depth >= 1 && options.depth <= kMaxStackDepth, "depth within [1, 2048]", text);
  Check(options.buffer_slots >= Options::kMinBufferSlots &&
            options.buffer_slots <= Options::kMaxBufferSlots,
        "buffer within [16, 65536]", text);
  Check(IsUsableSignal(options.signal), "signal is catchable and not a fault signal", text);
  Check(IsUsableSignal(options.wall_signal), "wallsignal is catchable and not a fault signal",
        text);
  Check(options.cpu_engine != CpuEngineKind::kNone || options.wall_enabled ||
            options.alloc_interval_bytes != 0 || options.lock_enabled,
        "some engine samples or some runtime event is recorded", text);
  Check(options.cpu_engine == CpuEngineKind::kNone || !options.wall_enabled ||
            options.signal != options.wall_signal,
        "cpu and wall engines use different signals", text);
  Check(options.file.empty() || options.repository.empty(), "not both file= and repository=", text);
  Check(!options.filter_context || options.wall_enabled, "filter=context only with wall", text);
  Check(options.attributes.size() <= static_cast<size_t>(kAttributeSlots),
        "at most kAttributeSlots attributes", text);
  for (const std::string& name : options.attributes) {
    Check(!name.empty(), "attribute names are not empty", text);
  }
  Check(options.attributes_given || options.attributes.empty(), "attributes only when given", text);
  Check(IsWriterDuration(options.jfr.chunk_time_ns) && IsWriterDuration(options.jfr.max_age_ns) &&
            IsWriterDuration(options.jfr.flush_interval_ns),
        "writer durations 0 or within [1ms, 365d]", text);
}

void CheckParseOptions(std::string_view text) {
  const StatusOr<Options> parsed = ParseOptions(text);
  if (!parsed.ok()) {
    // Every message names the offending option or says what is wrong with the option string.
    Check(parsed.status().message().find("option") != std::string::npos,
          "the error mentions an option", text);
    Check(parsed.status().code() == StatusCode::kInvalidArgument,
          "a bad option is kInvalidArgument", text);
    return;
  }
  CheckParsedOptions(parsed.value(), text);
  StatusOr<Options> again = ParseOptions(text);
  Check(again.ok() && SameOptions(parsed.value(), again.value()), "parsing is deterministic", text);
}

void CheckValueParsers(std::string_view text) {
  constexpr uint64_t kUntouched = 0xfeedfacecafebeefULL;
  uint64_t nanos = kUntouched;
  if (ParseDuration(text, &nanos)) {
    // A duration is digits plus a unit, and the result is a multiple of that unit.
    Check(text.size() >= 2 && text[0] >= '0' && text[0] <= '9', "a duration starts with a digit",
          text);
    const bool unit_ok =
        (text.size() > 2 && text.substr(text.size() - 2) == "ns") ||
        (text.size() > 2 && text.substr(text.size() - 2) == "us") ||
        (text.size() > 2 && text.substr(text.size() - 2) == "ms" && nanos % kNanosPerMilli == 0) ||
        (text.back() == 's' && nanos % kNanosPerSecond == 0) ||
        (text.back() == 'm' && nanos % (60 * kNanosPerSecond) == 0) ||
        (text.back() == 'h' && nanos % (3600 * kNanosPerSecond) == 0) ||
        (text.back() == 'd' && nanos % (24 * 3600 * kNanosPerSecond) == 0);
    Check(unit_ok, "a duration ends with its unit and is a multiple of it", text);
  } else {
    Check(nanos == kUntouched, "a failed ParseDuration leaves the output untouched", text);
  }
  uint64_t bytes = kUntouched;
  if (ParseBytes(text, &bytes)) {
    Check(!text.empty() && text[0] >= '0' && text[0] <= '9', "a size starts with a digit", text);
    const char suffix = text.back();
    const uint64_t unit = suffix == 'k' || suffix == 'K'   ? 1ull << 10
                          : suffix == 'm' || suffix == 'M' ? 1ull << 20
                          : suffix == 'g' || suffix == 'G' ? 1ull << 30
                                                           : 1;
    Check(bytes % unit == 0, "a size is a multiple of its suffix", text);
  } else {
    Check(bytes == kUntouched, "a failed ParseBytes leaves the output untouched", text);
  }
  int signal = -1;
  if (ParseSignal(text, &signal)) {
    Check(IsUsableSignal(signal), "ParseSignal returns a usable signal", text);
  } else {
    Check(signal == -1, "a failed ParseSignal leaves the output untouched", text);
  }
}

}  // namespace
}  // namespace ctxprof

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ctxprof::CheckParseOptions(text);
  ctxprof::CheckValueParsers(text);
  return 0;
}
