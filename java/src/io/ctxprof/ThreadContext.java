package io.ctxprof;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The calling thread's context: where its writes go. One instance per thread, used only by that
 * thread (a ThreadLocal), so nothing here is shared or locked.
 *
 * <p>Platform threads write their native block directly (through sun.misc.Unsafe at the block's
 * address where that is silent, JDK 23 and older, else through a direct ByteBuffer), with the
 * same seqlock as the native writer (context/context_block.h): the sequence is made odd, a
 * store-store fence keeps that store ahead of the field stores, the fields are written, and a
 * release fence keeps them ahead of the store that makes the sequence even again. That pairs
 * with the native reader's acquire load, acquire fence and re-check, so a signal handler or the
 * wall sampler sees either the whole previous or the whole new context. Each access is an
 * aligned 4- or 8-byte store in native order, a single instruction on x86-64 and AArch64; a
 * field torn by some other platform would still be caught by the sequence check. The
 * sequence is re-read on every write rather than cached, because native code on the same thread
 * (thread start/end hooks, the C API) also writes the block.
 *
 * <p>Virtual threads, and threads whose tid has no block, write through JNI: a native frame pins
 * the virtual thread to its carrier for the duration of the call, so the write lands in the
 * block of the carrier it is running on. They keep a Java-side copy of their context, which is
 * what scopes save and restore.
 */
abstract class ThreadContext {
  private static final MethodHandle IS_VIRTUAL = findIsVirtual();
  private static final ThreadLocal<ThreadContext> CURRENT =
      ThreadLocal.withInitial(ThreadContext::create);

  static ThreadContext current() {
    return CURRENT.get();
  }

  abstract void setAttribute(int slot, int id);

  abstract void setTraceContext(long traceIdHigh, long traceIdLow, long spanId);

  /** Writes a whole context at once. */
  abstract void setAll(long traceIdHigh, long traceIdLow, long spanId, int[] attributes);

  abstract void clear();

  /** Copies the current context into {@code scope}'s saved fields. */
  abstract void save(ContextScope scope);

  /** Writes {@code scope}'s saved context back, as one write. */
  abstract void restore(ContextScope scope);

  private static ThreadContext create() {
    Profiler.getInstance(); // binds the library
    if (!isVirtual(Thread.currentThread())) {
      ByteBuffer block = Native.threadBlock0();
      if (block != null) {
        long address = UnsafeAccess.AVAILABLE ? Native.blockAddress0(block) : 0;
        return address != 0 ? new AddressContext(address) : new BufferContext(block);
      }
    }
    return new JniContext();
  }

  private static MethodHandle findIsVirtual() {
    try {
      return MethodHandles.publicLookup()
          .findVirtual(Thread.class, "isVirtual", MethodType.methodType(boolean.class));
    } catch (ReflectiveOperationException e) {
      return null; // before JDK 21 there are no virtual threads
    }
  }

  static boolean isVirtual(Thread thread) {
    if (IS_VIRTUAL == null) {
      return false;
    }
    try {
      return (boolean) IS_VIRTUAL.invokeExact(thread);
    } catch (Throwable e) {
      throw new IllegalStateException("Thread.isVirtual failed", e);
    }
  }

  /**
   * A platform thread's own native block, written in place with the seqlock. Subclasses only
   * say how an aligned 8- or 4-byte field of the block is read and written.
   */
  abstract static class BlockContext extends ThreadContext {
    private static final int SEQUENCE = ContextLayout.SEQUENCE;
    private static final int TRACE_HIGH = ContextLayout.TRACE_ID_HIGH;
    private static final int TRACE_LOW = ContextLayout.TRACE_ID_LOW;
    private static final int SPAN = ContextLayout.SPAN_ID;
    private static final int SLOTS = ContextLayout.ATTRIBUTE_SLOTS;

    abstract long getLong(int offset);

    abstract void putLong(int offset, long value);

    abstract void putInt(int offset, int value);

    private long beginWrite() {
      long before = getLong(SEQUENCE);
      putLong(SEQUENCE, before + 1);
      VarHandle.storeStoreFence(); // the odd sequence is visible before any field store
      return before;
    }

    private void endWrite(long before) {
      VarHandle.releaseFence(); // every field store is visible before the even sequence
      putLong(SEQUENCE, before + 2);
    }

    @Override
    final void setAttribute(int slot, int id) {
      long before = beginWrite();
      putInt(ContextLayout.attribute(slot), id);
      endWrite(before);
    }

    @Override
    final void setTraceContext(long traceIdHigh, long traceIdLow, long spanId) {
      long before = beginWrite();
      putLong(TRACE_HIGH, traceIdHigh);
      putLong(TRACE_LOW, traceIdLow);
      putLong(SPAN, spanId);
      endWrite(before);
    }

    @Override
    final void setAll(long traceIdHigh, long traceIdLow, long spanId, int[] values) {
      long before = beginWrite();
      putLong(TRACE_HIGH, traceIdHigh);
      putLong(TRACE_LOW, traceIdLow);
      putLong(SPAN, spanId);
      for (int slot = 0; slot < SLOTS; slot++) {
        putInt(ContextLayout.attribute(slot), values[slot]);
      }
      endWrite(before);
    }

    @Override
    final void clear() {
      long before = beginWrite();
      putLong(TRACE_HIGH, 0L);
      putLong(TRACE_LOW, 0L);
      putLong(SPAN, 0L);
      for (int slot = 0; slot < SLOTS; slot += 2) {
        putLong(ContextLayout.attribute(slot), 0L); // two slots per store
      }
      endWrite(before);
    }

    @Override
    final void save(ContextScope scope) {
      // Only this thread writes the block, so plain reads see its own last write.
      scope.traceIdHigh = getLong(TRACE_HIGH);
      scope.traceIdLow = getLong(TRACE_LOW);
      scope.spanId = getLong(SPAN);
      scope.attributes01 = getLong(ContextLayout.attribute(0));
      scope.attributes23 = getLong(ContextLayout.attribute(2));
      scope.attributes45 = getLong(ContextLayout.attribute(4));
      scope.attributes67 = getLong(ContextLayout.attribute(6));
    }

    @Override
    final void restore(ContextScope scope) {
      // Attribute pairs are stored as longs: the same bytes in native order as two ints.
      long before = beginWrite();
      putLong(TRACE_HIGH, scope.traceIdHigh);
      putLong(TRACE_LOW, scope.traceIdLow);
      putLong(SPAN, scope.spanId);
      putLong(ContextLayout.attribute(0), scope.attributes01);
      putLong(ContextLayout.attribute(2), scope.attributes23);
      putLong(ContextLayout.attribute(4), scope.attributes45);
      putLong(ContextLayout.attribute(6), scope.attributes67);
      endWrite(before);
    }
  }

  /**
   * The block through a direct ByteBuffer in native order: portable and warning-free on every
   * JDK, but each access pays the buffer's bounds and byte-order checks.
   */
  static final class BufferContext extends BlockContext {
    private final ByteBuffer block;

    BufferContext(ByteBuffer block) {
      this.block = block.order(ByteOrder.nativeOrder());
    }

    @Override
    long getLong(int offset) {
      return block.getLong(offset);
    }

    @Override
    void putLong(int offset, long value) {
      block.putLong(offset, value);
    }

    @Override
    void putInt(int offset, int value) {
      block.putInt(offset, value);
    }
  }

  /**
   * The block at its address through sun.misc.Unsafe (UnsafeAccess): plain movs, about a third
   * of the buffer's cost per write. Only where Unsafe's memory access is silent (JDK <= 23).
   */
  static final class AddressContext extends BlockContext {
    private final long address;

    AddressContext(long address) {
      this.address = address;
    }

    @Override
    long getLong(int offset) {
      return UnsafeAccess.getLong(address + offset);
    }

    @Override
    void putLong(int offset, long value) {
      UnsafeAccess.putLong(address + offset, value);
    }

    @Override
    void putInt(int offset, int value) {
      UnsafeAccess.putInt(address + offset, value);
    }
  }

  /** Writes through JNI into the current carrier's block, keeping a Java-side copy. */
  static final class JniContext extends ThreadContext {
    private long traceHigh;
    private long traceLow;
    private long span;
    private final int[] values;

    JniContext() {
      values = new int[ContextLayout.ATTRIBUTE_SLOTS];
    }

    @Override
    void setAttribute(int slot, int id) {
      values[slot] = id;
      Native.setAttributeJni0(slot, id);
    }

    @Override
    void setTraceContext(long traceIdHigh, long traceIdLow, long spanId) {
      traceHigh = traceIdHigh;
      traceLow = traceIdLow;
      span = spanId;
      Native.setTraceContextJni0(traceIdHigh, traceIdLow, spanId);
    }

    @Override
    void setAll(long traceIdHigh, long traceIdLow, long spanId, int[] attributes) {
      traceHigh = traceIdHigh;
      traceLow = traceIdLow;
      span = spanId;
      System.arraycopy(attributes, 0, values, 0, values.length);
      Native.setAllJni0(traceIdHigh, traceIdLow, spanId, values);
    }

    @Override
    void clear() {
      traceHigh = 0;
      traceLow = 0;
      span = 0;
      java.util.Arrays.fill(values, 0);
      Native.clearJni0();
    }

    @Override
    void save(ContextScope scope) {
      scope.traceIdHigh = traceHigh;
      scope.traceIdLow = traceLow;
      scope.spanId = span;
      scope.attributes01 = ContextScope.pair(values[0], values[1]);
      scope.attributes23 = ContextScope.pair(values[2], values[3]);
      scope.attributes45 = ContextScope.pair(values[4], values[5]);
      scope.attributes67 = ContextScope.pair(values[6], values[7]);
    }

    @Override
    void restore(ContextScope scope) {
      int[] saved = new int[values.length];
      for (int slot = 0; slot < saved.length; slot++) {
        saved[slot] = scope.savedAttribute(slot);
      }
      setAll(scope.traceIdHigh, scope.traceIdLow, scope.spanId, saved);
    }
  }
}
