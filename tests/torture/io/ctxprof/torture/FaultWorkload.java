package io.ctxprof.torture;

import io.ctxprof.Profiler;

/**
 * The profiled application of the fault tests. Args: what, seconds.
 *
 * <ul>
 *   <li>"spin": burns CPU for `seconds`, printing "ready" after the first 500 ms so the test
 *       knows the session is recording, then exits 0;
 *   <li>"status": like "spin", then prints the Java API's status ("status: ...", {@code
 *       Profiler.execute("status")}) and "done" while the session still runs;
 *   <li>"crash": burns CPU for `seconds`, then calls a native method of the library named by
 *       -Dctxprof.test.crash that writes to address 16 (an application bug the JVM must report
 *       as its own crash).
 * </ul>
 */
public final class FaultWorkload {
  static volatile double sink;

  private FaultWorkload() {}

  public static void main(String[] args) {
    String what = args[0];
    long millis = Long.parseLong(args[1]) * 1000;
    if (what.equals("crash")) {
      System.load(System.getProperty("ctxprof.test.crash"));
    }
    spin(500);
    System.out.println("ready");
    System.out.flush();
    spin(millis - 500);
    switch (what) {
      case "spin":
        return;
      case "status":
        System.out.println("status: " + Profiler.getInstance().execute("status"));
        System.out.println("done");
        System.out.flush();
        return;
      case "crash":
        System.out.println("crashing");
        System.out.flush();
        writeToAddress16();
        throw new IllegalStateException("the write to address 16 returned");
      default:
        throw new IllegalArgumentException(
            "unknown fault workload '" + what + "'; use spin, status or crash");
    }
  }

  private static native void writeToAddress16();

  static void spin(long millis) {
    long end = System.nanoTime() + millis * 1_000_000L;
    double x = 0;
    while (System.nanoTime() < end) {
      for (int i = 0; i < 10_000; i++) {
        x += Math.sqrt(i);
      }
    }
    sink = x;
  }
}
