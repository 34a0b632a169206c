package io.ctxprof;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
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
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The JVM workloads behind the profiling-overhead figures of docs/PERFORMANCE.md: worker threads
 * handle "requests" one after another, each under its own context (trace id, span id, endpoint)
 * written through the Java API, at the bottom of a recursion so samples and events carry stacks of
 * ~30 Java frames. What a request does is the {@code work} argument:
 *
 * <ul>
 *   <li>{@code compute} (default): endpoint-specific compute; it allocates almost nothing, so the
 *       GC does not add noise (the CPU profiling overhead);
 *   <li>{@code alloc}: allocation-heavy: each request builds a map of 32 fields, renders and
 *       encodes it (~5 KB in ~130 objects, with the hashing and copying that goes with them; the
 *       allocation profiling overhead);
 *   <li>{@code lock}: short critical sections on one shared monitor and one shared ReentrantLock,
 *       contended by every worker (the lock profiling overhead: most waits are far below any
 *       threshold, so what is measured is the cost of noticing them).
 * </ul>
 *
 * <p>Args: {@code threads warmupSeconds requestsPerThread [work]}. It runs {@code warmupSeconds}
 * of requests (JIT compilation, profiler start-up), then exactly {@code requestsPerThread}
 * requests on each thread, and prints one line for the measured phase:
 *
 * <pre>measured cpu_ns=N wall_ns=N requests=N allocated_bytes=N status=...</pre>
 *
 * <p>preceded by one {@code thread cpu_ns=N name=NAME} line per thread name that used at least
 * 1 ms (threads of one name summed), which shows where any overhead goes.
 *
 * where allocated_bytes is what the workers allocated in the measured phase, cpu_ns is the CPU time
 * of all the process's threads (workers including the profiler's
 * handler time, the profiler's writer thread, JIT and GC threads) during the measured phase and status is the profiler's status line. The same program runs with
 * and without the agent, so the context writes are part of both; the difference is the profiling.
 */
public final class OverheadWorkload {
  private static final String[] ENDPOINTS = {"/checkout", "/search", "/login", "/cart"};
  private static final int RECURSION = 24;
  private static final int ROUNDS_PER_REQUEST = 20_000;
  private static final int CRITICAL_SECTIONS_PER_REQUEST = 16;
  private static final Object MONITOR = new Object();
  private static final ReentrantLock LOCK = new ReentrantLock();
  private static long shared; // guarded by MONITOR and LOCK in turn
  static volatile long sink;
  private static String work = "compute";
  private static final com.sun.management.ThreadMXBean ALLOCATION =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
  private static final AtomicLong allocated = new AtomicLong(); // by the workers, measured phase
  // Written in main before any worker starts (Thread.start orders the writes before the reads).
  private static ContextSetter setter;
  private static int endpointSlot;

  private OverheadWorkload() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 3 || args.length > 4) {
      System.err.println(
          "usage: OverheadWorkload THREADS WARMUP_SECONDS REQUESTS_PER_THREAD [compute|alloc|lock]");
      System.exit(2);
    }
    if (args.length == 4) {
      work = args[3];
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
                long before = ALLOCATION.getThreadAllocatedBytes(Thread.currentThread().getId());
                serve(worker, requestsPerThread);
                allocated.addAndGet(
                    ALLOCATION.getThreadAllocatedBytes(Thread.currentThread().getId()) - before);
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
        "measured cpu_ns=%d wall_ns=%d requests=%d allocated_bytes=%d status=%s%n",
        cpuNanos,
        wallNanos,
        threads * requestsPerThread,
        allocated.get(),
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

  /** Keeps RECURSION Java frames under the work so samples carry realistic stack depths. */
  private static long descend(int depth, int endpoint, long seed) {
    if (depth == 0) {
      if (work.equals("alloc")) {
        return allocate(seed);
      }
      if (work.equals("lock")) {
        return contend(seed);
      }
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

  /**
   * What a request handler typically allocates: a map of 32 fields (strings and small arrays) built
   * from the request, rendered into a text body and encoded, the body kept until the next request
   * of any worker replaces it. Allocation with the compute that goes with it (hashing, copying).
   */
  private static long allocate(long seed) {
    Map<String, Object> fields = new HashMap<>();
    for (int i = 0; i < 32; i++) {
      fields.put("field" + i, i % 3 == 0 ? Long.toString(seed * (i + 1)) : new int[8 + i]);
    }
    StringBuilder body = new StringBuilder();
    for (Map.Entry<String, Object> field : fields.entrySet()) {
      Object value = field.getValue();
      body.append(field.getKey()).append('=');
      body.append(value instanceof String ? (String) value : Integer.toString(((int[]) value).length));
      body.append(';');
    }
    byte[] encoded = body.toString().getBytes(StandardCharsets.UTF_8);
    retained = encoded;
    return encoded.length;
  }

  private static volatile Object retained;

  /** Short critical sections on the shared monitor and the shared lock, in turn. */
  private static long contend(long seed) {
    long value = seed;
    for (int i = 0; i < CRITICAL_SECTIONS_PER_REQUEST; i++) {
      synchronized (MONITOR) {
        shared = shared * 31 + value;
        value = shared;
      }
      LOCK.lock();
      try {
        shared = shared * 17 + i;
        value ^= shared;
      } finally {
        LOCK.unlock();
      }
      for (int round = 0; round < 200; round++) { // some work outside the locks
        value = value * 6364136223846793005L + 1442695040888963407L;
      }
    }
    return value;
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
