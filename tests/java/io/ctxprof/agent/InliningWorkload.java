package io.ctxprof.agent;

/**
 * A hot loop (hot) calling a small method (mix) that the JIT inlines into it once both are warm:
 * the ground truth for frame types. Run with -Xint, every Java frame is interpreted. Args: the
 * milliseconds of CPU time to run.
 */
public final class InliningWorkload {
  static volatile long sink;

  private InliningWorkload() {}

  public static void main(String[] args) {
    CpuBudget budget = new CpuBudget(Long.parseLong(args[0]));
    while (budget.left()) {
      sink += hot(20_000);
    }
  }

  static long hot(int n) {
    long sum = 0;
    for (int i = 0; i < n; i++) {
      sum += mix(i);
    }
    return sum;
  }

  /** Small (well under the JIT's inlining limits) and busy enough that samples land in it. */
  static int mix(int x) {
    int h = x;
    for (int i = 0; i < 8; i++) {
      h = h * 31 + i;
      h ^= h >>> 7;
    }
    return h;
  }
}
