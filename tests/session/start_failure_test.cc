// A start that fails at any step leaves nothing running (profiler/session/session.h): no
// ctxprof thread, no perf event, no POSIX timer, no ITIMER_PROF, no active signal handler, and
// the next start works. Every failure comes back through the C API with its typed code and a
// message naming the input and the OS error. Steps whose failure needs a refused system call
// (creating the wall sampler or the background thread) run in a forked child whose seccomp
// filter refuses thread creation; a filter cannot be removed, so the parent stays clean.
#include <errno.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "profiler/ctxprof.h"
#include "profiler/jfr/jfr_reader.h"
#include "profiler/profiler.h"
#include "profiler/sampler/event_recorder.h"
#include "profiler/sampler/signal_handler.h"
#include "tests/support/queued_signal.h"
#include "tests/support/status_testing.h"

namespace ctxprof {
namespace {

std::string TempPath(const std::string& name) {
  return std::string(getenv("TEST_TMPDIR")) + "/" + name;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The ctxprof threads still listed in /proc/self/task. A joined thread can stay listed for a
// moment: the kernel wakes pthread_join when it clears the thread id, before it reaps the task.
// So a listed thread counts only if it is still there after a grace period far longer than that.
std::string CtxprofThreads() {
  std::string found;
  for (int attempt = 0; attempt < 200; ++attempt) {
    found.clear();
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      const std::string name = ReadFile(task.path().string() + "/comm");
      if (name.rfind("ctxprof-", 0) == 0) found += "thread " + name;
    }
    if (found.empty()) break;
    usleep(10 * 1000);
  }
  return found;
}

// What is left of profiling in this process, one line per leftover ("" when nothing).
std::string Leftovers() {
  std::string found = CtxprofThreads();
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ignored;
    if (std::filesystem::read_symlink(fd.path(), ignored).string() == "anon_inode:[perf_event]") {
      found += "perf event fd " + fd.path().filename().string() + "\n";
    }
  }
  const std::string timers = ReadFile("/proc/self/timers");
  if (!timers.empty()) found += "POSIX timers:\n" + timers;
  itimerval itimer;
  if (getitimer(ITIMER_PROF, &itimer) == 0 &&
      (itimer.it_value.tv_sec != 0 || itimer.it_value.tv_usec != 0)) {
    found += "ITIMER_PROF armed\n";
  }
  // A signal our handler owns, sent to this thread as the wall sampler sends it: an active
  // handler takes a sample. (A signal without our handler is not sent: it could kill us.)
  for (int signal : {SIGPROF, SIGVTALRM}) {
    struct sigaction current;
    if (sigaction(signal, nullptr, &current) != 0 || !(current.sa_flags & SA_SIGINFO)) continue;
    const uint64_t before = SignalHandler::samples();
    testing::QueueToThisThread(testing::WallSignal(signal, 1));
    if (SignalHandler::samples() != before) found += "handler active on " + std::to_string(signal);
  }
  if (Profiler::Global()->Stats().running) found += "a session reports running\n";
  return found;
}

// The failed start is followed by a start with the same engines that works.
void ExpectAStartWorks(const char* options) {
  char error[512];
  ASSERT_EQ(ctxprof_start(options, error, sizeof(error)), 0) << options << ": " << error;
  EXPECT_EQ(ctxprof_stop(), 0);
  EXPECT_EQ(Leftovers(), "");
}

TEST(StartFailureTest, AMissingFolderIsAnIoErrorNamingThePathAndTheOsError) {
  // Both engines run when the recording is opened; they must be stopped again.
  char error[512];
  EXPECT_EQ(ctxprof_start("event=cpu,wall=10ms,file=/nonexistent/x.jfr", error, sizeof(error)),
            CTXPROF_EIO);
  const std::string message = error;
  EXPECT_NE(message.find("option 'file'"), std::string::npos) << message;
  EXPECT_NE(message.find("/nonexistent/x.jfr"), std::string::npos) << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
  EXPECT_EQ(message.find("ctxprof_"), std::string::npos) << "names no front end: " << message;
  EXPECT_EQ(Leftovers(), "");

  std::string notes;
  const Status status = Profiler::Global()->Start("event=ctimer,file=/nonexistent/x.jfr", &notes);
  EXPECT_EQ(status.code(), StatusCode::kIo);
  EXPECT_EQ(status.os_error(), ENOENT);
  EXPECT_EQ(Leftovers(), "");
  ExpectAStartWorks("event=cpu,wall=10ms");
}

TEST(StartFailureTest, ARepositoryThatIsAFileIsAnIoError) {
  const std::string path = TempPath("not-a-folder");
  std::ofstream(path) << "x";
  char error[512];
  EXPECT_EQ(ctxprof_start(("event=ctimer,repository=" + path).c_str(), error, sizeof(error)),
            CTXPROF_EIO);
  EXPECT_NE(std::string(error).find("option 'repository'"), std::string::npos) << error;
  EXPECT_NE(std::string(error).find(path), std::string::npos) << error;
  EXPECT_EQ(Leftovers(), "");
  ExpectAStartWorks("event=ctimer");
}

TEST(StartFailureTest, ARefusedCpuEngineIsUnavailableAndUndoesTheHandler) {
  // ITIMER_PROF is the process's one profiling timer: event=itimer refuses when the host armed
  // it. An hour never expires during the test.
  const itimerval hour = {{0, 0}, {3600, 0}};
  ASSERT_EQ(setitimer(ITIMER_PROF, &hour, nullptr), 0);
  char error[512];
  EXPECT_EQ(ctxprof_start("event=itimer,wall=10ms", error, sizeof(error)), CTXPROF_EUNAVAIL);
  EXPECT_NE(std::string(error).find("itimer refused"), std::string::npos) << error;
  EXPECT_NE(std::string(error).find("already has a profiling timer"), std::string::npos) << error;
  const itimerval off = {};
  ASSERT_EQ(setitimer(ITIMER_PROF, &off, nullptr), 0);
  EXPECT_EQ(Leftovers(), "");
  ExpectAStartWorks("event=itimer,wall=10ms");
}

// Runtime event sources (alloc=, lock=) that the runtime refuses: the start fails with their
// Status, every step before them (both engines, the recording) is undone, and the EventRecorder
// the session activated for them is inactive again. Sources that start run for the session
// only: the EventRecorder records into it, and stop turns both off.
TEST(StartFailureTest, RefusedEventSourcesAreUnavailableAndUndoEverything) {
  struct Calls {
    int starts = 0;
    int stops = 0;
    bool recorder_active_at_start = false;
    Status answer;
  };
  static Calls calls;
  RuntimeHooks hooks;
  hooks.events_start = [](const EventRules& rules) {
    calls.starts++;
    calls.recorder_active_at_start = EventRecorder::WaitStartTicks() != 0;
    EXPECT_TRUE(rules.lock_enabled);
    return calls.answer;
  };
  hooks.events_stop = [] { calls.stops++; };
  Profiler::Global()->SetRuntimeHooks(hooks);

  calls.answer = Status::Unavailable("option 'lock': the runtime refused its monitor events", 0);
  std::string notes;
  const std::string path = TempPath("events.jfr");
  Status status = Profiler::Global()->Start("event=ctimer,wall=10ms,lock=1ms,file=" + path, &notes);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.message();
  EXPECT_EQ(status.message(), "option 'lock': the runtime refused its monitor events");
  EXPECT_EQ(calls.starts, 1);
  EXPECT_TRUE(calls.recorder_active_at_start);
  EXPECT_EQ(calls.stops, 0);  // a refused start undoes itself
  EXPECT_EQ(EventRecorder::WaitStartTicks(), 0u) << "the EventRecorder is still active";
  EXPECT_EQ(Leftovers(), "");

  calls.answer = Status();
  status = Profiler::Global()->Start("event=ctimer,lock=0ns,file=" + path, &notes);
  ASSERT_TRUE(status.ok()) << status.message();
  const uint64_t start = EventRecorder::WaitStartTicks();
  EXPECT_NE(start, 0u);
  {
    EventRecorder::Event event;  // published when it goes out of scope
    ASSERT_TRUE(EventRecorder::BeginWait(SampleKind::kMonitorEnter, start, &event));
  }
  EXPECT_TRUE(Profiler::Global()->Stop().ok());
  EXPECT_EQ(calls.stops, 1);
  EXPECT_EQ(EventRecorder::WaitStartTicks(), 0u);
  Profiler::Global()->SetRuntimeHooks(RuntimeHooks{});
  EXPECT_EQ(Leftovers(), "");
  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(path, {})));
  int waits = 0;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() != "jdk.JavaMonitorEnter") continue;
    waits++;
    EXPECT_EQ(event.thread().Field("osThreadId").integer(), syscall(SYS_gettid));
  }
  EXPECT_EQ(waits, 1);
}

// Without a runtime that reports events (a native program), alloc=, lock= and live are bad
// options for this process, refused before anything starts.
TEST(StartFailureTest, EventOptionsWithoutARuntimeAreInvalidArguments) {
  char error[512];
  const std::string file = "file=" + TempPath("native.jfr");
  for (const std::string options : {"alloc=512k", "lock=10ms", "event=alloc+lock"}) {
    EXPECT_EQ(ctxprof_start((options + "," + file).c_str(), error, sizeof(error)), CTXPROF_EINVAL)
        << options;
    EXPECT_NE(std::string(error).find("no JVM agent"), std::string::npos) << error;
    EXPECT_EQ(Leftovers(), "");
  }
}

// Makes clone3 and clone fail with EAGAIN in this process from now on: no thread can be created
// (glibc's pthread_create uses clone3, older ones clone).
bool RefuseThreadCreation() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAGAIN),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program = {static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) == 0;
}

// In a death-test child: starts with thread creation refused and exits 0 only if the start
// failed with CTXPROF_EUNAVAIL naming `what` and the OS error, and left nothing running.
void StartWithThreadsRefused(const std::string& options, const std::string& what) {
  if (!RefuseThreadCreation()) {
    fprintf(stderr, "cannot install the seccomp filter: %s\n", strerror(errno));
    _exit(2);
  }
  char error[512] = "";
  const int code = ctxprof_start(options.c_str(), error, sizeof(error));
  const std::string leftovers = Leftovers();
  fprintf(stderr, "code %d, message: %s\nleftovers: %s\n", code, error, leftovers.c_str());
  const bool named = std::string(error).find(what) != std::string::npos &&
                     std::string(error).find(strerror(EAGAIN)) != std::string::npos;
  _exit(code == CTXPROF_EUNAVAIL && named && leftovers.empty() ? 0 : 1);
}

TEST(StartFailureTest, AWallSamplerThatCannotBeCreatedUndoesTheCpuEngine) {
  EXPECT_EXIT(StartWithThreadsRefused("event=ctimer,wall=10ms", "cannot create the wall sampler"),
              ::testing::ExitedWithCode(0), "");
  ExpectAStartWorks("event=ctimer,wall=10ms");
}

TEST(StartFailureTest, ABackgroundThreadThatCannotBeCreatedUndoesEverything) {
  // Every earlier step holds something: ITIMER_PROF armed, the handler active, the recording
  // open, the thread registry made.
  const std::string path = TempPath("background.jfr");
  EXPECT_EXIT(StartWithThreadsRefused("event=itimer,file=" + path,
                                      "cannot create the profiler's background thread"),
              ::testing::ExitedWithCode(0), "");
  ExpectAStartWorks(("event=itimer,file=" + path).c_str());
}

}  // namespace
}  // namespace ctxprof
