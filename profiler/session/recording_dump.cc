#include "profiler/session/recording_dump.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "profiler/jfr/jfr_copy.h"
#include "profiler/jfr_events/jfr_writer.h"

namespace ctxprof {
namespace {

constexpr uint64_t kAggregateSpacingNanos = 1000;

// Aggregated samples have no thread: one stands for all.
class AllThreadsResolver : public ThreadResolver {
 public:
  void Resolve(int32_t, ResolvedThread* out) override { out->name = "[all threads]"; }
};

}  // namespace

PublishedFiles::~PublishedFiles() {
  for (const File& file : files_) ::close(file.fd);
}

Status PublishedFiles::Open(const std::vector<JfrChunkWriter::Published>& published) {
  for (const JfrChunkWriter::Published& file : published) {
    if (file.bytes == 0) continue;
    const int fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      return Status::Io("cannot open " + file.path + " to dump it: " + strerror(err), err);
    }
    files_.push_back(File{file.path, fd, file.bytes});
  }
  return Status();
}

uint64_t PublishedFiles::bytes() const {
  uint64_t total = 0;
  for (const File& file : files_) total += file.bytes;
  return total;
}

Status CopyRecording(const PublishedFiles& files, const std::string& path, bool fold) {
  std::vector<JfrCopySource> sources;
  for (const PublishedFiles::File& file : files.files_) {
    sources.push_back(JfrCopySource{file.path, file.fd, file.bytes});
  }
  Status copied = CopyChunks(sources, path);
  return copied.ok() && fold ? CompactRecordingFile(path, {}) : copied;
}

Status WriteAggregateJfr(Aggregator* aggregator, const AggregateDumpInputs& inputs,
                         const std::string& path) {
  std::vector<RawAggregatedStack> stacks = aggregator->RawStacks();
  // Grouped by context: each context becomes one run, one ctxprof.Context interval.
  std::stable_sort(stacks.begin(), stacks.end(),
                   [](const RawAggregatedStack& a, const RawAggregatedStack& b) {
                     return memcmp(&a.context, &b.context, sizeof(ContextSnapshot)) < 0;
                   });
  AllThreadsResolver threads;
  JfrWriterConfig config;
  config.path = path;
  config.flush_interval_nanos = 0;
  config.engine = "aggregated (dump)";
  config.stack_depth = kMaxStackDepth;
  JfrWriterInputs writer_inputs;
  writer_inputs.clock = inputs.clock;
  writer_inputs.frames = inputs.frames;
  writer_inputs.threads = &threads;
  writer_inputs.dictionary = inputs.dictionary;
  writer_inputs.attributes = inputs.attributes;
  StatusOr<std::unique_ptr<JfrWriter>> opened = JfrWriter::Open(config, writer_inputs);
  if (!opened.ok()) return opened.status();
  JfrWriter* writer = opened.value().get();

  const uint64_t spacing =
      std::max<uint64_t>(1, inputs.clock->TicksPerSecond() / (1000000000 / kAggregateSpacingNanos));
  uint64_t ticks = inputs.clock->Now();
  auto record = std::make_unique<SampleRecord>();
  for (const RawAggregatedStack& stack : stacks) {
    record->tid = 0;
    record->kind = stack.kind;
    record->engine = stack.kind == SampleKind::kWall ? Engine::kWall : Engine::kPerfCpuClock;
    record->flags = 0;
    record->state = stack.state;
    record->context = stack.context;
    record->frame_count =
        static_cast<uint32_t>(std::min<size_t>(stack.frames.size(), kMaxStackDepth));
    std::copy_n(stack.frames.begin(), record->frame_count, record->frames);
    // A wall sample event carries its weight; jdk.ExecutionSample cannot, so a CPU stack becomes
    // one event per interval it stands for.
    const bool wall = stack.kind == SampleKind::kWall;
    const uint64_t events = wall ? 1 : stack.weight;
    for (uint64_t i = 0; i < events; i++) {
      ticks += spacing;
      record->ticks = ticks;
      record->weight =
          wall ? static_cast<uint32_t>(std::min<uint64_t>(stack.weight, UINT32_MAX)) : 1;
      if (Status added = writer->Add(*record); !added.ok()) return added;
    }
  }
  return writer->Close();
}

}  // namespace ctxprof
