package io.ctxprof.agent;

import io.ctxprof.ContextSetter;
import io.ctxprof.Profiler;
import java.util.ArrayList;
import java.util.List;

/**
 * Virtual threads sharing carriers (run with -Djdk.virtualThreadScheduler.parallelism=1): "vt-a"
 * and "vt-b" each set their own context once and keep it while they work in vtWorkA/vtWorkB and
 * yield (unmount) every few milliseconds; "vt-none" never sets a context and works in
 * vtWorkNone. Without the agent's unmount/mount handling, vt-none would run with whatever
 * context the previous virtual thread left in the carrier's block. Built with Java 17, so
 * virtual threads are created through reflection (JDK 21+ only). Args: seconds, a file for the
 * collapsed dump written at the end (every sample with its own context, no join), and optionally
 * a JFR file: then the workload loads libctxprof through the Java API and starts and stops the
 * session itself (no agent). Prints "thread <name> <java.lang.Thread id>" for each virtual thread.
 */
public final class VirtualThreadWorkload {
  static final long A_TRACE_HIGH = 0xAAAAL;
  static final long B_TRACE_HIGH = 0xBBBBL;
  static volatile double sink;

  private VirtualThreadWorkload() {}

  public static void main(String[] args) throws Exception {
    long seconds = Long.parseLong(args[0]);
    Profiler profiler = Profiler.getInstance();
    if (args.length > 2) {
      profiler.execute("start,interval=2ms,attributes=endpoint;tenant,file=" + args[2]);
    }
    ContextSetter setter = new ContextSetter(profiler, List.of("endpoint", "tenant"));
    long end = System.nanoTime() + seconds * 1_000_000_000L;
    List<Thread> threads = new ArrayList<>();
    threads.add(
        virtualThread(
            "vt-a",
            () -> {
              setter.setTraceContext(A_TRACE_HIGH, 1, 1);
              setter.setAttribute("endpoint", "/a");
              while (System.nanoTime() < end) {
                vtWorkA();
                Thread.yield();
              }
            }));
    threads.add(
        virtualThread(
            "vt-b",
            () -> {
              setter.setTraceContext(B_TRACE_HIGH, 2, 2);
              setter.setAttribute("endpoint", "/b");
              while (System.nanoTime() < end) {
                vtWorkB();
                Thread.yield();
              }
            }));
    threads.add(
        virtualThread(
            "vt-none",
            () -> {
              while (System.nanoTime() < end) {
                vtWorkNone();
                Thread.yield();
              }
            }));
    for (Thread thread : threads) {
      System.out.println("thread " + thread.getName() + " " + thread.getId());
      thread.start();
    }
    for (Thread thread : threads) {
      thread.join();
    }
    profiler.execute("dump,file=" + args[1]);
    if (args.length > 2) {
      profiler.execute("stop");
    }
  }

  static Thread virtualThread(String name, Runnable task) throws ReflectiveOperationException {
    Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
    Class<?> builderType = Class.forName("java.lang.Thread$Builder");
    builder = builderType.getMethod("name", String.class).invoke(builder, name);
    return (Thread) builderType.getMethod("unstarted", Runnable.class).invoke(builder, task);
  }

  static void vtWorkA() {
    sink = burn(2);
  }

  static void vtWorkB() {
    sink = burn(2);
  }

  static void vtWorkNone() {
    sink = burn(2);
  }

  static double burn(long millis) {
    long end = System.nanoTime() + millis * 1_000_000L;
    double x = 0;
    while (System.nanoTime() < end) {
      for (int i = 0; i < 1000; i++) {
        x += Math.sqrt(i);
      }
    }
    return x;
  }
}
