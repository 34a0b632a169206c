package io.ctxprof.agent;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Child processes of the agent tests: JVMs of the JDK running the test (with the tests' class
 * path, optionally loading libctxprof as an agent) and tools, run to completion with their output
 * captured. JfrRecording reads what they record.
 */
final class ChildProcess {
  static final String JAVA_HOME = System.getProperty("java.home");
  static final String LIBRARY = System.getProperty("ctxprof.library");
  static final String CLASSPATH = System.getProperty("ctxprof.test.classpath");

  private ChildProcess() {}

  /** The JVM option that loads libctxprof as an agent with {@code options}. */
  static String agent(String options) {
    return "-agentpath:" + LIBRARY + "=" + options;
  }

  /** "java -cp <tests> <jvmOptions>"; the caller adds the main class and its arguments. */
  static List<String> javaCommand(List<String> jvmOptions) {
    List<String> command = new ArrayList<>();
    command.add(JAVA_HOME + "/bin/java");
    command.add("-cp");
    command.add(CLASSPATH);
    command.addAll(jvmOptions);
    return command;
  }

  /** Runs {@code mainClass} of this package with {@code jvmOptions}; 120 s at most. */
  static Result runJava(List<String> jvmOptions, String mainClass, String... args)
      throws IOException, InterruptedException {
    List<String> command = javaCommand(jvmOptions);
    command.add(ChildProcess.class.getPackageName() + "." + mainClass);
    command.addAll(List.of(args));
    return run(command, 120);
  }

  /** Runs {@code command} to its end; fails the test if it takes over {@code timeoutSeconds}. */
  static Result run(List<String> command, int timeoutSeconds)
      throws IOException, InterruptedException {
    Path out = Files.createTempFile("ctxprof-out", ".txt");
    Path err = Files.createTempFile("ctxprof-err", ".txt");
    try {
      Process process =
          new ProcessBuilder(command)
              .redirectOutput(out.toFile())
              .redirectError(err.toFile())
              .start();
      if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new AssertionError("timed out after " + timeoutSeconds + " s: " + command);
      }
      return new Result(
          process.exitValue(),
          Files.readAllLines(out, StandardCharsets.UTF_8),
          Files.readAllLines(err, StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
    }
  }

  static final class Result {
    final int exit;
    final List<String> stdout;
    final List<String> stderr;

    Result(int exit, List<String> stdout, List<String> stderr) {
      this.exit = exit;
      this.stdout = stdout;
      this.stderr = stderr;
    }

    @Override
    public String toString() {
      return "exit " + exit + "\nstdout: " + stdout + "\nstderr: " + stderr;
    }
  }
}
