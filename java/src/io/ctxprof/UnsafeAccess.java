package io.ctxprof;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;

/**
 * Raw memory access through {@code sun.misc.Unsafe}, for the context write path only.
 *
 * <p>Used only on JDK 23 and older: from JDK 24 on, the first use of Unsafe's memory-access
 * methods prints a warning (JEP 498), which a profiler must never make a service print; there
 * the ByteBuffer path is used. Unsafe is reached by reflection and called through method
 * handles held in static finals, which the JIT compiles to the same plain loads and stores as a
 * direct call, without compiling against an internal API.
 */
final class UnsafeAccess {
  /** Whether the methods below may be used. */
  static final boolean AVAILABLE;

  private static final MethodHandle GET_LONG; // (long address) long
  private static final MethodHandle PUT_LONG; // (long address, long value) void
  private static final MethodHandle PUT_INT; // (long address, int value) void

  static {
    MethodHandle getLong = null;
    MethodHandle putLong = null;
    MethodHandle putInt = null;
    if (Runtime.version().feature() <= 23) {
      try {
        Class<?> type = Class.forName("sun.misc.Unsafe");
        Field instance = type.getDeclaredField("theUnsafe");
        instance.setAccessible(true);
        Object unsafe = instance.get(null);
        MethodHandles.Lookup lookup = MethodHandles.publicLookup();
        getLong =
            lookup
                .findVirtual(type, "getLong", MethodType.methodType(long.class, long.class))
                .bindTo(unsafe);
        putLong =
            lookup
                .findVirtual(
                    type, "putLong", MethodType.methodType(void.class, long.class, long.class))
                .bindTo(unsafe);
        putInt =
            lookup
                .findVirtual(
                    type, "putInt", MethodType.methodType(void.class, long.class, int.class))
                .bindTo(unsafe);
      } catch (ReflectiveOperationException | RuntimeException e) {
        getLong = null; // a JDK without a usable Unsafe: the ByteBuffer path is used
      }
    }
    AVAILABLE = getLong != null && putLong != null && putInt != null;
    GET_LONG = getLong;
    PUT_LONG = putLong;
    PUT_INT = putInt;
  }

  private UnsafeAccess() {}

  static long getLong(long address) {
    try {
      return (long) GET_LONG.invokeExact(address);
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  static void putLong(long address, long value) {
    try {
      PUT_LONG.invokeExact(address, value);
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  static void putInt(long address, int value) {
    try {
      PUT_INT.invokeExact(address, value);
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }
}
