package io.ctxprof.agent;

import io.ctxprof.Profiler;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

/**
 * The Java API's control calls in a JVM without the agent: each step prints one line
 * "STEP: result" (the returned message, or the exception's class and message), for the test to
 * check. Args: the JFR file to record, the collapsed dump file. JFR dumps go next to them: of the
 * recording while it runs (the JFR file + ".dump.jfr"), and of a session without a recording
 * (the collapsed file + ".memory.jfr").
 */
public final class ApiWorkload {

  private ApiWorkload() {}

  public static void main(String[] args) {
    Profiler profiler;
    try {
      profiler = Profiler.getInstance();
    } catch (UnsatisfiedLinkError e) {
      System.out.println("load: " + e);
      return;
    }
    step("stop-before-start", profiler, "stop");
    step("bad-option", profiler, "start,interval=5");
    step("bad-command", profiler, "restart");
    step("start", profiler, "start,event=cpu,interval=5ms,file=" + args[0]);
    step("double-start", profiler, "start,event=cpu,file=" + args[0]);
    apiWork(800);
    step("status", profiler, "status");
    // The drain runs every 20 ms but may be starved on a loaded machine: dump until the dump
    // shows the work (at most ~10 s), and report how many dumps that took.
    for (int attempt = 1; attempt <= 50; attempt++) {
      step("dump", profiler, "dump,file=" + args[1]);
      if (readOrEmpty(args[1]).contains("ApiWorkload.apiWork")) {
        System.out.println("dump-attempts: " + attempt);
        break;
      }
      apiWork(200);
    }
    step("bad-dump", profiler, "dump,path=" + args[1]);
    step("bad-format", profiler, "dump,file=" + args[1] + ",format=svg");
    step("dump-jfr", profiler, "dump,file=" + args[0] + ".dump.jfr");
    step("stop", profiler, "stop");
    step("stop-again", profiler, "stop");
    step("start-memory", profiler, "start,event=cpu,interval=5ms");
    apiWork(800);
    step("dump-memory", profiler, "dump,file=" + args[1] + ".memory.jfr");
    step("stop-memory", profiler, "stop");
  }

  static String readOrEmpty(String file) {
    try {
      return new String(Files.readAllBytes(Paths.get(file)), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "";
    }
  }

  static void step(String name, Profiler profiler, String command) {
    try {
      System.out.println(name + ": " + profiler.execute(command));
    } catch (RuntimeException e) {
      System.out.println(name + ": " + e.getClass().getName() + ": " + e.getMessage());
    }
  }

  /** The API test's own frame around the CPU burner the exit tests use. */
  static void apiWork(long millis) {
    ExitWorkload.spin(millis);
  }
}
