package io.ctxprof;

/**
 * The clock Java writers stamp spans with, in the span log's units (context/span_log.h). Before
 * JDK 22 there is no cheap way to read the TSC from Java without JNI, so this version returns
 * {@code System.nanoTime()} (CLOCK_MONOTONIC on Linux) with bit 63 set, which tells the reader
 * to convert it; on JDK 22+ the jar's java/src22 version reads the TSC through a
 * java.lang.foreign downcall.
 */
final class SpanClock {
  static final String KIND = kind(); // not a constant: javac would copy it into callers

  private static String kind() {
    return "nanoTime";
  }

  private SpanClock() {}

  static long now() {
    return System.nanoTime() | Long.MIN_VALUE;
  }
}
