package io.ctxprof.agent;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * A budget of the calling thread's own CPU time. Workloads that a test judges by sample counts
 * run for CPU time, not wall time: the CPU engines sample per CPU time, so the counts and the
 * share of warm-up samples do not depend on how loaded the machine is.
 */
final class CpuBudget {
  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

  private final long endNanos;

  /** A budget of {@code millis} ms of the calling thread's CPU time, from now. */
  CpuBudget(long millis) {
    endNanos = THREADS.getCurrentThreadCpuTime() + millis * 1_000_000L;
  }

  /** Whether the calling thread (the one that created the budget) has CPU time left. */
  boolean left() {
    return THREADS.getCurrentThreadCpuTime() < endNanos;
  }
}
