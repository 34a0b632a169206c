#include "jni/jfr_sync.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <system_error>
#include <vector>

#include "jni/java_strings.h"
#include "profiler/jfr/jfr_append.h"
#include "profiler/jfr/jfr_chunk_header.h"

namespace ctxprof {
namespace {

constexpr jlong kNanosPerSecond = 1000000000;
// jdk.jfr.internal.JVM.getThreadId(Thread): static since JDK 22, else on JVM.getJVM().
struct KeyLookup {
  jclass jvm;        // a global reference
  jobject instance;  // a global reference, or null for the static method
  jmethodID get_thread_id;
};
std::atomic<KeyLookup*> g_key_lookup{nullptr};
// How long StopInto waits for the JVM's shutdown to finish writing a recording it stopped.
constexpr int kShutdownWaitMillis = 2000;

// The calling thread's JNIEnv, attaching it (as a daemon) for the scope if it was not.
class ScopedEnv {
 public:
  explicit ScopedEnv(JavaVM* vm) : vm_(vm) {
    if (vm->GetEnv(reinterpret_cast<void**>(&env_), JNI_VERSION_1_8) == JNI_OK) return;
    JavaVMAttachArgs args{JNI_VERSION_1_8, const_cast<char*>("ctxprof jfrsync"), nullptr};
    if (vm->AttachCurrentThreadAsDaemon(reinterpret_cast<void**>(&env_), &args) == JNI_OK) {
      attached_ = true;
    } else {
      env_ = nullptr;
    }
  }
  ~ScopedEnv() {
    if (attached_) vm_->DetachCurrentThread();
  }
  JNIEnv* get() const { return env_; }

 private:
  JavaVM* const vm_;
  JNIEnv* env_ = nullptr;
  bool attached_ = false;
};

// A JNI local frame for a scope: the references made in it are freed at its end, however many
// (StopInto polls the state in a loop; a Java caller's frame would keep them all). ok() is false
// when the JVM is out of memory (an exception is then pending).
class LocalFrame {
 public:
  LocalFrame(JNIEnv* env, jint capacity) : env_(env), ok_(env->PushLocalFrame(capacity) == 0) {}
  ~LocalFrame() {
    if (ok_) env_->PopLocalFrame(nullptr);
  }
  bool ok() const { return ok_; }

 private:
  JNIEnv* const env_;
  const bool ok_;
};

// The pending exception as its toString() ("java.nio.file.NoSuchFileException: x.jfc"),
// cleared; "" when none is pending.
std::string TakeException(JNIEnv* env) {
  if (!env->ExceptionCheck()) return "";
  jthrowable thrown = env->ExceptionOccurred();
  env->ExceptionClear();
  jclass object = env->FindClass("java/lang/Object");
  jmethodID to_string =
      object != nullptr ? env->GetMethodID(object, "toString", "()Ljava/lang/String;") : nullptr;
  std::string text = "an exception";
  if (to_string != nullptr) {
    auto described = static_cast<jstring>(env->CallObjectMethod(thrown, to_string));
    if (!env->ExceptionCheck() && described != nullptr) text = FromJavaString(env, described);
  }
  env->ExceptionClear();
  return text;
}

// `value`, the result of a Call*Method, or null when it threw (the exception stays pending).
// Checking after every call is JNI's rule (-Xcheck:jni warns otherwise).
jobject Checked(JNIEnv* env, jobject value) { return env->ExceptionCheck() ? nullptr : value; }

// Whether the pending exception is an instance of `class_name`; leaves it pending.
bool PendingIs(JNIEnv* env, const char* class_name) {
  if (!env->ExceptionCheck()) return false;
  jthrowable thrown = env->ExceptionOccurred();
  env->ExceptionClear();
  jclass type = env->FindClass(class_name);
  const bool is = type != nullptr && env->IsInstanceOf(thrown, type);
  env->ExceptionClear();
  env->Throw(thrown);
  return is;
}

Status Failed(JNIEnv* env, const std::string& what) {
  const std::string thrown = TakeException(env);
  return Status::Unavailable(what + (thrown.empty() ? "" : ": " + thrown), 0);
}

uint64_t MonotonicNanos() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);  // cannot fail for CLOCK_MONOTONIC with a valid pointer
  return static_cast<uint64_t>(now.tv_sec) * kNanosPerSecond + now.tv_nsec;
}

// The JDK's JFR tick origin in CLOCK_MONOTONIC nanoseconds (see the header).
StatusOr<uint64_t> ReadOrigin(JNIEnv* env) {
  jclass jvm = env->FindClass("jdk/jfr/internal/JVM");
  if (jvm == nullptr) {
    return Failed(env, "the JVM has no jdk.jfr module (the JDK's Flight Recorder)");
  }
  jmethodID counter_time = env->GetStaticMethodID(jvm, "counterTime", "()J");
  if (counter_time == nullptr) return Failed(env, "jdk.jfr.internal.JVM has no counterTime()");
  // Static since JDK 22; an instance method of JVM.getJVM() before.
  jlong frequency = 0;
  if (jmethodID static_method = env->GetStaticMethodID(jvm, "getTicksFrequency", "()J")) {
    frequency = env->CallStaticLongMethod(jvm, static_method);
  } else {
    env->ExceptionClear();
    jmethodID get_jvm = env->GetStaticMethodID(jvm, "getJVM", "()Ljdk/jfr/internal/JVM;");
    jmethodID method = env->GetMethodID(jvm, "getTicksFrequency", "()J");
    if (get_jvm == nullptr || method == nullptr) {
      return Failed(env, "jdk.jfr.internal.JVM has no getTicksFrequency()");
    }
    jobject instance = Checked(env, env->CallStaticObjectMethod(jvm, get_jvm));
    if (instance != nullptr) frequency = env->CallLongMethod(instance, method);
  }
  if (env->ExceptionCheck()) return Failed(env, "cannot read the JDK recorder's tick frequency");
  if (frequency != kNanosPerSecond) {
    return Status::Unavailable(
        "the JVM's Flight Recorder counts " + std::to_string(frequency) +
            " ticks per second (-XX:+UseFastUnorderedTimeStamps): jfrsync= needs its default "
            "nanosecond clock",
        0);
  }
  uint64_t best_gap = UINT64_MAX;
  uint64_t origin = 0;
  for (int attempt = 0; attempt < 8; attempt++) {
    const uint64_t before = MonotonicNanos();
    const jlong ticks = env->CallStaticLongMethod(jvm, counter_time);
    const uint64_t after = MonotonicNanos();
    if (env->ExceptionCheck()) return Failed(env, "cannot read the JDK recorder's clock");
    if (after - before < best_gap) {
      best_gap = after - before;
      origin = before + (after - before) / 2 - static_cast<uint64_t>(ticks);
    }
  }
  return origin;
}

jobject PathOf(JNIEnv* env, const std::string& path) {
  jclass paths = env->FindClass("java/nio/file/Paths");
  jclass string = env->FindClass("java/lang/String");
  if (paths == nullptr || string == nullptr) return nullptr;
  jmethodID get = env->GetStaticMethodID(
      paths, "get", "(Ljava/lang/String;[Ljava/lang/String;)Ljava/nio/file/Path;");
  jstring first = ToJavaString(env, path);
  jobjectArray more = env->NewObjectArray(0, string, nullptr);
  if (get == nullptr || first == nullptr || more == nullptr) return nullptr;
  return Checked(env, env->CallStaticObjectMethod(paths, get, first, more));
}

// Calls recording.name(String) for each of `events`, the Recording methods enable and disable;
// with `stack_traces`, also withStackTrace() on the EventSettings each returns.
bool ForEachEvent(JNIEnv* env, jobject recording, const char* name,
                  const std::vector<std::string>& events, bool stack_traces) {
  jclass type = env->GetObjectClass(recording);
  jmethodID method = env->GetMethodID(type, name, "(Ljava/lang/String;)Ljdk/jfr/EventSettings;");
  if (method == nullptr) return false;
  jmethodID with_stack_trace = nullptr;
  if (stack_traces) {
    jclass settings_class = env->FindClass("jdk/jfr/EventSettings");
    if (settings_class == nullptr) return false;
    with_stack_trace =
        env->GetMethodID(settings_class, "withStackTrace", "()Ljdk/jfr/EventSettings;");
    if (with_stack_trace == nullptr) return false;
  }
  for (const std::string& event : events) {
    jstring text = ToJavaString(env, event);
    if (text == nullptr) return false;
    jobject settings = env->CallObjectMethod(recording, method, text);
    if (env->ExceptionCheck()) return false;
    if (with_stack_trace != nullptr) {
      env->DeleteLocalRef(env->CallObjectMethod(settings, with_stack_trace));
      if (env->ExceptionCheck()) return false;
    }
    env->DeleteLocalRef(settings);
    env->DeleteLocalRef(text);
  }
  return true;
}

// The JDK's events of the kinds the session records itself (async-profiler turns off the same).
std::vector<std::string> EventsToDisable(const JdkRecorderRequest& request) {
  std::vector<std::string> events;
  if (request.samples)
    events.insert(events.end(), {"jdk.ExecutionSample", "jdk.NativeMethodSample"});
  if (request.allocations) {
    events.insert(events.end(), {"jdk.ObjectAllocationSample", "jdk.ObjectAllocationInNewTLAB",
                                 "jdk.ObjectAllocationOutsideTLAB", "jdk.OldObjectSample"});
  }
  if (request.locks) events.insert(events.end(), {"jdk.JavaMonitorEnter", "jdk.ThreadPark"});
  return events;
}

// A new jdk.jfr.Recording for `config`, not started (a local reference), or null with an
// exception pending or *error set.
jobject NewRecording(JNIEnv* env, const JdkRecorderRequest& request, std::string* error) {
  jclass recording_class = env->FindClass("jdk/jfr/Recording");
  if (recording_class == nullptr) return nullptr;
  if (request.config[0] == '+') {
    jmethodID create = env->GetMethodID(recording_class, "<init>", "()V");
    jobject recording =
        create != nullptr ? Checked(env, env->NewObject(recording_class, create)) : nullptr;
    std::vector<std::string> events;
    for (size_t begin = 1; begin <= request.config.size();) {
      size_t end = request.config.find('+', begin);
      if (end == std::string::npos) end = request.config.size();
      events.push_back(request.config.substr(begin, end - begin));
      begin = end + 1;
    }
    // With their stacks: a JDK event type declared without one (jdk.SocketRead) would give the
    // tool's --events nothing to show where it happened, and a .jfc is not there to turn it on.
    if (recording == nullptr || !ForEachEvent(env, recording, "enable", events, true)) {
      return nullptr;
    }
    return recording;
  }
  jclass configuration = env->FindClass("jdk/jfr/Configuration");
  if (configuration == nullptr) return nullptr;
  jmethodID by_name = env->GetStaticMethodID(configuration, "getConfiguration",
                                             "(Ljava/lang/String;)Ljdk/jfr/Configuration;");
  jmethodID from_file = env->GetStaticMethodID(configuration, "create",
                                               "(Ljava/nio/file/Path;)Ljdk/jfr/Configuration;");
  jstring name = ToJavaString(env, request.config);
  if (by_name == nullptr || from_file == nullptr || name == nullptr) return nullptr;
  jobject chosen = env->CallStaticObjectMethod(configuration, by_name, name);
  if (PendingIs(env, "java/nio/file/NoSuchFileException")) {
    env->ExceptionClear();
    jobject path = PathOf(env, request.config);
    if (path == nullptr) return nullptr;
    chosen = env->CallStaticObjectMethod(configuration, from_file, path);
    if (PendingIs(env, "java/nio/file/NoSuchFileException")) {
      env->ExceptionClear();
      *error = "'" + request.config +
               "' is neither a predefined configuration (default, profile) nor a .jfc file";
      return nullptr;
    }
  }
  if (chosen == nullptr) return nullptr;
  jmethodID create = env->GetMethodID(recording_class, "<init>", "(Ljdk/jfr/Configuration;)V");
  jobject recording =
      create != nullptr ? Checked(env, env->NewObject(recording_class, create, chosen)) : nullptr;
  if (recording == nullptr ||
      !ForEachEvent(env, recording, "disable", EventsToDisable(request), false)) {
    return nullptr;
  }
  return recording;
}

// recording.method(argument) for a void or boolean method; false with an exception pending.
bool Call(JNIEnv* env, jobject recording, const char* method, const char* signature,
          jvalue argument) {
  jmethodID id = env->GetMethodID(env->GetObjectClass(recording), method, signature);
  if (id == nullptr) return false;
  const char result = signature[strlen(signature) - 1];
  if (result == 'Z') {
    env->CallBooleanMethodA(recording, id, &argument);
  } else {
    env->CallVoidMethodA(recording, id, &argument);
  }
  return !env->ExceptionCheck();
}

// Names `recording`, sends it to disk with `destination` (where the JDK writes it when it stops,
// the JVM's shutdown included) and starts it. False with an exception pending.
bool StartToDisk(JNIEnv* env, jobject recording, const std::string& destination) {
  jvalue argument;
  argument.l = ToJavaString(env, "ctxprof jfrsync");
  bool set =
      argument.l != nullptr && Call(env, recording, "setName", "(Ljava/lang/String;)V", argument);
  argument.z = JNI_TRUE;
  set = set && Call(env, recording, "setToDisk", "(Z)V", argument);
  argument.l = PathOf(env, destination);
  set = set && argument.l != nullptr &&
        Call(env, recording, "setDestination", "(Ljava/nio/file/Path;)V", argument);
  argument.l = nullptr;
  return set && Call(env, recording, "start", "()V", argument);
}

// Keeps the JDK's recorder from recording the calling thread's events
// (jdk.jfr.internal.JVM.exclude: static since JDK 22, else on JVM.getJVM()), as it does for its own
// threads: the copies of its chunks would otherwise be jdk.FileRead and FileWrite events of the
// next period. False with an exception pending.
bool ExcludeCallingThread(JNIEnv* env) {
  jclass jvm = env->FindClass("jdk/jfr/internal/JVM");
  jclass thread_class = env->FindClass("java/lang/Thread");
  jmethodID current =
      thread_class != nullptr
          ? env->GetStaticMethodID(thread_class, "currentThread", "()Ljava/lang/Thread;")
          : nullptr;
  jobject thread = current != nullptr
                       ? Checked(env, env->CallStaticObjectMethod(thread_class, current))
                       : nullptr;
  if (jvm == nullptr || thread == nullptr) return false;
  if (jmethodID exclude = env->GetStaticMethodID(jvm, "exclude", "(Ljava/lang/Thread;)V")) {
    env->CallStaticVoidMethod(jvm, exclude, thread);
    return !env->ExceptionCheck();
  }
  env->ExceptionClear();
  jmethodID get_jvm = env->GetStaticMethodID(jvm, "getJVM", "()Ljdk/jfr/internal/JVM;");
  jmethodID exclude = env->GetMethodID(jvm, "exclude", "(Ljava/lang/Thread;)V");
  jobject instance = get_jvm != nullptr && exclude != nullptr
                         ? Checked(env, env->CallStaticObjectMethod(jvm, get_jvm))
                         : nullptr;
  if (instance == nullptr) return false;
  env->CallVoidMethod(instance, exclude, thread);
  return !env->ExceptionCheck();
}

// Writes to `to` the chunks of the JDK recording file `from` that started after
// `after->start_nanos`, and moves *after to the last of them (left as it was when there is
// none). kIo naming the file at fault; kInvalidArgument for a chunk that does not fit the file.
Status CopyChunksAfter(const std::string& from, const std::string& to, JdkChunkMark* after) {
  const int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  const int out = in >= 0 ? open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
  Status status;
  if (in < 0 || out < 0) {
    const int os_error = errno;
    status =
        Status::Io("cannot open " + (in < 0 ? from : to) + ": " + strerror(os_error), os_error);
  }
  JdkChunkMark last = *after;
  std::vector<uint8_t> chunk;
  for (uint64_t offset = 0; status.ok();) {
    uint8_t header[kChunkHeaderSize];
    const ssize_t got = pread(in, header, sizeof(header), static_cast<off_t>(offset));
    if (got == 0) break;  // the end of the file
    auto field = [&header](size_t at) {
      uint64_t value = 0;
      for (size_t i = 0; i < 8; i++) value = value << 8 | header[at + i];
      return value;
    };
    const uint64_t size = got == static_cast<ssize_t>(sizeof(header)) ? field(kChunkSizeOffset) : 0;
    if (got < 0 || size < sizeof(header) || memcmp(header, "FLR", 4) != 0) {
      const int os_error = got < 0 ? errno : 0;
      status = got < 0 ? Status::Io("cannot read " + from + ": " + strerror(os_error), os_error)
                       : Status::InvalidArgument(from + ": offset " + std::to_string(offset) +
                                                 ": not a whole JFR chunk");
      break;
    }
    const auto start_nanos = static_cast<int64_t>(field(kChunkStartNanosOffset));
    if (start_nanos > after->start_nanos) {
      chunk.resize(size);
      for (uint64_t done = 0; status.ok() && done < size;) {
        const ssize_t n =
            pread(in, chunk.data() + done, size - done, static_cast<off_t>(offset + done));
        if (n <= 0) {
          const int os_error = n < 0 ? errno : 0;
          status = Status::Io("cannot read " + from + ": " +
                                  (n < 0 ? strerror(os_error) : "unexpected end of file"),
                              os_error);
        }
        done += n > 0 ? static_cast<uint64_t>(n) : 0;
      }
      for (uint64_t done = 0; status.ok() && done < size;) {
        const ssize_t n = write(out, chunk.data() + done, size - done);
        if (n < 0) {
          const int os_error = errno;
          status = Status::Io("cannot write " + to + ": " + strerror(os_error), os_error);
        }
        done += n > 0 ? static_cast<uint64_t>(n) : 0;
      }
      last.start_nanos = start_nanos;
      last.end_nanos = start_nanos + static_cast<int64_t>(field(kChunkDurationOffset));
      last.end_ticks = field(kChunkStartTicksOffset) + field(kChunkDurationOffset);
    }
    offset += size;
  }
  if (out >= 0 && close(out) != 0 && status.ok()) {
    const int os_error = errno;
    status = Status::Io("cannot write " + to + ": " + strerror(os_error), os_error);
  }
  if (in >= 0) close(in);
  if (status.ok()) *after = last;
  return status;
}

std::string StateOf(JNIEnv* env, jobject recording) {
  const LocalFrame frame(env, 8);
  if (!frame.ok()) {
    env->ExceptionClear();
    return "";
  }
  jclass type = env->GetObjectClass(recording);
  jmethodID get_state = env->GetMethodID(type, "getState", "()Ljdk/jfr/RecordingState;");
  jobject state =
      get_state != nullptr ? Checked(env, env->CallObjectMethod(recording, get_state)) : nullptr;
  if (state == nullptr) {
    env->ExceptionClear();
    return "";
  }
  jmethodID name = env->GetMethodID(env->GetObjectClass(state), "name", "()Ljava/lang/String;");
  auto text = static_cast<jstring>(
      name != nullptr ? Checked(env, env->CallObjectMethod(state, name)) : nullptr);
  env->ExceptionClear();
  return FromJavaString(env, text);
}

// The JDK recorder's thread key lookup, or null (an exception cleared) when the JDK has none.
KeyLookup* NewKeyLookup(JNIEnv* env) {
  jclass jvm = env->FindClass("jdk/jfr/internal/JVM");
  jmethodID method = jvm != nullptr
                         ? env->GetStaticMethodID(jvm, "getThreadId", "(Ljava/lang/Thread;)J")
                         : nullptr;
  jobject instance = nullptr;
  if (jvm != nullptr && method == nullptr) {
    env->ExceptionClear();
    jmethodID get_jvm = env->GetStaticMethodID(jvm, "getJVM", "()Ljdk/jfr/internal/JVM;");
    instance =
        get_jvm != nullptr ? Checked(env, env->CallStaticObjectMethod(jvm, get_jvm)) : nullptr;
    method = instance != nullptr ? env->GetMethodID(jvm, "getThreadId", "(Ljava/lang/Thread;)J")
                                 : nullptr;
  }
  if (method == nullptr || env->ExceptionCheck()) {
    env->ExceptionClear();
    return nullptr;
  }
  auto* lookup = new KeyLookup{static_cast<jclass>(env->NewGlobalRef(jvm)),
                               instance != nullptr ? env->NewGlobalRef(instance) : nullptr, method};
  if (lookup->jvm == nullptr || (instance != nullptr && lookup->instance == nullptr)) {
    env->ExceptionClear();
    if (lookup->jvm != nullptr) env->DeleteGlobalRef(lookup->jvm);
    delete lookup;
    return nullptr;
  }
  return lookup;
}

// A JFR setting's duration ("20 ms", "0 ns", "1 s") in nanoseconds; false when it is not one.
bool ParseSettingDuration(const std::string& text, uint64_t* nanos) {
  size_t digits = 0;
  uint64_t number = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9' &&
         number < UINT64_MAX / 10 - 10) {
    number = number * 10 + static_cast<uint64_t>(text[digits++] - '0');
  }
  size_t unit = digits;
  while (unit < text.size() && text[unit] == ' ') unit++;
  static const std::pair<const char*, uint64_t> kUnits[] = {
      {"ns", 1},          {"us", 1000},         {"ms", 1000000},      {"s", kNanosPerSecond},
      {"m", 60000000000}, {"h", 3600000000000}, {"d", 86400000000000}};
  for (const auto& [name, scale] : kUnits) {
    if (digits > 0 && text.compare(unit, std::string::npos, name) == 0 &&
        number <= UINT64_MAX / scale) {
      *nanos = number * scale;
      return true;
    }
  }
  return false;
}

// select=if-context: sets every duration threshold of `recording` to 0 and returns the ones it
// had (or request.threshold_nanos, when given) by event name. False with an exception pending.
bool RecordEveryDuration(JNIEnv* env, jobject recording, const JdkRecorderRequest& request,
                         std::map<std::string, uint64_t>* thresholds) {
  jclass type = env->GetObjectClass(recording);
  jmethodID get = env->GetMethodID(type, "getSettings", "()Ljava/util/Map;");
  jmethodID set = env->GetMethodID(type, "setSettings", "(Ljava/util/Map;)V");
  jobject settings = get != nullptr && set != nullptr
                         ? Checked(env, env->CallObjectMethod(recording, get))
                         : nullptr;
  jclass map = env->FindClass("java/util/Map");
  jclass set_class = env->FindClass("java/util/Set");
  if (settings == nullptr || map == nullptr || set_class == nullptr) return false;
  jmethodID key_set = env->GetMethodID(map, "keySet", "()Ljava/util/Set;");
  jmethodID get_value = env->GetMethodID(map, "get", "(Ljava/lang/Object;)Ljava/lang/Object;");
  jmethodID put =
      env->GetMethodID(map, "put", "(Ljava/lang/Object;Ljava/lang/Object;)Ljava/lang/Object;");
  jmethodID to_array = env->GetMethodID(set_class, "toArray", "()[Ljava/lang/Object;");
  if (key_set == nullptr || get_value == nullptr || put == nullptr || to_array == nullptr) {
    return false;
  }
  // A HashMap copy: the recording's own may be unmodifiable.
  jclass hash_map = env->FindClass("java/util/HashMap");
  jmethodID copy =
      hash_map != nullptr ? env->GetMethodID(hash_map, "<init>", "(Ljava/util/Map;)V") : nullptr;
  jobject changed =
      copy != nullptr ? Checked(env, env->NewObject(hash_map, copy, settings)) : nullptr;
  jobject keys =
      changed != nullptr ? Checked(env, env->CallObjectMethod(changed, key_set)) : nullptr;
  auto names = static_cast<jobjectArray>(
      keys != nullptr ? Checked(env, env->CallObjectMethod(keys, to_array)) : nullptr);
  if (names == nullptr) return false;
  static const std::string kSuffix = "#threshold";
  std::vector<std::string> events;
  for (jsize i = 0; i < env->GetArrayLength(names); i++) {
    auto key = static_cast<jstring>(env->GetObjectArrayElement(names, i));
    const std::string text = FromJavaString(env, key);
    if (text.size() > kSuffix.size() &&
        text.compare(text.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0) {
      auto value =
          static_cast<jstring>(Checked(env, env->CallObjectMethod(changed, get_value, key)));
      if (env->ExceptionCheck()) return false;
      uint64_t nanos = 0;
      if (!ParseSettingDuration(FromJavaString(env, value), &nanos)) nanos = 0;
      (*thresholds)[text.substr(0, text.size() - kSuffix.size())] =
          request.threshold_given ? request.threshold_nanos : nanos;
      env->DeleteLocalRef(value);
    }
    env->DeleteLocalRef(key);
  }
  if (request.config[0] == '+' && request.threshold_given) {
    for (size_t begin = 1; begin <= request.config.size();) {
      size_t end = request.config.find('+', begin);
      if (end == std::string::npos) end = request.config.size();
      (*thresholds)[request.config.substr(begin, end - begin)] = request.threshold_nanos;
      begin = end + 1;
    }
  }
  jstring zero = ToJavaString(env, "0 ns");
  for (const auto& [event, threshold] : *thresholds) {
    jstring key = ToJavaString(env, event + kSuffix);
    if (zero == nullptr || key == nullptr) return false;
    env->DeleteLocalRef(Checked(env, env->CallObjectMethod(changed, put, key, zero)));
    if (env->ExceptionCheck()) return false;
    env->DeleteLocalRef(key);
  }
  env->CallVoidMethod(recording, set, changed);
  return !env->ExceptionCheck();
}

}  // namespace

bool JfrSync::Running() { return g_key_lookup.load(std::memory_order_acquire) != nullptr; }

uint32_t JfrSync::JdkThreadKey(JNIEnv* env, jobject thread) {
  const KeyLookup* lookup = g_key_lookup.load(std::memory_order_acquire);
  if (lookup == nullptr) return 0;
  const jlong key = lookup->instance != nullptr
                        ? env->CallLongMethod(lookup->instance, lookup->get_thread_id, thread)
                        : env->CallStaticLongMethod(lookup->jvm, lookup->get_thread_id, thread);
  if (env->ExceptionCheck()) {
    env->ExceptionClear();
    return 0;
  }
  return key > 0 && key <= UINT32_MAX ? static_cast<uint32_t>(key) : 0;
}

StatusOr<std::unique_ptr<JdkRecorder>> JfrSync::Start(JavaVM* vm,
                                                      const JdkRecorderRequest& request) {
  ScopedEnv scoped(vm);
  JNIEnv* env = scoped.get();
  if (env == nullptr) return Status::Unavailable("cannot attach to the JVM", 0);
  const LocalFrame frame(env, 64);
  if (!frame.ok()) return Failed(env, "out of memory");
  StatusOr<uint64_t> origin = ReadOrigin(env);
  if (!origin.ok()) return origin.status();
  std::string error;
  jobject recording = NewRecording(env, request, &error);
  if (recording == nullptr) {
    return error.empty()
               ? Failed(env, "cannot create the JDK's recording for '" + request.config + "'")
               : Status::Unavailable(error, 0);
  }
  AppendSelection selection;
  selection.triggered = request.triggered_contexts;
  if (request.select_if_context &&
      !RecordEveryDuration(env, recording, request, &selection.thresholds)) {
    return Failed(env, "cannot record the JDK's duration events below their thresholds");
  }
  // repository=: the JDK's files go into the repository (created as the session would), under
  // names its readers skip (no .jfr).
  const std::string base =
      request.repository.empty() ? request.file : request.repository + "/.ctxprof-jfrsync";
  if (!request.repository.empty() && mkdir(request.repository.c_str(), 0700) != 0 &&
      errno != EEXIST) {
    const int os_error = errno;
    return Status::Io(
        "cannot create the repository " + request.repository + ": " + strerror(os_error), os_error);
  }
  const std::string destination = base + ".jdk.jfr";
  if (!StartToDisk(env, recording, destination)) {
    return Failed(env, "the JDK's recorder did not start");
  }
  jobject global = env->NewGlobalRef(recording);
  if (global == nullptr) return Failed(env, "out of memory");
  g_key_lookup.store(NewKeyLookup(env), std::memory_order_release);
  std::unique_ptr<JfrSync> sync(new JfrSync(vm, global, !request.repository.empty(), destination,
                                            base + ".period", origin.value(),
                                            std::move(selection)));
  if (sync->per_chunk_) {
    try {
      sync->worker_ = std::thread([raw = sync.get()] { raw->RunPeriods(); });
    } catch (const std::system_error& e) {
      return Status::Unavailable(std::string("cannot create its thread: ") +
                                     strerror(e.code().value()) +
                                     "; raise the process's thread limit",
                                 e.code().value());
    }
    // Its tid, before the session starts: the session excludes it from sampling.
    std::unique_lock<std::mutex> lock(sync->boundary_mutex_);
    sync->boundary_asked_.wait(lock, [raw = sync.get()] { return raw->worker_tid_ != 0; });
  }
  return std::unique_ptr<JdkRecorder>(std::move(sync));
}

JfrSync::~JfrSync() {
  if (worker_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(boundary_mutex_);
      stopping_ = true;
    }
    boundary_asked_.notify_one();
    worker_.join();
  }
  ScopedEnv scoped(vm_);
  JNIEnv* env = scoped.get();
  if (KeyLookup* lookup = g_key_lookup.exchange(nullptr, std::memory_order_acq_rel)) {
    if (env != nullptr) {
      env->DeleteGlobalRef(lookup->jvm);
      if (lookup->instance != nullptr) env->DeleteGlobalRef(lookup->instance);
    }
    delete lookup;
  }
  unlink(period_file_.c_str());
  if (recording_ == nullptr) return;
  if (env != nullptr) {
    const LocalFrame frame(env, 8);
    jvalue none;
    none.l = nullptr;
    Call(env, recording_, "close", "()V", none);  // discards what it recorded
    env->ExceptionClear();
    env->DeleteGlobalRef(recording_);
  }
  unlink(destination_.c_str());
}

void JfrSync::StopRecording(JNIEnv* env) {
  if (StateOf(env, recording_) == "RUNNING") {
    jvalue none;
    none.l = nullptr;
    // The JVM's shutdown may stop it between the two calls: then it is written by the JVM.
    if (!Call(env, recording_, "stop", "()Z", none)) env->ExceptionClear();
  }
  // A recording the JVM's shutdown stopped is written to its destination outside the
  // recording's state lock: wait until the file is there and the state says it is done.
  struct stat written;
  for (int waited = 0; waited < kShutdownWaitMillis; waited += 10) {
    const std::string state = StateOf(env, recording_);
    if ((state == "STOPPED" || state == "CLOSED") && stat(destination_.c_str(), &written) == 0) {
      break;
    }
    usleep(10 * 1000);
  }
}

void JfrSync::CloseRecording(JNIEnv* env) {
  jvalue none;
  none.l = nullptr;
  Call(env, recording_, "close", "()V", none);
  env->ExceptionClear();
  env->DeleteGlobalRef(recording_);
  recording_ = nullptr;
  unlink(destination_.c_str());
}

Status JfrSync::StopInto(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (per_chunk_) {
    // The last chunk took the rest (EndPeriodInto); a session whose writer failed did not.
    if (recording_ != nullptr) {
      ScopedEnv scoped(vm_);
      if (JNIEnv* env = scoped.get()) CloseRecording(env);
    }
    return period_error_;
  }
  if (recording_ == nullptr) return Status::WrongState("jfrsync: the JDK's recording has ended");
  ScopedEnv scoped(vm_);
  JNIEnv* env = scoped.get();
  if (env == nullptr) return Status::Unavailable("jfrsync: cannot attach to the JVM", 0);
  const LocalFrame frame(env, 16);
  if (!frame.ok()) return Failed(env, "jfrsync: out of memory");
  StopRecording(env);
  const Status copied = AppendRecording(path, {destination_}, selection_);
  CloseRecording(env);
  if (copied.ok()) return copied;
  return copied.Prefixed("jfrsync: the JDK's events are not in " + path);
}

Status JfrSync::SnapshotInto(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (per_chunk_) return Status();  // the dumped chunk files hold their periods already
  if (recording_ == nullptr) return Status::WrongState("jfrsync: the JDK's recording has ended");
  ScopedEnv scoped(vm_);
  JNIEnv* env = scoped.get();
  if (env == nullptr) return Status::Unavailable("jfrsync: cannot attach to the JVM", 0);
  const LocalFrame frame(env, 16);
  if (!frame.ok()) return Failed(env, "jfrsync: out of memory");
  const std::string snapshot = path + ".jdk.jfr";
  jvalue argument;
  argument.l = PathOf(env, snapshot);
  Status status =
      argument.l != nullptr && Call(env, recording_, "dump", "(Ljava/nio/file/Path;)V", argument)
          ? AppendRecording(path, {snapshot}, selection_)
          : Failed(env, "the JDK's recorder did not dump");
  unlink(snapshot.c_str());
  if (status.ok()) return status;
  return status.Prefixed("jfrsync: the JDK's events are not in " + path);
}

void JfrSync::KeepPeriodError(const Status& status) {
  if (period_error_.ok() && !status.ok()) {
    period_error_ = status.Prefixed("jfrsync: a chunk of the repository lacks the JDK's events");
  }
}

uint64_t JfrSync::RotatePeriod() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (recording_ == nullptr) return UINT64_MAX;  // the last chunk has taken it
  if (period_pending_) return 0;                 // not appended yet: no boundary asked twice
  ScopedEnv scoped(vm_);
  JNIEnv* env = scoped.get();
  if (env == nullptr) return 0;
  const LocalFrame frame(env, 64);
  if (!frame.ok()) {
    KeepPeriodError(Failed(env, "out of memory"));
    return 0;
  }
  // The JVM's shutdown stopped it: its destination gets the rest, for the last chunk.
  if (StateOf(env, recording_) != "RUNNING") return UINT64_MAX;
  if (!ExcludeCallingThread(env)) {
    KeepPeriodError(Failed(env, "cannot keep the JDK's recorder off ctxprof's jfrsync thread"));
    return 0;
  }
  // Recording.dump rotates the JDK's chunk once (it stops a copy of the recording) and writes
  // the chunks the recording holds: this period's, after the last one copied before.
  const std::string dumped = period_file_ + ".all";
  jvalue argument;
  argument.l = PathOf(env, dumped);
  if (argument.l == nullptr ||
      !Call(env, recording_, "dump", "(Ljava/nio/file/Path;)V", argument)) {
    const Status failed = Failed(env, "the JDK's recorder did not dump");
    const bool ended = StateOf(env, recording_) != "RUNNING";
    if (!ended) KeepPeriodError(failed);
    unlink(dumped.c_str());
    return ended ? UINT64_MAX : 0;
  }
  const JdkChunkMark previous = copied_;
  const Status copied = CopyChunksAfter(dumped, period_file_, &copied_);
  unlink(dumped.c_str());
  if (!copied.ok() || copied_.end_ticks == previous.end_ticks) {
    // Nothing copied: the chunks stay in the recording for the next period.
    KeepPeriodError(copied.ok() ? Status::Unavailable("the JDK's dump held no new chunk", 0)
                                : copied);
    unlink(period_file_.c_str());
    return 0;
  }
  period_pending_ = true;
  // The recording lets go of the chunks that ended by the previous period's end (they were
  // copied then), so the JDK's repository holds two periods at most: a maximum age set and
  // taken back (setMaxAge trims at once).
  if (previous.end_nanos != 0) {
    timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    const int64_t age =
        static_cast<int64_t>(now.tv_sec) * kNanosPerSecond + now.tv_nsec - previous.end_nanos;
    jclass duration = env->FindClass("java/time/Duration");
    jmethodID of_nanos =
        duration != nullptr ? env->GetStaticMethodID(duration, "ofNanos", "(J)Ljava/time/Duration;")
                            : nullptr;
    argument.l = of_nanos != nullptr && age > 0
                     ? Checked(env, env->CallStaticObjectMethod(duration, of_nanos, age))
                     : nullptr;
    bool trimmed = argument.l != nullptr &&
                   Call(env, recording_, "setMaxAge", "(Ljava/time/Duration;)V", argument);
    argument.l = nullptr;
    trimmed = trimmed && Call(env, recording_, "setMaxAge", "(Ljava/time/Duration;)V", argument);
    if (!trimmed) env->ExceptionClear();  // the JDK's repository keeps more: no event is lost
  }
  return copied_.end_ticks;
}

void JfrSync::RequestPeriodBoundary() {
  std::lock_guard<std::mutex> lock(boundary_mutex_);
  boundary_ = 0;
  boundary_requested_ = true;
  boundary_asked_.notify_one();
}

uint64_t JfrSync::PeriodBoundary() {
  std::lock_guard<std::mutex> lock(boundary_mutex_);
  return boundary_;
}

void JfrSync::RunPeriods() {
  // The OS name, as the session's other threads have (top -H, /proc); the JVM's attach below
  // names only the Java thread.
  pthread_setname_np(pthread_self(), "ctxprof-jfrsync");
  {  // before attaching to the JVM, which Create's caller must not wait for
    std::lock_guard<std::mutex> lock(boundary_mutex_);
    worker_tid_ = static_cast<pid_t>(syscall(SYS_gettid));
  }
  boundary_asked_.notify_all();
  const ScopedEnv attached(vm_);  // once for the thread's life, not once per rotation
  std::unique_lock<std::mutex> lock(boundary_mutex_);
  while (true) {
    boundary_asked_.wait(lock, [this] { return boundary_requested_ || stopping_; });
    if (stopping_) return;
    boundary_requested_ = false;
    lock.unlock();
    const uint64_t boundary = RotatePeriod();
    lock.lock();
    boundary_ = boundary != 0 ? boundary : UINT64_MAX - 1;
  }
}

void JfrSync::EndPeriodInto(const std::string& path, bool last) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> others;
  if (period_pending_) others.push_back(period_file_);
  ScopedEnv scoped(vm_);
  JNIEnv* env = scoped.get();
  if (last && recording_ != nullptr && env != nullptr) {
    // The recording still holds chunks copied before (two periods at most): only the later.
    const LocalFrame frame(env, 16);
    StopRecording(env);
    const std::string rest = period_file_ + ".rest";
    Status copied = CopyChunksAfter(destination_, rest, &copied_);
    if (copied.ok()) {
      others.push_back(rest);
      copied = AppendRecording(path, others, selection_);
    }
    KeepPeriodError(copied);
    unlink(rest.c_str());
    CloseRecording(env);
  } else if (!others.empty()) {
    KeepPeriodError(AppendRecording(path, others, selection_));
  }
  unlink(period_file_.c_str());
  period_pending_ = false;
}

}  // namespace ctxprof
