package io.ctxprof.agent;

import io.ctxprof.AttributeValue;
import io.ctxprof.ContextScope;
import io.ctxprof.ContextSetter;
import io.ctxprof.Profiler;
import io.ctxprof.ThreadHandle;
import java.util.List;

/**
 * Ground truth for latency profiling: two threads each serve 100 requests of endpoint
 * "/checkout", one span per request; every fifth request (20 %) is slow and runs code of its own
 * ({@link #slowWork}, 20 to 39 ms of CPU) while the others run {@link #fastWork} (1 to 2.9 ms).
 * Prints one line per span: {@code truth span-min ID NANOS}, {@code truth span-max ID NANOS}
 * (the least and the most the span's length can be, from clock reads around its open and its
 * close) and {@code truth slow ID 0|1}. Span ids are unique in the run.
 */
public final class LatencyWorkload {
  static volatile long sink;
  private static ContextSetter setter;
  private static int endpoint;

  private LatencyWorkload() {}

  public static void main(String[] args) throws Exception {
    setter = new ContextSetter(Profiler.getInstance(), List.of("endpoint"));
    endpoint = setter.offsetOf("endpoint");
    Thread[] threads = new Thread[2];
    for (int t = 0; t < threads.length; t++) {
      long firstId = 1_000L * (t + 1);
      threads[t] = new Thread(() -> serve(firstId, 100), "latency-" + t);
      threads[t].start();
    }
    for (Thread thread : threads) {
      thread.join();
    }
  }

  private static void serve(long firstId, int count) {
    ThreadHandle handle = setter.forCurrentThread();
    AttributeValue checkout = setter.value("/checkout");
    StringBuilder truth = new StringBuilder();
    for (int i = 0; i < count; i++) {
      long id = firstId + i;
      boolean slow = i % 5 == 0;
      long beforeOpen = System.nanoTime();
      long afterOpen;
      long beforeClose;
      ContextScope scope = handle.open(0, 1, id, endpoint, checkout);
      try {
        afterOpen = System.nanoTime();
        if (slow) {
          slowWork((20 + i % 20) * 1_000_000L);
        } else {
          fastWork((10 + i % 20) * 100_000L);
        }
      } finally {
        beforeClose = System.nanoTime();
        scope.close();
      }
      long afterClose = System.nanoTime();
      truth.append("truth span-min ").append(id).append(' ').append(beforeClose - afterOpen);
      truth.append("\ntruth span-max ").append(id).append(' ').append(afterClose - beforeOpen);
      truth.append("\ntruth slow ").append(id).append(' ').append(slow ? 1 : 0).append('\n');
    }
    synchronized (System.out) {
      System.out.print(truth);
    }
  }

  /** The slow requests' own code. */
  static void slowWork(long nanos) {
    spin(nanos);
  }

  static void fastWork(long nanos) {
    spin(nanos);
  }

  private static void spin(long nanos) {
    long end = System.nanoTime() + nanos;
    long x = 0;
    while (System.nanoTime() < end) {
      x += x * 31 + 7;
    }
    sink = x;
  }
}
