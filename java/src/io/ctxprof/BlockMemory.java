package io.ctxprof;

import java.lang.invoke.CallSite;
import java.lang.invoke.LambdaMetafactory;
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
 *       Unsafe is reached by reflection, without compiling against an internal API, and each of
 *       its methods used here is bound once to a small interface below by {@link
 *       LambdaMetafactory}: the generated class calls Unsafe directly, so an access inlines
 *       three methods (the interface's, Unsafe's, the VM's intrinsic) and no exception handler
 *       (through a method handle's {@code invokeExact}, ten in a try/catch: a ContextSetter span
 *       then outgrew C2's inlining budget, docs/JAVA.md);
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

  // Unsafe's methods, each bound to the Unsafe instance (LambdaMetafactory captures it).
  interface LongLoad {
    long getLong(long address);
  }

  interface LongStore {
    void putLong(long address, long value);
  }

  interface IntStore {
    void putInt(long address, int value);
  }

  interface ByteStore {
    void putByte(long address, byte value);
  }

  interface Copy { // Unsafe.copyMemory(source, source offset, target, target offset, bytes)
    void copyMemory(Object source, long sourceOffset, Object target, long targetOffset, long bytes);
  }

  private static final long BASE; // the map's address
  private static final ByteBuffer MAP; // the whole map (fallback), native order
  // Unsafe's, or the fallback's over MAP: one class each, so every call site is monomorphic.
  private static final LongLoad GET_LONG;
  private static final LongStore PUT_LONG;
  private static final IntStore PUT_INT;
  private static final ByteStore PUT_BYTE;
  private static final Copy COPY;
  private static final long BYTES_BASE; // offset of a byte[]'s first element (Unsafe)

  static {
    ByteBuffer map = Native.contextMap0().order(ByteOrder.nativeOrder());
    BASE = Native.blockAddress0(map);
    LongLoad getLong = null;
    LongStore putLong = null;
    IntStore putInt = null;
    ByteStore putByte = null;
    Copy copy = null;
    long bytesBase = 0;
    if (Runtime.version().feature() <= 23) {
      try {
        Class<?> type = Class.forName("sun.misc.Unsafe");
        Field instance = type.getDeclaredField("theUnsafe");
        instance.setAccessible(true);
        Object unsafe = instance.get(null);
        getLong = bind(LongLoad.class, type, unsafe, "getLong", long.class, long.class);
        putLong = bind(LongStore.class, type, unsafe, "putLong", void.class, long.class, long.class);
        putInt = bind(IntStore.class, type, unsafe, "putInt", void.class, long.class, int.class);
        putByte = bind(ByteStore.class, type, unsafe, "putByte", void.class, long.class, byte.class);
        copy =
            bind(
                Copy.class,
                type,
                unsafe,
                "copyMemory",
                void.class,
                Object.class,
                long.class,
                Object.class,
                long.class,
                long.class);
        bytesBase =
            (int)
                MethodHandles.publicLookup()
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
    MAP = unsafe ? null : map;
    GET_LONG = unsafe ? getLong : address -> MAP.getLong(indexOf(address));
    PUT_LONG = unsafe ? putLong : (address, value) -> MAP.putLong(indexOf(address), value);
    PUT_INT = unsafe ? putInt : (address, value) -> MAP.putInt(indexOf(address), value);
    PUT_BYTE = unsafe ? putByte : (address, value) -> MAP.put(indexOf(address), value);
    COPY = unsafe ? copy : BlockMemory::copyIntoMap;
    BYTES_BASE = bytesBase;
  }

  private static int indexOf(long address) {
    return (int) (address - BASE);
  }

  /** The fallback's Copy: {@code source} is a byte[] and {@code target} null, as copy() calls. */
  private static void copyIntoMap(
      Object source, long sourceOffset, Object target, long targetAddress, long bytes) {
    ByteBuffer into = MAP.duplicate(); // release 11 has no absolute bulk put
    into.position(indexOf(targetAddress));
    into.put((byte[]) source, (int) sourceOffset, (int) bytes);
  }

  /**
   * An instance of {@code face} whose one method calls {@code unsafe}'s public method {@code
   * name} with the same parameters.
   */
  private static <T> T bind(
      Class<T> face, Class<?> type, Object unsafe, String name, Class<?> result, Class<?>... parameters)
      throws Throwable {
    MethodType signature = MethodType.methodType(result, parameters);
    MethodHandle method = MethodHandles.publicLookup().findVirtual(type, name, signature);
    CallSite site =
        LambdaMetafactory.metafactory(
            MethodHandles.lookup(),
            face.getMethods()[0].getName(),
            MethodType.methodType(face, type),
            signature,
            method,
            signature);
    return face.cast(site.getTarget().invoke(unsafe));
  }

  private BlockMemory() {}

  /** The offset in the map of {@code block}, a thread's block from {@link Native#threadBlock0}. */
  static long offsetOf(ByteBuffer block) {
    return Native.blockAddress0(block) - BASE;
  }

  // Each method is small enough (< 35 bytes of bytecode) for the JIT to inline it at any call
  // site, hot or not: an access that is not inlined is a call per field.

  static long getLong(long offset) {
    return GET_LONG.getLong(BASE + offset);
  }

  static void putLong(long offset, long value) {
    PUT_LONG.putLong(BASE + offset, value);
  }

  static void putInt(long offset, int value) {
    PUT_INT.putInt(BASE + offset, value);
  }

  static void putByte(long offset, byte value) {
    PUT_BYTE.putByte(BASE + offset, value);
  }

  /** Copies {@code source[0, length)} to {@code offset}. */
  static void copy(byte[] source, int length, long offset) {
    COPY.copyMemory(source, BYTES_BASE, null, BASE + offset, length);
  }
}
