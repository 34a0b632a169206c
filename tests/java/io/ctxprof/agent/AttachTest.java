package io.ctxprof.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ctxprof.agent.ChildProcess.Result;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * `ctxprof attach` against real JVMs (BusyWorkload, which never touches io.ctxprof), on the JDK
 * running this test: every action's answer comes back to the client, refusals exit 1 with the
 * agent's message, the JVM survives everything, and after an attach the busy thread's CPU samples
 * carry its Java method. Containers (other pid and mount namespaces, a private /tmp) and a JVM
 * of another user are tested when the test runs as root.
 */
class AttachTest {
  private static final String TOOL = System.getProperty("ctxprof.tool");
  private static final Pattern SAMPLES = Pattern.compile("samples=(\\d+)");

  @TempDir Path dir;

  @Test
  void everyActionAnswersTheClientAndTheJvmSurvives() throws Exception {
    Path first = dir.resolve("first.jfr");
    Path second = dir.resolve("second.jfr");
    Path dump = dir.resolve("dump.txt");
    Path jfrDump = dir.resolve("dump.jfr");
    long dumpedSpin;
    try (Target target = Target.start(List.of(), List.of(), dir)) {
      long pid = target.pid;
      expectOk(attach(pid, "status"), "not running; engine=none");
      expectRefused(attach(pid, "stop"), "ctxprof: stop: the profiler is not running");
      expectOk(attach(pid, "start", "--interval", "5ms", "-o", first.toString()), "started");
      expectRefused(
          attach(pid, "start", "-o", second.toString()),
          "ctxprof: start: the profiler is already running");
      waitForSamples(pid, 50);
      Result status = attach(pid, "status");
      expectOk(status, "running; engine=");
      assertTrue(status.stdout.get(0).contains("recording=" + first), status.toString());
      expectOk(attach(pid, "dump", "-o", dump.toString()), "dumped collapsed stacks to " + dump);
      assertTrue(
          Files.readString(dump).contains(BusyWorkload.class.getName() + ".spin"),
          "the dump names the busy method");
      // A JFR dump is a finished copy of the recording so far; the recording goes on.
      expectOk(attach(pid, "dump", "-o", jfrDump.toString()), "dumped JFR recording to " + jfrDump);
      dumpedSpin = busySamples(jfrDump, -1)[1];
      assertTrue(dumpedSpin > 0, "the JFR dump has no samples in spin");
      expectJfrToolsRead(jfrDump, false);
      expectOk(attach(pid, "stop"), "stopped; not running");
      expectRefused(attach(pid, "stop"), "ctxprof: stop: the profiler is not running");
      expectOk(attach(pid, "start", "--interval", "5ms", "-o", second.toString()), "started");
      waitForSamples(pid, 20);
      expectOk(attach(pid, "stop"), "stopped; not running");
      assertEquals(0, target.quit(), target.stderr());
      assertFalse(target.stderr().contains("ctxprof:"), "answers went to the client only");
    }
    for (Path recording : List.of(first, second)) {
      assertTrue(busySamples(recording, -1)[1] > 0, recording + ": no samples in spin");
    }
    assertTrue(busySamples(first, -1)[1] >= dumpedSpin, "the recording lost what the dump had");
  }

  /**
   * A file= recording of a live session is a finished recording at every moment: every JDK's
   * `jfr summary` (JDK 25's refuses an unfinished chunk) and `ctxprof report` read it while the
   * JVM records, and `ctxprof report` says it is not finished; it keeps growing until stop.
   */
  @Test
  void liveRecordingIsReadWhileItIsWritten() throws Exception {
    Path live = dir.resolve("live.jfr");
    List<String> jvm =
        List.of(
            "-cp",
            ChildProcess.CLASSPATH,
            "-agentpath:" + ChildProcess.LIBRARY + "=start,interval=5ms,file=" + live);
    long during;
    try (Target target = Target.start(List.of(), jvm, dir)) {
      waitForSamples(target.pid, 200);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (busySamples(live, -1)[1] < 50 && System.nanoTime() < deadline) {
        Thread.sleep(200);  // the first chunks are published at the first flushes (1 s)
      }
      during = busySamples(live, -1)[1];
      assertTrue(during >= 50, "the live file shows " + during + " samples in spin");
      expectJfrToolsRead(live, true);
      assertEquals(0, target.quit(), target.stderr());
    }
    assertTrue(busySamples(live, -1)[1] > during, "the recording did not grow after the check");
    expectJfrToolsRead(live, false);
  }

  /**
   * Every installed JDK's `jfr summary` reads `recording` and counts CPU samples, and `ctxprof
   * report` reads it, noting that it is not finished iff `beingWritten`.
   */
  private static void expectJfrToolsRead(Path recording, boolean beingWritten) throws Exception {
    List<String> jdks = new ArrayList<>(List.of("/usr/lib/jvm/java-17-openjdk-amd64"));
    if (Files.isExecutable(Paths.get("/usr/lib/jvm/temurin-25-jdk-amd64/bin/jfr"))) {
      jdks.add("/usr/lib/jvm/temurin-25-jdk-amd64");
    }
    for (String jdk : jdks) {
      Result summary = ChildProcess.run(List.of(jdk + "/bin/jfr", "summary", recording.toString()), 120);
      assertEquals(0, summary.exit, jdk + ": jfr summary " + recording + ": " + summary);
      assertTrue(
          summary.stdout.stream()
              .anyMatch(l -> l.trim().matches("jdk\\.ExecutionSample\\s+[1-9][0-9]*\\s+.*")),
          jdk + ": no CPU samples in " + summary);
    }
    Result report = ChildProcess.run(List.of(TOOL, "report", recording.toString()), 120);
    assertEquals(0, report.exit, "ctxprof report: " + report);
    boolean noted =
        report.stderr.stream().anyMatch(l -> l.contains("the recording is not finished"));
    assertEquals(beingWritten, noted, "ctxprof report's note: " + report);
  }

  @Test
  void refusalsNameTheProblemAndExitNonZero() throws Exception {
    Path fake = dir.resolve("libfake.so");
    Files.writeString(fake, "not a library");
    try (Target target = Target.start(List.of(), List.of(), dir)) {
      long pid = target.pid;
      Result notLoaded = attachWith(fake.toString(), pid, "status");
      expectRefused(notLoaded, "ctxprof: the JVM did not run the agent");
      assertTrue(notLoaded.stderr.get(0).contains(fake + " was not loaded"), notLoaded.toString());
      expectRefused(
          attach(pid, "start", "--interval", "5"),
          "ctxprof: start: option 'interval': value '5' is not a duration");
      expectRefused(
          attach(pid, "start", "--option", "nosuch=1"), "ctxprof: start: unknown option 'nosuch'");
      expectRefused(
          attach(pid, "dump", "-o", dir.resolve("none.txt").toString()),
          "ctxprof: dump: nothing to dump");
      expectOk(attach(pid, "status"), "not running");
      assertEquals(0, target.quit(), target.stderr());
    }
  }

  /**
   * A JVM that loaded libctxprof at its start (-agentpath without options) is driven through
   * that library; a second copy named with --lib is refused, since it could not see the first
   * one's session.
   */
  @Test
  void aJvmWithTheAgentLoadedAtStart() throws Exception {
    Path copy = dir.resolve("libctxprof.so");
    Files.copy(Paths.get(ChildProcess.LIBRARY), copy);
    Path jfr = dir.resolve("loaded.jfr");
    List<String> options =
        List.of("-cp", ChildProcess.CLASSPATH, "-agentpath:" + ChildProcess.LIBRARY);
    try (Target target = Target.start(List.of(), options, dir)) {
      expectRefused(
          attachWith(copy.toString(), target.pid, "status"),
          "ctxprof: attach: process "
              + target.pid
              + " already has libctxprof from "
              + ChildProcess.LIBRARY);
      expectOk(attach(target.pid, "start", "--interval", "5ms", "-o", jfr.toString()), "started");
      waitForSamples(target.pid, 20);
      expectOk(attach(target.pid, "stop"), "stopped");
      assertEquals(0, target.quit(), target.stderr());
    }
    assertTrue(busySamples(jfr, -1)[1] > 0, "no samples in spin");
  }

  /**
   * docs/JAVA.md's jcmd form: the options quoted as one argument reach the agent whole; without
   * a reply file the answer goes to the JVM's stderr and jcmd shows the return code.
   */
  @Test
  void theJcmdFormOfTheDocs() throws Exception {
    Path jfr = dir.resolve("jcmd.jfr");
    try (Target target = Target.start(List.of(), List.of(), dir)) {
      String jcmd = ChildProcess.JAVA_HOME + "/bin/jcmd";
      String pid = Long.toString(target.pid);
      String load = "JVMTI.agent_load";
      String badOptions = "\"start,interval=5\"";
      Result bad = ChildProcess.run(List.of(jcmd, pid, load, ChildProcess.LIBRARY, badOptions), 60);
      assertTrue(bad.stdout.contains("return code: 1"), bad.toString());
      String good = "\"start,event=cpu,interval=5ms,file=" + jfr + "\"";
      Result started = ChildProcess.run(List.of(jcmd, pid, load, ChildProcess.LIBRARY, good), 60);
      assertTrue(started.stdout.contains("return code: 0"), started.toString());
      waitForSamples(target.pid, 20);
      Result stopped = ChildProcess.run(List.of(jcmd, pid, load, ChildProcess.LIBRARY, "stop"), 60);
      assertTrue(stopped.stdout.contains("return code: 0"), stopped.toString());
      assertEquals(0, target.quit(), target.stderr());
      String stderr = target.stderr();
      assertTrue(stderr.contains("ctxprof: start: option 'interval': value '5'"), stderr);
      assertTrue(stderr.contains("ctxprof: started"), stderr);
      assertTrue(stderr.contains("ctxprof: stopped; not running"), stderr);
    }
    assertTrue(busySamples(jfr, -1)[1] > 0, "no samples in spin");
  }

  /** The measure: >= 95 % of a busy thread's CPU samples contain its Java method. */
  @Test
  void aThreadThatNeverCalledCtxprofGetsJavaFramesAfterAttach() throws Exception {
    Path jfr = dir.resolve("busy.jfr");
    long spinner;
    try (Target target = Target.start(List.of(), List.of(), dir)) {
      expectOk(attach(target.pid, "start", "--interval", "5ms", "-o", jfr.toString()), "started");
      waitForSamples(target.pid, 400);
      expectOk(attach(target.pid, "stop"), "stopped");
      spinner = threadId(target.pid, "busy-spinner");
      assertEquals(0, target.quit(), target.stderr());
    }
    long[] counts = busySamples(jfr, spinner);
    System.out.printf(
        "attach on JDK %d: %d of %d CPU samples of busy-spinner contain BusyWorkload.spin"
            + " (%.1f %%)%n",
        Runtime.version().feature(), counts[1], counts[0], 100.0 * counts[1] / counts[0]);
    assertTrue(counts[0] >= 100, "too few samples of the busy thread: " + counts[0]);
    assertTrue(counts[1] >= 0.95 * counts[0], counts[1] + " of " + counts[0] + " with spin");
  }

  /**
   * A JVM in its own pid and mount namespaces with a private /tmp, as in a container: the client
   * reaches its socket, trigger and reply through /proc/PID/root and /proc/PID/cwd, names them
   * with the pid the JVM sees, and -o is a path inside the container.
   */
  @Test
  void aJvmInAnotherPidAndMountNamespace() throws Exception {
    List<String> unshare =
        List.of(
            "unshare", "--pid", "--fork", "--mount-proc", "--mount", "--propagation", "private");
    Assumptions.assumeTrue(
        ChildProcess.run(concat(unshare, List.of("true")), 30).exit == 0,
        "skipping: cannot create pid and mount namespaces here (needs root)");
    String inside = "/tmp/ctxprof-" + UUID.randomUUID() + ".jfr";
    List<String> prefix =
        concat(unshare, List.of("sh", "-c", "mount -t tmpfs tmpfs /tmp && exec \"$0\" \"$@\""));
    try (Target target = Target.start(prefix, List.of(), dir)) {
      assertTrue(
          Files.readString(Paths.get("/proc/" + target.pid + "/status")).matches("(?s).*NSpid:\\s+"
              + target.pid + "\\s+1\\s.*"),
          "the JVM is pid 1 in its namespace");
      expectOk(attach(target.pid, "start", "--interval", "5ms", "-o", inside), "started");
      waitForSamples(target.pid, 50);
      expectOk(attach(target.pid, "stop"), "stopped; not running; engine=");
      assertFalse(Files.exists(Paths.get(inside)), "the recording is inside the container");
      Path copy = dir.resolve("container.jfr");
      Files.copy(Paths.get("/proc/" + target.pid + "/root" + inside), copy);
      assertTrue(busySamples(copy, -1)[1] > 0, "no samples in spin");
      assertEquals(0, target.quit(), target.stderr());
    }
  }

  /** A root client takes the JVM's uid and gid, without which the JVM ignores the connection. */
  @Test
  void aJvmOfAnotherUser() throws Exception {
    Assumptions.assumeTrue(
        ChildProcess.run(List.of("setpriv", "--reuid=65534", "true"), 30).exit == 0,
        "skipping: cannot run a process as uid 65534 here (needs root and setpriv)");
    Path shared = dir.resolve("shared");
    Files.createDirectory(shared);
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
    Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
    List<String> classpath = new ArrayList<>();
    for (String jar : ChildProcess.CLASSPATH.split(":")) {
      Path copy = shared.resolve(Paths.get(jar).getFileName());
      Files.copy(Paths.get(jar), copy);
      classpath.add(copy.toString());
    }
    Path library = shared.resolve("libctxprof.so");
    Files.copy(Paths.get(ChildProcess.LIBRARY), library);
    Path jfr = shared.resolve("nobody.jfr");
    List<String> prefix =
        List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups");
    List<String> options = List.of("-cp", String.join(":", classpath));
    try (Target target = Target.start(prefix, options, shared)) {
      expectOk(
          attachWith(library.toString(), target.pid, "start", "-o", jfr.toString()), "started");
      waitForSamples(library.toString(), target.pid, 20);
      expectOk(attachWith(library.toString(), target.pid, "stop"), "stopped");
      assertEquals(0, target.quit(), target.stderr());
    }
    assertEquals("nobody", Files.getOwner(jfr).getName(), "the agent wrote the recording");
    assertTrue(busySamples(jfr, -1)[1] > 0, "no samples in spin");
  }

  // ---- harness

  /** A running BusyWorkload JVM, after it printed "ready". */
  private static final class Target implements AutoCloseable {
    final Process process;
    final long pid; // the JVM's pid as we see it
    final Path stderr;

    private Target(Process process, long pid, Path stderr) {
      this.process = process;
      this.pid = pid;
      this.stderr = stderr;
    }

    /** Starts `prefix... java jvmOptions... BusyWorkload` (default class path when none). */
    static Target start(List<String> prefix, List<String> jvmOptions, Path dir)
        throws IOException, InterruptedException {
      List<String> command = new ArrayList<>(prefix);
      command.addAll(
          jvmOptions.isEmpty()
              ? ChildProcess.javaCommand(List.of())
              : concat(List.of(ChildProcess.JAVA_HOME + "/bin/java"), jvmOptions));
      command.add(BusyWorkload.class.getName());
      Path stderr = Files.createTempFile(dir, "target", ".err");
      Process process = new ProcessBuilder(command).redirectError(stderr.toFile()).start();
      BufferedReader out =
          new BufferedReader(
              new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
      String line = out.readLine();
      assertEquals("ready", line, command + ": " + Files.readString(stderr));
      // With a prefix (unshare, setpriv) the JVM may be a child of the process we started.
      long pid = process.pid();
      Path children = Paths.get("/proc/" + pid + "/task/" + pid + "/children");
      String child = Files.exists(children) ? Files.readString(children).trim() : "";
      if (!prefix.isEmpty() && !child.isEmpty()) {
        pid = Long.parseLong(child.split(" ")[0]);
      }
      return new Target(process, pid, stderr);
    }

    String stderr() throws IOException {
      return Files.readString(stderr);
    }

    /** Asks the JVM to exit; its exit status. */
    int quit() throws IOException, InterruptedException {
      assertTrue(process.isAlive(), "the JVM died: " + stderr());
      OutputStream in = process.getOutputStream();
      in.write("quit\n".getBytes(StandardCharsets.UTF_8));
      in.flush();
      assertTrue(process.waitFor(60, TimeUnit.SECONDS), "the JVM did not exit on quit");
      return process.exitValue();
    }

    @Override
    public void close() {
      process.destroyForcibly();
    }
  }

  private static Result attach(long pid, String... args) throws Exception {
    return attachWith(ChildProcess.LIBRARY, pid, args);
  }

  private static Result attachWith(String library, long pid, String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of(TOOL, "attach", Long.toString(pid)));
    command.addAll(List.of(args));
    command.addAll(List.of("--lib", library, "--timeout", "30"));
    return ChildProcess.run(command, 120);
  }

  private static void expectOk(Result result, String stdoutPrefix) {
    assertEquals(0, result.exit, result.toString());
    assertEquals(1, result.stdout.size(), result.toString());
    assertTrue(result.stdout.get(0).startsWith(stdoutPrefix), result.toString());
  }

  private static void expectRefused(Result result, String stderrPrefix) {
    assertEquals(1, result.exit, result.toString());
    assertTrue(result.stdout.isEmpty(), result.toString());
    assertTrue(result.stderr.get(0).startsWith(stderrPrefix), result.toString());
  }

  /** Polls `status` until the session has drained `count` samples (at most 60 s). */
  private static void waitForSamples(long pid, int count) throws Exception {
    waitForSamples(ChildProcess.LIBRARY, pid, count);
  }

  private static void waitForSamples(String library, long pid, int count) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    String last = "";
    while (System.nanoTime() < deadline) {
      Result status = attachWith(library, pid, "status");
      last = status.toString();
      Matcher samples = SAMPLES.matcher(status.stdout.isEmpty() ? "" : status.stdout.get(0));
      if (samples.find() && Long.parseLong(samples.group(1)) >= count) {
        return;
      }
      Thread.sleep(200);
    }
    throw new AssertionError("fewer than " + count + " samples after 60 s: " + last);
  }

  /** The OS thread id of the thread named `name` in process `pid`. */
  private static long threadId(long pid, String name) throws IOException {
    try (Stream<Path> tasks = Files.list(Paths.get("/proc/" + pid + "/task"))) {
      for (Path task : (Iterable<Path>) tasks::iterator) {
        if (Files.readString(task.resolve("comm")).trim().equals(name)) {
          return Long.parseLong(task.getFileName().toString());
        }
      }
    }
    throw new AssertionError("no thread " + name + " in process " + pid);
  }

  /**
   * {CPU samples, those with a BusyWorkload.spin frame} in `recording`, of OS thread `tid` (-1:
   * all threads).
   */
  private static long[] busySamples(Path recording, long tid) throws IOException {
    long[] counts = new long[2];
    for (RecordedEvent event : RecordingFile.readAllEvents(recording)) {
      if (!event.getEventType().getName().equals("jdk.ExecutionSample")
          || (tid >= 0 && event.getThread("sampledThread").getOSThreadId() != tid)) {
        continue;
      }
      counts[0]++;
      if (event.getStackTrace() == null) {
        continue;
      }
      for (RecordedFrame frame : event.getStackTrace().getFrames()) {
        if (frame.getMethod().getName().equals("spin")
            && frame.getMethod().getType().getName().equals(BusyWorkload.class.getName())) {
          counts[1]++;
          break;
        }
      }
    }
    return counts;
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }
}
