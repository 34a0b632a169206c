package io.ctxprof.agent;

import static io.ctxprof.agent.ChildProcess.agent;
import static io.ctxprof.agent.ChildProcess.javaCommand;
import static io.ctxprof.agent.ChildProcess.run;
import static io.ctxprof.agent.ChildProcess.runJava;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ctxprof.agent.ChildProcess.Result;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The JVM agent end to end: child JVMs of the JDK running this test load libctxprof as an agent
 * (or through the Java API) and their recordings are read back with jdk.jfr.consumer, samples
 * joined to their ctxprof.Context intervals by OS thread and time.
 */
class AgentTest {
  private static final String JAVA_HOME = ChildProcess.JAVA_HOME;
  private static final String LIBRARY = ChildProcess.LIBRARY;

  @TempDir Path dir;

  @Test
  void serviceWorkloadSamplesCarryTheirHandlersContext() throws Exception {
    Path jfr = dir.resolve("service.jfr");
    Result result =
        runJava(
            List.of(agent("start,event=cpu,interval=5ms,file=" + jfr + ",attributes=endpoint;tenant")),
            "ServiceWorkload",
            "4",
            "4");
    assertEquals(0, result.exit, result.toString());
    assertTrue(
        result.stderr.stream().noneMatch(l -> l.contains("was registered after")),
        result.toString());
    Map<String, Long> threadIds = new HashMap<>();
    for (String line : result.stdout) {
      String[] parts = line.split(" ");
      if (parts.length == 3 && parts[0].equals("thread")) {
        threadIds.put(parts[1], Long.parseLong(parts[2]));
      }
    }
    assertEquals(4, threadIds.size(), result.toString());

    JfrRecording recording = JfrRecording.read(jfr);
    Map<String, int[]> counts = new HashMap<>(); // handler -> {samples, own context, other}
    for (RecordedEvent sample : recording.samples) {
      String handler = handlerOf(sample.getStackTrace());
      if (handler == null) {
        continue;
      }
      RecordedThread thread = sample.getThread("sampledThread");
      assertTrue(threadIds.containsKey(thread.getJavaName()), "thread " + thread.getJavaName());
      assertEquals(
          (long) threadIds.get(thread.getJavaName()), thread.getJavaThreadId(), "Java thread id");
      List<RecordedEvent> joined = recording.contextsOf(sample);
      int[] count = counts.computeIfAbsent(handler, h -> new int[4]);
      count[0]++;
      if (joined.size() > 1) {
        count[3]++;
        continue;
      }
      RecordedEvent context = joined.isEmpty() ? null : joined.get(0);
      String endpoint = context == null ? null : context.getString("endpoint");
      String tenant = context == null ? null : context.getString("tenant");
      String trace =
          context == null || context.getLong("traceIdHigh") == 0
              ? null
              : String.format("%016x", context.getLong("traceIdHigh"));
      String worker = thread.getJavaName().substring("worker-".length());
      boolean checkout = handler.equals("handleCheckout");
      String ownEndpoint = checkout ? "/checkout" : "/search";
      String ownTenant = (checkout ? "acme-" : "globex-") + worker;
      String ownTracePrefix =
          String.format("%016x", checkout ? 0xC0C0C0C0L : 0x5E5E5E5EL);
      if (ownEndpoint.equals(endpoint)
          && ownTenant.equals(tenant)
          && trace != null
          && trace.startsWith(ownTracePrefix)) {
        count[1]++;
      } else if (endpoint != null || tenant != null || trace != null) {
        count[2]++;
      }
    }
    System.out.println(
        "service workload: "
            + recording.samples.size()
            + " samples; per handler {samples, own context, other context, ambiguous}: "
            + counts.entrySet().stream()
                .map(e -> e.getKey() + "=" + java.util.Arrays.toString(e.getValue()))
                .collect(Collectors.joining(", ")));
    for (String handler : List.of("handleCheckout", "handleSearch")) {
      int[] count = counts.get(handler);
      assertTrue(count != null && count[0] >= 20, handler + ": too few samples to judge");
      assertTrue(count[1] >= 0.95 * count[0], handler + ": own context on < 95%");
      assertEquals(0, count[2], handler + ": samples with another handler's context");
      assertTrue(count[3] <= 0.01 * count[0], handler + ": too many ambiguous samples");
    }
  }

  /** "handleCheckout"/"handleSearch" when the stack is in one, checking the frames around it. */
  private static String handlerOf(RecordedStackTrace stack) {
    if (stack == null) {
      return null;
    }
    List<RecordedFrame> frames = stack.getFrames();
    for (int i = 0; i < frames.size(); i++) {
      RecordedFrame frame = frames.get(i);
      String name = frame.getMethod().getName();
      if (!name.equals("handleCheckout") && !name.equals("handleSearch")) {
        continue;
      }
      assertEquals(
          ServiceWorkload.class.getName(), frame.getMethod().getType().getName(), "class");
      assertEquals("()V", frame.getMethod().getDescriptor(), "descriptor");
      assertTrue(frame.isJavaFrame(), "Java frame");
      assertTrue(frame.getLineNumber() > 0, "line of " + name);
      assertTrue(
          List.of("Interpreted", "JIT compiled", "Inlined").contains(frame.getType()),
          frame.getType());
      RecordedFrame caller = frames.get(i + 1);
      assertEquals(ServiceWorkload.class.getName(), caller.getMethod().getType().getName());
      assertTrue(caller.getMethod().getName().startsWith("lambda$main$"), "caller");
      return name;
    }
    return null;
  }

  // The agent's session starts at VMInit, before the workload's ContextSetter registers its
  // names: without attributes= the recording takes them at its next chunk (a flush), and stderr
  // says so once per name, with the fix. Read by the JDK's parser, whose metadata changes with
  // the chunk.
  @Test
  void attributesRegisteredAfterTheStartAreRecordedFromTheNextChunk() throws Exception {
    Path jfr = dir.resolve("late.jfr");
    Result result =
        runJava(
            List.of(agent("start,event=cpu,interval=5ms,flush=200ms,file=" + jfr)),
            "ServiceWorkload",
            "3",
            "2");
    assertEquals(0, result.exit, result.toString());
    String[] names = {"endpoint", "tenant"};
    for (int slot = 0; slot < names.length; slot++) {
      String line =
          "ctxprof: attribute '"
              + names[slot]
              + "' was registered after the running session started: its recording has it from"
              + " its next chunk on, and a collapsed dump names it slot"
              + slot
              + "; list it in the start option attributes= (e.g. attributes="
              + names[slot]
              + ") to have it from the start";
      assertEquals(
          1,
          result.stderr.stream().filter(line::equals).count(),
          names[slot] + ": " + result.stderr);
    }
    JfrRecording recording = JfrRecording.read(jfr);
    int withEndpoint = 0;
    for (List<RecordedEvent> contexts : recording.contexts.values()) {
      for (RecordedEvent context : contexts) {
        // A request sets its trace, then endpoint, then tenant: each write starts an interval.
        if (!context.hasField("endpoint") || context.getString("endpoint") == null) {
          continue;
        }
        withEndpoint++;
        boolean checkout = context.getLong("traceIdHigh") == ServiceWorkload.CHECKOUT_TRACE_HIGH;
        assertEquals(checkout ? "/checkout" : "/search", context.getString("endpoint"), "endpoint");
        String tenant = context.getString("tenant");
        assertTrue(tenant == null || tenant.startsWith(checkout ? "acme-" : "globex-"), tenant);
      }
    }
    assertTrue(withEndpoint > 0, "no Context event has the names registered later");
    int joined = 0;
    for (RecordedEvent sample : recording.samples) {
      String handler = handlerOf(sample.getStackTrace());
      List<RecordedEvent> contexts = recording.contextsOf(sample);
      if (handler == null
          || contexts.size() != 1
          || !contexts.get(0).hasField("endpoint")
          || contexts.get(0).getString("endpoint") == null) {
        continue;
      }
      joined++;
      assertEquals(
          handler.equals("handleCheckout") ? "/checkout" : "/search",
          contexts.get(0).getString("endpoint"));
    }
    assertTrue(joined > 0, "no sample in a handler joined a context with its endpoint");
  }

  @Test
  void badAgentOptionsAndPathsPrintOneLineAndTheJvmRunsOn() throws Exception {
    for (String[] bad :
        new String[][] {
          {"start,interval=5", "ctxprof: option 'interval': value '5'"},
          {"start,nosuch=1", "ctxprof: unknown option 'nosuch'"},
          {"start,cstack=mixed", "ctxprof: option 'cstack': value 'mixed'"},
          {"go", "ctxprof: agent command 'go' is not supported"},
          // The path and the OS error, from the recording's open at VMInit.
          {
            "start,file=/nonexistent/x.jfr",
            "ctxprof: option 'file': cannot create recording file /nonexistent/x.jfr: "
                + "No such file or directory"
          },
        }) {
      Result result = runJava(List.of(agent(bad[0])), "ExitWorkload", "normal");
      assertEquals(0, result.exit, result.toString());
      List<String> ours =
          result.stderr.stream().filter(l -> l.startsWith("ctxprof:")).collect(Collectors.toList());
      assertEquals(1, ours.size(), bad[0] + " -> " + result.stderr);
      assertTrue(ours.get(0).startsWith(bad[1]), ours.get(0));
      assertTrue(ours.get(0).endsWith("the JVM runs without profiling"), ours.get(0));
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"normal", "exit", "throw", "sigterm"})
  void everyExitPathLeavesAValidRecording(String how) throws Exception {
    Path jfr = dir.resolve(how + ".jfr");
    List<String> command =
        javaCommand(List.of(agent("start,interval=5ms,file=" + jfr)));
    command.add(ExitWorkload.class.getName());
    command.add(how);
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    BufferedReader output =
        new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    List<String> lines = new ArrayList<>();
    if (how.equals("sigterm")) {
      String line;
      while ((line = output.readLine()) != null && !line.equals("ready")) {
        lines.add(line);
      }
      process.destroy(); // SIGTERM; also closes our end of its output
    } else {
      output.lines().forEach(lines::add);
    }
    assertTrue(process.waitFor(60, TimeUnit.SECONDS), how + ": JVM did not exit");
    int expected = Map.of("normal", 0, "exit", 3, "throw", 1, "sigterm", 143).get(how);
    assertEquals(expected, process.exitValue(), how + ": " + lines);

    JfrRecording recording = JfrRecording.read(jfr);
    long spinning = recording.samplesIn("spin");
    System.out.println(how + ": " + recording.samples.size() + " samples, " + spinning + " in spin");
    assertTrue(spinning >= 10, how + ": " + spinning + " samples in ExitWorkload.spin");
    for (String tool : List.of("summary", "print")) {
      Result check = run(List.of(JAVA_HOME + "/bin/jfr", tool, jfr.toString()), 120);
      assertEquals(0, check.exit, "jfr " + tool + ": " + check.stderr);
    }
  }

  @Test
  void javaApiControlCalls() throws Exception {
    Path jfr = dir.resolve("api.jfr");
    Path dump = dir.resolve("api.txt");
    Result result =
        runJava(
            List.of("-Dctxprof.library=" + LIBRARY),
            "ApiWorkload",
            jfr.toString(),
            dump.toString());
    assertEquals(0, result.exit, result.toString());
    Map<String, String> steps = new HashMap<>();
    for (String line : result.stdout) {
      int colon = line.indexOf(": ");
      if (colon > 0) {
        steps.put(line.substring(0, colon), line.substring(colon + 2));
      }
    }
    String ise = "java.lang.IllegalStateException: ctxprof: ";
    String iae = "java.lang.IllegalArgumentException: ctxprof: ";
    assertTrue(steps.get("stop-before-start").startsWith(ise + "stop: the profiler is not running"));
    assertTrue(steps.get("bad-option").startsWith(iae + "start: option 'interval'"));
    assertTrue(steps.get("bad-command").startsWith(iae + "unknown command 'restart'"));
    assertTrue(steps.get("start").startsWith("started"), steps.get("start"));
    assertTrue(steps.get("double-start").startsWith(ise + "start: the profiler is already"));
    assertTrue(steps.get("status").startsWith("running; engine="), steps.get("status"));
    assertTrue(steps.get("status").contains("recording=" + jfr), steps.get("status"));
    assertTrue(steps.get("dump").equals("dumped collapsed stacks to " + dump));
    assertTrue(steps.get("bad-dump").startsWith(iae + "dump: 'path="), steps.get("bad-dump"));
    assertTrue(
        steps.get("bad-format").startsWith(iae + "dump: format 'svg' is not jfr or collapsed"),
        steps.get("bad-format"));
    assertEquals("dumped JFR recording to " + jfr + ".dump.jfr", steps.get("dump-jfr"));
    assertTrue(steps.get("start-memory").startsWith("started"), steps.get("start-memory"));
    assertEquals("dumped JFR recording to " + dump + ".memory.jfr", steps.get("dump-memory"));
    assertTrue(steps.get("stop").startsWith("stopped; not running"), steps.get("stop"));
    assertTrue(steps.get("stop-again").startsWith(ise + "stop: the profiler is not running"));
    String collapsed = Files.readString(dump);
    assertTrue(
        collapsed.contains("io.ctxprof.agent.ApiWorkload.main;io.ctxprof.agent.ApiWorkload.apiWork"),
        "dump names Java frames: " + collapsed);
    System.out.println("api: dumps until the work showed: " + steps.get("dump-attempts"));

    JfrRecording recording = JfrRecording.read(jfr);
    long working =
        recording.samples.stream()
            .filter(
                s ->
                    s.getStackTrace() != null
                        && s.getStackTrace().getFrames().stream()
                            .anyMatch(
                                f ->
                                    f.getMethod().getName().equals("apiWork")
                                        && f.getMethod()
                                            .getType()
                                            .getName()
                                            .equals(ApiWorkload.class.getName())))
            .count();
    System.out.println("api: " + recording.samples.size() + " samples, " + working + " in apiWork");
    assertTrue(working >= 10, "samples in ApiWorkload.apiWork: " + working);
    // The JFR dump of the running recording: a finished copy of what was recorded until then.
    JfrRecording dumped = JfrRecording.read(Path.of(jfr + ".dump.jfr"));
    assertTrue(
        dumped.samples.size() > 0 && dumped.samples.size() <= recording.samples.size(),
        "dump " + dumped.samples.size() + " of " + recording.samples.size() + " samples");
    // Without a recording: the aggregated samples, one thread for all, the frames named.
    JfrRecording memory = JfrRecording.read(Path.of(dump + ".memory.jfr"));
    long memoryWork = memory.samplesIn("apiWork");
    System.out.println(
        "api: dumps: recording " + dumped.samples.size() + " samples, memory "
            + memory.samples.size() + " samples, " + memoryWork + " in apiWork");
    assertTrue(memoryWork >= 10, "aggregated dump: samples in apiWork: " + memoryWork);
    for (RecordedEvent sample : memory.samples) {
      assertEquals("[all threads]", sample.getThread("sampledThread").getOSName());
    }
  }

  @Test
  void missingLibraryNamesThePath() throws Exception {
    Result result =
        runJava(List.of("-Dctxprof.library=/nope/libctxprof.so"), "ApiWorkload", "x", "y");
    assertEquals(0, result.exit, result.toString());
    assertTrue(
        result.stdout.stream()
            .anyMatch(
                l ->
                    l.startsWith("load: java.lang.UnsatisfiedLinkError")
                        && l.contains("ctxprof.library=/nope/libctxprof.so")),
        result.toString());
  }

  /** "agent": loaded with -agentpath; "late": loaded and started through the Java API. */
  @ParameterizedTest
  @ValueSource(strings = {"agent", "late"})
  void virtualThreadContextStaysWithTheVirtualThread(String loading) throws Exception {
    Assumptions.assumeTrue(Runtime.version().feature() >= 21, "virtual threads need JDK 21+");
    Path jfr = dir.resolve("virtual.jfr");
    Path dump = dir.resolve("virtual.txt");
    Result result =
        loading.equals("agent")
            ? runJava(
                List.of(
                    "-Djdk.virtualThreadScheduler.parallelism=1",
                    agent("start,interval=2ms,file=" + jfr + ",attributes=endpoint;tenant")),
                "VirtualThreadWorkload",
                "3",
                dump.toString())
            : runJava(
                List.of(
                    "-Djdk.virtualThreadScheduler.parallelism=1",
                    "--enable-native-access=ALL-UNNAMED",
                    "-Dctxprof.library=" + LIBRARY),
                "VirtualThreadWorkload",
                "3",
                dump.toString(),
                jfr.toString());
    assertEquals(0, result.exit, result.toString());

    // Exact: the collapsed dump keeps each sample's own context next to its stack.
    Map<String, long[]> exact = new HashMap<>(); // method -> {samples, /a, /b, none}
    for (String line : Files.readAllLines(dump, StandardCharsets.UTF_8)) {
      int space = line.lastIndexOf(' ');
      List<String> frames = List.of(line.substring(0, space).split(";"));
      long samples = Long.parseLong(line.substring(space + 1));
      String method =
          frames.stream()
              .filter(f -> f.startsWith(VirtualThreadWorkload.class.getName() + ".vtWork"))
              .map(f -> f.substring(f.lastIndexOf('.') + 1))
              .findFirst()
              .orElse(null);
      if (method == null) {
        continue;
      }
      long[] count = exact.computeIfAbsent(method, m -> new long[4]);
      count[0] += samples;
      count[frames.contains("[endpoint=/a]") ? 1 : frames.contains("[endpoint=/b]") ? 2 : 3] +=
          samples;
      if (frames.stream().noneMatch(f -> f.startsWith("[endpoint="))
          && frames.stream().anyMatch(f -> f.startsWith("[trace="))) {
        count[3] -= samples; // a trace id without an endpoint is someone's context too
      }
    }
    System.out.println(
        "virtual threads ("
            + loading
            + ", dump) {samples, /a, /b, none}: "
            + exact.entrySet().stream()
                .map(e -> e.getKey() + "=" + java.util.Arrays.toString(e.getValue()))
                .collect(Collectors.joining(", ")));
    long[] a = exact.get("vtWorkA");
    long[] b = exact.get("vtWorkB");
    long[] none = exact.get("vtWorkNone");
    for (long[] count : new long[][] {a, b, none}) {
      assertTrue(count != null && count[0] >= 20, "too few samples in a virtual thread");
    }
    assertEquals(0, a[2], "vt-a samples with vt-b's context");
    assertEquals(0, b[1], "vt-b samples with vt-a's context");
    assertEquals(none[0], none[3], "vt-none samples with another virtual thread's context");
    assertTrue(a[1] >= 0.95 * a[0], "vt-a's own context on < 95%");
    assertTrue(b[2] >= 0.95 * b[0], "vt-b's own context on < 95%");

    // The JFR recording says the same through the Context-interval join: the recording hands
    // samples to the writer in tick order (profiler/session/sample_reorderer.h), so the join is exact.
    // Each sample belongs to the virtual thread that ran it (as JDK 25's JFR writes it: osThreadId
    // 0, the virtual thread's name and id, virtual=true), and the join is by that thread.
    Map<String, Long> virtualIds = new HashMap<>();
    for (String line : result.stdout) {
      String[] parts = line.split(" ");
      if (parts.length == 3 && parts[0].equals("thread")) {
        virtualIds.put(parts[1], Long.parseLong(parts[2]));
      }
    }
    assertEquals(3, virtualIds.size(), result.toString());
    JfrRecording recording = JfrRecording.read(jfr);
    int joined = 0;
    int misjoined = 0;
    int ownThread = 0;
    List<String> misattributed = new ArrayList<>();
    for (RecordedEvent sample : recording.samples) {
      RecordedStackTrace stack = sample.getStackTrace();
      String method =
          stack == null
              ? null
              : stack.getFrames().stream()
                  .map(f -> f.getMethod().getName())
                  .filter(n -> n.startsWith("vtWork"))
                  .findFirst()
                  .orElse(null);
      if (method == null) {
        continue;
      }
      RecordedThread thread = sample.getThread("sampledThread");
      String owner = method.equals("vtWorkA") ? "vt-a" : method.equals("vtWorkB") ? "vt-b" : "vt-none";
      if (owner.equals(thread.getJavaName())
          && virtualIds.get(owner) == thread.getJavaThreadId()
          && thread.getLong("osThreadId") == 0
          && thread.getBoolean("virtual")) {
        ownThread++;
      } else if (misattributed.size() < 3) {
        misattributed.add(owner + ": " + thread);
      }
      List<RecordedEvent> contexts = recording.contextsOf(sample);
      String expected = method.equals("vtWorkA") ? "/a" : method.equals("vtWorkB") ? "/b" : null;
      String endpoint = contexts.size() == 1 ? contexts.get(0).getString("endpoint") : null;
      joined++;
      if (contexts.size() > 1 || !java.util.Objects.equals(expected, endpoint)) {
        misjoined++;
      }
    }
    System.out.println(
        "virtual threads ("
            + loading
            + ", JFR join): "
            + misjoined
            + " of "
            + joined
            + " off; "
            + ownThread
            + " attributed to their virtual thread");
    assertEquals(0, misjoined, "JFR join off for " + misjoined + " of " + joined);
    assertTrue(joined > 0, "no samples in the virtual threads' work methods");
    assertEquals(
        joined, ownThread, "samples not attributed to the thread that ran them: " + misattributed);
  }
}
