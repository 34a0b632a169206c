// HttpClient: one HTTP/1.1 POST at a time to one server, over TCP or, for https, TLS (OpenSSL,
// the server's certificate verified against the system's CA store or a given CA file, and its
// name against the host). For the uploader thread; nothing here is used on the sampling path.
//
// Every step is bounded by the caller's deadline: connect, TLS handshake, send and receive wait
// with poll() for at most the time left, in slices of at most 100 ms after each of which the
// deadline is asked again (so a caller can bring it forward while a request is under way).
// Name resolution (getaddrinfo) cannot be bounded that way; the uploader does not wait for its
// thread beyond its own bound (uploader.h).
// Each request opens its own connection and asks the server to close it ("Connection: close"):
// uploads are one every few seconds, so keeping connections alive is not worth its states.
//
// Errors name the host, the port and the failing step with the OS, resolver or TLS cause
// (e.g. "certificate verify failed: self-signed certificate"), never a header value: the
// caller's headers may carry credentials.
//
// SIGPIPE: plain sockets send with MSG_NOSIGNAL; OpenSSL writes with write(), so the calling
// thread must block SIGPIPE (the uploader thread blocks every asynchronous signal).
//
// Thread safety: one thread uses a client at a time.
#ifndef CTXPROF_PROFILER_EXPORT_HTTP_CLIENT_H_
#define CTXPROF_PROFILER_EXPORT_HTTP_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "profiler/base/status.h"

namespace ctxprof {

struct HttpServer {
  bool https = false;
  std::string host;  // a name or an IP literal (IPv6 without brackets)
  uint16_t port = 0;
  std::string ca_file;  // https: PEM CA certificates; "" = the system's store
  // What sets ca_file (an option or a variable), for messages.
  std::string ca_source = "uploadca";
};

struct HttpResponse {
  int status = 0;
  std::string body_start;  // the first bytes of the body (at most kMaxBodyStart)
  // Retry-After in seconds from now (delta-seconds, or an HTTP-date less the current time, at
  // least 0); -1 when absent or unreadable.
  int64_t retry_after_seconds = -1;
};

class HttpClient {
 public:
  static constexpr size_t kMaxBodyStart = 512;
  // When the request must be over; called again during the waits.
  using Deadline = std::function<std::chrono::steady_clock::time_point()>;

  // Prepares the TLS context for https (CA file or the system's store). Fails with
  // kInvalidArgument naming ca_source when the CA file cannot be loaded, kUnavailable when TLS
  // cannot be set up otherwise.
  static StatusOr<std::unique_ptr<HttpClient>> Create(const HttpServer& server);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // POSTs `body` to `target` (path and query) with `headers` (besides Host, Content-Length and
  // Connection, which it writes). The response when a status line was read, whatever the
  // status; otherwise kUnavailable saying why (with the errno when a socket call failed).
  StatusOr<HttpResponse> Post(const std::string& target,
                              const std::vector<std::pair<std::string, std::string>>& headers,
                              const std::string& body, const Deadline& deadline);

 private:
  class Connection;
  explicit HttpClient(const HttpServer& server) : server_(server) {}

  const HttpServer server_;
  void* tls_context_ = nullptr;  // SSL_CTX*, https only
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_EXPORT_HTTP_CLIENT_H_
