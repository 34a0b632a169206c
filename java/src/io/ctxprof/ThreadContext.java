package io.ctxprof;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * The calling thread's context: where its writes go. One instance per thread, used only by that
 * thread (found through the ThreadLocal below and the array of recent ones in front of it, or a
 * {@link ThreadHandle} the caller keeps), so nothing here is locked and only that array is
 * shared.
 *
 * <p>Platform threads write their native block in place (BlockContext, through BlockMemory:
 * Unsafe on JDK 21 and older, MemorySegment on JDK 22+) with the same seqlock as the native
 * writer (context/context_block.h); see BlockContext for the ordering. Virtual threads, and
 * threads whose tid has no block, write through JNI: a native frame pins the virtual thread to
 * its carrier for the duration of the call, so the write lands in the block of the carrier it is
 * running on. They keep a Java-side copy of their context, which is what scopes save and restore.
 */
abstract class ThreadContext {
  private static final MethodHandle IS_VIRTUAL = findIsVirtual();
  private static final ThreadLocal<ThreadContext> CURRENT =
      ThreadLocal.withInitial(ThreadContext::create);

  // Platform threads' block contexts by thread id (modulo the size), in front of CURRENT, so
  // that a ContextSetter write finds its block about as cheaply as a ThreadHandle's: a hit is a
  // load of the thread's id, an array load and an identity check of the owner (the ThreadLocal
  // lookup it replaces is a hash probe and a weak-reference check, with calls on its miss paths
  // in the middle of every write). Shared, written with plain stores: a context's owner and
  // block are final, so a thread that sees an entry sees them; a stale or foreign entry fails
  // the owner check and costs the ThreadLocal lookup. Two live threads whose ids collide take
  // turns in the slot. An entry outlives its thread until another thread takes the slot (a dead
  // thread is never current, so it is never returned). Virtual threads are not entered: their
  // contexts write through JNI, where the lookup is not what costs.
  static final int BY_ID_SLOTS = 4096; // a power of two
  private static final ThreadContext[] BY_ID = new ThreadContext[BY_ID_SLOTS];

  /** The thread this context belongs to (contexts are created on their own thread). */
  final Thread owner = Thread.currentThread();

  // The thread's scopes (ContextScope), one per nesting depth, made on first use.
  private ContextScope[] scopes = new ContextScope[4];
  private int depth; // how many of them are open

  static ThreadContext current() {
    Thread thread = Thread.currentThread();
    ThreadContext context = BY_ID[slotOf(thread)];
    return context != null && context.owner == thread ? context : lookUp(thread);
  }

  @SuppressWarnings("deprecation") // Thread.threadId() is JDK 19+; getId() returns the same
  private static int slotOf(Thread thread) {
    return (int) thread.getId() & (BY_ID_SLOTS - 1);
  }

  private static ThreadContext lookUp(Thread thread) {
    ThreadContext context = CURRENT.get();
    if (context instanceof BlockContext) {
      BY_ID[slotOf(thread)] = context;
    }
    return context;
  }

  /** Opens the scope of the next nesting depth: it saves the current context. */
  final ContextScope push() {
    int index = depth;
    ContextScope[] all = scopes;
    ContextScope scope = index < all.length ? all[index] : null;
    if (scope == null) {
      scope = newScope(index);
    }
    depth = index + 1;
    scope.reopen();
    return scope;
  }

  private ContextScope newScope(int index) {
    if (index == scopes.length) {
      scopes = Arrays.copyOf(scopes, 2 * index);
    }
    scopes[index] = new ContextScope(this, index);
    return scopes[index];
  }

  /**
   * {@code scope} was closed. Scopes close innermost first; closing an outer one while inner ones
   * are open (they were never closed) closes those too: its restore undoes their writes anyway.
   */
  final void closed(ContextScope scope) {
    for (int inner = scope.depth + 1; inner < depth; inner++) {
      scopes[inner].closed = true;
    }
    depth = scope.depth;
  }

  abstract void setAttribute(int slot, int id);

  abstract void setTraceContext(long traceIdHigh, long traceIdLow, long spanId);

  /** The trace context and two attribute slots (possibly the same slot twice) as one write. */
  abstract void setTraceAndAttributes(
      long traceIdHigh, long traceIdLow, long spanId, int slot1, int id1, int slot2, int id2);

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
        return new BlockContext(BlockMemory.offsetOf(block), SpanLog.ofCurrentThread());
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
   * A platform thread's own native block, written in place with the seqlock of
   * context/context_block.h; {@code block} is its offset in the context map (BlockMemory).
   *
   * <p>Ordering. Only this thread writes the block (the native writers on this thread — thread
   * start/end hooks, the C API, a virtual thread mounting on this carrier — run between our
   * writes, never inside one), so plain loads see its own last write, and the sequence is
   * re-read on every write rather than cached. A write is:
   *
   * <ol>
   *   <li>load the sequence (even), store sequence + 1 (odd: a write is in progress);
   *   <li>{@code VarHandle.storeStoreFence()}: the odd sequence becomes visible before any field
   *       store (the C++ writer's release fence after the odd store);
   *   <li>the field stores, each an aligned 4- or 8-byte store (single-copy atomic);
   *   <li>{@code VarHandle.releaseFence()}, then store sequence + 2 (even): every field store is
   *       visible before the even sequence (the C++ writer's release store).
   * </ol>
   *
   * That pairs with the native reader's acquire load of the sequence, acquire fence and re-check
   * (ReadBlock), so a signal handler on this thread or the wall sampler on another sees either
   * the whole previous or the whole new context: a reader that copies fields while a write is in
   * progress sees an odd sequence or a changed one and discards the copy. On x86-64 (TSO) both
   * fences emit no instruction; they still forbid the JIT to move stores across them, which is
   * what a same-thread signal handler needs. On AArch64 they are a {@code dmb ishst} and a {@code
   * dmb ish}. Each write is complete in memory before the next begins, so a reader never sees
   * two writes' fields under one even sequence.
   *
   * <p>Timed spans (SpanLog): before each write, the interval of the context it replaces is
   * ended in the thread's span log, and the new interval's begin is stored inside the write, so
   * a reader that brackets it with the sequence sees it with its context.
   *
   * <p>OpenTelemetry (OtelRecord): while {@code otelcontext=true} publishing is on, each write
   * then refreshes the thread's OTEP 4947 record from the block; off, the check is the load of
   * a volatile static (OtelRecord.publishing).
   */
  static final class BlockContext extends ThreadContext {
    private static final int SEQUENCE = ContextLayout.SEQUENCE;
    private static final int TRACE_HIGH = ContextLayout.TRACE_ID_HIGH;
    private static final int TRACE_LOW = ContextLayout.TRACE_ID_LOW;
    private static final int SPAN = ContextLayout.SPAN_ID;
    private static final int ATTRIBUTES = ContextLayout.ATTRIBUTES;
    private static final int SLOTS = ContextLayout.ATTRIBUTE_SLOTS;

    final long block; // offset of the thread's block in the map
    final long log; // the thread's span log (offset in the map), -1 when untimed
    private long logTail; // the log's tail as this thread loaded it last (SpanLog.append)
    private OtelRecord otel; // the thread's OpenTelemetry record once publishing is on
    private boolean otelRefused; // every record was taken: publish nothing, ask no more

    BlockContext(long block, long log) {
      this.block = block;
      this.log = log;
    }

    /** After a write: the record follows the block. */
    private void publishOtel() {
      OtelRecord record = otel;
      if (record != null) {
        record.refresh(block);
      } else if (!otelRefused) {
        attachOtel();
      }
    }

    private void attachOtel() {
      otel = OtelRecord.ofCurrentThread();
      otelRefused = otel == null;
      if (otel != null) {
        otel.refresh(block);
      }
    }

    /** Ends the open interval now (SpanLog); returns now, or 0 when writes are untimed. */
    private long endInterval() {
      if (!SpanLog.TIMED || log < 0) {
        return 0;
      }
      long now = SpanClock.now();
      long high = BlockMemory.getLong(block + TRACE_HIGH);
      long low = BlockMemory.getLong(block + TRACE_LOW);
      long span = BlockMemory.getLong(block + SPAN);
      long a01 = getAttributePair(0);
      long a23 = getAttributePair(2);
      long a45 = getAttributePair(4);
      long a67 = getAttributePair(6);
      if ((high | low | span | a01 | a23 | a45 | a67) != 0) {
        logTail = SpanLog.append(log, logTail, now, high, low, span, a01, a23, a45, a67);
      }
      return now;
    }

    private long beginWrite() {
      long before = BlockMemory.getLong(block + SEQUENCE);
      BlockMemory.putLong(block + SEQUENCE, before + 1);
      VarHandle.storeStoreFence(); // the odd sequence is visible before any field store
      return before;
    }

    private void endWrite(long before, long now) {
      if (now != 0) {
        BlockMemory.putLong(log + SpanLog.OPEN_BEGIN, now); // the next interval's begin
      }
      VarHandle.releaseFence(); // every field store is visible before the even sequence
      BlockMemory.putLong(block + SEQUENCE, before + 2);
      if (OtelRecord.publishing) {
        publishOtel();
      }
    }

    private void putTrace(long traceIdHigh, long traceIdLow, long spanId) {
      BlockMemory.putLong(block + TRACE_HIGH, traceIdHigh);
      BlockMemory.putLong(block + TRACE_LOW, traceIdLow);
      BlockMemory.putLong(block + SPAN, spanId);
    }

    private void putAttribute(int slot, int id) {
      BlockMemory.putInt(block + ATTRIBUTES + slot * Integer.BYTES, id);
    }

    /** Slots {@code evenSlot} and {@code evenSlot + 1} as one 8-byte store (ContextScope.pair). */
    private void putAttributePair(int evenSlot, long pair) {
      BlockMemory.putLong(block + ATTRIBUTES + evenSlot * Integer.BYTES, pair);
    }

    private long getAttributePair(int evenSlot) {
      return BlockMemory.getLong(block + ATTRIBUTES + evenSlot * Integer.BYTES);
    }

    @Override
    void setAttribute(int slot, int id) {
      long now = endInterval();
      long before = beginWrite();
      putAttribute(slot, id);
      endWrite(before, now);
    }

    @Override
    void setTraceContext(long traceIdHigh, long traceIdLow, long spanId) {
      long now = endInterval();
      long before = beginWrite();
      putTrace(traceIdHigh, traceIdLow, spanId);
      endWrite(before, now);
    }

    @Override
    void setTraceAndAttributes(
        long traceIdHigh, long traceIdLow, long spanId, int slot1, int id1, int slot2, int id2) {
      long now = endInterval();
      long before = beginWrite();
      putTrace(traceIdHigh, traceIdLow, spanId);
      putAttribute(slot1, id1);
      putAttribute(slot2, id2);
      endWrite(before, now);
    }

    @Override
    void setAll(long traceIdHigh, long traceIdLow, long spanId, int[] values) {
      long now = endInterval();
      long before = beginWrite();
      putTrace(traceIdHigh, traceIdLow, spanId);
      for (int slot = 0; slot < SLOTS; slot++) {
        putAttribute(slot, values[slot]);
      }
      endWrite(before, now);
    }

    @Override
    void clear() {
      long now = endInterval();
      long before = beginWrite();
      putTrace(0L, 0L, 0L);
      for (int slot = 0; slot < SLOTS; slot += 2) {
        putAttributePair(slot, 0L);
      }
      endWrite(before, now);
    }

    @Override
    void save(ContextScope scope) {
      // Only this thread writes the block, so plain loads see its own last write.
      scope.traceIdHigh = BlockMemory.getLong(block + TRACE_HIGH);
      scope.traceIdLow = BlockMemory.getLong(block + TRACE_LOW);
      scope.spanId = BlockMemory.getLong(block + SPAN);
      scope.attributes01 = getAttributePair(0);
      scope.attributes23 = getAttributePair(2);
      scope.attributes45 = getAttributePair(4);
      scope.attributes67 = getAttributePair(6);
    }

    @Override
    void restore(ContextScope scope) {
      long now = endInterval();
      long before = beginWrite();
      putTrace(scope.traceIdHigh, scope.traceIdLow, scope.spanId);
      putAttributePair(0, scope.attributes01);
      putAttributePair(2, scope.attributes23);
      putAttributePair(4, scope.attributes45);
      putAttributePair(6, scope.attributes67);
      endWrite(before, now);
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
    void setTraceAndAttributes(
        long traceIdHigh, long traceIdLow, long spanId, int slot1, int id1, int slot2, int id2) {
      values[slot1] = id1;
      values[slot2] = id2;
      setAll(traceIdHigh, traceIdLow, spanId, values);
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
      Arrays.fill(values, 0);
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
