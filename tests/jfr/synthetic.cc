#include "tests/jfr/synthetic.h"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "profiler/jfr/jfr_metadata.h"
#include "profiler/jfr/native_method.h"

namespace ctxprof {

namespace {

constexpr uint64_t kNativeBase = 0x7f0000000000ULL;

bool IsNative(const RawFrame& frame) { return frame.kind == FrameKind::kNative; }

std::string JsonString(const std::string& value) {
  std::string out = "\"";
  for (unsigned char c : value) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escaped[8];
      snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string Hex(uint64_t value, int digits) {
  char buffer[17];
  snprintf(buffer, sizeof(buffer), "%0*llx", digits, static_cast<unsigned long long>(value));
  return buffer;
}

}  // namespace

void FakeFrameResolver::Resolve(const RawFrame& frame, ResolvedFrame* out) {
  if (IsNative(frame)) {
    const uint64_t function = (frame.id - kNativeBase) / 16;
    out->class_name = "libfake.so";
    if (function >= kFirstCppFunction && function < kFirstCppFunction + kCppSymbols.size()) {
      SplitNativeSymbol(kCppSymbols[function - kFirstCppFunction], &out->method_name,
                        &out->descriptor);
    } else {
      out->method_name = "native_function_" + std::to_string(function);
      out->descriptor = "()L;";
    }
    out->type = JfrFrameType::kNative;
  } else {
    out->class_name = "com/example/svc/Handler" + std::to_string(frame.id % 7);
    out->method_name = frame.id % 11 == 0 ? "größe_" + std::to_string(frame.id)
                                          : "method" + std::to_string(frame.id);
    out->descriptor = "(I)V";
    out->type = frame.kind == FrameKind::kJavaInterpreted ? JfrFrameType::kInterpreted
                : frame.kind == FrameKind::kJavaInlined   ? JfrFrameType::kInlined
                                                          : JfrFrameType::kJitCompiled;
  }
  out->line_number = LineOf(frame);
}

int32_t FakeFrameResolver::LineOf(const RawFrame& frame) {
  return IsNative(frame) ? -1 : 100 + frame.bci;
}

std::string FakeFrameResolver::DisplayName(const RawFrame& frame) {
  ResolvedFrame resolved;
  FakeFrameResolver().Resolve(frame, &resolved);
  std::string name = resolved.class_name;
  for (char& c : name) {
    if (c == '/') c = '.';
  }
  return name + "." + resolved.method_name;
}

void FakeThreadResolver::Resolve(int32_t tid, ResolvedThread* out) {
  out->name = NameOf(tid);
  out->java_thread_id = JavaIdOf(tid);
}

std::string FakeThreadResolver::NameOf(int32_t tid) {
  return (tid % 2 == 1 ? "worker-" : "native-") + std::to_string(tid);
}

int64_t FakeThreadResolver::JavaIdOf(int32_t tid) { return tid % 2 == 1 ? 1000 + tid : 0; }

void Workload::Fill(size_t i, SampleRecord* out) const {
  const ExpectedSample& expected = samples[i];
  const std::vector<RawFrame>& stack = stacks[expected.stack];
  out->ticks = expected.ticks;
  out->tid = expected.tid;
  out->kind = expected.kind;
  out->engine = !IsSample(expected.kind)             ? Engine::kRuntime
                : expected.kind == SampleKind::kWall ? Engine::kWall
                                                     : Engine::kPerfCpuClock;
  out->flags = stack_truncated[expected.stack] ? kSampleTruncated : 0;
  out->state = expected.kind == SampleKind::kWall ? ThreadState::kSleeping : ThreadState::kRunning;
  out->weight = 1;
  out->context = expected.context < 0 ? ContextSnapshot{} : contexts[expected.context];
  out->event = expected.event;
  out->frame_count = static_cast<uint32_t>(stack.size());
  for (size_t f = 0; f < stack.size(); f++) out->frames[f] = stack[f];
}

JfrWriterInputs Workload::Inputs(const Clock* clock, FrameResolver* frames,
                                 ThreadResolver* threads) const {
  JfrWriterInputs inputs;
  inputs.clock = clock;
  inputs.frames = frames;
  inputs.threads = threads;
  inputs.dictionary = dictionary.get();
  inputs.attributes = attributes.get();
  return inputs;
}

std::map<std::string, std::string> Workload::ContextFields(int index) const {
  const ContextSnapshot& context = contexts[index];
  std::map<std::string, std::string> fields;
  if (context.trace_id_high != 0 || context.trace_id_low != 0) {
    fields["traceId"] = Hex(context.trace_id_high, 16) + Hex(context.trace_id_low, 16);
  }
  if (context.span_id != 0) fields["spanId"] = Hex(context.span_id, 16);
  for (int slot = 0; slot < attributes->size(); slot++) {
    if (context.attributes[slot] != 0) {
      fields[JfrMetadata::FieldNameOf(attributes->NameOf(slot))] =
          std::string(dictionary->ValueOf(context.attributes[slot]));
    }
  }
  return fields;
}

std::map<std::string, std::string> Workload::FieldsOf(const JfrEvent& context) const {
  std::map<std::string, std::string> fields;
  if (!context.TraceId().empty()) fields["traceId"] = context.TraceId();
  if (!context.SpanId().empty()) fields["spanId"] = context.SpanId();
  for (int slot = 0; slot < attributes->size(); slot++) {
    const std::string name = JfrMetadata::FieldNameOf(attributes->NameOf(slot));
    const JfrValue& value = context.Field(name);
    if (!value.is_null()) fields[name] = value.string();
  }
  return fields;
}

std::string Workload::ExpectationJson() const {
  std::string json = "{\"samples\": [\n";
  for (size_t i = 0; i < samples.size(); i++) {
    const ExpectedSample& sample = samples[i];
    json += "{\"kind\": \"";
    json += sample.kind == SampleKind::kWall ? "wall" : "cpu";
    json += "\", \"tid\": " + std::to_string(sample.tid);
    json += ", \"thread\": " + JsonString(FakeThreadResolver::NameOf(sample.tid));
    json += ", \"javaThreadId\": " + std::to_string(FakeThreadResolver::JavaIdOf(sample.tid));
    json += ", \"ticks\": " + std::to_string(sample.ticks);
    json += ", \"truncated\": ";
    json += stack_truncated[sample.stack] ? "true" : "false";
    json += ", \"frames\": [";
    const std::vector<RawFrame>& stack = stacks[sample.stack];
    for (size_t f = 0; f < stack.size(); f++) {
      if (f > 0) json += ", ";
      // The recording holds line 0 for native frames (StackPool), as async-profiler's does.
      json += "[" + JsonString(FakeFrameResolver::DisplayName(stack[f])) + ", " +
              std::to_string(IsNative(stack[f]) ? 0 : FakeFrameResolver::LineOf(stack[f])) + "]";
    }
    json += "], \"context\": ";
    if (sample.context < 0) {
      json += "null";
    } else {
      json += "{";
      bool first = true;
      for (const auto& [name, value] : ContextFields(sample.context)) {
        if (!first) json += ", ";
        first = false;
        json += JsonString(name) + ": " + JsonString(value);
      }
      json += "}";
    }
    json += i + 1 < samples.size() ? "},\n" : "}\n";
  }
  json += "]}\n";
  return json;
}

std::string FreshPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
  if (system(("rm -rf '" + path + "'").c_str()) != 0) {
    fprintf(stderr, "cannot clear %s\n", path.c_str());
    abort();
  }
  return path;
}

std::vector<std::string> ListFolder(const std::string& folder) {
  std::vector<std::string> names;
  DIR* dir = opendir(folder.c_str());
  if (dir == nullptr) return names;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') names.push_back(folder + "/" + entry->d_name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

Workload OneStackWorkload(const std::vector<std::string>& attributes) {
  Workload workload;
  std::string error;
  workload.dictionary = Dictionary::Create(Dictionary::Options{}, &error);
  if (workload.dictionary == nullptr || !workload.attributes->Register(attributes, &error)) {
    fprintf(stderr, "OneStackWorkload: %s\n", error.c_str());
    abort();
  }
  workload.stacks = {{RawFrame{42, 3, FrameKind::kJavaJit}}};
  workload.stack_truncated = {false};
  return workload;
}

SpanScene::SpanScene(uint64_t span_id, const std::string& endpoint,
                     const std::vector<std::string>& attributes)
    : ms(clock.TicksPerSecond() / 1000),
      t0(clock.Now() + ms),
      workload(OneStackWorkload(attributes)) {
  context.span_id = span_id;
  context.attributes[0] = workload.dictionary->Intern(endpoint);
  workload.contexts = {context};
}

ExpectedSample SpanScene::CpuAt(uint64_t ticks) const {
  return ExpectedSample{SampleKind::kCpu, kTid, ticks, 0, 0, {}};
}

int SpanScene::AddContext(uint64_t span_id, const std::string& endpoint) {
  ContextSnapshot snapshot{};
  snapshot.span_id = span_id;
  snapshot.attributes[0] = workload.dictionary->Intern(endpoint);
  workload.contexts.push_back(snapshot);
  return static_cast<int>(workload.contexts.size() - 1);
}

ExpectedSample SpanScene::CpuIn(uint64_t ticks, int context_index) const {
  ExpectedSample sample = CpuAt(ticks);
  sample.context = context_index;
  return sample;
}

Status SpanScene::Open(const std::string& path, bool context_id) {
  config.path = path;
  config.engine = "perf_cpu_clock";
  config.context_id = context_id;
  StatusOr<std::unique_ptr<JfrWriter>> opened =
      JfrWriter::Open(config, workload.Inputs(&clock, &frames, &threads));
  if (!opened.ok()) return opened.status();
  writer = std::move(opened.value());
  writer->AddTimedThreads({kTid});
  return Status();
}

Status SpanScene::AddSample(size_t i) {
  SampleRecord record;
  workload.Fill(i, &record);
  clock.Set(record.ticks);
  return writer->Add(record);
}

Status SpanScene::Close(uint64_t end_ticks) {
  writer->SettleSpans(UINT64_MAX);
  clock.Set(end_ticks);
  return writer->Close();
}

std::vector<std::pair<int64_t, int64_t>> SpanScene::CutParts(const JfrReader& reader,
                                                             uint64_t record_ticks,
                                                             uint64_t end_ticks) const {
  const int64_t cut = CutAfter(reader, static_cast<int64_t>(record_ticks));
  return {{static_cast<int64_t>(t0), cut}, {cut, static_cast<int64_t>(end_ticks)}};
}

Workload MakeWorkload(int threads, int samples_per_thread, uint64_t first_ticks,
                      uint64_t spacing_ticks, uint32_t seed) {
  Workload workload;
  std::string error;
  Dictionary::Options options;
  options.max_value_bytes = Dictionary::kMaxValueBytesLimit;
  workload.dictionary = Dictionary::Create(options, &error);
  if (!workload.attributes->Register({"http.route", "tenant-id", "region"}, &error)) abort();

  std::mt19937 random(seed);
  // Stacks: shallow Java stacks, mixed native/Java stacks, one 250-frame stack and one
  // truncated 300-frame stack.
  auto java_frame = [&random](uint64_t method) {
    const FrameKind kinds[] = {FrameKind::kJavaJit, FrameKind::kJavaInterpreted,
                               FrameKind::kJavaInlined};
    return RawFrame{method, static_cast<int32_t>(random() % 50), kinds[random() % 3]};
  };
  for (int s = 0; s < 40; s++) {
    std::vector<RawFrame> stack;
    const int depth = 1 + static_cast<int>(random() % 40);
    for (int f = 0; f < depth; f++) {
      if (s % 3 == 0 && f < 3) {
        stack.push_back(RawFrame{kNativeBase + (random() % 20) * 16, -1, FrameKind::kNative});
      } else {
        stack.push_back(java_frame(1 + random() % 200));
      }
    }
    workload.stacks.push_back(stack);
    workload.stack_truncated.push_back(false);
  }
  // A sample whose stack walk produced nothing (an empty stack trace).
  workload.stacks.push_back({});
  workload.stack_truncated.push_back(false);
  for (int depth : {250, 300}) {
    std::vector<RawFrame> stack;
    for (int f = 0; f < depth; f++) stack.push_back(java_frame(1 + (f * 7) % 500));
    workload.stacks.push_back(stack);
    workload.stack_truncated.push_back(depth == 300);
  }

  // Values: ASCII, non-ASCII, and one of exactly the largest length a dictionary allows
  // (4,096 bytes, multi-byte characters).
  std::vector<uint32_t> values;
  for (const std::string& value :
       {std::string("/api/v1/orders"), std::string("/api/v1/größe/ä"), std::string("tenant-42"),
        std::string("テナント"), std::string("eu-west-1"), std::string("us-east-1 \"quoted\"")}) {
    values.push_back(workload.dictionary->Intern(value));
  }
  std::string longest;
  while (longest.size() + 2 <= Dictionary::kMaxValueBytesLimit) longest += "é";  // 2 bytes each
  values.push_back(workload.dictionary->Intern(longest));

  for (int c = 0; c < 30; c++) {
    ContextSnapshot context{};
    context.trace_id_high = c % 5 == 4 ? 0 : (static_cast<uint64_t>(random()) << 32) | random();
    context.trace_id_low = (static_cast<uint64_t>(random()) << 32) | random();
    context.span_id = c % 7 == 6 ? 0 : (static_cast<uint64_t>(random()) << 32) | random() | 1;
    if (c % 2 == 1) {  // ids with the top bit set: negative longs in the recording
      context.trace_id_low |= uint64_t{1} << 63;
      if (context.span_id != 0) context.span_id |= uint64_t{1} << 63;
    }
    for (int slot = 0; slot < 3; slot++) {
      context.attributes[slot] = (c + slot) % 4 == 3 ? 0 : values[random() % values.size()];
    }
    workload.contexts.push_back(context);
  }

  // Per thread: runs of 1..8 samples under one context (or none).
  std::vector<int> run_left(threads, 0), run_context(threads, -1);
  uint64_t ticks = first_ticks;
  for (int i = 0; i < samples_per_thread; i++) {
    for (int t = 0; t < threads; t++) {
      if (run_left[t] == 0) {
        run_left[t] = 1 + static_cast<int>(random() % 8);
        run_context[t] =
            random() % 5 == 0 ? -1 : static_cast<int>(random() % workload.contexts.size());
      }
      run_left[t]--;
      ExpectedSample sample;
      sample.kind = (t + i / 3) % 2 == 0 ? SampleKind::kCpu : SampleKind::kWall;
      sample.tid = 100 + t;
      sample.ticks = ticks;
      sample.stack = random() % 10 == 0 ? static_cast<uint32_t>(40 + random() % 3)
                                        : static_cast<uint32_t>(random() % 40);
      sample.context = run_context[t];
      workload.samples.push_back(sample);
      ticks += spacing_ticks;
    }
  }
  return workload;
}

Status WriteWorkload(const Workload& workload, FakeClock* clock, uint64_t spacing_ticks,
                     const JfrWriterConfig& config, std::function<uint64_t()> dropped_samples,
                     std::function<uint64_t()> dropped_spans) {
  FakeFrameResolver frames;
  FakeThreadResolver threads;
  JfrWriterInputs inputs = workload.Inputs(clock, &frames, &threads);
  inputs.dropped_samples = std::move(dropped_samples);
  inputs.dropped_spans = std::move(dropped_spans);
  inputs.class_names = workload.class_names.get();
  StatusOr<std::unique_ptr<JfrWriter>> opened = JfrWriter::Open(config, inputs);
  if (!opened.ok()) return opened.status();
  JfrWriter* writer = opened.value().get();
  static SampleRecord sample;  // large (kMaxStackDepth frames): not on the stack
  for (size_t i = 0; i < workload.samples.size(); i++) {
    workload.Fill(i, &sample);
    clock->Set(sample.ticks);
    if (Status added = writer->Add(sample); !added.ok()) return added;
  }
  clock->Advance(spacing_ticks);
  return writer->Close();
}

int64_t CutAfter(const JfrReader& reader, int64_t ticks) {
  int64_t cut = ticks + 1;
  while (reader.EpochNanosOf(cut) < reader.EpochNanosOf(ticks) + 2) cut++;
  return cut;
}

std::vector<std::pair<int64_t, int64_t>> ContextIntervals(const JfrReader& reader) {
  std::vector<std::pair<int64_t, int64_t>> intervals;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() != "ctxprof.Context") continue;
    intervals.push_back(
        {event.start_ticks(), event.start_ticks() + event.Field("duration").integer()});
  }
  std::sort(intervals.begin(), intervals.end());
  return intervals;
}

}  // namespace ctxprof
