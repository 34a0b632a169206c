#include "profiler/options.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace ctxprof {
namespace {

Options ParseOk(const std::string& text) {
  StatusOr<Options> parsed = ParseOptions(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.status().message();
  return parsed.ok() ? parsed.value() : Options();
}

// Parsing fails with kInvalidArgument, and the message names `key` (and the offending value,
// when given).
void ExpectError(const std::string& text, const std::string& key, const std::string& value = "") {
  const StatusOr<Options> parsed = ParseOptions(text);
  ASSERT_FALSE(parsed.ok()) << text;
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << text;
  const std::string& error = parsed.status().message();
  EXPECT_NE(error.find("'" + key + "'"), std::string::npos) << text << " -> " << error;
  if (!value.empty()) {
    EXPECT_NE(error.find("'" + value + "'"), std::string::npos) << text << " -> " << error;
  }
}

TEST(OptionsTest, DefaultsAreCpuAtTenMilliseconds) {
  const Options options = ParseOk("");
  EXPECT_EQ(options.cpu_engine, CpuEngineKind::kPerf);
  EXPECT_EQ(options.cpu_interval_ns, 10 * kNanosPerMilli);
  EXPECT_FALSE(options.wall_enabled);
  EXPECT_EQ(options.depth, kDefaultStackDepth);
  EXPECT_EQ(options.signal, SIGPROF);
  EXPECT_EQ(options.wall_signal, SIGVTALRM);
  EXPECT_EQ(options.clock, ClockKind::kTsc);
  EXPECT_EQ(options.unwind, UnwindKind::kDwarf);
}

TEST(OptionsTest, UnwindSelectsTheNativeWalker) {
  EXPECT_EQ(ParseOk("unwind=dwarf").unwind, UnwindKind::kDwarf);
  EXPECT_EQ(ParseOk("unwind=libunwind").unwind, UnwindKind::kLibunwind);
  EXPECT_EQ(ParseOk("unwind=fp").unwind, UnwindKind::kFramePointer);
}

TEST(OptionsTest, ParsesEveryKey) {
  const Options options = ParseOk(
      "event=ctimer+wall,interval=500us,wall=20ms,filter=context,threads=4,depth=64,unwind=fp,"
      "cstack=java+native,"
      "clock=monotonic,signal=SIGRTMIN+2,buffer=1024,file=/tmp/x.jfr,attributes=endpoint;tenant,"
      "chunksize=12m,chunktime=30s,maxsize=1g,maxage=2s,flush=1s,cpusamples=ctxprof");
  EXPECT_EQ(options.cpu_engine, CpuEngineKind::kCpuTimer);
  EXPECT_EQ(options.cpu_interval_ns, 500 * kNanosPerMicro);
  EXPECT_TRUE(options.wall_enabled);
  EXPECT_EQ(options.wall_interval_ns, 20 * kNanosPerMilli);
  EXPECT_TRUE(options.filter_context);
  EXPECT_EQ(options.wall_threads_per_tick, 4);
  EXPECT_EQ(options.depth, 64);
  EXPECT_EQ(options.unwind, UnwindKind::kFramePointer);
  EXPECT_EQ(options.cstack, CStackKind::kMixed);
  EXPECT_EQ(options.clock, ClockKind::kMonotonic);
  EXPECT_EQ(options.signal, SIGRTMIN + 2);
  EXPECT_EQ(options.buffer_slots, 1024u);
  EXPECT_EQ(options.file, "/tmp/x.jfr");
  ASSERT_TRUE(options.attributes_given);
  EXPECT_EQ(options.attributes, (std::vector<std::string>{"endpoint", "tenant"}));
  EXPECT_EQ(options.jfr.chunk_size_bytes, 12ull << 20);
  EXPECT_EQ(options.jfr.chunk_time_ns, 30 * kNanosPerSecond);
  EXPECT_EQ(options.jfr.max_size_bytes, 1ull << 30);
  EXPECT_EQ(options.jfr.max_age_ns, 2 * kNanosPerSecond);
  EXPECT_EQ(options.jfr.flush_interval_ns, kNanosPerSecond);
  EXPECT_TRUE(options.jfr.cpu_samples_as_ctxprof);
}

TEST(OptionsTest, EventLayoutKeys) {
  const Options layout = ParseOk("wallsamples=jdk,contextid=true");
  EXPECT_TRUE(layout.jfr.wall_samples_as_jdk);
  EXPECT_TRUE(layout.jfr.context_id);
  EXPECT_FALSE(ParseOk("").jfr.context_id);  // async-profiler's exact layout by default
  ExpectError("wallsamples=ctxprof", "wallsamples", "ctxprof");
  ExpectError("contextid=yes", "contextid", "yes");
}

TEST(OptionsTest, ContextsTriggeredOrAll) {
  EXPECT_FALSE(ParseOk("").jfr.all_contexts);  // triggered
  EXPECT_FALSE(ParseOk("contexts=triggered").jfr.all_contexts);
  EXPECT_TRUE(ParseOk("contexts=all").jfr.all_contexts);
  ExpectError("contexts=some", "contexts", "some");
}

TEST(OptionsTest, JfrSync) {
  const Options plus = ParseOk("jfrsync=+jdk.FileRead+shop.Order,file=/tmp/a.jfr");
  EXPECT_EQ(plus.jfrsync, "+jdk.FileRead+shop.Order");
  // Every span is written and time is counted in nanoseconds (the JDK recorder's origin is
  // set when it runs).
  EXPECT_TRUE(plus.jfr.all_contexts);
  EXPECT_EQ(plus.clock, ClockKind::kMonotonic);
  EXPECT_EQ(plus.clock_origin_nanos, 0u);
  EXPECT_EQ(ParseOk("jfrsync=default,file=/tmp/a.jfr,contexts=all").jfrsync, "default");
  EXPECT_EQ(ParseOk("jfrsync=/etc/io.jfc,clock=monotonic,file=/tmp/a.jfr").jfrsync, "/etc/io.jfc");
  ExpectError("jfrsync=default", "jfrsync", "default");  // no file= nor repository=
  // repository= and upload=: each chunk file gets the JDK's events of its period.
  EXPECT_EQ(ParseOk("jfrsync=default,repository=/tmp/r").jfrsync, "default");
  EXPECT_EQ(ParseOk("jfrsync=default,repository=/tmp/r,upload=http://127.0.0.1:4040").jfrsync,
            "default");
  // contexts=triggered, given: spans without an event are left out at the end.
  const Options triggered = ParseOk("jfrsync=default,file=/tmp/a.jfr,contexts=triggered");
  EXPECT_TRUE(triggered.jfr.all_contexts);
  EXPECT_TRUE(triggered.jfrsync_triggered_contexts);
  EXPECT_FALSE(plus.jfrsync_triggered_contexts);
  ExpectError("jfrsync=default,file=/tmp/a.jfr,clock=tsc", "clock", "tsc");
  for (const char* bad : {"", "+", "+a++b", "+a+"}) {
    ExpectError(std::string("file=/tmp/a.jfr,jfrsync=") + bad, "jfrsync");
  }
  // select=if-context applies to the JDK's duration events; jfrthreshold= overrides their
  // configuration's thresholds.
  const Options selected =
      ParseOk("jfrsync=profile,file=/tmp/a.jfr,select=if-context,jfrthreshold=5ms");
  EXPECT_EQ(selected.select, EventSelect::kIfContext);
  EXPECT_TRUE(selected.jfrsync_threshold_given);
  EXPECT_EQ(selected.jfrsync_threshold_ns, 5000000u);
  EXPECT_FALSE(
      ParseOk("jfrsync=profile,file=/tmp/a.jfr,select=if-context").jfrsync_threshold_given);
  ExpectError("jfrsync=profile,file=/tmp/a.jfr,jfrthreshold=5ms", "jfrthreshold");
  ExpectError("select=if-context,lock=1ms,file=/tmp/a.jfr,jfrthreshold=5ms", "jfrthreshold");
  ExpectError("select=if-context,file=/tmp/a.jfr", "select", "if-context");
}

TEST(OptionsTest, KernelFrames) {
  EXPECT_TRUE(ParseOk("").kernel_frames);
  EXPECT_FALSE(ParseOk("kernel=false").kernel_frames);
  EXPECT_TRUE(ParseOk("kernel=false,kernel=true").kernel_frames);
  ExpectError("kernel=no", "kernel", "no");
  EXPECT_FALSE(ParseOk("").otel_context);
  EXPECT_TRUE(ParseOk("otelcontext=true").otel_context);
  ExpectError("otelcontext=read", "otelcontext", "read");
}

TEST(OptionsTest, Upload) {
  const Options options = ParseOk(
      "event=cpu+wall,interval=20ms,wall=20ms,repository=/tmp/r,"
      "upload=https://pyro.example:8443/base/,uploadname=checkout-svc,"
      "uploadlabels=env=prod;dc=eu.1,uploadtoken=env:PYRO_TOKEN,uploadtenant=file:/run/tenant,"
      "uploadca=/etc/ca.pem");
  const UploadOptions& upload = options.upload;
  EXPECT_EQ(upload.url, "https://pyro.example:8443/base/");
  EXPECT_TRUE(upload.https);
  EXPECT_EQ(upload.host, "pyro.example");
  EXPECT_EQ(upload.port, 8443);
  EXPECT_EQ(upload.path_prefix, "/base");
  EXPECT_EQ(upload.name, "checkout-svc");
  EXPECT_EQ(upload.labels,
            (std::vector<std::pair<std::string, std::string>>{{"env", "prod"}, {"dc", "eu.1"}}));
  EXPECT_EQ(upload.token.kind, SecretSource::kEnvironment);
  EXPECT_EQ(upload.token.reference, "PYRO_TOKEN");
  EXPECT_EQ(upload.tenant.kind, SecretSource::kFile);
  EXPECT_EQ(upload.tenant.reference, "/run/tenant");
  EXPECT_EQ(upload.basic.kind, SecretSource::kNone);
  EXPECT_EQ(upload.ca_file, "/etc/ca.pem");
  // Pyroscope reads contextId; chunks fit its default 4 MiB limit and its 10 s cadence; its
  // parser needs the Pyroscope layout and reads durations as nanoseconds (docs/JFR.md).
  EXPECT_TRUE(options.jfr.context_id);
  EXPECT_TRUE(options.jfr.pyroscope);
  EXPECT_EQ(options.clock, ClockKind::kMonotonic);
  EXPECT_FALSE(ParseOk("repository=/r,contextid=true").jfr.pyroscope);
  EXPECT_EQ(ParseOk("repository=/r,upload=http://h,clock=monotonic").clock, ClockKind::kMonotonic);
  EXPECT_EQ(options.jfr.chunk_time_ns, 10 * kNanosPerSecond);
  EXPECT_EQ(options.jfr.chunk_size_bytes, 3ull << 20);

  const Options plain = ParseOk("repository=/r,upload=http://[::1]:4040,chunktime=5s");
  EXPECT_FALSE(plain.upload.https);
  EXPECT_EQ(plain.upload.host, "::1");
  EXPECT_EQ(plain.upload.port, 4040);
  EXPECT_EQ(plain.upload.path_prefix, "");
  EXPECT_EQ(plain.jfr.chunk_time_ns, 5 * kNanosPerSecond);
  EXPECT_EQ(ParseOk("repository=/r,upload=http://h").upload.port, 80);
}

TEST(OptionsTest, Otlp) {
  EXPECT_EQ(ParseOk("repository=/r,otlp=http://collector:4318/base/").otlp.url,
            "http://collector:4318/base/");
  EXPECT_EQ(ParseOk("repository=/r,otlp=env").otlp.url, "env");
  // Unlike upload=, otlp= leaves the clock and the event layout alone; it takes upload='s chunk
  // schedule unless given one.
  EXPECT_EQ(ParseOk("repository=/r,otlp=env").clock, ClockKind::kTsc);
  EXPECT_FALSE(ParseOk("repository=/r,otlp=env").jfr.pyroscope);
  EXPECT_EQ(ParseOk("repository=/r,otlp=env").jfr.chunk_time_ns, 10 * kNanosPerSecond);
  EXPECT_EQ(ParseOk("repository=/r,otlp=env").jfr.chunk_size_bytes, 3ull << 20);
  EXPECT_EQ(ParseOk("repository=/r,otlp=env,chunktime=1m").jfr.chunk_time_ns, 60 * kNanosPerSecond);
  ExpectError("otlp=env", "otlp", "env");  // no repository
  ExpectError("repository=/r,otlp=grpc://h:4317", "otlp", "grpc://h:4317");
  ExpectError("repository=/r,otlp=http://h:0", "otlp", "http://h:0");
  ExpectError("repository=/r,otlp=http://h/v1?x=1", "otlp", "http://h/v1?x=1");
  StatusOr<Options> credentials = ParseOptions("repository=/r,otlp=http://u:pa55@h");
  ASSERT_FALSE(credentials.ok());
  EXPECT_EQ(credentials.status().message().find("pa55"), std::string::npos);
}

TEST(OptionsTest, UploadErrors) {
  ExpectError("upload=http://h", "upload", "http://h");  // no repository
  ExpectError("repository=/r,upload=ftp://h", "upload", "ftp://h");
  ExpectError("repository=/r,upload=http://h:99999", "upload", "http://h:99999");
  ExpectError("repository=/r,upload=http://h/x?a=b", "upload", "http://h/x?a=b");
  ExpectError("repository=/r,upload=http://:80", "upload", "http://:80");
  ExpectError("repository=/r,upload=http://h,contextid=false", "contextid");
  ExpectError("repository=/r,upload=http://h,cpusamples=ctxprof", "cpusamples", "ctxprof");
  ExpectError("repository=/r,upload=http://h,wallsamples=jdk", "wallsamples", "jdk");
  ExpectError("repository=/r,clock=tsc,upload=http://h", "clock", "tsc");
  ExpectError("repository=/r,upload=http://h,interval=3ms", "interval", "3ms");
  ExpectError("repository=/r,upload=http://h,event=cpu+wall,interval=10ms,wall=50ms", "wall",
              "50ms");
  ExpectError("uploadname=a{b}", "uploadname", "a{b}");
  ExpectError("uploadlabels=env", "uploadlabels", "env");
  ExpectError("uploadlabels=e-v=x", "uploadlabels", "e-v=x");
  ExpectError("uploadlabels=env=a}", "uploadlabels", "env=a}");
  ExpectError("uploadca=", "uploadca");
  // Secrets: only references are accepted, and a rejected value is never repeated.
  for (const char* key : {"uploadtoken", "uploadbasic", "uploadtenant"}) {
    const StatusOr<Options> parsed = ParseOptions(std::string(key) + "=s3cr3t-value");
    ASSERT_FALSE(parsed.ok());
    const std::string& error = parsed.status().message();
    EXPECT_NE(error.find("'" + std::string(key) + "'"), std::string::npos) << error;
    EXPECT_EQ(error.find("s3cr3t"), std::string::npos) << error;
  }
  const StatusOr<Options> parsed = ParseOptions("repository=/r,upload=http://me:pa55@h");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message().find("pa55"), std::string::npos) << parsed.status().message();
}

TEST(OptionsTest, EventSelectsEngines) {
  EXPECT_EQ(ParseOk("event=cpu").cpu_engine, CpuEngineKind::kPerf);
  EXPECT_EQ(ParseOk("event=itimer").cpu_engine, CpuEngineKind::kITimer);
  const Options wall_only = ParseOk("event=wall,interval=7ms");
  EXPECT_EQ(wall_only.cpu_engine, CpuEngineKind::kNone);
  EXPECT_TRUE(wall_only.wall_enabled);
  EXPECT_EQ(wall_only.wall_interval_ns, 7 * kNanosPerMilli);
  const Options both = ParseOk("event=cpu,wall=10ms");
  EXPECT_EQ(both.cpu_engine, CpuEngineKind::kPerf);
  EXPECT_TRUE(both.wall_enabled);
  const Options plus = ParseOk("event=wall+cpu");
  EXPECT_EQ(plus.cpu_engine, CpuEngineKind::kPerf);
  EXPECT_TRUE(plus.wall_enabled);
}

TEST(OptionsTest, RuntimeEvents) {
  const Options defaults = ParseOk("");
  EXPECT_EQ(defaults.alloc_interval_bytes, 0u);
  EXPECT_FALSE(defaults.lock_enabled);
  EXPECT_EQ(defaults.select, EventSelect::kAll);
  const Options options = ParseOk("alloc=512k,live,lock=10ms,select=if-context,file=/tmp/x.jfr");
  EXPECT_EQ(options.cpu_engine, CpuEngineKind::kPerf);  // alloc= and lock= add to CPU sampling
  EXPECT_EQ(options.alloc_interval_bytes, 512u * 1024);
  EXPECT_TRUE(options.live);
  EXPECT_TRUE(options.lock_enabled);
  EXPECT_EQ(options.lock_threshold_ns, 10 * kNanosPerMilli);
  EXPECT_EQ(options.select, EventSelect::kIfContext);
  EXPECT_EQ(ParseOk("lock=0ns,file=x").lock_threshold_ns, 0u);  // every contended wait
  // event=alloc / lock: their defaults, no CPU engine unless named.
  const Options events = ParseOk("event=alloc+lock,file=x");
  EXPECT_EQ(events.cpu_engine, CpuEngineKind::kNone);
  EXPECT_FALSE(events.wall_enabled);
  EXPECT_EQ(events.alloc_interval_bytes, Options::kDefaultAllocIntervalBytes);
  EXPECT_TRUE(events.lock_enabled);
  EXPECT_EQ(events.lock_threshold_ns, Options::kDefaultLockThresholdNs);
  EXPECT_EQ(ParseOk("alloc=64k,event=cpu+alloc,file=x").alloc_interval_bytes, 64u * 1024);
  EXPECT_EQ(ParseOk("event=alloc,alloc=64k,file=x").alloc_interval_bytes, 64u * 1024);

  ExpectError("alloc=0,file=x", "alloc", "0");
  ExpectError("alloc=2g,file=x", "alloc", "2g");
  ExpectError("alloc=big,file=x", "alloc", "big");
  ExpectError("lock=10,file=x", "lock", "10");
  ExpectError("select=maybe,alloc=1m,file=x", "select", "maybe");
  ExpectError("live=yes,alloc=1m,file=x", "live", "yes");
  ExpectError("live,file=x", "live");                 // needs alloc
  ExpectError("select=if-context,file=x", "select");  // needs alloc or lock
  ExpectError("alloc=1m", "alloc");                   // needs a recording
  ExpectError("lock=1ms", "lock");
  ExpectError("event=cpu+alloc+alloc,file=x", "event");
}

TEST(OptionsTest, DurationsAndSizes) {
  uint64_t value = 0;
  EXPECT_TRUE(ParseDuration("1s", &value));
  EXPECT_EQ(value, kNanosPerSecond);
  EXPECT_TRUE(ParseDuration("250ns", &value));
  EXPECT_EQ(value, 250u);
  EXPECT_FALSE(ParseDuration("10", &value));  // a unit is required
  EXPECT_FALSE(ParseDuration("-5ms", &value));
  EXPECT_FALSE(ParseDuration("1.5ms", &value));
  EXPECT_FALSE(ParseDuration("99999999999999999s", &value));  // overflows 64 bits
  EXPECT_TRUE(ParseBytes("4k", &value));
  EXPECT_EQ(value, 4096u);
  EXPECT_TRUE(ParseBytes("100", &value));
  EXPECT_EQ(value, 100u);
  EXPECT_FALSE(ParseBytes("4kb", &value));
  EXPECT_FALSE(ParseBytes("99999999999999999g", &value));
}

// Units as users write them for the JDK's recorder (maxage=1d) and async-profiler (loop=1h).
TEST(OptionsTest, DurationsInMinutesHoursAndDays) {
  uint64_t value = 0;
  EXPECT_TRUE(ParseDuration("2m", &value));
  EXPECT_EQ(value, 120 * kNanosPerSecond);
  EXPECT_TRUE(ParseDuration("3h", &value));
  EXPECT_EQ(value, 3 * 3600 * kNanosPerSecond);
  EXPECT_TRUE(ParseDuration("1d", &value));
  EXPECT_EQ(value, 24 * 3600 * kNanosPerSecond);
  EXPECT_TRUE(ParseDuration("2ms", &value));  // "ms" is still milliseconds, not 2 minutes + "s"
  EXPECT_EQ(value, 2 * kNanosPerMilli);
  EXPECT_FALSE(ParseDuration("2M", &value));  // units are lower case
  EXPECT_FALSE(ParseDuration("1w", &value));
  EXPECT_FALSE(ParseDuration("1h30m", &value));          // one number, one unit
  EXPECT_FALSE(ParseDuration("999999999999d", &value));  // overflows 64 bits

  const Options options = ParseOk("interval=1h,maxage=1d,chunktime=2m,flush=90s,lock=1m,file=x");
  EXPECT_EQ(options.cpu_interval_ns, 3600 * kNanosPerSecond);
  EXPECT_EQ(options.jfr.max_age_ns, 24 * 3600 * kNanosPerSecond);
  EXPECT_EQ(options.jfr.chunk_time_ns, 120 * kNanosPerSecond);
  EXPECT_EQ(options.jfr.flush_interval_ns, 90 * kNanosPerSecond);
  EXPECT_EQ(options.lock_threshold_ns, 60 * kNanosPerSecond);
  EXPECT_EQ(ParseOk("maxage=365d").jfr.max_age_ns, 365 * 24 * 3600 * kNanosPerSecond);
  EXPECT_EQ(ParseOk("wall=1m").wall_interval_ns, 60 * kNanosPerSecond);
}

TEST(OptionsTest, SizesInEitherCase) {
  uint64_t value = 0;
  EXPECT_TRUE(ParseBytes("4K", &value));
  EXPECT_EQ(value, 4096u);
  EXPECT_TRUE(ParseBytes("3m", &value));
  EXPECT_EQ(value, 3ull << 20);
  EXPECT_TRUE(ParseBytes("3M", &value));
  EXPECT_EQ(value, 3ull << 20);
  EXPECT_TRUE(ParseBytes("2G", &value));
  EXPECT_EQ(value, 2ull << 30);
  const Options options = ParseOk("chunksize=8M,maxsize=1G,alloc=512K,file=x");
  EXPECT_EQ(options.jfr.chunk_size_bytes, 8ull << 20);
  EXPECT_EQ(options.jfr.max_size_bytes, 1ull << 30);
  EXPECT_EQ(options.alloc_interval_bytes, 512ull << 10);
}

// A rejected value gets a message that names the option and every unit it accepts.
TEST(OptionsTest, UnitErrorsNameTheOptionAndTheUnits) {
  // The message of a failed parse of `text`.
  auto error_of = [](const std::string& text) {
    const StatusOr<Options> parsed = ParseOptions(text);
    EXPECT_FALSE(parsed.ok()) << text;
    return parsed.ok() ? std::string() : parsed.status().message();
  };
  std::string error = error_of("maxage=2w");
  EXPECT_NE(error.find("'maxage'"), std::string::npos) << error;
  EXPECT_NE(error.find("ns, us, ms, s, m (minutes), h or d"), std::string::npos) << error;
  EXPECT_NE(error.find("maxage=365d"), std::string::npos) << error;  // the largest value
  error = error_of("interval=2h");
  EXPECT_NE(error.find("'interval'"), std::string::npos) << error;
  EXPECT_NE(error.find("from 100us to 1h"), std::string::npos) << error;
  error = error_of("chunksize=8mb");
  EXPECT_NE(error.find("'chunksize'"), std::string::npos) << error;
  EXPECT_NE(error.find("k, m or g"), std::string::npos) << error;
}

// Found by the options fuzzer: an overflowing value used to store the wrapped product.
TEST(OptionsTest, OverflowingValueLeavesOutputUntouched) {
  uint64_t value = 42;
  EXPECT_FALSE(ParseDuration("55555554873711s", &value));
  EXPECT_EQ(value, 42u);
  EXPECT_FALSE(ParseBytes("99999999999999999g", &value));
  EXPECT_EQ(value, 42u);
}

TEST(OptionsTest, Signals) {
  int signal = 0;
  EXPECT_TRUE(ParseSignal("SIGPROF", &signal));
  EXPECT_EQ(signal, SIGPROF);
  EXPECT_TRUE(ParseSignal("USR2", &signal));
  EXPECT_EQ(signal, SIGUSR2);
  EXPECT_TRUE(ParseSignal("27", &signal));
  EXPECT_EQ(signal, 27);
  EXPECT_TRUE(ParseSignal("SIGRTMIN", &signal));
  EXPECT_EQ(signal, SIGRTMIN);
  EXPECT_FALSE(ParseSignal("SIGSEGV", &signal));
  EXPECT_FALSE(ParseSignal("9", &signal));
  EXPECT_FALSE(ParseSignal("SIGNOPE", &signal));
  EXPECT_FALSE(ParseSignal("SIGRTMIN+999", &signal));
}

TEST(OptionsTest, EveryErrorNamesTheKey) {
  ExpectError("bogus=1", "bogus", "1");
  ExpectError("event=gpu", "event", "gpu");
  ExpectError("event=cpu+ctimer", "event", "cpu+ctimer");
  ExpectError("event=wall+wall", "event", "wall+wall");
  ExpectError("interval=0ms", "interval", "0ms");
  ExpectError("interval=-1ms", "interval", "-1ms");
  ExpectError("interval=50us", "interval", "50us");    // below 100us
  ExpectError("interval=2h", "interval", "2h");        // above 1 hour
  ExpectError("interval=1y", "interval", "1y");        // not a unit we accept
  ExpectError("interval=3601s", "interval", "3601s");  // above 1 hour
  ExpectError("interval=10", "interval", "10");        // no unit
  ExpectError("wall=500us", "wall", "500us");
  ExpectError("wall=abc", "wall", "abc");
  ExpectError("event=wall,interval=200us", "interval");
  ExpectError("filter=threads", "filter", "threads");
  ExpectError("event=cpu,filter=context", "filter");  // needs wall
  ExpectError("threads=0", "threads", "0");
  ExpectError("depth=0", "depth", "0");
  ExpectError("depth=2049", "depth", "2049");
  ExpectError("depth=x", "depth", "x");
  ExpectError("clock=hpet", "clock", "hpet");
  ExpectError("unwind=lbr", "unwind", "lbr");
  ExpectError("cstack=java", "cstack", "java");
  ExpectError("signal=SIGKILL", "signal", "SIGKILL");
  ExpectError("wallsignal=STOP", "wallsignal", "STOP");
  ExpectError("event=cpu+wall,wallsignal=SIGPROF", "wallsignal");
  ExpectError("buffer=8", "buffer", "8");
  ExpectError("buffer=100000", "buffer", "100000");
  ExpectError("file=", "file");
  ExpectError("attributes=a;;b", "attributes", "a;;b");
  ExpectError("attributes=a;", "attributes", "a;");
  ExpectError("attributes=a;b;c;d;e;f;g;h;i", "attributes");
  ExpectError("chunksize=12q", "chunksize", "12q");
  ExpectError("maxsize=0", "maxsize", "0");
  ExpectError("chunktime=1us", "chunktime", "1us");
  ExpectError("maxage=forever", "maxage", "forever");
  ExpectError("flush=1", "flush", "1");
  ExpectError("cpusamples=maybe", "cpusamples", "maybe");
  ExpectError("repository=", "repository", "");
  ExpectError("file=a.jfr,repository=/tmp/r", "repository", "/tmp/r");
  ExpectError("interval", "interval");  // no '='
}

TEST(OptionsTest, MalformedListsAreRejected) {
  const StatusOr<Options> empty = ParseOptions("event=cpu,,depth=3");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty option"), std::string::npos)
      << empty.status().message();
  const StatusOr<Options> trailing = ParseOptions("event=cpu,");
  ASSERT_FALSE(trailing.ok());
  EXPECT_NE(trailing.status().message().find("ends with a comma"), std::string::npos)
      << trailing.status().message();
}

// Every field of Options but the "was it given" flags, which record spelling, not settings.
bool SameSettings(const Options& a, const Options& b) {
  const JfrOptions& x = a.jfr;
  const JfrOptions& y = b.jfr;
  const UploadOptions& u = a.upload;
  const UploadOptions& v = b.upload;
  const auto same_secret = [](const SecretSource& s, const SecretSource& t) {
    return s.kind == t.kind && s.reference == t.reference;
  };
  return a.cpu_engine == b.cpu_engine && a.cpu_interval_ns == b.cpu_interval_ns &&
         a.wall_enabled == b.wall_enabled && a.wall_interval_ns == b.wall_interval_ns &&
         a.filter_context == b.filter_context &&
         a.wall_threads_per_tick == b.wall_threads_per_tick && a.depth == b.depth &&
         a.unwind == b.unwind && a.cstack == b.cstack && a.kernel_frames == b.kernel_frames &&
         a.otel_context == b.otel_context && a.clock == b.clock && a.signal == b.signal &&
         a.wall_signal == b.wall_signal && a.buffer_slots == b.buffer_slots && a.file == b.file &&
         a.repository == b.repository && a.attributes == b.attributes &&
         a.alloc_interval_bytes == b.alloc_interval_bytes && a.live == b.live &&
         a.lock_enabled == b.lock_enabled && a.lock_threshold_ns == b.lock_threshold_ns &&
         a.select == b.select && x.chunk_size_bytes == y.chunk_size_bytes &&
         x.chunk_time_ns == y.chunk_time_ns && x.max_size_bytes == y.max_size_bytes &&
         x.max_age_ns == y.max_age_ns && x.flush_interval_ns == y.flush_interval_ns &&
         x.cpu_samples_as_ctxprof == y.cpu_samples_as_ctxprof &&
         x.wall_samples_as_jdk == y.wall_samples_as_jdk && x.context_id == y.context_id &&
         x.pyroscope == y.pyroscope && u.url == v.url && u.https == v.https && u.host == v.host &&
         u.port == v.port && u.path_prefix == v.path_prefix && u.name == v.name &&
         u.labels == v.labels && same_secret(u.token, v.token) && same_secret(u.basic, v.basic) &&
         same_secret(u.tenant, v.tenant) && u.ca_file == v.ca_file;
}

// The help table cannot drift from the parser: the parser refuses any key the table lacks, and
// every listed key reaches its own branch of the parser.
TEST(OptionTableTest, ListsEveryKeyTheParserTakes) {
  const std::vector<OptionHelp>& table = OptionTable();
  std::set<std::string> keys;
  std::string listed;
  for (const OptionHelp& option : table) {
    EXPECT_TRUE(keys.insert(option.key).second) << option.key << " is listed twice";
    listed += (listed.empty() ? "" : ", ") + std::string(option.key);
    // Any value, good or bad: the answer is the key's own, never "unknown" or "not parsed".
    for (const char* value : {"", "x", "1"}) {
      const std::string text = std::string(option.key) + "=" + value;
      const StatusOr<Options> parsed = ParseOptions(text);
      if (parsed.ok()) continue;
      EXPECT_EQ(parsed.status().message().find("unknown option"), std::string::npos)
          << text << " -> " << parsed.status().message();
      EXPECT_EQ(parsed.status().message().find("not parsed"), std::string::npos)
          << text << " -> " << parsed.status().message();
    }
  }
  EXPECT_EQ(keys.size(), 40u) << "a key was added or removed: update docs/SAMPLER.md too";
  const StatusOr<Options> unknown = ParseOptions("bogus=1");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(),
            "unknown option 'bogus' (value '1'); known options: " + listed);
}

TEST(OptionTableTest, EachListedDefaultParsesToTheParsersDefault) {
  const Options defaults = ParseOk("");
  size_t with_default = 0;
  for (const OptionHelp& option : OptionTable()) {
    const std::string summary = option.summary;
    EXPECT_FALSE(summary.empty()) << option.key;
    EXPECT_LE(summary.size(), 74u) << option.key << ": " << summary;
    if (std::string(option.default_value).empty()) continue;
    ++with_default;
    const std::string text = std::string(option.key) + "=" + option.default_value;
    EXPECT_TRUE(SameSettings(ParseOk(text), defaults)) << text << " is not the default";
  }
  EXPECT_GE(with_default, 15u);
  // A default that is not the parser's is caught.
  EXPECT_FALSE(SameSettings(ParseOk("interval=20ms"), defaults));
  EXPECT_FALSE(SameSettings(ParseOk("flush=2s"), defaults));
}

}  // namespace
}  // namespace ctxprof
