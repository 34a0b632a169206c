#include "jni/attach_command.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#include "jni/control_command.h"
#include "jni/jvm_agent.h"
#include "profiler/notice.h"

namespace ctxprof {
namespace {

constexpr char kReplyOption[] = ",reply=";

// Keeps this library loaded for the life of the process. False if that failed: the caller must
// then not return a failure code, which would make HotSpot dlclose the library.
bool PinLibrary() {
  static std::once_flag once;
  static bool pinned = false;
  std::call_once(once, [] {
    Dl_info info{};
    pinned = dladdr(reinterpret_cast<void*>(&PinLibrary), &info) != 0 &&
             info.dli_fname != nullptr &&
             dlopen(info.dli_fname, RTLD_LAZY | RTLD_NODELETE) != nullptr;
  });
  return pinned;
}

jint CodeOf(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return AttachCommand::kOk;
    case StatusCode::kInvalidArgument:
      return AttachCommand::kInvalidArgument;
    case StatusCode::kWrongState:
      return AttachCommand::kWrongState;
    case StatusCode::kIo:
      return AttachCommand::kIoError;
    case StatusCode::kUnavailable:
      return AttachCommand::kUnavailable;
  }
  return AttachCommand::kInvalidArgument;
}

// Writes `text` to the client's reply file, or prints it on the JVM's stderr when there is no
// reply file or it cannot be written.
void Answer(const std::string& reply_path, const std::string& text) {
  if (reply_path.empty()) {
    PrintNotice(text);
    return;
  }
  const std::string line = text + "\n";
  int failure = 0;
  const int fd =
      open(reply_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    failure = errno;
  } else {
    const ssize_t written = write(fd, line.data(), line.size());
    failure = written < 0 ? errno : written != static_cast<ssize_t>(line.size()) ? EIO : 0;
    if (close(fd) != 0 && failure == 0) failure = errno;
    if (failure == 0) return;
  }
  PrintNotice(text + " (the attach reply file " + reply_path +
              " could not be written: " + strerror(failure) + ")");
}

}  // namespace

jint AttachCommand::Run(JavaVM* vm, const char* options) {
  const bool pinned = PinLibrary();
  std::string command = options != nullptr ? options : "";
  std::string reply_path;
  const size_t reply = command.find(kReplyOption);
  if (reply != std::string::npos) {
    reply_path = command.substr(reply + strlen(kReplyOption));
    command.erase(reply);
  }
  std::string text;
  jint code = kOk;
  const Status initialised = JvmAgent::Init(vm, /*live=*/true);
  if (!initialised.ok()) {
    text = initialised.message() + "; the JVM runs without profiling";
    code = kNoJvmti;
  } else if (command.empty()) {
    text = "loaded; no command given (start,<options>, stop, dump,file=<path> or status)";
  } else {
    const Status status = RunControlCommand(command, &text);
    code = CodeOf(status);
    if (!status.ok()) text = status.message();
    // A start with otelcontext=true: the Java writers learn it here (jvm_agent.h).
    JNIEnv* env = nullptr;
    if (status.ok() && vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_6) == JNI_OK) {
      JvmAgent::SyncJavaOtel(env);
    }
  }
  Answer(reply_path, text);
  return pinned ? code : kOk;
}

}  // namespace ctxprof
