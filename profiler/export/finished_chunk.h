// FinishedChunk: what the JFR writer hands an exporter when a chunk file of a repository is
// complete: its path, its time span and the labels of every context its events carry. The one
// type the writer (profiler/jfr_events) and the exporters (uploader.h) share.
//
// Thread safety: a plain value, moved from the writer's thread to the exporter's queue.
#ifndef CTXPROF_PROFILER_EXPORT_FINISHED_CHUNK_H_
#define CTXPROF_PROFILER_EXPORT_FINISHED_CHUNK_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ctxprof {

// A finished chunk file (repository mode) and its contexts, for an uploader.
struct FinishedChunk {
  struct Label {
    std::string name;
    std::string value;
  };
  struct Context {
    uint64_t id;                // the contextId the chunk's events carry
    std::vector<Label> labels;  // "trace_id", "span_id" (hex) and each set attribute
  };
  std::string path;
  int64_t start_epoch_nanos = 0;
  int64_t end_epoch_nanos = 0;
  std::vector<Context> contexts;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_EXPORT_FINISHED_CHUNK_H_
