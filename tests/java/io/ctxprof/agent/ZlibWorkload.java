package io.ctxprof.agent;

import java.util.Random;
import java.util.zip.Deflater;

/**
 * Two threads whose stacks are known: "deflater" compresses with java.util.zip.Deflater, so most
 * of its CPU is in zlib's deflate under the Java native method Deflater.deflateBytesBytes (Java ->
 * JNI -> libz); "compute" runs a pure Java loop that the JIT compiles (no native frame at all).
 * The ground truth for the mixed stack. Args: the milliseconds of CPU time each thread runs.
 */
public final class ZlibWorkload {
  static volatile long sink;

  private ZlibWorkload() {}

  public static void main(String[] args) throws InterruptedException {
    // Load libzip (and libz) and give the profiler's background thread, which compiles the
    // unwind tables of libraries loaded since the last scan, time to see them even on a loaded
    // machine: samples before that end at the library's first frame.
    new Deflater().end();
    Thread.sleep(1000);
    long millis = Long.parseLong(args[0]);
    Thread deflater = new Thread(() -> deflate(millis), "deflater");
    Thread compute = new Thread(() -> compute(millis), "compute");
    deflater.start();
    compute.start();
    deflater.join();
    compute.join();
  }

  static void deflate(long millis) {
    CpuBudget budget = new CpuBudget(millis);
    byte[] input = new byte[1 << 20];
    Random random = new Random(42);
    for (int i = 0; i < input.length; i++) {
      input[i] = (byte) ('a' + random.nextInt(8)); // compressible, but not trivially
    }
    byte[] output = new byte[input.length + 1024];
    while (budget.left()) {
      Deflater deflater = new Deflater(Deflater.BEST_COMPRESSION);
      deflater.setInput(input);
      deflater.finish();
      while (!deflater.finished()) {
        sink += deflater.deflate(output);
      }
      deflater.end();
    }
  }

  static void compute(long millis) {
    CpuBudget budget = new CpuBudget(millis);
    while (budget.left()) {
      sink += spin(100_000);
    }
  }

  static long spin(int n) {
    long h = 1;
    for (int i = 0; i < n; i++) {
      h = h * 31 + i;
      h ^= h >>> 7;
    }
    return h;
  }
}
