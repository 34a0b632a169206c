package io.ctxprof.agent;

import static io.ctxprof.agent.ChildProcess.agent;
import static io.ctxprof.agent.ChildProcess.run;
import static io.ctxprof.agent.ChildProcess.runJava;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ctxprof.agent.ChildProcess.Result;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Ground truth for allocation and lock events (issue 13): EventsWorkload measures what its
 * threads allocate and wait under known contexts; the recording must say the same per endpoint,
 * through the ctxprof.Context join by event thread and time. Tolerances are several standard
 * deviations of the sampling noise wide, and no assertion depends on how fast the machine is.
 */
class EventsTest {
  private static final String ALLOCATION = "jdk.ObjectAllocationSample";
  private static final String MONITOR = "jdk.JavaMonitorEnter";
  private static final String PARK = "jdk.ThreadPark";
  private static final String NO_CONTEXT = "-";
  private static final Pattern EVENT_WALK_CHECK =
      Pattern.compile("Event walk check: (\\d+) agreed, (\\d+) differed, (\\d+) declined");

  @TempDir Path dir;

  @Test
  void allocationWeightsSplitLikeTheBytesAllocated() throws Exception {
    Path jfr = dir.resolve("alloc.jfr");
    // ~19k samples in about a second: a buffer that holds them all, so that a writer thread
    // starved by a busy machine cannot make the buffer drop any (a drop loses its weight).
    Map<String, Long> truth = runWorkload("alloc", "alloc=32k,buffer=32768", jfr);
    JfrRecording recording = JfrRecording.read(jfr);
    lastCountersWithoutDrops(recording);
    Map<String, long[]> recorded = sumByEndpoint(recording, ALLOCATION); // {events, bytes}
    System.out.println("allocations, truth (bytes): " + truth + "; recorded {events, bytes}: "
        + describe(recorded));
    long small = recorded.get("/small")[1];
    long large = recorded.get("/large")[1];
    double truthRatio = (double) truth.get("alloc /large") / truth.get("alloc /small");
    double ratio = (double) large / small;
    assertTrue(Math.abs(truthRatio - 3) < 0.01, "the workload allocates 1:3: " + truthRatio);
    assertTrue(Math.abs(ratio / truthRatio - 1) <= 0.10, "weights split 1:" + ratio);
    for (String endpoint : List.of("/small", "/large")) {
      long bytes = recorded.get(endpoint)[1];
      long expected = truth.get("alloc " + endpoint);
      assertTrue(recorded.get(endpoint)[0] >= 1000, endpoint + ": too few samples to judge");
      assertTrue(
          Math.abs((double) bytes / expected - 1) <= 0.15,
          endpoint + ": recorded " + bytes + " bytes, allocated " + expected);
    }
    int arrays = 0; // byte[1000] samples in the endpoints (JFR names the class "[B")
    for (RecordedEvent event : recording.ofType(ALLOCATION)) {
      if (!endpointOf(recording, event, event.getStartTime()).equals(NO_CONTEXT)
          && event.getClass("objectClass").getName().equals("[B")) {
        assertTrue(inWorkload(event), "stack of " + event);
        arrays++;
      }
    }
    assertTrue(arrays >= 0.9 * (recorded.get("/small")[0] + recorded.get("/large")[0]), "byte[]");
    checkJdkTools(jfr, "allocation-by-class", "byte[]");
  }

  @Test
  void stacksAreJvmtiGetStackTracesFrameForFrame() throws Exception {
    // The events' stacks come from the VM walk from the thread's frame anchor
    // (VmStackWalker::WalkStopped) in place of JVMTI GetStackTrace. With
    // CTXPROF_CHECK_JAVA_WALK=1 (as in JavaWalkCheckTest) every event's stack is GetStackTrace's
    // and the VM walk runs beside it on the same allocation or wait; the agent prints at exit how
    // many agreed frame for frame (method, bci, inlined frames expanded), differed, or were
    // declined (left to JVMTI). None may differ, and the walk may leave only a few to JVMTI.
    // EventsWorkload's allocations (~19k samples at 32k), its contended monitors and
    // ReentrantLock; then the allocations with every method compiled before its first run
    // (-Xcomp: compiled static initialisers, deep inlining).
    for (List<String> run :
        List.of(List.of("alloc"), List.of("select"), List.of("alloc", "-Xcomp"))) {
      List<String> command = new ArrayList<>(List.of("env", "CTXPROF_CHECK_JAVA_WALK=1"));
      command.addAll(ChildProcess.javaCommand(run.subList(1, run.size())));
      command.add(agent("start,alloc=32k,lock=1us,buffer=32768,file=" + dir.resolve("c.jfr")));
      command.addAll(List.of(EventsWorkload.class.getName(), run.get(0)));
      Result result = run(command, 180);
      assertEquals(0, result.exit, result.toString());
      String stderr = String.join("\n", result.stderr);
      Matcher check = EVENT_WALK_CHECK.matcher(stderr);
      assertTrue(check.find(), "no event walk check line: " + result);
      int end = stderr.indexOf('\n', check.start());
      System.out.println(
          run + ": " + stderr.substring(check.start(), end < 0 ? stderr.length() : end));
      long agreed = Long.parseLong(check.group(1));
      long declined = Long.parseLong(check.group(3));
      assertEquals(0, Long.parseLong(check.group(2)), run + ": stacks that differ");
      assertTrue(agreed >= 1000, run + ": too few stacks compared: " + agreed);
      assertTrue(100 * declined <= agreed, run + ": the VM walk declined " + declined);
    }
  }

  @Test
  void lockWaitsPerEndpointMatchTheTruth() throws Exception {
    Path jfr = dir.resolve("lock.jfr");
    Map<String, Long> truth = runWorkload("lock", "lock=1ms,contextid=true", jfr);
    JfrRecording recording = JfrRecording.read(jfr);
    for (String type : List.of(MONITOR, PARK)) {
      Map<String, long[]> recorded = sumByEndpoint(recording, type); // {events, nanoseconds}
      String kind = type.equals(MONITOR) ? "monitor" : "park";
      System.out.println(type + ", truth (ns): " + truth + "; recorded {events, ns}: "
          + describe(recorded));
      for (String endpoint : List.of("/a", "/b")) {
        long expected = truth.get(kind + " " + endpoint);
        long waited = recorded.containsKey(endpoint) ? recorded.get(endpoint)[1] : 0;
        // The workload's least: in each of its 8 rounds a thread of each endpoint waits for at
        // least a 10 ms hold (EventsWorkload.Contention).
        assertTrue(expected >= 80_000_000L, kind + " " + endpoint + ": too little contention");
        assertTrue(
            Math.abs((double) waited / expected - 1) <= 0.20,
            kind + " " + endpoint + ": recorded " + waited + " ns, waited " + expected + " ns");
      }
      for (RecordedEvent event : recording.ofType(type)) {
        Duration duration = event.getDuration();
        assertTrue(duration.toNanos() >= 1_000_000, "below lock=1ms: " + event);
        String endpoint = endpointOf(recording, event, event.getStartTime());
        assertContextIdJoins(recording, event);
        if (endpoint.equals("/a") || endpoint.equals("/b")) {
          // JDK 25's printer joins an event to its context at its end.
          assertEquals(endpoint, endpointOf(recording, event, event.getEndTime()), "end of " + event);
          assertTrue(inWorkload(event), "stack of " + event);
          String blocker = event.getClass(type.equals(MONITOR) ? "monitorClass" : "parkedClass")
              .getName();
          assertEquals(
              type.equals(MONITOR)
                  ? "java.lang.Object"
                  : "java.util.concurrent.locks.ReentrantLock$NonfairSync",
              blocker);
        }
      }
    }
    checkJdkTools(jfr, "contention-by-site", "EventsWorkload");
  }

  @Test
  void selectIfContextKeepsEveryEventInsideContextsOnly() throws Exception {
    Path jfr = dir.resolve("select.jfr");
    Map<String, Long> truth = runWorkload("select", "alloc=1m,lock=1s,select=if-context", jfr);
    assertTrue(truth.get("monitor -") >= 10_000_000L, "no monitor contention outside contexts");
    assertTrue(truth.get("park -") >= 10_000_000L, "no lock contention outside contexts");
    JfrRecording recording = JfrRecording.read(jfr);
    for (String type : List.of(MONITOR, PARK)) {
      Map<String, long[]> recorded = sumByEndpoint(recording, type);
      System.out.println(type + " with lock=1s,select=if-context {events, ns}: "
          + describe(recorded));
      assertTrue(recorded.containsKey("/in"), type + ": no event inside the context");
      assertEquals(null, recorded.get(NO_CONTEXT), type + ": events outside contexts");
      for (RecordedEvent event : recording.ofType(type)) {
        assertTrue(event.getDuration().toMillis() < 1000, "a wait over lock=1s: " + event);
      }
    }
    long inside = 0;
    long outside = 0;
    for (RecordedEvent event : recording.ofType(ALLOCATION)) {
      long weight = event.getLong("weight");
      if (endpointOf(recording, event, event.getStartTime()).equals(NO_CONTEXT)) {
        outside++;
        assertTrue(weight >= 1 << 20, "outside contexts a weight below alloc=1m: " + event);
      } else if (weight < 1 << 20) {
        inside++;
      }
    }
    System.out.println("allocations with alloc=1m,select=if-context: " + inside
        + " inside contexts below 1 MiB, " + outside + " outside (all >= 1 MiB)");
    assertTrue(inside >= 100, "inside contexts, samples finer than alloc=: " + inside);
    assertTrue(outside >= 1, "allocation outside contexts is still sampled at alloc=");
  }

  @Test
  void liveReportsTheSampledObjectsStillReachable() throws Exception {
    Path jfr = dir.resolve("live.jfr");
    runWorkload("live", "alloc=64k,live,contextid=true", jfr);
    JfrRecording recording = JfrRecording.read(jfr);
    Map<String, Long> sampled = new TreeMap<>();
    Map<String, Long> live = new TreeMap<>();
    for (String type : List.of(ALLOCATION, "profiler.LiveObject")) {
      for (RecordedEvent event : recording.ofType(type)) {
        // The workload's own byte[1000] (other byte arrays, e.g. of strings, live too).
        if (!event.getClass("objectClass").getName().equals("[B") || !allocatedByWorkload(event)) {
          continue;
        }
        if (type.equals("profiler.LiveObject")) {
          assertEquals(event.getStartTime(), event.getInstant("allocationTime"), "allocation time");
          assertEquals(1016, event.getLong("allocationSize"), "size of a byte[1000]");
        }
        // Joined by its allocation time: the context the object was allocated in; its contextId
        // says the same.
        String endpoint = endpointOf(recording, event, event.getStartTime());
        assertContextIdJoins(recording, event);
        (type.equals(ALLOCATION) ? sampled : live).merge(endpoint, 1L, Long::sum);
      }
    }
    System.out.println("live: sampled byte[] " + sampled + ", still alive " + live);
    assertTrue(sampled.getOrDefault("/kept", 0L) >= 100, "samples in /kept: " + sampled);
    assertTrue(sampled.getOrDefault("/dropped", 0L) >= 100, "samples in /dropped: " + sampled);
    assertEquals(sampled.get("/kept"), live.get("/kept"), "every kept sample is alive");
    assertEquals(null, live.get("/dropped"), "dropped objects collected by System.gc()");
  }

  /** The same events when the Java API loads the library late and starts the session. */
  @Test
  void javaApiStartsAllocationAndLockEvents() throws Exception {
    Path jfr = dir.resolve("api.jfr");
    List<String> jvm = new java.util.ArrayList<>(List.of("-Dctxprof.library=" + ChildProcess.LIBRARY));
    if (Runtime.version().feature() >= 22) {
      jvm.add("--enable-native-access=ALL-UNNAMED"); // System.load without a warning
    }
    Result result =
        runJava(
            jvm,
            "EventsWorkload",
            "api",
            "event=cpu,alloc=64k,lock=1ms,attributes=endpoint,file=" + jfr);
    assertEquals(0, result.exit, result.toString());
    assertTrue(result.stderr.isEmpty(), "the JVM printed: " + result.stderr);
    assertTrue(
        result.stdout.stream().allMatch(line -> line.startsWith("truth ")),
        "the JVM printed: " + result.stdout);
    JfrRecording recording = JfrRecording.read(jfr);
    for (String type : List.of(ALLOCATION, MONITOR, PARK)) {
      Map<String, long[]> recorded = sumByEndpoint(recording, type);
      System.out.println("Java API, " + type + ": " + describe(recorded));
      assertTrue(recorded.containsKey("/a"), type + " in /a: " + describe(recorded));
    }
  }

  /**
   * No stack of any event shows a frame of libctxprof.so, although its code runs on the
   * workload's threads (the Unsafe.park rebinding every park goes through, the JVMTI callbacks)
   * and CPU and wall signals interrupt each other: native frames walked with the Java frames
   * (cstack=java+native), CPU and wall every millisecond, allocation and lock events.
   */
  @Test
  void noStackShowsAFrameOfTheProfiler() throws Exception {
    Path jfr = dir.resolve("self.jfr");
    runWorkload("lock", "interval=1ms,wall=1ms,cstack=java+native,alloc=32k,lock=1ms", jfr);
    Map<String, Long> stacks = new TreeMap<>();
    Map<String, Long> profilerFrames = new TreeMap<>();
    long nativeFrames = 0;
    for (RecordedEvent event : JfrRecording.read(jfr).events) {
      if (!event.hasField("stackTrace") || event.getStackTrace() == null) {
        continue;
      }
      stacks.merge(event.getEventType().getName(), 1L, Long::sum);
      for (RecordedFrame frame : event.getStackTrace().getFrames()) {
        String name = frame.getMethod().getType().getName() + "." + frame.getMethod().getName();
        if (frame.getType().equals("Native")) {
          nativeFrames++;
        }
        if (name.startsWith("libctxprof")) {
          profilerFrames.merge(name, 1L, Long::sum);
        }
      }
    }
    System.out.println("stacks " + stacks + ", native frames " + nativeFrames);
    assertTrue(profilerFrames.isEmpty(), "frames of the profiler: " + profilerFrames);
    // The check means something only if native stacks were walked under every kind of event.
    assertTrue(nativeFrames >= 1000, "native frames: " + nativeFrames);
    for (String type : List.of("jdk.ExecutionSample", "profiler.WallClockSample", MONITOR, PARK)) {
      assertTrue(stacks.getOrDefault(type, 0L) >= 10, type + " stacks: " + stacks);
    }
  }

  /** Runs EventsWorkload `mode` under the agent; returns its "truth" lines summed by key. */
  /**
   * Requests of two arrays each, every one a span: each thread closes spans far faster than its
   * span log holds between two of the writer's drains, so the log drops most of them. What was
   * allocated inside a lost span must keep the context the sampled thread had (the one it read),
   * never show none or another's, and the weights still split 1:3.
   */
  @Test
  void allocationsInSpansTheLogLostKeepTheirContexts() throws Exception {
    Path jfr = dir.resolve("churn.jfr");
    Map<String, Long> truth = runWorkload("churn", "alloc=32k,buffer=32768", jfr);
    JfrRecording recording = JfrRecording.read(jfr);
    RecordedEvent last = lastCountersWithoutDrops(recording);
    assertTrue(
        last.getLong("droppedSpans") > 0,
        "no span was lost: the test did not reach what it checks (~400,000 spans in about a"
            + " second, against a log of 1,024 drained every 20 ms)");
    Map<String, Integer> byOutcome = new TreeMap<>();
    long[] bytes = new long[2]; // /small, /large
    for (RecordedEvent event : recording.ofType(ALLOCATION)) {
      if (!allocatedByWorkload(event)) {
        continue;
      }
      String thread = event.getThread("eventThread").getJavaName();
      String expected = thread.equals("events-0") ? "/small" : "/large";
      String endpoint = endpointOf(recording, event, event.getStartTime());
      String outcome =
          endpoint.equals(expected) ? "right" : endpoint.equals(NO_CONTEXT) ? "none" : "wrong";
      byOutcome.merge(outcome, 1, Integer::sum);
      if (outcome.equals("right")) {
        bytes[expected.equals("/small") ? 0 : 1] += event.getLong("weight");
      }
    }
    System.out.println(
        "churn: truth (bytes) " + truth + "; workload samples by context " + byOutcome
            + "; dropped spans " + last.getLong("droppedSpans"));
    int right = byOutcome.getOrDefault("right", 0);
    assertTrue(right >= 1000, "too few samples to judge: " + byOutcome);
    assertEquals(0, byOutcome.getOrDefault("wrong", 0), "another thread's context: " + byOutcome);
    // A sample between two requests has none, truly: the request's lambda runs inside the span.
    assertTrue(byOutcome.getOrDefault("none", 0) <= 0.01 * right, "without context: " + byOutcome);
    double truthRatio = (double) truth.get("alloc /large") / truth.get("alloc /small");
    double ratio = (double) bytes[1] / bytes[0];
    assertTrue(Math.abs(ratio / truthRatio - 1) <= 0.10, "weights split 1:" + ratio);
  }

  /** The recording's last ctxprof.ProfilerCounters, once checked that no sample was dropped. */
  private static RecordedEvent lastCountersWithoutDrops(JfrRecording recording) {
    List<RecordedEvent> counters = recording.ofType("ctxprof.ProfilerCounters");
    RecordedEvent last = counters.get(counters.size() - 1);
    assertEquals(0, last.getLong("droppedSamples"), "drops");
    return last;
  }

  private static Map<String, Long> runWorkload(String mode, String events, Path jfr)
      throws Exception {
    Result result =
        runJava(
            List.of(agent("start,event=cpu," + events + ",attributes=endpoint,file=" + jfr)),
            "EventsWorkload",
            mode);
    assertEquals(0, result.exit, result.toString());
    // Rebinding Unsafe.park must not make HotSpot warn (on stdout) or anything fail (stderr).
    assertTrue(result.stderr.isEmpty(), "the JVM printed: " + result.stderr);
    assertTrue(
        result.stdout.stream().allMatch(line -> line.startsWith("truth ")),
        "the JVM printed: " + result.stdout);
    Map<String, Long> truth = new TreeMap<>();
    for (String line : result.stdout) {
      String[] parts = line.split(" ");
      if (parts.length == 4 && parts[0].equals("truth")) {
        truth.merge(parts[1] + " " + parts[2], Long.parseLong(parts[3]), Long::sum);
      }
    }
    return truth;
  }

  /**
   * The endpoint of the context `event`'s thread had at `time`, "-" for none. Intervals of one
   * context may touch or overlap where a flush cut a run; intervals of different contexts never.
   */
  private static String endpointOf(JfrRecording recording, RecordedEvent event, Instant time) {
    Set<String> endpoints = new TreeSet<>();
    for (RecordedEvent context : recording.contextsAt(event.getThread("eventThread"), time)) {
      String endpoint = context.getString("endpoint");
      endpoints.add(endpoint == null ? "(unset)" : endpoint);
    }
    assertTrue(endpoints.size() <= 1, "contexts " + endpoints + " at " + time + " for " + event);
    return endpoints.isEmpty() ? NO_CONTEXT : endpoints.iterator().next();
  }

  /**
   * With contextid=true: `event`'s contextId is that of a context interval of its thread that
   * covers its start (one chunk per file here, so ids are the file's), 0 when none does.
   */
  private static void assertContextIdJoins(JfrRecording recording, RecordedEvent event) {
    long id = event.getLong("contextId");
    List<RecordedEvent> contexts =
        recording.contextsAt(event.getThread("eventThread"), event.getStartTime());
    if (contexts.isEmpty()) {
      assertEquals(0, id, "contextId without a context: " + event);
    } else {
      assertTrue(
          contexts.stream().anyMatch(context -> context.getLong("contextId") == id),
          "contextId " + id + " is not its context's: " + event + " in " + contexts);
    }
  }

  /** Per endpoint: {events, sum of weights (allocations) or durations in ns (waits)}. */
  private static Map<String, long[]> sumByEndpoint(JfrRecording recording, String type) {
    Map<String, long[]> sums = new HashMap<>();
    for (RecordedEvent event : recording.ofType(type)) {
      long[] sum =
          sums.computeIfAbsent(endpointOf(recording, event, event.getStartTime()), e -> new long[2]);
      sum[0]++;
      sum[1] += type.equals(ALLOCATION) ? event.getLong("weight") : event.getDuration().toNanos();
    }
    return sums;
  }

  private static String describe(Map<String, long[]> sums) {
    Map<String, String> text = new TreeMap<>();
    sums.forEach((key, value) -> text.put(key, java.util.Arrays.toString(value)));
    return text.toString();
  }

  /** The top frame is EventsWorkload's allocation loop. */
  private static boolean allocatedByWorkload(RecordedEvent event) {
    if (event.getStackTrace() == null || event.getStackTrace().getFrames().isEmpty()) {
      return false;
    }
    RecordedFrame top = event.getStackTrace().getFrames().get(0);
    return top.getMethod().getType().getName().equals(EventsWorkload.class.getName())
        && top.getMethod().getName().startsWith("lambda$allocator");
  }

  private static boolean inWorkload(RecordedEvent event) {
    if (event.getStackTrace() == null) {
      return false;
    }
    for (RecordedFrame frame : event.getStackTrace().getFrames()) {
      if (frame.getMethod().getType().getName().equals(EventsWorkload.class.getName())) {
        return true;
      }
    }
    return false;
  }

  /** `jfr summary` and `print` read the file; JDK 25's `jfr view <view>` shows `expected`. */
  private static void checkJdkTools(Path jfr, String view, String expected) throws Exception {
    String tool = ChildProcess.JAVA_HOME + "/bin/jfr";
    for (String command : List.of("summary", "print")) {
      Result check = run(List.of(tool, command, jfr.toString()), 120);
      assertEquals(0, check.exit, "jfr " + command + ": " + check.stderr);
    }
    if (Runtime.version().feature() >= 25) {
      Result shown = run(List.of(tool, "view", view, jfr.toString()), 120);
      assertEquals(0, shown.exit, "jfr view " + view + ": " + shown.stderr);
      assertTrue(
          shown.stdout.stream().anyMatch(line -> line.contains(expected)),
          "jfr view " + view + ": " + shown.stdout);
    }
  }
}
