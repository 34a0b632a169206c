package io.ctxprof;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Loads and stores in the native context map, the one mapping that holds every thread's 64-byte
 * block (context/context_map.h; reserved once, never unmapped). A block is named by its byte
 * offset in the map, a {@code long}, so a write path is static methods on constants and one
 * offset: nothing per thread for the JIT to load but that offset.
 *
 * <p>This is the JDK 11–21 version; the jar is multi-release and on JDK 22+ uses
 * META-INF/versions/22/io/ctxprof/BlockMemory.class (java/src22: MemorySegment) when the jar was
 * built with a JDK 22+ javac at hand. Here:
 *
 * <ul>
 *   <li>JDK 23 and older: {@code sun.misc.Unsafe} at the map's address — plain movs, no checks.
 *       Unsafe is reached by reflection and called through method handles in static finals,
 *       which the JIT compiles like a direct call, without compiling against an internal API;
 *   <li>JDK 24+ (only with a jar built without the JDK 22+ version): a direct ByteBuffer over the
 *       whole map. From JDK 24 on, Unsafe's memory access prints a warning (JEP 498), which a
 *       profiler must never make a service print.
 * </ul>
 *
 * <p>Every access is an aligned 4- or 8-byte load or store in native byte order, a single
 * instruction on x86-64 and AArch64. Ordering is the caller's (ThreadContext.BlockContext).
 */
final class BlockMemory {
  /** Which access this JVM uses, for tests and benchmarks. */
  static final String KIND;

  private static final long BASE; // the map's address
  private static final ByteBuffer MAP; // the whole map (fallback), native order
  private static final MethodHandle GET_LONG; // (long address) long, or null
  private static final MethodHandle PUT_LONG; // (long address, long value) void
  private static final MethodHandle PUT_INT; // (long address, int value) void
  private static final MethodHandle PUT_BYTE; // (long address, byte value) void
  // (Object source, long source offset, Object target, long target address, long bytes) void
  private static final MethodHandle COPY;
  private static final long BYTES_BASE; // offset of a byte[]'s first element

  static {
    ByteBuffer map = Native.contextMap0().order(ByteOrder.nativeOrder());
    MethodHandle getLong = null;
    MethodHandle putLong = null;
    MethodHandle putInt = null;
    MethodHandle putByte = null;
    MethodHandle copy = null;
    long bytesBase = 0;
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
        putByte =
            lookup
                .findVirtual(
                    type, "putByte", MethodType.methodType(void.class, long.class, byte.class))
                .bindTo(unsafe);
        copy =
            lookup
                .findVirtual(
                    type,
                    "copyMemory",
                    MethodType.methodType(
                        void.class, Object.class, long.class, Object.class, long.class, long.class))
                .bindTo(unsafe);
        bytesBase =
            (int)
                lookup
                    .findVirtual(
                        type, "arrayBaseOffset", MethodType.methodType(int.class, Class.class))
                    .bindTo(unsafe)
                    .invoke(byte[].class);
      } catch (Throwable e) {
        getLong = null; // a JDK without a usable Unsafe: the ByteBuffer path is used
      }
    }
    boolean unsafe =
        getLong != null && putLong != null && putInt != null && putByte != null && copy != null;
    KIND = unsafe ? "Unsafe" : "ByteBuffer";
    GET_LONG = unsafe ? getLong : null;
    PUT_LONG = putLong;
    PUT_INT = putInt;
    PUT_BYTE = putByte;
    COPY = copy;
    BYTES_BASE = bytesBase;
    BASE = Native.blockAddress0(map);
    MAP = unsafe ? null : map;
  }

  private BlockMemory() {}

  /** The offset in the map of {@code block}, a thread's block from {@link Native#threadBlock0}. */
  static long offsetOf(ByteBuffer block) {
    return Native.blockAddress0(block) - BASE;
  }

  // Each method is small enough (< 35 bytes of bytecode) for the JIT to inline it at any call
  // site, hot or not: an access that is not inlined is a call per field.

  static long getLong(long offset) {
    return GET_LONG != null ? unsafeGetLong(BASE + offset) : MAP.getLong((int) offset);
  }

  static void putLong(long offset, long value) {
    if (GET_LONG != null) {
      unsafePutLong(BASE + offset, value);
    } else {
      MAP.putLong((int) offset, value);
    }
  }

  static void putInt(long offset, int value) {
    if (GET_LONG != null) {
      unsafePutInt(BASE + offset, value);
    } else {
      MAP.putInt((int) offset, value);
    }
  }

  static void putByte(long offset, byte value) {
    if (GET_LONG != null) {
      unsafePutByte(BASE + offset, value);
    } else {
      MAP.put((int) offset, value);
    }
  }

  /** Copies {@code source[0, length)} to {@code offset}. */
  static void copy(byte[] source, int length, long offset) {
    if (GET_LONG != null) {
      unsafeCopy(source, BASE + offset, length);
    } else {
      ByteBuffer target = MAP.duplicate(); // release 11 has no absolute bulk put
      target.position((int) offset);
      target.put(source, 0, length);
    }
  }

  private static void unsafePutByte(long address, byte value) {
    try {
      PUT_BYTE.invokeExact(address, value);
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  private static void unsafeCopy(byte[] source, long address, int length) {
    try {
      COPY.invokeExact((Object) source, BYTES_BASE, (Object) null, address, (long) length);
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  private static long unsafeGetLong(long address) {
    try {
      return (long) GET_LONG.invokeExact(address);
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  private static void unsafePutLong(long address, long value) {
    try {
      PUT_LONG.invokeExact(address, value);
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  private static void unsafePutInt(long address, int value) {
    try {
      PUT_INT.invokeExact(address, value);
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }
}
