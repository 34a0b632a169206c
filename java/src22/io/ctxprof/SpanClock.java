package io.ctxprof;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * The clock Java writers stamp spans with (JDK 22+ version; see java/src's for the others): the
 * library's span clock (the TSC on x86-64, ctxprof_span_ticks) through a critical
 * java.lang.foreign downcall, which costs a few nanoseconds where {@code System.nanoTime()} costs
 * tens. Linker.downcallHandle is a restricted method that prints a warning unless native access
 * is enabled for the caller's module, and a profiler must not make a service print: so the
 * downcall is used only when native access is enabled ({@code
 * --enable-native-access=ALL-UNNAMED}); otherwise {@code System.nanoTime()} with bit 63 set, as
 * before JDK 22.
 */
@SuppressWarnings("restricted") // used only when native access is enabled (above)
final class SpanClock {
  static final String KIND;
  private static final MethodHandle TICKS;

  static {
    MethodHandle ticks = null;
    if (SpanClock.class.getModule().isNativeAccessEnabled()) {
      ticks =
          Linker.nativeLinker()
              .downcallHandle(
                  MemorySegment.ofAddress(Native.spanTicksAddress0()),
                  FunctionDescriptor.of(ValueLayout.JAVA_LONG),
                  Linker.Option.critical(false));
    }
    TICKS = ticks;
    KIND = ticks != null ? "downcall" : "nanoTime";
  }

  private SpanClock() {}

  static long now() {
    if (TICKS == null) {
      return System.nanoTime() | Long.MIN_VALUE;
    }
    try {
      return (long) TICKS.invokeExact();
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }
}
