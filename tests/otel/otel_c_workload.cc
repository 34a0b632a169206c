// A process for otel_reader_test to read: it dlopens libctxprof.so (argv[1]) as a host would,
// starts a session with otelcontext=true and sets contexts on three threads through the C API.
// Each round it prints what each thread set, one line per thread, then "ready", and waits for a
// line on stdin ("next" = next round, anything else or EOF = exit):
//   ctx <tid> <trace id, 32 hex digits> <span id, 16 hex digits> <key>=<value>;...
//   ctx <tid> none                      (the thread's context is empty)
// Rounds: 0 = trace, span and attributes on all three threads (thread 2: attributes only);
// 1 = changed spans and values, thread 1 drops an attribute, thread 2 clears its context.
// When another library exporting foreign_otel_pointer() is loaded (the test preloads
// libforeign_otel_publisher.so), each thread also prints that library's otel_thread_ctx_v1:
//   foreign <tid> <pointer, 0 while nobody wrote it>
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Api {
  int (*start)(const char*, char*, size_t);
  int (*register_attributes)(const char* const*, int);
  int (*set_attribute)(int, const char*);
  void (*set_trace_context)(uint64_t, uint64_t, uint64_t);
  void (*clear_context)();
};

template <typename F>
void Bind(void* library, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(library, name));
  if (*out == nullptr) {
    fprintf(stderr, "otel_c_workload: %s: %s\n", name, dlerror());
    exit(2);
  }
}

std::mutex mutex;
std::condition_variable changed;
int round_number = 0;   // guarded by mutex
int reported = 0;       // threads that reported the current round, guarded by mutex
bool quitting = false;  // guarded by mutex

void* (*foreign_otel_pointer)() = nullptr;  // set before the threads start

std::string Hex(uint64_t value) {
  char text[17];
  snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

void Worker(const Api& api, int index) {
  const long tid = syscall(SYS_gettid);
  for (int round = 0;; round++) {
    const uint64_t high = 0x4bf92f3577b34da6ull + index;
    const uint64_t low = 0xa3ce929d0e0e4736ull + round;
    const uint64_t span = 0x00f067aa0ba902b7ull + 16 * round + index;
    std::string line = "ctx " + std::to_string(tid) + " ";
    if (index == 0) {
      api.set_trace_context(high, low, span);
      const std::string route = "/checkout/" + std::to_string(round);
      api.set_attribute(0, route.c_str());
      api.set_attribute(1, "acme");
      line += Hex(high) + Hex(low) + " " + Hex(span) + " http.route=" + route + ";tenant=acme";
    } else if (index == 1) {
      api.set_trace_context(high, low, span);
      const char* route = round == 0 ? "/caf\xc3\xa9/\xc3\xbcn\xc3\xafcode" : "/search";
      api.set_attribute(0, route);
      if (round == 0) api.set_attribute(1, "globex");
      if (round == 1) api.set_attribute(1, nullptr);
      line += Hex(high) + Hex(low) + " " + Hex(span) + " http.route=" + route;
      if (round == 0) line += ";tenant=globex";
    } else if (round == 0) {
      api.set_attribute(1, "solo");
      line += std::string(32, '0') + " " + std::string(16, '0') + " tenant=solo";
    } else {
      api.clear_context();
      line += "none";
    }
    std::unique_lock<std::mutex> lock(mutex);
    std::cout << line << std::endl;
    if (foreign_otel_pointer != nullptr) {
      std::cout << "foreign " << tid << " " << foreign_otel_pointer() << std::endl;
    }
    reported++;
    changed.notify_all();
    changed.wait(lock, [round] { return quitting || round_number > round; });
    if (quitting) return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: otel_c_workload /path/libctxprof.so\n");
    return 2;
  }
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    fprintf(stderr, "otel_c_workload: dlopen: %s\n", dlerror());
    return 2;
  }
  Api api;
  Bind(library, "ctxprof_start", &api.start);
  Bind(library, "ctxprof_register_attributes", &api.register_attributes);
  Bind(library, "ctxprof_set_attribute", &api.set_attribute);
  Bind(library, "ctxprof_set_trace_context", &api.set_trace_context);
  Bind(library, "ctxprof_clear_context", &api.clear_context);
  foreign_otel_pointer = reinterpret_cast<void* (*)()>(dlsym(RTLD_DEFAULT, "foreign_otel_pointer"));
  const char* names[] = {"http.route", "tenant"};
  if (api.register_attributes(names, 2) != 0) {
    fprintf(stderr, "otel_c_workload: cannot register attributes\n");
    return 2;
  }
  char error[512];
  if (api.start("event=ctimer,interval=100ms,otelcontext=true", error, sizeof(error)) != 0) {
    fprintf(stderr, "otel_c_workload: start: %s\n", error);
    return 2;
  }
  constexpr int kThreads = 3;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; i++) threads.emplace_back(Worker, std::cref(api), i);
  for (int round = 0;; round++) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [] { return reported == kThreads; });
    std::cout << "ready" << std::endl;
    lock.unlock();
    std::string command;
    const bool next = static_cast<bool>(std::getline(std::cin, command)) && command == "next";
    lock.lock();
    reported = 0;
    quitting = !next;
    round_number = round + 1;
    changed.notify_all();
    lock.unlock();
    if (!next) break;
  }
  for (std::thread& thread : threads) thread.join();
  return 0;
}
