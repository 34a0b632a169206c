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
 * <p>Platform threads write their native block directly through a direct ByteBuffer, with the
 * same seqlock as the native writer (context/context_block.h): the sequence is made odd with an
 * opaque store, a store-store fence keeps it ahead of the field stores, the fields are written
 * with opaque stores (atomic, never torn), and the sequence is made even with a release store.
 * That pairs with the native reader's acquire load, acquire fence and re-check, so a signal
 * handler or the wall sampler sees either the whole previous or the whole new context. The
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

  final ValueIds ids = new ValueIds();

  static ThreadContext current() {
    return CURRENT.get();
  }

  abstract void setAttribute(int slot, int id);

  abstract void setTraceContext(long traceIdHigh, long traceIdLow, long spanId);

  /** Writes a whole context at once (used by scopes to restore). */
  abstract void setAll(long traceIdHigh, long traceIdLow, long spanId, int[] attributes);

  abstract void clear();

  /** Copies the current context into {@code ids} (trace high, trace low, span) and attributes. */
  abstract void read(long[] ids, int[] attributes);

  private static ThreadContext create() {
    ContextLayout layout = Profiler.layout();
    if (!isVirtual(Thread.currentThread())) {
      ByteBuffer block = Native.threadBlock0();
      if (block != null) {
        return new BufferContext(block.order(ByteOrder.nativeOrder()), layout);
      }
    }
    return new JniContext(layout.attributeSlots);
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

  /** A platform thread's own native block, written in place. */
  static final class BufferContext extends ThreadContext {
    private static final VarHandle LONGS =
        MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());
    private static final VarHandle INTS =
        MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.nativeOrder());

    private final ByteBuffer block;
    private final int sequence;
    private final int traceHigh;
    private final int traceLow;
    private final int span;
    private final int attributes;
    private final int slots;

    BufferContext(ByteBuffer block, ContextLayout layout) {
      this.block = block;
      this.sequence = layout.sequenceOffset;
      this.traceHigh = layout.traceIdHighOffset;
      this.traceLow = layout.traceIdLowOffset;
      this.span = layout.spanIdOffset;
      this.attributes = layout.attributesOffset;
      this.slots = layout.attributeSlots;
    }

    private long beginWrite() {
      long before = (long) LONGS.getOpaque(block, sequence);
      LONGS.setOpaque(block, sequence, before + 1);
      VarHandle.storeStoreFence();
      return before;
    }

    private void endWrite(long before) {
      LONGS.setRelease(block, sequence, before + 2);
    }

    @Override
    void setAttribute(int slot, int id) {
      long before = beginWrite();
      INTS.setOpaque(block, attributes + slot * Integer.BYTES, id);
      endWrite(before);
    }

    @Override
    void setTraceContext(long traceIdHigh, long traceIdLow, long spanId) {
      long before = beginWrite();
      LONGS.setOpaque(block, traceHigh, traceIdHigh);
      LONGS.setOpaque(block, traceLow, traceIdLow);
      LONGS.setOpaque(block, span, spanId);
      endWrite(before);
    }

    @Override
    void setAll(long traceIdHigh, long traceIdLow, long spanId, int[] values) {
      long before = beginWrite();
      LONGS.setOpaque(block, traceHigh, traceIdHigh);
      LONGS.setOpaque(block, traceLow, traceIdLow);
      LONGS.setOpaque(block, span, spanId);
      for (int slot = 0; slot < slots; slot++) {
        INTS.setOpaque(block, attributes + slot * Integer.BYTES, values[slot]);
      }
      endWrite(before);
    }

    @Override
    void clear() {
      long before = beginWrite();
      LONGS.setOpaque(block, traceHigh, 0L);
      LONGS.setOpaque(block, traceLow, 0L);
      LONGS.setOpaque(block, span, 0L);
      for (int slot = 0; slot < slots; slot++) {
        INTS.setOpaque(block, attributes + slot * Integer.BYTES, 0);
      }
      endWrite(before);
    }

    @Override
    void read(long[] ids, int[] values) {
      // Only this thread writes the block, so plain reads see its own last write.
      ids[0] = (long) LONGS.get(block, traceHigh);
      ids[1] = (long) LONGS.get(block, traceLow);
      ids[2] = (long) LONGS.get(block, span);
      for (int slot = 0; slot < slots; slot++) {
        values[slot] = (int) INTS.get(block, attributes + slot * Integer.BYTES);
      }
    }
  }

  /** Writes through JNI into the current carrier's block, keeping a Java-side copy. */
  static final class JniContext extends ThreadContext {
    private long traceHigh;
    private long traceLow;
    private long span;
    private final int[] values;

    JniContext(int slots) {
      values = new int[slots];
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
    void read(long[] ids, int[] attributes) {
      ids[0] = traceHigh;
      ids[1] = traceLow;
      ids[2] = span;
      System.arraycopy(values, 0, attributes, 0, values.length);
    }
  }
}
