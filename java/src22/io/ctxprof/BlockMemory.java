package io.ctxprof;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
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
 * offset's bounds and alignment check (a compare and a test against constants) and the mov.
 */
final class BlockMemory {
  static final String KIND = "MemorySegment";

  private static final MemorySegment MAP = MemorySegment.ofBuffer(Native.contextMap0());

  private BlockMemory() {}

  static long offsetOf(ByteBuffer block) {
    return MemorySegment.ofBuffer(block).address() - MAP.address();
  }

  static long getLong(long offset) {
    return MAP.get(ValueLayout.JAVA_LONG, offset);
  }

  static void putLong(long offset, long value) {
    MAP.set(ValueLayout.JAVA_LONG, offset, value);
  }

  static void putInt(long offset, int value) {
    MAP.set(ValueLayout.JAVA_INT, offset, value);
  }
}
