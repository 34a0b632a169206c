package io.ctxprof.agent;

import static io.ctxprof.agent.ChildProcess.agent;
import static io.ctxprof.agent.ChildProcess.runJava;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ctxprof.agent.ChildProcess.Result;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedThread;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Ground truth for jfrsync (issue 26): FileServiceWorkload counts the bytes it reads and writes
 * per endpoint; the one recording file must hold the JDK's I/O events and the application's
 * events beside ctxprof's spans, and joining each JDK event to the ctxprof.Context interval of
 * its thread and time (what any reader can do) must give those counts within 1 %, put every
 * application event in its own request's span and no event of a thread outside requests in any.
 * JDK 25's own printer must show the Context lines on the same events, and JDK 17's jfr must read
 * the file.
 */
class JfrSyncTest {
  static final String JDK17 = "/usr/lib/jvm/java-17-openjdk-amd64";
  static final String JDK25 = "/usr/lib/jvm/temurin-25-jdk-amd64";
  static final List<String> IO = List.of("FileRead", "FileWrite", "SocketRead", "SocketWrite");

  static final String TOOL = System.getProperty("ctxprof.tool");

  @TempDir Path dir;

  @Test
  void theJdksEventsJoinTheirRequests() throws Exception {
    Path jfc = writeIoConfiguration();
    Path jfr = dir.resolve("service.jfr");
    Result result = runJava(
        List.of(agent("start,event=cpu,attributes=endpoint,jfrsync=" + jfc + ",file=" + jfr)),
        "FileServiceWorkload", dir.toString());
    assertEquals(0, result.exit, result.toString());
    assertTrue(result.stderr.isEmpty(), "the JVM printed: " + result.stderr);
    Map<String, Long> truth = truthOf(result);
    assertTrue(!Files.exists(Path.of(jfr + ".jdk.jfr")), "the JDK's part was left beside");

    Joined joined = Joined.read(jfr, dir);
    expectCounted(joined, truth);
    // jfrsync= writes every span (contexts=all), those with nothing inside too.
    assertEquals(truth.get("idle -"), (long) joined.spansOf.getOrDefault("/idle", 0), "/idle");
    expectPrinted(jfr, joined);
    // JDK 17's jfr reads the whole file.
    Result summary =
        ChildProcess.run(List.of(JDK17 + "/bin/jfr", "summary", jfr.toString()), 120);
    assertEquals(0, summary.exit, "JDK 17 jfr summary: " + summary);
    for (String type : List.of("jdk.FileRead", "ctxprof.test.Order", "ctxprof.Context")) {
      assertTrue(summary.stdout.stream().anyMatch(l -> l.trim().matches(
          type.replace(".", "\\.") + "\\s+[1-9][0-9]*\\s+.*")), type + " in " + summary.stdout);
    }
  }

  /**
   * contexts=triggered: the spans in which nothing was recorded (most /idle ones) are left out,
   * and every request whose only events were the JDK's (most have no CPU sample) keeps its span.
   */
  @Test
  void contextsTriggeredKeepsTheSpansOfTheJdksEvents() throws Exception {
    Path jfc = writeIoConfiguration();
    Path jfr = dir.resolve("triggered.jfr");
    Result result = runJava(
        List.of(agent("start,event=cpu,attributes=endpoint,jfrsync=" + jfc
            + ",contexts=triggered,file=" + jfr)),
        "FileServiceWorkload", dir.toString());
    assertEquals(0, result.exit, result.toString());
    assertTrue(result.stderr.isEmpty(), "the JVM printed: " + result.stderr);
    Map<String, Long> truth = truthOf(result);
    Joined joined = Joined.read(jfr, dir);
    System.out.println("spans by endpoint: " + joined.spansOf + "; samples in spans: "
        + joined.samplesInSpans);
    expectCounted(joined, truth);
    // Every span written holds an event; every request that did I/O kept its span; an /idle
    // request (a sleep) keeps its span only when a CPU sample or a JDK event of its own (class
    // loading) fell in it.
    assertEquals(0, joined.spansWithoutEvents, "spans written with nothing inside");
    long requests = (long) FileServiceWorkload.REQUEST_THREADS
        * FileServiceWorkload.REQUESTS_PER_THREAD;
    long idle = joined.spansOf.getOrDefault("/idle", 0);
    long busy = joined.spansOf.values().stream().mapToLong(Integer::longValue).sum() - idle;
    assertEquals(requests - truth.get("idle -"), busy, "spans of requests with events");
    assertTrue(idle < truth.get("idle -") / 2, idle + " of the /idle spans written");
    assertTrue(joined.samplesInSpans < busy, "most requests hold no CPU sample");
    expectPrinted(jfr, joined);
  }

  /**
   * select=if-context: with thresholds of 1 s (the configuration's, or jfrthreshold= over +name
   * events recorded at their defaults) every I/O event of a request is kept, whatever its
   * duration, and none of the background thread's (none takes 1 s).
   */
  @Test
  void selectIfContextKeepsEveryRequestsEventsAndOnlySlowOnesElsewhere() throws Exception {
    Path jfc = writeIoConfiguration("1 s");
    String plus = "+jdk.FileRead+jdk.FileWrite+jdk.SocketRead+jdk.SocketWrite+ctxprof.test.Order";
    for (String sync : List.of("jfrsync=" + jfc, "jfrsync=" + plus + ",jfrthreshold=1s")) {
      Path jfr = dir.resolve("if-context.jfr");
      Result result = runJava(
          List.of(agent("start,event=cpu,attributes=endpoint," + sync
              + ",select=if-context,file=" + jfr)),
          "FileServiceWorkload", dir.toString());
      assertEquals(0, result.exit, result.toString());
      assertTrue(result.stderr.isEmpty(), "the JVM printed: " + result.stderr);
      Map<String, Long> truth = truthOf(result);
      Joined joined = Joined.read(jfr, dir);
      System.out.println(sync + ": " + joined.bytes);
      for (String kind : List.of("FileRead", "FileWrite")) {
        assertTrue(truth.get("background " + kind) > 0, "the background thread's " + kind);
        assertEquals(null, joined.bytes.get("background " + kind), sync + ": background");
      }
      truth.keySet().removeIf(key -> key.startsWith("background"));
      expectCounted(joined, truth);
      if (sync.contains(plus)) { // +name enables with stacks, for the tool's --events
        int io = 0;
        for (RecordedEvent event : jdk.jfr.consumer.RecordingFile.readAllEvents(jfr)) {
          String name = event.getEventType().getName();
          if (name.startsWith("jdk.File") || name.startsWith("jdk.Socket")) {
            io++;
            jdk.jfr.consumer.RecordedStackTrace stack = event.getStackTrace();
            assertTrue(stack != null && !stack.getFrames().isEmpty(), name + " without a stack");
          }
        }
        assertTrue(io > 0, "no I/O event in " + jfr);
      }
      Files.delete(jfr);
    }
  }

  /** The files of `repository`, in name order (the chunks', by their sequence number). */
  private static List<Path> chunkFiles(Path repository) throws IOException {
    try (java.util.stream.Stream<Path> files = Files.list(repository)) {
      return files.sorted().collect(java.util.stream.Collectors.toList());
    }
  }

  /**
   * repository= and upload=: a service running over several rotations (chunktime=250ms); each
   * chunk file holds the JDK's events of its own period, so the chunks, each read alone, give
   * the service's counts: no JDK event lost or in two chunks, every one joined to its request's
   * span in its own chunk, by our reading and by JDK 25's printer per chunk; JDK 17's and 25's
   * jfr read every chunk; the local Pyroscope stand-in receives the same bytes.
   */
  @Test
  void everyRepositoryChunkHoldsTheJdksEventsOfItsPeriod() throws Exception {
    Path jfc = writeIoConfiguration();
    Path repository = dir.resolve("repository");
    Map<Integer, byte[]> uploaded = new TreeMap<>();
    com.sun.net.httpserver.HttpServer server = com.sun.net.httpserver.HttpServer.create(
        new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", exchange -> {
      byte[] body = exchange.getRequestBody().readAllBytes();
      String type = exchange.getRequestHeaders().getFirst("Content-Type");
      byte[] jfr = multipartPart(body, type.substring(type.indexOf("boundary=") + 9), "jfr");
      synchronized (uploaded) {
        uploaded.put(uploaded.size(), jfr);
      }
      exchange.sendResponseHeaders(200, -1);
      exchange.close();
    });
    server.start();
    Result result;
    try {
      result = runJava(List.of("-Dfileservice.requests=250",
          agent("start,event=cpu,attributes=endpoint,jfrsync=" + jfc + ",chunktime=250ms,"
              + "repository=" + repository + ",upload=http://127.0.0.1:"
              + server.getAddress().getPort() + "/")),
          "FileServiceWorkload", dir.toString());
    } finally {
      server.stop(0);
    }
    assertEquals(0, result.exit, result.toString());
    assertTrue(result.stderr.isEmpty(), "the JVM printed: " + result.stderr);
    Map<String, Long> truth = truthOf(result);
    List<Path> chunks = chunkFiles(repository);
    assertTrue(chunks.size() >= 3, "chunk files: " + chunks);
    Joined all = new Joined();
    Printed printedReads = new Printed();
    Printed printedOrders = new Printed();
    List<String> contents = new ArrayList<>();
    for (Path chunk : chunks) {
      assertTrue(chunk.getFileName().toString().matches("ctxprof-[0-9]{6}\\.jfr"),
          "only chunk files are left in the repository: " + chunks);
      Joined joined = Joined.read(chunk, dir);
      contents.add(chunk.getFileName() + ": orders " + joined.orders + ", " + joined.bytes);
      for (RecordedEvent event : jdk.jfr.consumer.RecordingFile.readAllEvents(chunk)) {
        if (!event.getEventType().getName().equals("jdk.ExecutionSample")) continue;
        RecordedThread sampled = event.getThread("sampledThread");
        assertTrue(sampled == null || !"ctxprof jfrsync".equals(sampled.getJavaName()),
            "a sample of ctxprof's own rotation thread in " + chunk);
      }
      all.add(joined);
      for (String jdk : List.of(JDK17, JDK25)) {
        if (!Files.isExecutable(Path.of(jdk, "bin/jfr"))) continue;
        Result summary = ChildProcess.run(List.of(jdk + "/bin/jfr", "summary", chunk.toString()), 120);
        assertEquals(0, summary.exit, jdk + " jfr summary " + chunk + ": " + summary);
      }
      if (Files.isExecutable(Path.of(JDK25, "bin/jfr"))) {
        printedOrders.add(Printed.of(chunk, "ctxprof.test.Order", dir));
        printedReads.add(
            Printed.of(chunk, "jdk.FileRead,jdk.FileWrite,jdk.SocketRead,jdk.SocketWrite", dir));
      }
    }
    System.out.println(String.join("\n", contents));
    // Every JDK event once: the byte counts of each kind, in spans or not, are exact. Elsewhere
    // (neither a request nor the background thread): the echo server's socket I/O and the
    // main thread's one file write, none of ctxprof's own copies of the JDK's chunks.
    for (String kind : IO) {
      long counted = truth.entrySet().stream().filter(e -> e.getKey().endsWith(" " + kind))
          .mapToLong(Map.Entry::getValue).sum();
      long recorded = all.bytes.entrySet().stream().filter(
          e -> e.getKey().endsWith(" " + kind) && !e.getKey().startsWith("elsewhere"))
          .mapToLong(Map.Entry::getValue).sum();
      assertEquals(counted, recorded, kind + " bytes over all chunks: " + all.bytes);
    }
    assertEquals(200_000L, all.bytes.get("elsewhere FileWrite"), "file writes elsewhere");
    expectCounted(all, truth);
    if (Files.isExecutable(Path.of(JDK25, "bin/jfr"))) {
      assertEquals(all.orders, printedOrders.withContext, "JDK 25 jfr print: orders with Context");
      assertEquals(all.inRequests, printedReads.withContext, "JDK 25 jfr print: I/O with Context");
      assertEquals(0, printedReads.outsideWithContext, "JDK 25: background I/O with Context");
    }
    // upload=: every chunk file arrived, byte for byte.
    assertEquals(chunks.size(), uploaded.size(), "uploads");
    for (int i = 0; i < chunks.size(); i++) {
      assertTrue(java.util.Arrays.equals(Files.readAllBytes(chunks.get(i)), uploaded.get(i)),
          "upload " + i + " differs from " + chunks.get(i));
    }
  }

  /**
   * select=if-context and contexts=triggered with repository=: each chunk file is selected on
   * its own, so every chunk keeps its requests' I/O (thresholds of 1 s) and none of the
   * background thread's, and no span without an event.
   */
  @Test
  void selectIfContextAppliesToEachChunk() throws Exception {
    Path jfc = writeIoConfiguration("1 s");
    Path repository = dir.resolve("selected");
    Result result = runJava(List.of("-Dfileservice.requests=150",
        agent("start,event=cpu,attributes=endpoint,jfrsync=" + jfc + ",select=if-context,"
            + "contexts=triggered,chunktime=250ms,repository=" + repository)),
        "FileServiceWorkload", dir.toString());
    assertEquals(0, result.exit, result.toString());
    assertTrue(result.stderr.isEmpty(), "the JVM printed: " + result.stderr);
    Map<String, Long> truth = truthOf(result);
    List<Path> chunks = chunkFiles(repository);
    assertTrue(chunks.size() >= 2, "chunk files: " + chunks);
    Joined all = new Joined();
    for (Path chunk : chunks) all.add(Joined.read(chunk, dir));
    for (String kind : List.of("FileRead", "FileWrite")) {
      assertTrue(truth.get("background " + kind) > 0, "the background thread's " + kind);
      assertEquals(null, all.bytes.get("background " + kind), "background " + kind);
    }
    truth.keySet().removeIf(key -> key.startsWith("background"));
    expectCounted(all, truth);
    assertEquals(0, all.spansWithoutEvents, "spans written with nothing inside");
  }

  /** The gunzipped content of the multipart/form-data part `name` of `body`. */
  private static byte[] multipartPart(byte[] body, String boundary, String name)
      throws IOException {
    String text = new String(body, StandardCharsets.ISO_8859_1);
    int header = text.indexOf("name=\"" + name + "\"");
    int start = text.indexOf("\r\n\r\n", header) + 4;
    int end = text.indexOf("\r\n--" + boundary, start);
    assertTrue(header >= 0 && start > header && end > start, "no part " + name);
    try (java.util.zip.GZIPInputStream in = new java.util.zip.GZIPInputStream(
        new java.io.ByteArrayInputStream(body, start, end - start))) {
      return in.readAllBytes();
    }
  }

  /**
   * Virtual request threads (JDK 21+: the service runs on JDK 25 whichever JDK runs the test): a
   * virtual thread's pool key is the JDK's own for it, its java.lang.Thread id, so JDK 25's
   * printer shows the Context lines on the JDK's events of virtual threads too (with a spare key
   * it showed none: 0 of 575 in the same run).
   */
  @Test
  void theJdksEventsOfVirtualThreadsJoinTheirRequests() throws Exception {
    String java = Runtime.version().feature() >= 21 ? ChildProcess.JAVA_HOME : JDK25;
    if (!Files.isExecutable(Path.of(java, "bin/java"))) {
      System.out.println("no JDK 21+ at " + java + ": virtual threads are not checked");
      return;
    }
    Path jfc = writeIoConfiguration();
    Path jfr = dir.resolve("virtual.jfr");
    List<String> command = ChildProcess.javaCommand(List.of("-Dfileservice.virtual=true",
        agent("start,event=cpu,attributes=endpoint,jfrsync=" + jfc + ",file=" + jfr)));
    command.set(0, java + "/bin/java");
    command.addAll(List.of(FileServiceWorkload.class.getName(), dir.toString()));
    Result result = ChildProcess.run(command, 120);
    assertEquals(0, result.exit, result.toString());
    assertTrue(result.stderr.isEmpty(), "the JVM printed: " + result.stderr);
    Joined joined = Joined.read(jfr, dir);
    expectCounted(joined, truthOf(result));
    expectPrinted(jfr, joined);
  }

  /** ctxprof attach PID start --jfrsync; a dump while it runs and the stop hold both sides. */
  @Test
  void attachStartsItInARunningJvmAndDumpsAndStopHoldBoth() throws Exception {
    Path jfc = writeIoConfiguration();
    Path jfr = dir.resolve("attached.jfr");
    Path dump = dir.resolve("dumped.jfr");
    Map<String, Long> truth = attachDumpAndStop(dump, "--event", "cpu", "--attributes",
        "endpoint", "--jfrsync", jfc.toString(), "-o", jfr.toString());
    for (Path recording : List.of(dump, jfr)) {
      Joined joined = Joined.read(recording, dir);
      System.out.println(recording.getFileName() + ":");
      expectCounted(joined, truth);
    }
    expectPrinted(jfr, Joined.read(jfr, dir));
  }

  /**
   * The same with repository=: the dump (which asks the JDK's recorder for a boundary) holds
   * the chunk files with their periods, unfolded, and the repository's chunks hold everything.
   */
  @Test
  void aDumpOfASynchronisedRepositoryHoldsBothSides() throws Exception {
    Path jfc = writeIoConfiguration();
    Path repository = dir.resolve("attached-repository");
    Path dump = dir.resolve("dumped.jfr");
    Map<String, Long> truth = attachDumpAndStop(dump, "--event", "cpu", "--attributes",
        "endpoint", "--jfrsync", jfc.toString(), "--chunktime", "300ms", "--option",
        "repository=" + repository);
    Joined dumped = Joined.read(dump, dir);
    System.out.println("dump:");
    expectCounted(dumped, truth);
    expectPrinted(dump, dumped);
    Joined all = new Joined();
    try (java.util.stream.Stream<Path> files = Files.list(repository)) {
      for (Path chunk : files.sorted().collect(java.util.stream.Collectors.toList())) {
        all.add(Joined.read(chunk, dir));
      }
    }
    System.out.println("repository:");
    expectCounted(all, truth);
  }

  /**
   * Runs FileServiceWorkload --attach: `ctxprof attach start` with `startArgs`, the service's
   * requests, a dump to `dump` once they are over, the stop; returns the service's counts.
   */
  private Map<String, Long> attachDumpAndStop(Path dump, String... startArgs) throws Exception {
    List<String> command = ChildProcess.javaCommand(
        List.of("-Dctxprof.library=" + ChildProcess.LIBRARY));
    if (Runtime.version().feature() >= 22) command.add("--enable-native-access=ALL-UNNAMED");
    command.addAll(List.of(FileServiceWorkload.class.getName(), dir.toString(), "--attach"));
    Process process = new ProcessBuilder(command)
        .redirectError(dir.resolve("attached.err").toFile()).start();
    try {
      BufferedReader out = new BufferedReader(
          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
      assertEquals("ready", out.readLine(), Files.readString(dir.resolve("attached.err")));
      List<String> start = new ArrayList<>(List.of("start"));
      start.addAll(List.of(startArgs));
      expectAttached(process.pid(), start.toArray(new String[0]));
      Writer in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
      in.write("go\n");
      in.flush();
      List<String> lines = new ArrayList<>();
      for (String line; !"served".equals(line = out.readLine()); ) {
        assertTrue(line != null, "the service ended: " + lines);
        lines.add(line);
      }
      Map<String, Long> truth = truthOf(new Result(0, lines, List.of()));
      // A dump writes the spans that ended before its horizon, the reorder window (50 ms) ago
      // (Recording::Publish): the last requests must be older than that.
      Thread.sleep(200);
      expectAttached(process.pid(), "dump", "-o", dump.toString());
      expectAttached(process.pid(), "stop");
      in.write("quit\n");
      in.flush();
      assertTrue(process.waitFor(60, TimeUnit.SECONDS), "the service did not quit");
      assertEquals(0, process.exitValue(), Files.readString(dir.resolve("attached.err")));
      return truth;
    } finally {
      process.destroyForcibly();
    }
  }

  private static void expectAttached(long pid, String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of(TOOL, "attach", Long.toString(pid)));
    command.addAll(List.of(args));
    command.addAll(List.of("--lib", ChildProcess.LIBRARY, "--timeout", "30"));
    Result result = ChildProcess.run(command, 120);
    assertEquals(0, result.exit, "ctxprof attach " + List.of(args) + ": " + result);
  }

  private Path writeIoConfiguration() throws IOException {
    return writeIoConfiguration("0 ms");
  }

  /** The four I/O events and the application's, with stacks, at `threshold`. */
  private Path writeIoConfiguration(String threshold) throws IOException {
    Path jfc = dir.resolve("io.jfc");
    StringBuilder settings = new StringBuilder();
    for (String kind : IO) settings.append(eventSettings("jdk." + kind, threshold));
    settings.append(eventSettings("ctxprof.test.Order", "0 ms"));
    Files.writeString(jfc, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        + "<configuration version=\"2.0\" label=\"io\">\n" + settings + "</configuration>\n");
    return jfc;
  }

  /**
   * The bytes per endpoint and kind of the JDK's joined events are the service's counts (1 %),
   * every I/O event of a request thread is in a span and none of another thread, and every
   * application event is in its own request's span.
   */
  private static void expectCounted(Joined joined, Map<String, Long> truth) {
    StringBuilder report = new StringBuilder();
    for (Map.Entry<String, Long> counted : truth.entrySet()) {
      if (counted.getKey().endsWith(" -")) continue; // counts of requests, not bytes
      long recorded = joined.bytes.getOrDefault(counted.getKey(), 0L);
      report.append(counted.getKey()).append(": counted ").append(counted.getValue())
          .append(", recorded ").append(recorded).append('\n');
    }
    System.out.print(report);
    for (Map.Entry<String, Long> counted : truth.entrySet()) {
      if (counted.getKey().endsWith(" -")) continue;
      long recorded = joined.bytes.getOrDefault(counted.getKey(), 0L);
      assertTrue(Math.abs(recorded - counted.getValue()) <= counted.getValue() / 100,
          counted.getKey() + " off by more than 1 %:\n" + report);
    }
    assertEquals(List.of(), joined.outOfPlace, "I/O events joined to the wrong side of a span");
    assertEquals(truth.get("orders -"), (long) joined.orders, "ctxprof.test.Order events");
    assertEquals(List.of(), joined.misplacedOrders, "orders outside their own request's span");
  }

  /** JDK 25's printer shows the span's Context lines on the same events, and only on them. */
  private void expectPrinted(Path jfr, Joined joined) throws Exception {
    if (Files.isExecutable(Path.of(JDK25, "bin/jfr"))) {
      Printed orders = Printed.of(jfr, "ctxprof.test.Order", dir);
      assertEquals(joined.orders, orders.withContext, "JDK 25 jfr print: orders with Context");
      assertEquals(0, orders.withoutContext, "JDK 25 jfr print: orders without Context");
      Printed reads =
          Printed.of(jfr, "jdk.FileRead,jdk.FileWrite,jdk.SocketRead,jdk.SocketWrite", dir);
      assertEquals(joined.inRequests, reads.withContext, "JDK 25 jfr print: I/O with Context");
      assertEquals(0, reads.outsideWithContext, "JDK 25 jfr print: background I/O with Context");
    } else {
      System.out.println("JDK 25 not installed at " + JDK25 + ": its printer is not checked");
    }
  }

  @Test
  void theJavaApiStartsItAndPlusEnablesNamedEvents() throws Exception {
    Path jfr = dir.resolve("api.jfr");
    List<String> jvm = new ArrayList<>(List.of("-Dctxprof.library=" + ChildProcess.LIBRARY));
    if (Runtime.version().feature() >= 22) {
      jvm.add("--enable-native-access=ALL-UNNAMED"); // System.load without a warning
    }
    Result result = runJava(jvm, "FileServiceWorkload", dir.toString(),
        "event=cpu+wall,wall=20ms,attributes=endpoint,jfrsync=+ctxprof.test.Order,file=" + jfr);
    assertEquals(0, result.exit, result.toString());
    assertTrue(result.stderr.isEmpty(), "the JVM printed: " + result.stderr);
    Joined joined = Joined.read(jfr, dir);
    assertEquals(truthOf(result).get("orders -"), (long) joined.orders, "orders");
    assertEquals(List.of(), joined.misplacedOrders, "orders outside their own request's span");
    assertEquals(Map.of(), joined.bytes, "I/O events, which +ctxprof.test.Order leaves out");
  }

  @Test
  void aConfigurationLosesTheJdksEventsOfWhatCtxprofRecords() throws Exception {
    Path jfr = dir.resolve("default.jfr");
    Result result = runJava(
        List.of(agent("start,event=cpu+wall,wall=20ms,lock=1ms,attributes=endpoint,"
            + "jfrsync=profile,file=" + jfr)),
        "FileServiceWorkload", dir.toString());
    assertEquals(0, result.exit, result.toString());
    Map<String, Integer> counts = new TreeMap<>();
    int jdkSamples = 0;
    for (RecordedEvent event : JfrRecording.read(jfr).events) {
      counts.merge(event.getEventType().getName(), 1, Integer::sum);
      // ctxprof's CPU samples say STATE_DEFAULT; the JDK's the thread's state.
      if (event.getEventType().getName().equals("jdk.ExecutionSample")
          && !"STATE_DEFAULT".equals(event.getString("state"))) {
        jdkSamples++;
      }
    }
    assertEquals(0, jdkSamples, "the JDK's own CPU samples: " + counts);
    assertEquals(null, counts.get("jdk.NativeMethodSample"), "the JDK's wall samples: " + counts);
    assertTrue(counts.getOrDefault("jdk.JVMInformation", 0) > 0
        && counts.getOrDefault("jdk.ExecutionSample", 0) > 0, "both sides: " + counts);
  }

  @Test
  void aConfigurationThatCannotStartLeavesCtxprofProfiling() throws Exception {
    Path jfr = dir.resolve("missing.jfr");
    Path jfc = dir.resolve("nosuch.jfc");
    Result result = runJava(
        List.of(agent("start,event=cpu,attributes=endpoint,jfrsync=" + jfc + ",file=" + jfr)),
        "FileServiceWorkload", dir.toString());
    assertEquals(0, result.exit, result.toString());
    assertEquals(List.of("ctxprof: jfrsync=" + jfc + ": '" + jfc + "' is neither a predefined "
        + "configuration (default, profile) nor a .jfc file; recording without the JDK's events"),
        result.stderr);
    Joined joined = Joined.read(jfr, dir);
    assertEquals(0, joined.orders, "no JDK recorder, no application events");
    assertTrue(joined.contexts > 0, "ctxprof's spans");
  }

  /** A JVM without the jdk.jfr module: one line, and ctxprof records on. */
  @Test
  void aJvmWithoutFlightRecorderGetsOneLineAndCtxprofRecords() throws Exception {
    Path jfr = dir.resolve("no-jfr.jfr");
    List<String> command = new ArrayList<>(List.of(ChildProcess.JAVA_HOME + "/bin/java",
        "--limit-modules", "java.base", agent("start,event=cpu,jfrsync=default,file=" + jfr),
        "-version"));
    Result result = ChildProcess.run(command, 120);
    assertEquals(0, result.exit, result.toString());
    assertEquals(List.of("ctxprof: jfrsync=default: the JVM has no jdk.jfr module (the JDK's "
        + "Flight Recorder): java.lang.NoClassDefFoundError: jdk/jfr/internal/JVM; recording "
        + "without the JDK's events"),
        result.stderr.stream().filter(l -> l.startsWith("ctxprof:")).collect(
            java.util.stream.Collectors.toList()));
    Map<String, Integer> counts = new TreeMap<>();
    for (RecordedEvent event : JfrRecording.read(jfr).events) {
      counts.merge(event.getEventType().getName(), 1, Integer::sum);
    }
    assertTrue(counts.containsKey("ctxprof.ProfilerSettings"), "ctxprof's recording: " + counts);
  }

  private static String eventSettings(String name, String threshold) {
    return "  <event name=\"" + name + "\">\n"
        + "    <setting name=\"enabled\">true</setting>\n"
        + "    <setting name=\"stackTrace\">true</setting>\n"
        + "    <setting name=\"threshold\">" + threshold + "</setting>\n"
        + "  </event>\n";
  }

  private static Map<String, Long> truthOf(Result result) {
    Map<String, Long> truth = new TreeMap<>();
    for (String line : result.stdout) {
      String[] parts = line.split(" ");
      assertTrue(parts.length == 4 && parts[0].equals("truth"), "the JVM printed: " + line);
      truth.put(parts[1] + " " + parts[2], Long.parseLong(parts[3]));
    }
    return truth;
  }

  /** A span as recorded: [start, end) on one thread, with its endpoint and span id. */
  private static final class Span {
    final Instant start;
    final Instant end;
    final String endpoint;
    final String spanId; // W3C hex

    Span(RecordedEvent context) {
      start = context.getStartTime();
      end = context.getEndTime();
      endpoint = context.getString("endpoint");
      spanId = String.format("%016x", context.getLong("spanId"));
    }
  }

  /** The recording's JDK and application events joined to spans by thread and start time. */
  private static final class Joined {
    final Map<String, Long> bytes = new HashMap<>(); // "ENDPOINT KIND" (background: no span)
    final List<String> outOfPlace = new ArrayList<>();
    final List<String> misplacedOrders = new ArrayList<>();
    int orders;
    int inRequests; // I/O events of request threads (all inside spans)
    int contexts;
    final Map<String, Integer> spansOf = new TreeMap<>(); // spans by endpoint (parts merged)
    int samplesInSpans; // ctxprof's CPU samples inside a span
    int spansWithoutEvents; // spans in which no event of their thread falls

    /** Adds what another file (a repository's chunk file) holds. */
    void add(Joined other) {
      other.bytes.forEach((key, value) -> bytes.merge(key, value, Long::sum));
      outOfPlace.addAll(other.outOfPlace);
      misplacedOrders.addAll(other.misplacedOrders);
      orders += other.orders;
      inRequests += other.inRequests;
      contexts += other.contexts;
      spansWithoutEvents += other.spansWithoutEvents;
    }

    /** File events count only on the service's files in {@code dir} (not class loading's). */
    static Joined read(Path jfr, Path dir) throws Exception {
      JfrRecording recording = JfrRecording.read(jfr);
      Map<Long, List<Span>> spans = new HashMap<>();
      Joined joined = new Joined();
      java.util.Set<String> spanIds = new java.util.HashSet<>();
      for (Map.Entry<Long, List<RecordedEvent>> thread : recording.contexts.entrySet()) {
        List<Span> list = new ArrayList<>();
        for (RecordedEvent context : thread.getValue()) {
          Span span = new Span(context);
          list.add(span);
          if (spanIds.add(span.spanId)) joined.spansOf.merge(span.endpoint, 1, Integer::sum);
        }
        spans.put(thread.getKey(), list);
        joined.contexts += list.size();
      }
      // Which spans hold an event of any kind (ctxprof's or the JDK's) of their thread.
      java.util.Set<String> withEvents = new java.util.HashSet<>();
      for (RecordedEvent event : recording.events) {
        String type = event.getEventType().getName();
        RecordedThread thread = type.equals("jdk.ExecutionSample")
            ? event.getThread("sampledThread") : event.getThread();
        if (thread == null || type.equals("ctxprof.Context")) continue;
        for (Span span : spans.getOrDefault(JfrRecording.threadKey(thread), List.of())) {
          if (!event.getStartTime().isBefore(span.start)
              && event.getStartTime().isBefore(span.end)) {
            withEvents.add(span.spanId);
            if (type.equals("jdk.ExecutionSample")) joined.samplesInSpans++;
          }
        }
      }
      spanIds.removeAll(withEvents);
      joined.spansWithoutEvents = spanIds.size();
      for (RecordedEvent event : recording.events) {
        String type = event.getEventType().getName();
        String kind = type.startsWith("jdk.") ? type.substring(4) : type;
        boolean io = IO.contains(kind);
        if (!io && !type.equals("ctxprof.test.Order")) continue;
        String path = kind.startsWith("File") ? event.getString("path") : null;
        if (kind.startsWith("File") && (path == null || !path.startsWith(dir.toString()))) {
          continue;
        }
        Span span = null;
        for (Span candidate : spans.getOrDefault(
            JfrRecording.threadKey(event.getThread()), List.of())) {
          if (!event.getStartTime().isBefore(candidate.start)
              && event.getStartTime().isBefore(candidate.end)) {
            span = candidate;
          }
        }
        String thread = event.getThread().getJavaName();
        if (type.equals("ctxprof.test.Order")) {
          joined.orders++;
          String expected = String.format("%016x", event.getLong("requestId"));
          if (span == null || !span.spanId.equals(expected)
              || !span.endpoint.equals(event.getString("endpoint"))) {
            joined.misplacedOrders.add(expected + (span == null ? " in none" : " in " + span.spanId));
          }
          continue;
        }
        boolean request = thread.startsWith("request-");
        if (request != (span != null)) {
          joined.outOfPlace.add(type + " of " + thread + " at " + event.getStartTime()
              + (span == null ? " outside every span" : " in span " + span.spanId));
        }
        if (request) joined.inRequests++;
        String field = kind.endsWith("Read") ? "bytesRead" : "bytesWritten";
        long amount = Math.max(0, event.getLong(field));
        String owner = span != null ? span.endpoint : thread.equals("background") ? "background"
            : "elsewhere";
        joined.bytes.merge(owner + " " + kind, amount, Long::sum);
      }
      return joined;
    }
  }

  /**
   * What JDK 25's `jfr print` shows: events of the given types with and without Context (file
   * events only on the service's files in {@code dir}).
   */
  private static final class Printed {
    int withContext;
    int withoutContext;
    int outsideWithContext; // events of threads outside requests that show Context lines

    void add(Printed other) {
      withContext += other.withContext;
      withoutContext += other.withoutContext;
      outsideWithContext += other.outsideWithContext;
    }

    static Printed of(Path jfr, String types, Path dir) throws Exception {
      Result printed = ChildProcess.run(
          List.of(JDK25 + "/bin/jfr", "print", "--events", types, jfr.toString()), 120);
      assertEquals(0, printed.exit, "JDK 25 jfr print: " + printed.stderr);
      Printed counts = new Printed();
      boolean inEvent = false;
      boolean context = false;
      boolean service = true;
      String thread = "";
      for (String line : printed.stdout) {
        if (line.endsWith(" {") && !line.startsWith(" ")) {
          inEvent = true;
          context = false;
          service = true;
          thread = "";
        } else if (line.trim().startsWith("Context: ")) {
          context = true;
        } else if (line.trim().startsWith("eventThread = ")) {
          thread = line.trim();
        } else if (line.trim().startsWith("path = ")) {
          service = line.trim().startsWith("path = \"" + dir);
        } else if (inEvent && line.equals("}")) {
          inEvent = false;
          if (!service) continue;
          if (context) counts.withContext++;
          else counts.withoutContext++;
          if (context && !thread.contains("\"request-")) counts.outsideWithContext++;
        }
      }
      return counts;
    }
  }
}
