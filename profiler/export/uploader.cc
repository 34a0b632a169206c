#include "profiler/export/uploader.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "profiler/export/pyroscope_ingest.h"
#include "profiler/notice.h"
#include "profiler/wire/gzip.h"

namespace ctxprof {

namespace {

using SteadyClock = std::chrono::steady_clock;

// `option`=env:NAME|file:PATH -> the secret. Messages name the reference, never the value.
StatusOr<std::string> ReadSecret(const char* option, const SecretSource& source) {
  const std::string where = std::string(option) + "=" +
                            (source.kind == SecretSource::kEnvironment ? "env:" : "file:") +
                            source.reference;
  std::string value;
  if (source.kind == SecretSource::kEnvironment) {
    const char* text = getenv(source.reference.c_str());
    if (text == nullptr || *text == '\0') {
      return Status::InvalidArgument(where + ": the environment variable is not set or empty");
    }
    value = text;
  } else {
    std::ifstream file(source.reference, std::ios::binary);
    if (!file.is_open()) {
      return Status::InvalidArgument(where + ": cannot read the file: " + strerror(errno));
    }
    std::stringstream text;
    text << file.rdbuf();
    value = text.str();
    if (!value.empty() && value.back() == '\n') value.pop_back();
    if (!value.empty() && value.back() == '\r') value.pop_back();
  }
  if (value.empty() || value.find_first_of("\r\n") != std::string::npos) {
    return Status::InvalidArgument(where + ": the secret is empty or spans several lines");
  }
  return value;
}

std::string Base64(const std::string& text) {
  std::string out(4 * ((text.size() + 2) / 3) + 1, '\0');
  const int length = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(&out[0]),
                                     reinterpret_cast<const unsigned char*>(text.data()),
                                     static_cast<int>(text.size()));
  out.resize(static_cast<size_t>(length));
  return out;
}

// Printable ASCII of a response body, for a message.
std::string Excerpt(const std::string& body) {
  std::string out;
  for (char c : body.substr(0, 200)) out += (c >= 0x20 && c < 0x7f) ? c : ' ';
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// The multipart request pyroscope_ingest.h describes, for a chunk whose file holds `file`.
StatusOr<ChunkRequest> PyroscopeRequest(const FinishedChunk& chunk, std::string file,
                                        const std::string& path_prefix, const std::string& name,
                                        uint64_t sample_rate_hz) {
  StatusOr<std::string> jfr = Gzip(file, 6);
  if (!jfr.ok()) return jfr.status();
  std::string labels;
  const std::string snapshot = PyroscopeLabelsSnapshot(chunk.contexts);
  if (!snapshot.empty()) {
    StatusOr<std::string> gzipped = Gzip(snapshot, 6);
    if (!gzipped.ok()) return gzipped.status();
    labels = std::move(gzipped.value());
  }
  std::string boundary;
  std::random_device random;
  do {
    char text[40];
    snprintf(text, sizeof(text), "ctxprof-%08x%08x%08x", random(), random(), random());
    boundary = text;
  } while (jfr.value().find(boundary) != std::string::npos ||
           labels.find(boundary) != std::string::npos);
  ChunkRequest request;
  request.target = PyroscopeIngestTarget(path_prefix, name, chunk.start_epoch_nanos,
                                         chunk.end_epoch_nanos, sample_rate_hz);
  request.content_type = "multipart/form-data; boundary=" + boundary;
  request.body = PyroscopeMultipartBody(boundary, jfr.value(), labels);
  return request;
}

}  // namespace

StatusOr<UploaderConfig> UploaderConfigFromOptions(const Options& options) {
  const UploadOptions& upload = options.upload;
  UploaderConfig config;
  config.server = HttpServer{upload.https, upload.host, upload.port, upload.ca_file};
  config.option = "upload";
  config.what = "POST " + upload.path_prefix + "/ingest";
  config.credentials_hint = " (check uploadtoken=, uploadbasic= and uploadtenant=)";
  const uint64_t interval = options.cpu_engine != CpuEngineKind::kNone ? options.cpu_interval_ns
                                                                       : options.wall_interval_ns;
  config.make_request = [path_prefix = upload.path_prefix,
                         name = PyroscopeName(upload.name, upload.labels),
                         sample_rate_hz = kNanosPerSecond / interval](  // the parser checked it
                            const FinishedChunk& chunk, std::string file) {
    return PyroscopeRequest(chunk, std::move(file), path_prefix, name, sample_rate_hz);
  };
  if (upload.token.kind != SecretSource::kNone && upload.basic.kind != SecretSource::kNone) {
    return Status::InvalidArgument(
        "uploadtoken= and uploadbasic= both give an Authorization header: keep one");
  }
  if (upload.token.kind != SecretSource::kNone) {
    StatusOr<std::string> token = ReadSecret("uploadtoken", upload.token);
    if (!token.ok()) return token.status();
    config.headers.emplace_back("Authorization", "Bearer " + token.value());
  }
  if (upload.basic.kind != SecretSource::kNone) {
    StatusOr<std::string> basic = ReadSecret("uploadbasic", upload.basic);
    if (!basic.ok()) return basic.status();
    if (basic.value().find(':') == std::string::npos) {
      return Status::InvalidArgument("uploadbasic=" + upload.basic.reference +
                                     ": the secret must read user:password (no ':' found)");
    }
    config.headers.emplace_back("Authorization", "Basic " + Base64(basic.value()));
  }
  if (upload.tenant.kind != SecretSource::kNone) {
    StatusOr<std::string> tenant = ReadSecret("uploadtenant", upload.tenant);
    if (!tenant.ok()) return tenant.status();
    config.headers.emplace_back("X-Scope-OrgID", tenant.value());
  }
  return config;
}

struct Uploader::State {
  explicit State(const UploaderConfig& config) : config(config) {}

  struct Job {
    int fd;
    FinishedChunk chunk;
  };

  const UploaderConfig config;
  std::unique_ptr<HttpClient> client;
  std::mutex mutex;
  std::condition_variable wake;           // work, stop
  std::condition_variable stopped;        // the thread is done
  std::deque<Job> queue;                  // guarded by mutex
  bool stopping = false;                  // guarded by mutex
  SteadyClock::time_point stop_deadline;  // guarded by mutex; set with stopping
  // stop_deadline for the request in flight, which asks for it without the lock.
  std::atomic<SteadyClock::rep> stop_deadline_ticks{
      SteadyClock::time_point::max().time_since_epoch().count()};
  bool done = false;  // guarded by mutex
  pid_t tid = 0;      // guarded by mutex until published
  std::atomic<uint64_t> uploaded{0};
  std::atomic<uint64_t> dropped{0};

  void Drop(const std::string& what, const std::string& why) {
    const uint64_t count = dropped.fetch_add(1, std::memory_order_relaxed) + 1;
    PrintNotice(config.option + ": " + what + " dropped (" + std::to_string(count) +
                " so far): " + why);
  }

  bool Retryable(int status) const {
    if (!config.retry_statuses.empty()) {
      return std::find(config.retry_statuses.begin(), config.retry_statuses.end(), status) !=
             config.retry_statuses.end();
    }
    return status == 429 || (status >= 500 && status <= 599);
  }

  // The deadline of a request that starts now and may last `length`: brought forward to the
  // stop deadline when Stop() is called meanwhile.
  HttpClient::Deadline DeadlineIn(SteadyClock::duration length) {
    const SteadyClock::time_point own = SteadyClock::now() + length;
    return [this, own] {
      const SteadyClock::time_point stop{
          SteadyClock::duration(stop_deadline_ticks.load(std::memory_order_acquire))};
      return std::min(own, stop);
    };
  }

  // The file `job` holds.
  StatusOr<std::string> Contents(const Job& job) {
    std::string file;
    struct stat info;
    if (fstat(job.fd, &info) != 0) {
      const int os_error = errno;
      return Status::Io(std::string("cannot read the chunk file: ") + strerror(os_error), os_error);
    }
    file.resize(static_cast<size_t>(info.st_size));
    size_t got = 0;
    while (got < file.size()) {
      const ssize_t n = pread(job.fd, &file[got], file.size() - got, static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int os_error = n < 0 ? errno : 0;
        return Status::Io(std::string("cannot read the chunk file: ") +
                              (n < 0 ? strerror(os_error) : "it shrank"),
                          os_error);
      }
      got += static_cast<size_t>(n);
    }
    return file;
  }

  void Send(const Job& job) {
    const std::string what = job.chunk.path;
    StatusOr<std::string> file = Contents(job);
    if (!file.ok()) {
      Drop(what, file.status().message());
      return;
    }
    StatusOr<ChunkRequest> request = config.make_request(job.chunk, std::move(file.value()));
    if (!request.ok()) {
      Drop(what, request.status().message());
      return;
    }
    std::vector<std::pair<std::string, std::string>> headers = config.headers;
    headers.emplace_back("Content-Type", request.value().content_type);
    for (const auto& header : request.value().headers) headers.push_back(header);
    const std::string& target = request.value().target;
    const std::string& body = request.value().body;
    std::chrono::milliseconds backoff = config.first_backoff;
    std::string error;  // why the last attempt failed
    for (int attempt = 1;; attempt++) {
      std::chrono::milliseconds wait = backoff;  // before the next attempt
      StatusOr<HttpResponse> answer =
          client->Post(target, headers, body, DeadlineIn(config.request_timeout));
      const bool answered = answer.ok();
      if (!answered) error = answer.status().message();
      if (answered && answer.value().status >= 200 && answer.value().status < 300) {
        uploaded.fetch_add(1, std::memory_order_relaxed);
        if (config.accepted_note) {
          const std::string note = config.accepted_note(answer.value().body_start);
          if (!note.empty()) PrintNotice(config.option + ": " + what + ": " + note);
        }
        return;
      }
      if (answered) {
        const HttpResponse& response = answer.value();
        error = "HTTP " + std::to_string(response.status) + " " + Excerpt(response.body_start);
        if (response.status == 401 || response.status == 403) error += config.credentials_hint;
        if (!Retryable(response.status)) break;
        if (response.retry_after_seconds >= 0) {
          wait = std::chrono::seconds(response.retry_after_seconds);
        }
      }
      if (attempt >= config.max_attempts) {
        error += " (after " + std::to_string(attempt) + " attempts)";
        break;
      }
      std::unique_lock<std::mutex> lock(mutex);
      const SteadyClock::time_point until =
          stopping ? std::min(SteadyClock::now() + wait, stop_deadline) : SteadyClock::now() + wait;
      wake.wait_until(lock, until, [this, until] {
        return SteadyClock::now() >= until || (stopping && SteadyClock::now() >= stop_deadline);
      });
      if (stopping && SteadyClock::now() >= stop_deadline) {
        error += " (the recording stopped before a retry)";
        break;
      }
      backoff = std::min(2 * backoff, config.max_backoff);
    }
    Drop(what, config.what + " to " + config.server.host + ":" +
                   std::to_string(config.server.port) + ": " + error);
  }

  void Run() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      tid = static_cast<pid_t>(syscall(SYS_gettid));
    }
    wake.notify_all();
    pthread_setname_np(pthread_self(), ("ctxprof-" + config.option).c_str());
    while (true) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [this] { return !queue.empty() || stopping; });
        if (queue.empty() || (stopping && SteadyClock::now() >= stop_deadline)) break;
        job = std::move(queue.front());
        queue.pop_front();
      }
      Send(job);
      close(job.fd);
    }
    std::deque<Job> left;
    {
      std::lock_guard<std::mutex> lock(mutex);
      left.swap(queue);
    }
    for (Job& job : left) {
      close(job.fd);
      Drop(job.chunk.path, "the recording stopped before it was sent");
    }
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
    stopped.notify_all();
  }
};

StatusOr<std::unique_ptr<Uploader>> Uploader::Start(const UploaderConfig& config) {
  auto state = std::make_shared<State>(config);
  StatusOr<std::unique_ptr<HttpClient>> client = HttpClient::Create(config.server);
  if (!client.ok()) return client.status();
  state->client = std::move(client.value());
  // The thread starts with every asynchronous signal blocked: it inherits this mask.
  sigset_t all, previous;
  sigfillset(&all);
  for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) sigdelset(&all, fault);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  std::thread thread([state] { state->Run(); });
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  thread.detach();  // Stop waits for State::done with a bound instead of joining
  std::unique_ptr<Uploader> uploader(new Uploader(state));
  std::unique_lock<std::mutex> lock(state->mutex);
  state->wake.wait(lock, [&state] { return state->tid != 0; });
  uploader->tid_ = state->tid;
  return uploader;
}

Uploader::~Uploader() {
  if (!stopped_) Stop(kDefaultBound);
}

void Uploader::Enqueue(FinishedChunk&& chunk) {
  const int fd = open(chunk.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    state_->Drop(chunk.path, std::string("cannot open the chunk file: ") + strerror(errno));
    return;
  }
  std::deque<State::Job> overflow;  // dropped outside the lock: Drop prints
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    stopping = state_->stopping;
    if (!stopping) {
      if (state_->queue.size() >= state_->config.queue_capacity) {
        overflow.push_back(std::move(state_->queue.front()));
        state_->queue.pop_front();
      }
      state_->queue.push_back(State::Job{fd, std::move(chunk)});
    }
  }
  if (stopping) {
    close(fd);
    state_->Drop(chunk.path, "the " + state_->config.option + "= exporter was stopped");
    return;
  }
  state_->wake.notify_all();
  for (State::Job& oldest : overflow) {
    close(oldest.fd);
    state_->Drop(oldest.chunk.path,
                 "the " + state_->config.option + " queue is full (the server is slow or down)");
  }
}

void Uploader::Stop(std::chrono::milliseconds bound) {
  BeginStop(bound);
  AwaitStop();
}

void Uploader::BeginStop(std::chrono::milliseconds bound) {
  if (stopped_) return;
  stopped_ = true;
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->stopping = true;
  state_->stop_deadline = SteadyClock::now() + bound;
  state_->stop_deadline_ticks.store(state_->stop_deadline.time_since_epoch().count(),
                                    std::memory_order_release);
  state_->wake.notify_all();
}

void Uploader::AwaitStop() {
  std::unique_lock<std::mutex> lock(state_->mutex);
  if (!state_->stopping) return;  // BeginStop was not called
  // Beyond the thread's own deadline by kFinishMargin: work that is not a wait (gzip of the
  // chunk it took just before the deadline, counting the drops) still has to end.
  state_->stopped.wait_until(lock, state_->stop_deadline + kFinishMargin,
                             [this] { return state_->done; });
  // Not done: a call that ignores deadlines (name resolution) holds the thread; it ends on its
  // own, keeping `state_` alive through its shared_ptr.
}

uint64_t Uploader::uploaded() const { return state_->uploaded.load(std::memory_order_relaxed); }
uint64_t Uploader::dropped() const { return state_->dropped.load(std::memory_order_relaxed); }

}  // namespace ctxprof
