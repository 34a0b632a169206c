package io.ctxprof;

/**
 * The fast path to one thread's context: a handle bound to the thread that created it (with
 * {@link ContextSetter#forCurrentThread()}) and to that setter's attribute slots. Keep it where
 * the thread's per-request work can reach it without a lookup (a tracer's per-thread state, a
 * worker's field) and use it only on its own thread.
 *
 * <p>Each method is {@link ContextSetter}'s method of the same name without the lookup that
 * finds the calling thread's block, and {@link #setAttribute(int, AttributeValue)}
 * also without the value's hash lookup. What a call does on a platform thread: compare {@code
 * Thread.currentThread()} with the handle's thread, check the slot against the setter's, then
 * the seqlock write of docs/JAVA.md straight into the block. No JNI, allocation or lock.
 *
 * <p>Misuse is refused, not silently written: a handle used on any other thread than its own
 * throws {@link IllegalStateException} before writing anything (a second writer would break the
 * block's single-writer seqlock and let the profiler read a mix of two contexts). The check is
 * part of every write and of the fast-path figures in docs/PERFORMANCE.md: {@code
 * Thread.currentThread()} is a JIT intrinsic (a load from the thread register), so it is two
 * loads and a compare. A handle can be kept for the thread's life; after the thread ends, no
 * thread can use it.
 *
 * <p>Scopes opened here are the same as {@link ContextSetter#open}'s: no allocation, one reused
 * object per nesting depth (see {@link ContextScope} for what that means for a kept reference).
 *
 * <p>On a virtual thread (JDK 21+) the handle belongs to the virtual thread and writes through
 * JNI into the block of whichever carrier runs it, exactly like ContextSetter; a handle is not
 * faster there, but it is correct.
 */
public final class ThreadHandle {
  private final ThreadContext context;
  private final Thread owner;
  private final int ownSlots; // the setter's slots, bit i for slot i

  ThreadHandle(ThreadContext context, int ownSlots) {
    this.context = context;
    this.owner = context.owner;
    this.ownSlots = ownSlots;
  }

  /** The thread this handle writes for. */
  public Thread thread() {
    return owner;
  }

  /**
   * Sets attribute {@code offset} to a value interned once with {@link ContextSetter#value}
   * (null clears the attribute).
   *
   * @return false when {@code offset} is not a slot of this handle's setter (nothing is written),
   *     or when the value was not recorded because the dictionary was full
   * @throws IllegalStateException when called on another thread than the handle's
   */
  public boolean setAttribute(int offset, AttributeValue value) {
    checkThread();
    return isOwnSlot(offset) && ContextSetter.writeAttribute(context, offset, idOf(value));
  }

  /**
   * Sets attribute {@code offset} to {@code value} (null clears it), finding its id in the
   * shared cache like {@link ContextSetter#setAttribute(int, String)}.
   *
   * @return as {@link #setAttribute(int, AttributeValue)}
   * @throws IllegalStateException when called on another thread than the handle's
   */
  public boolean setAttribute(int offset, String value) {
    checkThread();
    return isOwnSlot(offset) && ContextSetter.writeAttribute(context, offset, ValueIds.idOf(value));
  }

  /**
   * Clears attribute {@code offset}; ignored for an offset that is not this setter's.
   *
   * @throws IllegalStateException when called on another thread than the handle's
   */
  public void clearAttribute(int offset) {
    checkThread();
    if (isOwnSlot(offset)) {
      context.setAttribute(offset, 0);
    }
  }

  /**
   * Sets the trace id (high and low 64 bits) and span id; 0 means none. Attributes keep their
   * values.
   *
   * @throws IllegalStateException when called on another thread than the handle's
   */
  public void setTraceContext(long traceIdHigh, long traceIdLow, long spanId) {
    checkThread();
    context.setTraceContext(traceIdHigh, traceIdLow, spanId);
  }

  /**
   * Clears the trace id, span id and all attributes.
   *
   * @throws IllegalStateException when called on another thread than the handle's
   */
  public void clear() {
    checkThread();
    context.clear();
  }

  /**
   * Opens a scope as {@link ContextSetter#open}: sets the trace context now; closing the scope
   * (on this thread) restores the previous trace, span and every attribute in one write.
   *
   * @throws IllegalStateException when called on another thread than the handle's
   */
  public ContextScope open(long traceIdHigh, long traceIdLow, long spanId) {
    checkThread();
    ContextScope scope = context.push();
    context.setTraceContext(traceIdHigh, traceIdLow, spanId);
    return scope;
  }

  // The public methods and these helpers stay under 35 bytes of bytecode each, so the JIT
  // inlines them at any call site, hot or not (a handle whose methods are not inlined pays a
  // call per write, and a scope opened through one escapes).

  private boolean isOwnSlot(int offset) {
    return ContextSetter.isSlotOf(ownSlots, offset);
  }

  private static int idOf(AttributeValue value) {
    return value == null ? 0 : value.id;
  }

  /**
   * Opens a scope and sets the trace context and attribute {@code offset} in one write (one
   * sequence bump instead of two): {@link #open(long, long, long)} followed by {@link
   * #setAttribute(int, AttributeValue)}, for a span that starts with its attribute known.
   *
   * @throws IllegalArgumentException when {@code offset} is not an attribute of this handle's
   *     setter (nothing is written)
   * @throws IllegalStateException when called on another thread than the handle's
   */
  public ContextScope open(
      long traceIdHigh, long traceIdLow, long spanId, int offset, AttributeValue value) {
    return open(traceIdHigh, traceIdLow, spanId, offset, value, offset, value);
  }

  /**
   * Opens a scope and sets the trace context and two attributes in one write: {@link #open(long,
   * long, long)} followed by two {@link #setAttribute(int, AttributeValue)} calls, for a span that
   * starts with its attributes known. Closing the scope restores the previous context, these
   * attributes included, as usual. A value the dictionary could not record is written as
   * "dictionary full" ({@link AttributeValue#isRecorded()}).
   *
   * @throws IllegalArgumentException when an offset is not an attribute of this handle's setter
   *     (nothing is written)
   * @throws IllegalStateException when called on another thread than the handle's
   */
  public ContextScope open(
      long traceIdHigh,
      long traceIdLow,
      long spanId,
      int offset1,
      AttributeValue value1,
      int offset2,
      AttributeValue value2) {
    checkThread();
    checkSlot(offset1);
    checkSlot(offset2);
    ContextScope scope = context.push();
    context.setTraceAndAttributes(
        traceIdHigh, traceIdLow, spanId, offset1, idOf(value1), offset2, idOf(value2));
    return scope;
  }

  private void checkSlot(int offset) {
    if (!isOwnSlot(offset)) {
      throw new IllegalArgumentException(
          "offset "
              + offset
              + " is not an attribute of this handle's ContextSetter: use its offsetOf(name)");
    }
  }

  private void checkThread() {
    if (Thread.currentThread() != owner) {
      throw wrongThread();
    }
  }

  private IllegalStateException wrongThread() {
    return new IllegalStateException(
        "ThreadHandle of thread '"
            + owner.getName()
            + "' used on thread '"
            + Thread.currentThread().getName()
            + "': a handle writes only its own thread's context; call"
            + " ContextSetter.forCurrentThread() on each thread and keep the handle there");
  }
}
