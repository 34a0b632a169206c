#include "profiler/export/http_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace ctxprof {

namespace {

using Clock = std::chrono::steady_clock;

// Waits for `events` on `fd` until the deadline, asking for it at least every 100 ms.
bool Wait(int fd, short events, const HttpClient::Deadline& deadline) {
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline() - Clock::now()).count();
    if (left <= 0) return false;
    pollfd poll_fd{fd, events, 0};
    const int ready = poll(&poll_fd, 1, static_cast<int>(std::min<int64_t>(left, 100)));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
  }
}

// The OpenSSL error queue's newest entry, as text, and the queue cleared.
std::string TlsError() {
  const unsigned long code = ERR_peek_last_error();
  ERR_clear_error();
  if (code == 0) return "no detail from OpenSSL";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

}  // namespace

// One connection: a socket, and for https a TLS session on it.
class HttpClient::Connection {
 public:
  Connection(const HttpServer& server, SSL_CTX* tls_context)
      : server_(server), tls_context_(tls_context) {}
  ~Connection() {
    if (tls_ != nullptr) {
      SSL_shutdown(tls_);  // best effort; the socket is non-blocking, so it never waits
      SSL_free(tls_);
    }
    if (fd_ >= 0) close(fd_);
  }

  Status Open(const Deadline& deadline) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* addresses = nullptr;
    const std::string port = std::to_string(server_.port);
    const int resolved = getaddrinfo(server_.host.c_str(), port.c_str(), &hints, &addresses);
    if (resolved != 0) {
      return Status::Unavailable("cannot resolve " + server_.host + ": " + gai_strerror(resolved),
                                 0);
    }
    Status last_error = Status::Unavailable("no address", 0);
    for (addrinfo* address = addresses; address != nullptr; address = address->ai_next) {
      fd_ = socket(address->ai_family, address->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                   address->ai_protocol);
      if (fd_ < 0) {
        const int os_error = errno;
        last_error = Status::Unavailable(std::string("socket: ") + strerror(os_error), os_error);
        continue;
      }
      if (connect(fd_, address->ai_addr, address->ai_addrlen) == 0) break;
      if (const int os_error = errno; os_error != EINPROGRESS) {
        last_error = Status::Unavailable(strerror(os_error), os_error);
      } else if ((last_error = Connected(deadline)).ok()) {
        break;
      }
      close(fd_);
      fd_ = -1;
    }
    freeaddrinfo(addresses);
    if (fd_ < 0) {
      return Status::Unavailable(
          "cannot connect to " + server_.host + ":" + port + ": " + last_error.message(),
          last_error.os_error());
    }
    return server_.https ? Handshake(deadline) : Status();
  }

  Status Send(const std::string& bytes, const Deadline& deadline) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      const size_t chunk = std::min<size_t>(bytes.size() - sent, 1 << 20);
      ssize_t written;
      if (tls_ != nullptr) {
        const int result = SSL_write(tls_, bytes.data() + sent, static_cast<int>(chunk));
        if (result <= 0) {
          if (Status ready = WaitForTls(result, deadline, "send"); !ready.ok()) return ready;
          continue;
        }
        written = result;
      } else {
        written = send(fd_, bytes.data() + sent, chunk, MSG_NOSIGNAL);
        if (written < 0) {
          if (errno == EINTR) continue;
          if (errno == EAGAIN && Wait(fd_, POLLOUT, deadline)) continue;
          const int os_error = errno;
          if (os_error == EAGAIN) return Status::Unavailable("timed out sending to " + Where(), 0);
          return Status::Unavailable("cannot send to " + Where() + ": " + strerror(os_error),
                                     os_error);
        }
      }
      sent += static_cast<size_t>(written);
    }
    return Status();
  }

  // Reads into *out until the peer closes, *out holds `limit` bytes, or `done` says so.
  template <typename Done>
  Status Receive(std::string* out, size_t limit, const Deadline& deadline, Done done) {
    char buffer[4096];
    while (out->size() < limit && !done(*out)) {
      ssize_t got;
      if (tls_ != nullptr) {
        const int result = SSL_read(tls_, buffer, sizeof(buffer));
        if (result <= 0) {
          const int reason = SSL_get_error(tls_, result);
          if (reason == SSL_ERROR_ZERO_RETURN) return Status();
          if (Status ready = WaitForTls(result, deadline, "receive"); !ready.ok()) return ready;
          continue;
        }
        got = result;
      } else {
        got = recv(fd_, buffer, sizeof(buffer), 0);
        if (got < 0) {
          if (errno == EINTR) continue;
          if (errno == EAGAIN && Wait(fd_, POLLIN, deadline)) continue;
          const int os_error = errno;
          if (os_error == EAGAIN) return Status::Unavailable("timed out waiting for " + Where(), 0);
          return Status::Unavailable("cannot receive from " + Where() + ": " + strerror(os_error),
                                     os_error);
        }
        if (got == 0) return Status();
      }
      out->append(buffer, static_cast<size_t>(got));
    }
    return Status();
  }

 private:
  std::string Where() const { return server_.host + ":" + std::to_string(server_.port); }

  Status Connected(const Deadline& deadline) {
    if (!Wait(fd_, POLLOUT, deadline)) return Status::Unavailable("timed out", 0);
    int status = 0;
    socklen_t length = sizeof(status);
    if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &status, &length) != 0 || status != 0) {
      const int os_error = status != 0 ? status : errno;
      return Status::Unavailable(strerror(os_error), os_error);
    }
    return Status();
  }

  // After a failed SSL_* call: waits for what OpenSSL needs and returns true to retry, or
  // describes the failure of `step`.
  Status WaitForTls(int result, const Deadline& deadline, const char* step) {
    const int os_error = errno;  // of the failed SSL_* call's socket call, if any
    const int reason = SSL_get_error(tls_, result);
    const std::string what = std::string("TLS ") + step + " with " + Where() + ": ";
    if (reason == SSL_ERROR_WANT_READ || reason == SSL_ERROR_WANT_WRITE) {
      if (Wait(fd_, reason == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline)) return Status();
      return Status::Unavailable(what + "timed out", 0);
    }
    const long verify = SSL_get_verify_result(tls_);
    if (verify != X509_V_OK) {
      return Status::Unavailable(
          what + "certificate verify failed: " + X509_verify_cert_error_string(verify) + " (" +
              server_.ca_source + "=PATH names the CA that signed the server's certificate)",
          0);
    }
    if (reason == SSL_ERROR_SYSCALL && os_error != 0) {
      return Status::Unavailable(what + strerror(os_error), os_error);
    }
    return Status::Unavailable(what + TlsError(), 0);
  }

  Status Handshake(const Deadline& deadline) {
    tls_ = SSL_new(tls_context_);
    if (tls_ == nullptr || SSL_set_fd(tls_, fd_) != 1) {
      return Status::Unavailable("TLS setup for " + Where() + ": " + TlsError(), 0);
    }
    in6_addr ip6;
    in_addr ip4;
    const bool ip_literal = inet_pton(AF_INET, server_.host.c_str(), &ip4) == 1 ||
                            inet_pton(AF_INET6, server_.host.c_str(), &ip6) == 1;
    X509_VERIFY_PARAM* verify = SSL_get0_param(tls_);
    const bool named = ip_literal ? X509_VERIFY_PARAM_set1_ip_asc(verify, server_.host.c_str()) == 1
                                  : SSL_set_tlsext_host_name(tls_, server_.host.c_str()) == 1 &&
                                        SSL_set1_host(tls_, server_.host.c_str()) == 1;
    if (!named) return Status::Unavailable("TLS setup for " + Where() + ": " + TlsError(), 0);
    while (true) {
      const int result = SSL_connect(tls_);
      if (result == 1) return Status();
      if (Status ready = WaitForTls(result, deadline, "handshake"); !ready.ok()) return ready;
    }
  }

  const HttpServer& server_;
  SSL_CTX* const tls_context_;
  int fd_ = -1;
  SSL* tls_ = nullptr;
};

StatusOr<std::unique_ptr<HttpClient>> HttpClient::Create(const HttpServer& server) {
  std::unique_ptr<HttpClient> client(new HttpClient(server));
  if (!server.https) return client;
  // No atexit cleanup: OpenSSL must not be torn down under an uploader thread that is still
  // running when the process exits (uploader.h).
  OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT, nullptr);
  SSL_CTX* context = SSL_CTX_new(TLS_client_method());
  if (context == nullptr) {
    return Status::Unavailable("TLS: cannot create a context: " + TlsError(), 0);
  }
  client->tls_context_ = context;
  SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
  const bool loaded = server.ca_file.empty() ? SSL_CTX_set_default_verify_paths(context) == 1
                                             : SSL_CTX_load_verify_locations(
                                                   context, server.ca_file.c_str(), nullptr) == 1;
  if (!loaded && server.ca_file.empty()) {
    return Status::Unavailable("TLS: cannot load the system's CA certificates: " + TlsError(), 0);
  }
  if (!loaded) {
    return Status::InvalidArgument(server.ca_source + "=" + server.ca_file +
                                   ": cannot load CA certificates: " + TlsError());
  }
  return client;
}

HttpClient::~HttpClient() {
  if (tls_context_ != nullptr) SSL_CTX_free(static_cast<SSL_CTX*>(tls_context_));
}

namespace {

// The Retry-After header of `head` (status line and headers) in seconds from now; -1 when
// there is none or it is neither delta-seconds nor an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37
// GMT", the form RFC 9110 says senders use).
int64_t RetryAfterSeconds(const std::string& head) {
  std::string lower;
  for (char c : head) lower += static_cast<char>(tolower(static_cast<unsigned char>(c)));
  const size_t at = lower.find("\r\nretry-after:");
  if (at == std::string::npos) return -1;
  const size_t start = at + strlen("\r\nretry-after:");
  std::string value = head.substr(start, head.find("\r\n", start) - start);
  value.erase(0, value.find_first_not_of(" \t"));
  value.erase(value.find_last_not_of(" \t") + 1);
  if (!value.empty() && value.find_first_not_of("0123456789") == std::string::npos) {
    return value.size() > 9 ? -1 : std::stoll(value);
  }
  struct tm date = {};
  const char* end = strptime(value.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &date);
  if (end == nullptr || *end != '\0') return -1;
  const time_t when = timegm(&date);
  const time_t now = time(nullptr);
  if (when == static_cast<time_t>(-1) || now == static_cast<time_t>(-1)) return -1;
  return when > now ? static_cast<int64_t>(when - now) : 0;
}

}  // namespace

StatusOr<HttpResponse> HttpClient::Post(
    const std::string& target, const std::vector<std::pair<std::string, std::string>>& headers,
    const std::string& body, const Deadline& deadline) {
  Connection connection(server_, static_cast<SSL_CTX*>(tls_context_));
  if (Status opened = connection.Open(deadline); !opened.ok()) return opened;
  const bool default_port = server_.port == (server_.https ? 443 : 80);
  const bool ipv6 = server_.host.find(':') != std::string::npos;
  std::string request =
      "POST " + target + " HTTP/1.1\r\nHost: " + (ipv6 ? "[" + server_.host + "]" : server_.host) +
      (default_port ? "" : ":" + std::to_string(server_.port)) +
      "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  request += "\r\n";
  Status sent = connection.Send(request, deadline);
  if (sent.ok()) sent = connection.Send(body, deadline);
  if (!sent.ok()) return sent;
  // The status line, the headers, then at most kMaxBodyStart bytes of body.
  std::string received;
  auto headers_done = [](const std::string& text) {
    return text.find("\r\n\r\n") != std::string::npos;
  };
  if (Status got = connection.Receive(&received, 64 * 1024, deadline, headers_done); !got.ok()) {
    return got;
  }
  const size_t end_of_headers = received.find("\r\n\r\n");
  int status = 0;
  if (received.compare(0, 7, "HTTP/1.") != 0 || received.size() < 12 ||
      (status = atoi(received.c_str() + 9)) < 100 || status > 599) {
    return Status::Unavailable(
        "malformed HTTP response from " + server_.host + ":" + std::to_string(server_.port), 0);
  }
  HttpResponse response;
  response.status = status;
  response.retry_after_seconds = RetryAfterSeconds(received.substr(0, end_of_headers));
  if (end_of_headers != std::string::npos) {
    std::string body_start = received.substr(end_of_headers + 4);
    auto enough = [](const std::string& text) { return text.size() >= kMaxBodyStart; };
    // The body only explains an error; a failure to read it does not undo the status.
    connection.Receive(&body_start, kMaxBodyStart, deadline, enough);
    response.body_start = body_start.substr(0, kMaxBodyStart);
  }
  return response;
}

}  // namespace ctxprof
