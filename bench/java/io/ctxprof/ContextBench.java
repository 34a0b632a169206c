package io.ctxprof;

import com.sun.management.ThreadMXBean;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.invoke.VarHandle;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

/**
 * Java context write costs: the API's in-place writes (ContextSetter, and the ThreadHandle fast
 * path with pre-interned AttributeValues) against the same operations through JNI.
 *
 * <p>JMH is not available offline, so this is a small harness with JMH's discipline: several
 * forked JVMs (so one JIT outcome cannot decide the result), warm-up iterations before measured
 * ones, results consumed by a blackhole so nothing is optimized away, and medians reported with
 * the spread across forks. Time is the measuring thread's CPU time, and the bytes it allocated
 * per operation are reported beside it (0 when escape analysis removed a scope).
 *
 * <p>Usage: {@code ContextBench [--forks N] [--warmups N] [--iterations N] [--millis N] [--only
 * TEXT]} (only the operations whose name contains TEXT); the library comes from {@code
 * -Dctxprof.library}. A fork runs with {@code --child}.
 */
public final class ContextBench {
  private static volatile long blackhole;
  private static final ThreadMXBean THREADS =
      (ThreadMXBean) ManagementFactory.getThreadMXBean();

  private interface Op {
    /** Runs the operation {@code count} times. */
    void run(int count);
  }

  private static final String A = "/checkout";
  private static final String B = "/search";

  public static void main(String[] args) throws Exception {
    int forks = 3;
    int warmups = 5;
    int iterations = 10;
    int millis = 200;
    String only = "";
    boolean child = false;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--forks":
          forks = Integer.parseInt(args[++i]);
          break;
        case "--warmups":
          warmups = Integer.parseInt(args[++i]);
          break;
        case "--iterations":
          iterations = Integer.parseInt(args[++i]);
          break;
        case "--millis":
          millis = Integer.parseInt(args[++i]);
          break;
        case "--only":
          only = args[++i];
          break;
        case "--child":
          child = true;
          break;
        default:
          System.err.println(
              "unknown argument '"
                  + args[i]
                  + "': use --forks, --warmups, --iterations, --millis, --only TEXT");
          System.exit(2);
      }
    }
    if (child) {
      runChild(warmups, iterations, millis, only);
    } else {
      runParent(forks, warmups, iterations, millis, only);
    }
  }

  private static long spanLog; // the measuring thread's span log, -1 when untimed

  /**
   * Plays the profiler's span reader every 64 operations (marks every record read), so that the
   * timed rows measure appends rather than the drops of a full log; costs a load and a store per
   * 64 operations, in the timed and untimed rows alike.
   */
  private static void consumeSpans(int i) {
    if ((i & 63) == 0 && spanLog >= 0) {
      BlockMemory.putLong(spanLog + SpanLog.TAIL, BlockMemory.getLong(spanLog + SpanLog.HEAD));
    }
  }

  private static Map<String, Op> operations() {
    Profiler profiler = Profiler.getInstance();
    ContextSetter setter = new ContextSetter(profiler, List.of("endpoint", "tenant"));
    int endpoint = setter.offsetOf("endpoint");
    int tenant = setter.offsetOf("tenant");
    ThreadContext jni = new ThreadContext.JniContext();
    int idA = ValueIds.intern(A);
    int idB = ValueIds.intern(B);
    ThreadHandle handle = setter.forCurrentThread();
    AttributeValue valueA = setter.value(A);
    AttributeValue valueB = setter.value(B);
    ThreadContext.BlockContext own = (ThreadContext.BlockContext) ThreadContext.current();
    spanLog = own.log;
    // The same thread's block without its span log: today's untimed writes, in the same fork.
    ThreadHandle untimed =
        new ThreadHandle(new ThreadContext.BlockContext(own.block, -1), (1 << endpoint) | (1 << tenant));
    long[] saved = new long[3];
    int[] savedAttributes = new int[ContextLayout.ATTRIBUTE_SLOTS];

    Map<String, Op> ops = new LinkedHashMap<>();
    // The floor of every timed write, in the same fork: one read of the span clock, so that
    // the timed rows can be judged as the untimed write plus clock reads.
    ops.put(
        "floor: span clock read (" + SpanClock.KIND + ")",
        n -> {
          long sum = 0;
          for (int i = 0; i < n; i++) {
            sum += SpanClock.now();
          }
          blackhole += sum;
        });
    // The floors of every write, in the same fork, so that writes are judged as multiples of
    // them rather than in nanoseconds of one machine: an 8-byte store of a changing value into
    // the context map through BlockMemory (the path of every write's field stores), plain, and
    // ordered as a write publishes its sequence (release fence, then the store). The stores
    // rotate over the eight longs of a scratch block so that none is dead or loop-invariant; the
    // fence alone already keeps the JIT from sinking or merging them. runChild checks that their
    // time grows with the number of stores.
    long scratch = scratchBlock();
    ops.put(
        FLOOR_PLAIN + " (" + BlockMemory.KIND + ")",
        n -> {
          for (int i = 0; i < n; i++) {
            BlockMemory.putLong(scratch + ((i & 7) << 3), i);
          }
          blackhole += BlockMemory.getLong(scratch);
        });
    ops.put(
        FLOOR_ORDERED + " (" + BlockMemory.KIND + ")",
        n -> {
          for (int i = 0; i < n; i++) {
            VarHandle.releaseFence();
            BlockMemory.putLong(scratch + ((i & 7) << 3), i);
          }
          blackhole += BlockMemory.getLong(scratch);
        });
    ops.put(
        "setAttribute (cached value)",
        n -> {
          boolean ok = true;
          for (int i = 0; i < n; i++) {
            ok &= setter.setAttribute(endpoint, (i & 1) == 0 ? A : B);
            consumeSpans(i);
          }
          blackhole += ok ? 1 : 0;
        });
    ops.put(
        "setAttribute (handle, AttributeValue)",
        n -> {
          boolean ok = true;
          for (int i = 0; i < n; i++) {
            ok &= handle.setAttribute(endpoint, (i & 1) == 0 ? valueA : valueB);
            consumeSpans(i);
          }
          blackhole += ok ? 1 : 0;
        });
    ops.put(
        "setAttribute (handle, AttributeValue), untimed",
        n -> {
          boolean ok = true;
          for (int i = 0; i < n; i++) {
            ok &= untimed.setAttribute(endpoint, (i & 1) == 0 ? valueA : valueB);
            consumeSpans(i);
          }
          blackhole += ok ? 1 : 0;
        });
    ops.put(
        "setAttribute (handle, cached String)",
        n -> {
          boolean ok = true;
          for (int i = 0; i < n; i++) {
            ok &= handle.setAttribute(endpoint, (i & 1) == 0 ? A : B);
            consumeSpans(i);
          }
          blackhole += ok ? 1 : 0;
        });
    ops.put(
        "setAttribute via JNI",
        n -> {
          for (int i = 0; i < n; i++) {
            jni.setAttribute(endpoint, (i & 1) == 0 ? idA : idB);
          }
        });
    ops.put(
        "setTraceContext",
        n -> {
          for (int i = 0; i < n; i++) {
            setter.setTraceContext(i, ~i, i * 31L);
            consumeSpans(i);
          }
        });
    ops.put(
        "setTraceContext via JNI",
        n -> {
          for (int i = 0; i < n; i++) {
            jni.setTraceContext(i, ~i, i * 31L);
          }
        });
    ops.put(
        "clear",
        n -> {
          for (int i = 0; i < n; i++) {
            setter.clear();
            consumeSpans(i);
          }
        });
    ops.put(
        "clear via JNI",
        n -> {
          for (int i = 0; i < n; i++) {
            jni.clear();
          }
        });
    ops.put(
        "span lifecycle (open trace + 2 attributes, close restores)",
        n -> {
          for (int i = 0; i < n; i++) {
            try (ContextScope scope = setter.open(i, ~i, i * 31L)) {
              setter.setAttribute(endpoint, A);
              setter.setAttribute(tenant, B);
            }
            consumeSpans(i);
          }
        });
    ops.put(
        "span lifecycle (handle, AttributeValues)",
        n -> {
          for (int i = 0; i < n; i++) {
            try (ContextScope scope = handle.open(i, ~i, i * 31L)) {
              handle.setAttribute(endpoint, valueA);
              handle.setAttribute(tenant, valueB);
            }
            consumeSpans(i);
          }
        });
    ops.put(
        "span lifecycle (handle, one-write open)",
        n -> {
          for (int i = 0; i < n; i++) {
            try (ContextScope scope =
                handle.open(i, ~i, i * 31L, endpoint, valueA, tenant, valueB)) {
              // the span's work; the scope is what is measured
            }
            consumeSpans(i);
          }
        });
    ops.put(
        "span lifecycle (handle, one-write open), untimed",
        n -> {
          for (int i = 0; i < n; i++) {
            try (ContextScope scope =
                untimed.open(i, ~i, i * 31L, endpoint, valueA, tenant, valueB)) {
              // the span's work; the scope is what is measured
            }
            consumeSpans(i);
          }
        });
    ops.put(
        "span lifecycle via JNI",
        n -> {
          for (int i = 0; i < n; i++) {
            jni.setTraceContext(i, ~i, i * 31L); // activate (the saved copy is Java-side)
            jni.setAttribute(endpoint, idA);
            jni.setAttribute(tenant, idB);
            jni.setAll(saved[0], saved[1], saved[2], savedAttributes); // deactivate: restore
          }
        });
    // The same operations again with otelcontext=true publishing on (runChild turns it on before
    // the first of them: it stays on for the process), so each ratio comes from one fork.
    for (String name : OTEL_PAIRED) {
      ops.put(name + OTEL_SUFFIX, ops.get(name));
    }
    return ops;
  }

  private static final String FLOOR_PLAIN = "floor: plain 8-byte store";
  private static final String FLOOR_ORDERED = "floor: ordered 8-byte store";

  /**
   * The block of a helper thread that stays parked for the life of the fork: nothing else writes
   * or reads it (no profiler session runs while the floors are measured), so the floors can store
   * there without touching the measuring thread's context or span log.
   */
  private static long scratchBlock() {
    long[] block = new long[1];
    CountDownLatch ready = new CountDownLatch(1);
    Thread owner =
        new Thread(
            () -> {
              block[0] = ((ThreadContext.BlockContext) ThreadContext.current()).block;
              ready.countDown();
              while (true) {
                try {
                  Thread.sleep(Long.MAX_VALUE);
                } catch (InterruptedException e) {
                  return;
                }
              }
            },
            "floor scratch block");
    owner.setDaemon(true);
    owner.start();
    try {
      ready.await();
    } catch (InterruptedException e) {
      throw new IllegalStateException(e);
    }
    return block[0];
  }

  /**
   * Refuses a floor the JIT has optimized away: the CPU time of 4M stores must be at least twice
   * that of 1M (it is 4x when every store is done; a dead loop costs the same for any count).
   */
  private static void checkFloorScales(String name, Op op) {
    int batch = 1 << 20; // ~0.5 ms: far above the cost of reading the CPU time
    double one = Double.MAX_VALUE;
    double four = Double.MAX_VALUE;
    for (int round = 0; round < 5; round++) { // the least of five: descheduling only adds
      long start = THREADS.getCurrentThreadCpuTime();
      op.run(batch);
      long middle = THREADS.getCurrentThreadCpuTime();
      op.run(4 * batch);
      long end = THREADS.getCurrentThreadCpuTime();
      one = Math.min(one, middle - start);
      four = Math.min(four, end - middle);
    }
    if (four < 2 * one) {
      throw new IllegalStateException(
          String.format(
              "%s: %d stores took %.0f ns of CPU time and %d took %.0f ns: the JIT removed the"
                  + " stores, so this floor measures nothing",
              name, batch, one, 4 * batch, four));
    }
  }

  // ContextSetter's operations beside the fast path's (issue 29: a span through ContextSetter
  // costs at most twice the one-write span), and the four-write span through a handle between
  // them: the same writes as ContextSetter's without finding the block or the values.
  private static final String[][] FAST_PATH_PAIRED = {
    {"span lifecycle (open trace + 2 attributes, close restores)",
        "span lifecycle (handle, one-write open)"},
    {"span lifecycle (handle, AttributeValues)", "span lifecycle (handle, one-write open)"},
    {"span lifecycle (open trace + 2 attributes, close restores)",
        "span lifecycle (handle, AttributeValues)"},
    {"setAttribute (cached value)", "setAttribute (handle, AttributeValue)"},
  };

  private static final String OTEL_SUFFIX = ", otelcontext";
  private static final List<String> OTEL_PAIRED =
      List.of(
          "setAttribute (cached value)",
          "setAttribute (handle, AttributeValue)",
          "setTraceContext",
          "span lifecycle (open trace + 2 attributes, close restores)",
          "span lifecycle (handle, AttributeValues)",
          "span lifecycle (handle, one-write open)");

  /** Turns OpenTelemetry publishing on for this process (a session started and stopped). */
  private static void publishOtel() {
    Profiler profiler = Profiler.getInstance();
    profiler.execute("start,event=ctimer,interval=1h,otelcontext=true");
    profiler.execute("stop");
    if (!OtelRecord.enabled()) {
      throw new IllegalStateException("otelcontext=true did not turn publishing on");
    }
  }

  /**
   * Prints one line per operation: name TAB median ns/op TAB median bytes allocated per op, over
   * the measured iterations.
   */
  private static void runChild(int warmups, int iterations, int millis, String only) {
    boolean publishing = false;
    for (Map.Entry<String, Op> entry : operations().entrySet()) {
      if (!entry.getKey().contains(only)) {
        continue;
      }
      if (!publishing && entry.getKey().endsWith(OTEL_SUFFIX)) {
        publishOtel();
        publishing = true;
      }
      Op op = entry.getValue();
      int batch = calibrate(op);
      for (int i = 0; i < warmups; i++) {
        measure(op, batch, millis);
      }
      double[] nanos = new double[iterations];
      double[] bytes = new double[iterations];
      for (int i = 0; i < iterations; i++) {
        double[] result = measure(op, batch, millis);
        nanos[i] = result[0];
        bytes[i] = result[1];
      }
      if (entry.getKey().startsWith(FLOOR_PLAIN) || entry.getKey().startsWith(FLOOR_ORDERED)) {
        checkFloorScales(entry.getKey(), op); // the code just measured
      }
      System.out.println(entry.getKey() + "\t" + median(nanos) + "\t" + median(bytes));
    }
  }

  private static int calibrate(Op op) {
    int batch = 1000;
    while (true) {
      long start = System.nanoTime();
      op.run(batch);
      if (System.nanoTime() - start > 1_000_000 || batch >= 1 << 24) {
        return batch;
      }
      batch *= 2;
    }
  }

  /**
   * {ns of this thread's CPU time, bytes this thread allocated} per operation, over about {@code
   * millis} of batches. CPU time rather than wall time: on a shared machine the thread is often
   * descheduled, which is not a cost of the operation (on an idle machine the two agree).
   */
  private static double[] measure(Op op, int batch, int millis) {
    long deadline = System.nanoTime() + millis * 1_000_000L;
    long operations = 0;
    long cpuStart = THREADS.getCurrentThreadCpuTime();
    long bytesStart = allocatedBytes();
    do {
      op.run(batch);
      operations += batch;
    } while (System.nanoTime() < deadline);
    long cpu = THREADS.getCurrentThreadCpuTime() - cpuStart;
    long bytes = allocatedBytes() - bytesStart;
    return new double[] {(double) cpu / operations, (double) bytes / operations};
  }

  private static long allocatedBytes() {
    return THREADS.getThreadAllocatedBytes(Thread.currentThread().getId());
  }

  private static double median(double[] values) {
    double[] sorted = values.clone();
    Arrays.sort(sorted);
    int middle = sorted.length / 2;
    return sorted.length % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  }

  private static void runParent(int forks, int warmups, int iterations, int millis, String only)
      throws IOException, InterruptedException {
    String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    Map<String, List<Double>> results = new LinkedHashMap<>();
    Map<String, List<Double>> allocations = new LinkedHashMap<>();
    for (int fork = 0; fork < forks; fork++) {
      List<String> command = new ArrayList<>();
      command.add(java);
      command.add("--enable-native-access=ALL-UNNAMED"); // JDK 24+: silences System.load's warning
      command.add("-Dctxprof.library=" + System.getProperty("ctxprof.library"));
      command.add("-cp");
      command.add(System.getProperty("java.class.path"));
      command.add(ContextBench.class.getName());
      command.addAll(
          List.of(
              "--child",
              "--warmups",
              "" + warmups,
              "--iterations",
              "" + iterations,
              "--millis",
              "" + millis,
              "--only",
              only));
      Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
      try (BufferedReader reader =
          new BufferedReader(new InputStreamReader(process.getInputStream(), "UTF-8"))) {
        String line;
        while ((line = reader.readLine()) != null) {
          String[] fields = line.split("\t");
          if (fields.length != 3) {
            System.err.println("fork " + fork + ": " + line);
            continue;
          }
          results
              .computeIfAbsent(fields[0], k -> new ArrayList<>())
              .add(Double.parseDouble(fields[1]));
          allocations
              .computeIfAbsent(fields[0], k -> new ArrayList<>())
              .add(Double.parseDouble(fields[2]));
        }
      }
      if (process.waitFor() != 0) {
        throw new IllegalStateException("benchmark fork " + fork + " failed");
      }
    }
    Profiler.getInstance(); // binds the library, which BlockMemory needs
    System.out.printf(
        "Java %s (block access: %s, span clock: %s), %d forks x (%d warm-up + %d measured) x %d ms%n",
        System.getProperty("java.version"),
        BlockMemory.KIND,
        SpanClock.KIND,
        forks,
        warmups,
        iterations,
        millis);
    System.out.printf(
        "%-62s %10s %18s %12s%n", "operation (CPU time)", "median", "fork medians", "allocated");
    for (Map.Entry<String, List<Double>> entry : results.entrySet()) {
      double[] values = entry.getValue().stream().mapToDouble(Double::doubleValue).toArray();
      double[] sorted = values.clone();
      Arrays.sort(sorted);
      double[] bytes =
          allocations.get(entry.getKey()).stream().mapToDouble(Double::doubleValue).toArray();
      System.out.printf(
          "%-62s %7.2f ns   [%.2f .. %.2f]   %6.1f B/op%n",
          entry.getKey(), median(values), sorted[0], sorted[sorted.length - 1], median(bytes));
    }
    // Ratios within each fork, where the machine's speed and load are the same for both rows.
    String floor = null;
    for (String name : results.keySet()) {
      if (name.startsWith(FLOOR_ORDERED)) {
        floor = name;
      }
    }
    if (floor != null) {
      printRatioHeading("per ordered-store floor");
      for (String name : results.keySet()) {
        if (!name.startsWith("floor: ")) {
          printRatio(name, results.get(name), results.get(floor));
        }
      }
    }
    printRatioHeading("ContextSetter / fast path");
    for (String[] pair : FAST_PATH_PAIRED) {
      printRatio(pair[0] + " / " + pair[1], results.get(pair[0]), results.get(pair[1]));
    }
    printRatioHeading("otelcontext=true / off");
    for (String name : OTEL_PAIRED) {
      printRatio(name, results.get(name + OTEL_SUFFIX), results.get(name));
    }
  }

  /** Heads a list of printRatio lines: the ratios of {@code what}, each within one fork. */
  private static void printRatioHeading(String what) {
    System.out.printf("%n%-62s %10s %18s%n", what + ", same fork", "median", "fork ratios");
  }

  /** Prints the median and range of {@code numerator / denominator} per fork (when both ran). */
  private static void printRatio(String name, List<Double> numerator, List<Double> denominator) {
    if (numerator == null || denominator == null || numerator.size() != denominator.size()) {
      return;
    }
    double[] ratios = new double[numerator.size()];
    for (int fork = 0; fork < ratios.length; fork++) {
      ratios[fork] = numerator.get(fork) / denominator.get(fork);
    }
    double[] sorted = ratios.clone();
    Arrays.sort(sorted);
    System.out.printf(
        "%-62s %9.2fx   [%.2f .. %.2f]%n",
        name, median(ratios), sorted[0], sorted[sorted.length - 1]);
  }
}
