package io.ctxprof;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;

/**
 * The CPU-bound JVM workload behind the profiling-overhead figures of docs/PERFORMANCE.md: worker
 * threads handle "requests" one after another, each under its own context (trace id, span id,
 * endpoint) written through the Java API, doing endpoint-specific compute at the bottom of a
 * recursion so samples carry stacks of ~30 Java frames. It allocates almost nothing, so the GC
 * does not add noise.
 *
 * <p>Args: {@code threads warmupSeconds requestsPerThread}. It runs {@code warmupSeconds} of
 * requests (JIT compilation, profiler start-up), then exactly {@code requestsPerThread} requests
 * on each thread, and prints one line for the measured phase:
 *
 * <pre>measured cpu_ns=N wall_ns=N requests=N status=...</pre>
 *
 * <p>preceded by one {@code thread cpu_ns=N name=NAME} line per thread name that used at least
 * 1 ms (threads of one name summed), which shows where any overhead goes.
 *
 * where cpu_ns is the CPU time of all the process's threads (workers including the profiler's
 * handler time, the profiler's writer thread, JIT and GC threads) during the measured phase and status is the profiler's status line. The same program runs with
 * and without the agent, so the context writes are part of both; the difference is the profiling.
 */
public final class OverheadWorkload {
  private static final String[] ENDPOINTS = {"/checkout", "/search", "/login", "/cart"};
  private static final int RECURSION = 24;
  private static final int ROUNDS_PER_REQUEST = 20_000;
  static volatile long sink;
  // Written in main before any worker starts (Thread.start orders the writes before the reads).
  private static ContextSetter setter;
  private static int endpointSlot;

  private OverheadWorkload() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      System.err.println("usage: OverheadWorkload THREADS WARMUP_SECONDS REQUESTS_PER_THREAD");
      System.exit(2);
    }
    int threads = Integer.parseInt(args[0]);
    long warmupNanos = Long.parseLong(args[1]) * 1_000_000_000L;
    long requestsPerThread = Long.parseLong(args[2]);
    setter = new ContextSetter(Profiler.getInstance(), List.of("endpoint"));
    endpointSlot = setter.offsetOf("endpoint");

    CountDownLatch warm = new CountDownLatch(threads);
    CountDownLatch go = new CountDownLatch(1);
    CountDownLatch done = new CountDownLatch(threads);
    CountDownLatch release = new CountDownLatch(1);
    Thread[] workers = new Thread[threads];
    for (int i = 0; i < threads; i++) {
      final int worker = i;
      workers[i] =
          new Thread(
              () -> {
                serveFor(worker, warmupNanos);
                warm.countDown();
                awaitUninterruptibly(go);
                serve(worker, requestsPerThread);
                done.countDown();
                awaitUninterruptibly(release); // stay alive until the CPU time is read
              },
              "worker-" + i);
      workers[i].start();
    }
    warm.await();
    Map<String, Long> cpuBefore = threadCpuNanos();
    long wallBefore = System.nanoTime();
    go.countDown();
    done.await();
    long wallNanos = System.nanoTime() - wallBefore;
    Map<String, Long> cpuAfter = threadCpuNanos();
    release.countDown();
    for (Thread worker : workers) {
      worker.join();
    }
    long cpuNanos = 0;
    Map<String, Long> byThreadName = new TreeMap<>();
    for (Map.Entry<String, Long> thread : cpuAfter.entrySet()) {
      long delta = thread.getValue() - cpuBefore.getOrDefault(thread.getKey(), 0L);
      cpuNanos += delta;
      String name = thread.getKey().substring(thread.getKey().indexOf(' ') + 1);
      byThreadName.merge(name, delta, Long::sum);
    }
    for (Map.Entry<String, Long> thread : byThreadName.entrySet()) {
      if (thread.getValue() >= 1_000_000) {
        System.out.printf("thread cpu_ns=%d name=%s%n", thread.getValue(), thread.getKey());
      }
    }
    System.out.printf(
        "measured cpu_ns=%d wall_ns=%d requests=%d status=%s%n",
        cpuNanos,
        wallNanos,
        threads * requestsPerThread,
        Profiler.getInstance().execute("status"));
  }

  /**
   * CPU time of every live thread of this process in nanoseconds, keyed "TID NAME", from each
   * task's schedstat (the scheduler's run time, exact to the nanosecond; the process-wide
   * counters the JDK exposes advance in 10 ms ticks). A thread that exits in between would be
   * missed, which is why the workers stay alive until the second reading.
   */
  private static Map<String, Long> threadCpuNanos() throws IOException {
    Map<String, Long> cpu = new HashMap<>();
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Paths.get("/proc/self/task"))) {
      for (Path task : tasks) {
        try {
          String schedstat = new String(Files.readAllBytes(task.resolve("schedstat")));
          String name = new String(Files.readAllBytes(task.resolve("comm"))).trim();
          cpu.put(
              task.getFileName() + " " + name,
              Long.parseLong(schedstat.substring(0, schedstat.indexOf(' '))));
        } catch (NoSuchFileException exited) {
          // a JVM-internal thread that ended after the listing: its time is gone either way
        }
      }
    }
    return cpu;
  }

  private static void awaitUninterruptibly(CountDownLatch latch) {
    while (true) {
      try {
        latch.await();
        return;
      } catch (InterruptedException e) {
        // keep waiting: the measurement owns this thread's lifetime
      }
    }
  }

  private static void serveFor(int worker, long nanos) {
    long end = System.nanoTime() + nanos;
    long request = 0;
    while (System.nanoTime() < end) {
      handle(worker, request++);
    }
  }

  private static void serve(int worker, long requests) {
    for (long request = 0; request < requests; request++) {
      handle(worker, request);
    }
  }

  private static void handle(int worker, long request) {
    int endpoint = (int) ((request + worker) % ENDPOINTS.length);
    try (ContextScope scope = setter.open(0xBE7C4L, request, worker * 1_000_000L + request)) {
      setter.setAttribute(endpointSlot, ENDPOINTS[endpoint]);
      sink += descend(RECURSION, endpoint, request);
    }
  }

  /** Keeps RECURSION Java frames under the compute so samples carry realistic stack depths. */
  private static long descend(int depth, int endpoint, long seed) {
    if (depth == 0) {
      switch (endpoint) {
        case 0:
          return checkout(seed);
        case 1:
          return search(seed);
        case 2:
          return login(seed);
        default:
          return cart(seed);
      }
    }
    return descend(depth - 1, endpoint, seed + depth) + 1;
  }

  private static long checkout(long seed) {
    long value = seed;
    for (int i = 0; i < ROUNDS_PER_REQUEST; i++) {
      value = value * 6364136223846793005L + 1442695040888963407L;
    }
    return value;
  }

  private static long search(long seed) {
    long value = seed | 1;
    for (int i = 0; i < ROUNDS_PER_REQUEST; i++) {
      value ^= value << 13;
      value ^= value >>> 7;
      value ^= value << 17;
    }
    return value;
  }

  private static long login(long seed) {
    long value = seed;
    for (int i = 0; i < ROUNDS_PER_REQUEST; i++) {
      value = Long.rotateLeft(value * 0x9E3779B97F4A7C15L, 31) + i;
    }
    return value;
  }

  private static long cart(long seed) {
    double value = seed;
    for (int i = 0; i < ROUNDS_PER_REQUEST / 4; i++) {
      value = Math.sqrt(value * value + i) + 1.0;
    }
    return (long) value;
  }
}
