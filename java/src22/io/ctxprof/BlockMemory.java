package io.ctxprof;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;

/**
 * The JDK 22+ version of BlockMemory (java/src/io/ctxprof/BlockMemory.java has the contract):
 * the whole native context map as one {@link MemorySegment} in a static final, written with
 * {@code java.lang.foreign} (final in JDK 22) instead of {@code sun.misc.Unsafe}, whose memory
 * access warns from JDK 24 on (JEP 498).
 *
 * <p>The segment comes from {@link MemorySegment#ofBuffer} over the direct buffer the library
 * hands out for the map, which is not a restricted method (unlike {@code reinterpret}), so this
 * path prints nothing even without {@code --enable-native-access}. Because the segment is a
 * constant, the JIT folds its base address, size and session: what remains per access is the
 * offset's bounds check (a compare against a constant) and the mov. The layouts are the
 * unaligned ones only to spare the JIT an alignment check per access: every offset is a field
 * of a 64-byte-aligned block, so each access is still an aligned, single-copy-atomic mov.
 *
 * <p>Each access inlines ~25 JDK methods, so a span of four separate writes can exceed C2's
 * inlining budget for one method; docs/JAVA.md says what that costs and which leaner paths were
 * tried and not kept.
 */
final class BlockMemory {
  static final String KIND = "MemorySegment";

  private static final MemorySegment MAP = MemorySegment.ofBuffer(Native.contextMap0());
  private static final VarHandle LONG = ValueLayout.JAVA_LONG_UNALIGNED.varHandle();
  private static final VarHandle INT = ValueLayout.JAVA_INT_UNALIGNED.varHandle();

  private BlockMemory() {}

  static long offsetOf(ByteBuffer block) {
    return MemorySegment.ofBuffer(block).address() - MAP.address();
  }

  static long getLong(long offset) {
    return (long) LONG.get(MAP, offset);
  }

  static void putLong(long offset, long value) {
    LONG.set(MAP, offset, value);
  }

  static void putInt(long offset, int value) {
    INT.set(MAP, offset, value);
  }

  static void putByte(long offset, byte value) {
    MAP.set(ValueLayout.JAVA_BYTE, offset, value);
  }

  /** Copies {@code source[0, length)} to {@code offset}. */
  static void copy(byte[] source, int length, long offset) {
    MemorySegment.copy(source, 0, MAP, ValueLayout.JAVA_BYTE, offset, length);
  }
}
