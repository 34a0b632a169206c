package io.ctxprof;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;

/**
 * A child JVM for tests/otel/otel_reader_test: starts the profiler with otelcontext=true and
 * sets contexts on four threads through every Java write path, printing what each set in
 * otel_c_workload's line format ("ctx TID TRACE SPAN k=v;k=v" or "ctx TID none", then "ready";
 * stdin "next" = next round, anything else = exit). With the argument {@code attach} it starts
 * no session itself: the test attaches one with otelcontext=true after round 0, so round 1's
 * Java writes publish only if the library told the Java writers (OtelRecord.sync through JNI).
 * Rounds 0 and 1:
 *
 * <ul>
 *   <li>a ThreadHandle: a scope opened with two attributes; then that scope closed and a new
 *       trace and value set (the fast path: the record refreshed from Java);
 *   <li>ContextSetter by name, one attribute set twice (the record then holds two entries for
 *       it: the reader takes the last), a multi-byte value, then one attribute cleared;
 *   <li>attributes without a trace, then clear() (no record);
 *   <li>on JDK 21+ a virtual thread (JNI writes into its carrier's record): round 0 after a
 *       sleep, mounted again (the mount hook restored the record), spinning so that it stays on
 *       the carrier it reports; round 1 blocked, so the carrier it left must show no context
 *       (the unmount hook cleared the record). Before JDK 21, a platform thread through a handle.
 * </ul>
 */
public final class OtelWorkload {
  private static volatile int round;
  private static final Object LOCK = new Object();

  private OtelWorkload() {}

  public static void main(String[] args) throws Exception {
    ContextSetter setter =
        new ContextSetter(Profiler.getInstance(), List.of("http.route", "tenant"));
    if (args.length == 0 || !args[0].equals("attach")) {
      Profiler.getInstance().start("event=ctimer,interval=100ms,otelcontext=true");
    } // else the test starts it with `ctxprof attach PID start --otelcontext true` after round 0
    int route = setter.offsetOf("http.route");
    int tenant = setter.offsetOf("tenant");
    PrintStream out = new PrintStream(System.out, true, "UTF-8"); // whatever the locale says
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    Runnable[] workers = {
      () -> handleWorker(setter, route, tenant),
      () -> setterWorker(setter, route, tenant),
      () -> clearingWorker(setter, tenant),
      () -> virtualWorker(setter, route),
    };
    CountDownLatch[] reported = {new CountDownLatch(4), new CountDownLatch(4)};
    REPORTED = reported;
    for (int i = 0; i < 3; i++) {
      Thread thread = new Thread(workers[i], "otel-worker-" + i);
      thread.setDaemon(true);
      thread.start();
    }
    Thread virtual = null;
    if (Runtime.version().feature() >= 21) {
      Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
      virtual =
          (Thread)
              Class.forName("java.lang.Thread$Builder")
                  .getMethod("start", Runnable.class)
                  .invoke(builder, workers[3]);
    } else {
      Thread thread = new Thread(() -> handleWorkerFor(setter, route, 3), "otel-worker-3");
      thread.setDaemon(true);
      thread.start();
    }
    for (int r = 0; r < 2; r++) {
      if (r == 1 && virtual != null) {
        reportUnmounted(virtual);
      }
      reported[r].await();
      for (String line = LINES.poll(); line != null; line = LINES.poll()) {
        out.println(line);
      }
      out.println("ready");
      String command = in.readLine();
      if (!"next".equals(command)) {
        break;
      }
      round = r + 1;
      synchronized (LOCK) {
        LOCK.notifyAll();
      }
    }
    System.exit(0);
  }

  private static CountDownLatch[] REPORTED;

  private static String tid() {
    try {
      return Files.readSymbolicLink(Paths.get("/proc/thread-self")).getFileName().toString();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String hex(long value) {
    return String.format("%016x", value);
  }

  // Queued, and printed by the main thread: a virtual thread that blocked on System.out could
  // be mounted again on another carrier than the one it reported.
  private static final Queue<String> LINES = new ConcurrentLinkedQueue<>();

  private static void report(int r, String line) {
    LINES.add("ctx " + tid() + " " + line);
    REPORTED[r].countDown();
  }

  /** Blocks until the test asks for round {@code r + 1}. */
  private static void awaitRound(int r) {
    synchronized (LOCK) {
      while (round <= r) {
        try {
          LOCK.wait();
        } catch (InterruptedException e) {
          return;
        }
      }
    }
  }

  private static void handleWorker(ContextSetter setter, int route, int tenant) {
    ThreadHandle handle = setter.forCurrentThread();
    long high = 0x0af7651916cd43ddL;
    long low = 0x8448eb211c80319cL;
    long span = 0xb7ad6b7169203331L;
    ContextScope scope =
        handle.open(
            high, low, span, route, setter.value("/checkout"), tenant, setter.value("acme"));
    report(0, hex(high) + hex(low) + " " + hex(span) + " http.route=/checkout;tenant=acme");
    awaitRound(0);
    scope.close(); // back to the empty context, then a new span and one attribute
    handle.setTraceContext(high, low + 1, span + 1);
    handle.setAttribute(route, setter.value("/cart"));
    report(1, hex(high) + hex(low + 1) + " " + hex(span + 1) + " http.route=/cart");
    awaitRound(1);
  }

  private static void setterWorker(ContextSetter setter, int route, int tenant) {
    long high = 0x4bf92f3577b34da6L;
    long low = 0xa3ce929d0e0e4736L;
    long span = 0x00f067aa0ba902b7L;
    setter.setTraceContext(high, low, span);
    setter.setAttribute("http.route", "/first"); // appended, then appended again: the last wins
    setter.setAttribute("http.route", "/caf\u00e9/\u00fcn\u00efcode");
    setter.setAttribute("tenant", "globex");
    report(
        0,
        hex(high) + hex(low) + " " + hex(span) + " http.route=/caf\u00e9/\u00fcn\u00efcode;tenant=globex");
    awaitRound(0);
    setter.clearAttribute(route);
    report(1, hex(high) + hex(low) + " " + hex(span) + " tenant=globex");
    awaitRound(1);
  }

  private static void clearingWorker(ContextSetter setter, int tenant) {
    setter.setAttribute(tenant, "solo");
    report(0, "0".repeat(32) + " " + "0".repeat(16) + " tenant=solo");
    awaitRound(0);
    setter.clear();
    report(1, "none");
    awaitRound(1);
  }

  private static volatile String unmountedCarrier; // round 1: the carrier the thread left
  private static final CountDownLatch FOREVER = new CountDownLatch(1);

  private static void virtualWorker(ContextSetter setter, int route) {
    // Round 0: mounted. The sleep unmounts it; mounting again restores the context on the new
    // carrier, which it then reports and keeps (it spins, so it stays mounted there).
    setter.setTraceContext(7, 8, 0x1000L);
    setter.setAttribute(route, "/virtual/0");
    try {
      Thread.sleep(5);
    } catch (InterruptedException e) {
      return;
    }
    report(0, hex(7) + hex(8) + " " + hex(0x1000L) + " http.route=/virtual/0");
    while (round <= 0) {
      Thread.onSpinWait();
    }
    // Round 1: unmounted. It sets a context and blocks; the carrier it left must show none
    // (main reports that once the thread is parked).
    setter.setTraceContext(7, 8, 0x1001L);
    setter.setAttribute(route, "/virtual/1");
    unmountedCarrier = tid();
    try {
      FOREVER.await();
    } catch (InterruptedException e) {
      // exits with the JVM
    }
  }

  /** Round 1's line for the virtual thread: its carrier, empty once it has unmounted. */
  private static void reportUnmounted(Thread virtual) throws InterruptedException {
    while (unmountedCarrier == null || virtual.getState() != Thread.State.WAITING) {
      Thread.sleep(1);
    }
    Thread.sleep(100); // the state is set before the unmount completes
    LINES.add("ctx " + unmountedCarrier + " none");
    REPORTED[1].countDown();
  }


  private static void handleWorkerFor(ContextSetter setter, int route, int index) {
    ThreadHandle handle = setter.forCurrentThread();
    for (int r = 0; r < 2; r++) {
      long span = 0x1000L + r;
      handle.setTraceContext(7, 8, span);
      handle.setAttribute(route, setter.value("/virtual/" + r));
      report(r, hex(7) + hex(8) + " " + hex(span) + " http.route=/virtual/" + r);
      awaitRound(r);
    }
  }
}
