package io.ctxprof.agent;

/**
 * Burns CPU for a while, then leaves the JVM the way args[0] says: "normal" (main returns),
 * "exit" (System.exit(3)), "throw" (an uncaught exception in main) or "sigterm" (prints "ready"
 * and spins until the test sends SIGTERM).
 */
public final class ExitWorkload {
  static volatile double sink;

  private ExitWorkload() {}

  public static void main(String[] args) {
    spin(700);
    switch (args[0]) {
      case "normal":
        return;
      case "exit":
        System.exit(3);
        return;
      case "throw":
        throw new IllegalStateException("uncaught on purpose");
      case "sigterm":
        System.out.println("ready");
        System.out.flush();
        spin(60_000);
        return;
      default:
        throw new IllegalArgumentException(args[0]);
    }
  }

  /**
   * Burns {@code millis} of this thread's CPU time (not wall time: on a loaded machine the
   * sample count must still follow the work, since CPU samples follow CPU time).
   */
  static void spin(long millis) {
    java.lang.management.ThreadMXBean threads =
        java.lang.management.ManagementFactory.getThreadMXBean();
    long end = threads.getCurrentThreadCpuTime() + millis * 1_000_000L;
    double x = 0;
    while (threads.getCurrentThreadCpuTime() < end) {
      for (int i = 0; i < 10_000; i++) {
        x += Math.sqrt(i);
      }
    }
    sink = x;
  }
}
