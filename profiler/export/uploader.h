// Uploader: the one thread that sends each finished chunk file of a repository to a server:
// a Pyroscope server (upload=; pyroscope_ingest.h has the request) or an OTLP collector (otlp=;
// otlp_exporter.h). What is sent for a chunk is the config's make_request; the rest (queue,
// retries, drops, stop) is the same for both.
//
// The JFR writer's thread hands chunks over with Enqueue(), which only opens the file (so
// retention may delete it meanwhile) and queues it: no I/O wait, no lock held during I/O.
// The queue is bounded (queue_capacity): when full, the oldest queued chunk is dropped. A
// chunk is retried after network errors and HTTP 429 and 5xx (or the config's retry_statuses)
// with exponential backoff (first_backoff doubling up to max_backoff; a Retry-After header's
// delay instead when the server sends one) for at most max_attempts attempts; other statuses
// (4xx: a request the server will never take, e.g. 401) drop it at once. Every drop is counted
// (dropped()) and printed once ("ctxprof: upload: ..." or "ctxprof: otlp: ...");
// ctxprof.ProfilerCounters records uploadedChunks and droppedUploads (the sum over both when both
// run).
//
// Stop(bound) stops taking chunks and lets the thread send what is queued until `bound` has
// passed; what is left then is dropped. Every wait of the thread (poll, backoff) ends by that
// deadline, so Stop returns soon after `bound`, and never later than `bound` + kFinishMargin: if
// a call that cannot be bounded (a slow DNS lookup) holds the thread longer, Stop leaves it
// behind detached, with the state it uses, so a JVM's exit is never held up longer.
//
// The thread blocks every asynchronous signal (profiling signals included, so it is never a
// sample; SIGPIPE from a closed TLS connection stays pending on it). Secrets (the
// Authorization and X-Scope-OrgID values, OTEL_EXPORTER_OTLP_HEADERS) live only in `headers`
// and are never printed.
//
// Thread safety: Enqueue from one thread (the writer); Stop, BeginStop and AwaitStop from one
// thread; uploaded(),
// dropped() and tid() from any thread.
#ifndef CTXPROF_PROFILER_EXPORT_UPLOADER_H_
#define CTXPROF_PROFILER_EXPORT_UPLOADER_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "profiler/base/status.h"
#include "profiler/export/finished_chunk.h"
#include "profiler/export/http_client.h"
#include "profiler/options.h"

namespace ctxprof {

// The request for one chunk: target (path and query), Content-Type and body (Content-Encoding
// and the like go in `headers`).
struct ChunkRequest {
  std::string target;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

struct UploaderConfig {
  HttpServer server;
  // The option the exporter comes from ("upload", "otlp"): its notices start with it.
  std::string option = "upload";
  // Where requests go, for messages ("POST /ingest").
  std::string what;
  // The HTTP statuses that are retried; empty = 429 and every 5xx.
  std::vector<int> retry_statuses;
  // What a 2xx response's body says that the user should read (e.g. a partial rejection);
  // "" = nothing. May be empty (not called).
  std::function<std::string(const std::string& body_start)> accepted_note;
  // A hint added to the message of a 401 or 403.
  std::string credentials_hint;
  // The request for `chunk`, whose file holds `file`; called on the uploader's thread.
  std::function<StatusOr<ChunkRequest>(const FinishedChunk& chunk, std::string file)> make_request;
  // Sent with every request; may hold secrets (Authorization, X-Scope-OrgID, OTLP headers).
  std::vector<std::pair<std::string, std::string>> headers;
  size_t queue_capacity = 8;
  int max_attempts = 5;
  std::chrono::milliseconds first_backoff{1000};
  std::chrono::milliseconds max_backoff{30000};
  std::chrono::milliseconds request_timeout{10000};
};

// The Pyroscope configuration `options` asks for (options.upload.url set): reads the secrets it
// names (environment variables or files) and computes the sample rate. kInvalidArgument naming the
// option and the variable or file, never its content.
StatusOr<UploaderConfig> UploaderConfigFromOptions(const Options& options);

class Uploader {
 public:
  // Starts the thread. Fails as HttpClient::Create does when TLS cannot be set up (https).
  static StatusOr<std::unique_ptr<Uploader>> Start(const UploaderConfig& config);
  // Stop(kDefaultBound) unless Stop or BeginStop was called.
  ~Uploader();
  Uploader(const Uploader&) = delete;
  Uploader& operator=(const Uploader&) = delete;

  static constexpr std::chrono::milliseconds kDefaultBound{2000};
  static constexpr std::chrono::milliseconds kFinishMargin{1000};

  void Enqueue(FinishedChunk&& chunk);
  // BeginStop(bound) then AwaitStop(): several uploaders (upload= and otlp=) then share one
  // bound instead of taking one each.
  void Stop(std::chrono::milliseconds bound);
  // Stops taking chunks; the thread has `bound` from now for what is queued.
  void BeginStop(std::chrono::milliseconds bound);
  // Waits for the thread until the bound of BeginStop + kFinishMargin.
  void AwaitStop();

  uint64_t uploaded() const;
  uint64_t dropped() const;
  pid_t tid() const { return tid_; }

 private:
  struct State;
  explicit Uploader(std::shared_ptr<State> state) : state_(std::move(state)) {}

  std::shared_ptr<State> state_;
  pid_t tid_ = 0;
  bool stopped_ = false;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_EXPORT_UPLOADER_H_
