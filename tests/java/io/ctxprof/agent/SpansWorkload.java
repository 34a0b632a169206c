package io.ctxprof.agent;

import io.ctxprof.AttributeValue;
import io.ctxprof.ContextScope;
import io.ctxprof.ContextSetter;
import io.ctxprof.Profiler;
import io.ctxprof.ThreadHandle;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Ground truth for timed spans: threads open and close spans whose begin and end they measure
 * themselves, and print one line per span: {@code truth KIND SPAN_ID NANOS} (KIND: span-min and
 * span-max, the least and the most the span's length can be, from clock reads around its open
 * and its close; wait, for a span in which the thread waited for a monitor, with the wait's
 * length measured around the acquisition).
 * Span ids are unique in the run.
 *
 * <p>Modes:
 *
 * <ul>
 *   <li>{@code durations}: two threads, 120 spans each of 1 to 20 ms, half spinning and half
 *       sleeping.
 *   <li>{@code virtual}: the same on 6 virtual threads, 40 spans each (JDK 21+): a sleeping span
 *       unmounts its thread and may end on another carrier than it began.
 *   <li>{@code empty}: after 2,000 short spans that warm the write path up, one span (id
 *       1) that only sleeps 200 ms, then one (id 2) that waits for a monitor another thread holds
 *       until 20 ms after it saw the wait begin: the first span holds no event and the second
 *       one wait.
 *   <li>{@code waits}: two threads open a new span for each of 400 acquisitions of a monitor that
 *       a helper thread holds 0.3 ms at that moment (nothing else inside), so the spans change
 *       about every millisecond, and each span holds exactly one wait for that monitor.
 *   <li>{@code clock PATH}: 200 spans over about 4 s, each inside a JDK event (SpanMarker, with
 *       the span's id) begun just before the span opens and ended just after it closes, recorded
 *       by the JDK's own Flight Recorder into PATH: the two clocks side by side. Prints {@code
 *       truth open-bracket|close-bracket SPAN_ID NANOS}: clock reads around each pair.
 * </ul>
 */
public final class SpansWorkload {
  /** The JDK's event around one span. */
  @jdk.jfr.Name("ctxprof.test.SpanMarker")
  static final class SpanMarker extends jdk.jfr.Event {
    long spanId;
  }

  static final Object MONITOR = new Object();
  static volatile long sink;
  private static ContextSetter setter;
  private static int endpoint;

  private SpansWorkload() {}

  public static void main(String[] args) throws Exception {
    setter = new ContextSetter(Profiler.getInstance(), List.of("endpoint"));
    endpoint = setter.offsetOf("endpoint");
    switch (args[0]) {
      case "durations":
        runAll(() -> spans(1_000, 120), () -> spans(2_000, 120));
        break;
      case "virtual":
        runVirtual(6, 40);
        break;
      case "empty":
        emptyThenBusy();
        break;
      case "waits":
        waits();
        break;
      case "clock":
        clock(java.nio.file.Path.of(args[1]));
        break;
      default:
        throw new IllegalArgumentException("unknown mode " + args[0]);
    }
  }

  private static void spans(long firstId, int count) {
    ThreadHandle handle = setter.forCurrentThread();
    AttributeValue value = setter.value("/span");
    ThreadLocalRandom random = ThreadLocalRandom.current();
    for (int i = 0; i < count; i++) {
      long id = firstId + i;
      long millis = 1 + random.nextInt(20);
      long beforeOpen = System.nanoTime();
      long afterOpen;
      long beforeClose;
      ContextScope scope = handle.open(0, 1, id, endpoint, value);
      try {
        afterOpen = System.nanoTime();
        if ((i & 1) == 0) {
          spin(millis * 1_000_000L);
        } else {
          sleep(millis);
        }
      } finally {
        beforeClose = System.nanoTime();
        scope.close();
      }
      long afterClose = System.nanoTime();
      // The span began between beforeOpen and afterOpen and ended between beforeClose and
      // afterClose: its length lies between these two (a preemption there widens the range).
      System.out.println("truth span-min " + id + " " + (beforeClose - afterOpen));
      System.out.println("truth span-max " + id + " " + (afterClose - beforeOpen));
    }
  }

  private static void runVirtual(int threads, int spansEach) throws Exception {
    // Through reflection: this class is compiled for JDK 17, which has no virtual threads.
    java.lang.reflect.Method start = Thread.class.getMethod("startVirtualThread", Runnable.class);
    List<Thread> started = new java.util.ArrayList<>();
    for (int t = 0; t < threads; t++) {
      long firstId = 10_000 + 1_000L * t;
      started.add((Thread) start.invoke(null, (Runnable) () -> spans(firstId, spansEach)));
    }
    for (Thread thread : started) {
      thread.join();
    }
  }

  private static void emptyThenBusy() throws InterruptedException {
    CountDownLatch held = new CountDownLatch(1);
    Thread main = Thread.currentThread();
    Thread holder =
        new Thread(
            () -> {
              synchronized (MONITOR) {
                held.countDown();
                // Released only once the main thread is blocked on it, inside span 2: the wait
                // happens however late the main thread gets there on a loaded machine.
                while (main.getState() != Thread.State.BLOCKED) {
                  sleep(1);
                }
                sleep(20);
              }
            });
    holder.start();
    held.await();
    // The first writes link the write path, for milliseconds a CPU sample can fall in: done in
    // other spans, so that span 1 holds nothing but its sleep.
    for (int i = 0; i < 2_000; i++) {
      try (ContextScope scope = setter.open(0, 1, 100_000 + i)) {
        sink++;
      }
    }
    // Span 1 through a method run once before, outside it: the first run of a call site links
    // it in the VM (LinkResolver), CPU work a sample can fall in when the machine is loaded.
    sleepingSpan(100_000 + 2_000, 0);
    sleepingSpan(1, 200);
    try (ContextScope scope = setter.open(0, 1, 2)) {
      synchronized (MONITOR) {
        sink++;
      }
    }
    holder.join();
  }

  private static void waits() throws InterruptedException {
    runAll(() -> contend(10_000, 400), () -> contend(20_000, 400));
  }

  /**
   * Spans {@code firstId}.. each wait once for a monitor: a helper thread takes it when asked and
   * holds it 0.3 ms, so the span's acquisition always blocks.
   */
  private static void contend(long firstId, int count) {
    Object monitor = new Object();
    Semaphore take = new Semaphore(0);
    Semaphore taken = new Semaphore(0);
    Thread holder =
        new Thread(
            () -> {
              for (int i = 0; i < count; i++) {
                take.acquireUninterruptibly();
                synchronized (monitor) {
                  taken.release();
                  spin(300_000L);
                }
              }
            });
    holder.setDaemon(true);
    holder.start();
    ThreadHandle handle = setter.forCurrentThread();
    AttributeValue value = setter.value("/wait");
    long[] waited = new long[count];
    for (int i = 0; i < count; i++) {
      take.release();
      taken.acquireUninterruptibly();
      try (ContextScope scope = handle.open(0, 1, firstId + i, endpoint, value)) {
        long before = System.nanoTime();
        synchronized (monitor) {
          sink++;
        }
        waited[i] = System.nanoTime() - before;
      }
    }
    synchronized (System.out) {
      for (int i = 0; i < count; i++) {
        System.out.println("truth wait " + (firstId + i) + " " + waited[i]);
      }
    }
  }

  private static void clock(java.nio.file.Path path) throws Exception {
    ThreadHandle handle = setter.forCurrentThread();
    // Compiled and warm before the measured pairs: the gap between the JDK's begin and our
    // open is then the time of a few calls, not of the interpreter.
    for (int i = 0; i < 20_000; i++) {
      markedSpan(handle, 40_000 + i, 0);
    }
    try (jdk.jfr.Recording recording = new jdk.jfr.Recording()) {
      recording.enable(SpanMarker.class).withThreshold(java.time.Duration.ZERO);
      recording.start();
      ThreadLocalRandom random = ThreadLocalRandom.current();
      for (int i = 0; i < 200; i++) {
        sleep(1 + random.nextInt(40));
        spin(100_000L); // the thread runs again at full speed before the pair
        markedSpan(handle, 30_000 + i, 200_000L);
      }
      recording.stop();
      recording.dump(path);
    }
  }

  private static void markedSpan(ThreadHandle handle, long id, long nanos) {
    SpanMarker marker = new SpanMarker();
    marker.spanId = id;
    long beforeBegin = System.nanoTime();
    marker.begin();
    long afterOpen;
    long beforeClose;
    try (ContextScope scope = handle.open(0, 1, id)) {
      afterOpen = System.nanoTime();
      spin(nanos);
      beforeClose = System.nanoTime();
    }
    marker.end();
    long afterEnd = System.nanoTime();
    marker.commit();
    if (nanos > 0) {
      // How far apart the JDK's begin and our open (our close and the JDK's end) can be: more
      // than a few microseconds only when the thread was preempted in between.
      System.out.println("truth open-bracket " + id + " " + (afterOpen - beforeBegin));
      System.out.println("truth close-bracket " + id + " " + (afterEnd - beforeClose));
    }
  }

  private static void spin(long nanos) {
    long end = System.nanoTime() + nanos;
    long x = 0;
    while (System.nanoTime() < end) {
      x += x * 31 + 7;
    }
    sink = x;
  }

  private static void sleepingSpan(long id, long millis) {
    try (ContextScope scope = setter.open(0, 1, id)) {
      sleep(millis);
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void runAll(Runnable... bodies) throws InterruptedException {
    Thread[] threads = new Thread[bodies.length];
    for (int i = 0; i < bodies.length; i++) {
      threads[i] = new Thread(bodies[i], "spans-" + i);
      threads[i].start();
    }
    for (Thread thread : threads) {
      thread.join();
    }
  }
}
