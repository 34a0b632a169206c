package io.ctxprof.agent;

import io.ctxprof.AttributeValue;
import io.ctxprof.ContextScope;
import io.ctxprof.ContextSetter;
import io.ctxprof.Profiler;
import io.ctxprof.ThreadHandle;
import java.io.FileInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * Ground truth for `ctxprof --events TYPE`: requests of two endpoints read files of known sizes
 * inside their spans and commit an application event ({@link Order}, with its amount), while the
 * main thread reads outside any span; the JDK's own Flight Recorder records jdk.FileRead (threshold
 * 0, with stacks) and the Order events into the file named by the first argument, ctxprof its
 * spans into its own. Prints {@code truth bytes ENDPOINT N} (bytes read in that endpoint's spans;
 * ENDPOINT "-" = outside any span), {@code truth amount ENDPOINT N} and {@code truth orders
 * ENDPOINT N}.
 */
public final class FileEventsWorkload {
  /** An application event, as a service would define one. */
  @jdk.jfr.Name("ctxprof.test.Order")
  @jdk.jfr.StackTrace(true)
  static final class Order extends jdk.jfr.Event {
    long amount;
  }

  static volatile int sink;

  private FileEventsWorkload() {}

  public static void main(String[] args) throws Exception {
    Path jdkRecording = Path.of(args[0]);
    Path small = Files.createTempFile("ctxprof-small", ".bin");
    Path large = Files.createTempFile("ctxprof-large", ".bin");
    Files.write(small, new byte[10_000]);
    Files.write(large, new byte[100_000]);
    ContextSetter setter = new ContextSetter(Profiler.getInstance(), List.of("endpoint"));
    ThreadHandle handle = setter.forCurrentThread();
    int endpoint = setter.offsetOf("endpoint");
    AttributeValue smallValue = setter.value("/small");
    AttributeValue largeValue = setter.value("/large");
    // The first span's writes load the API's remaining classes from ctxprof.jar (jdk.FileRead
    // events the workload does not count): done here, before the JDK's recording starts.
    try (ContextScope scope = handle.open(0, 1, 99, endpoint, setter.value("/warmup"))) {
      sink = scope.hashCode();
    }
    long smallBytes = 0;
    long largeBytes = 0;
    long outsideBytes = 0;
    long smallAmount = 0;
    long largeAmount = 0;
    try (jdk.jfr.Recording recording = new jdk.jfr.Recording()) {
      recording.enable("jdk.FileRead").withThreshold(Duration.ZERO).withStackTrace();
      recording.enable(Order.class).withStackTrace();
      recording.start();
      for (int i = 0; i < 20; i++) {
        outsideBytes += read(small);
        try (ContextScope scope = handle.open(0, 1, 100 + i, endpoint, smallValue)) {
          smallBytes += read(small);
          smallAmount += order(i + 1);
        }
        try (ContextScope scope = handle.open(0, 1, 200 + i, endpoint, largeValue)) {
          largeBytes += read(large);
          largeBytes += read(small);
          largeAmount += order(1000 + i);
        }
      }
      recording.stop();
      recording.dump(jdkRecording);
    }
    Files.delete(small);
    Files.delete(large);
    System.out.println("truth bytes /small " + smallBytes);
    System.out.println("truth bytes /large " + largeBytes);
    System.out.println("truth bytes - " + outsideBytes);
    System.out.println("truth amount /small " + smallAmount);
    System.out.println("truth amount /large " + largeAmount);
    System.out.println("truth orders /small 20");
    System.out.println("truth orders /large 20");
  }

  /** Reads {@code file} whole in 4 KiB reads: one jdk.FileRead per read. */
  private static long read(Path file) throws IOException {
    long total = 0;
    byte[] buffer = new byte[4096];
    try (FileInputStream in = new FileInputStream(file.toFile())) {
      for (int n; (n = in.read(buffer)) > 0; ) {
        total += n;
      }
    }
    return total;
  }

  private static long order(long amount) {
    Order order = new Order();
    order.amount = amount;
    order.commit();
    return amount;
  }
}
