package io.ctxprof;

import java.util.List;

/**
 * Sets the calling thread's profiling context: a 128-bit trace id, a span id and up to eight
 * named string attributes. Every CPU and wall-clock sample of the thread carries the context
 * current when it was taken.
 *
 * <p>One ContextSetter is typically created per tracer and shared by all threads: it holds only
 * the attribute slots. Each call writes the <em>calling</em> thread's context.
 *
 * <p>Cost model (platform threads): a write goes straight into the thread's 64-byte native block
 * — finding the thread's block (an array indexed by thread id, the ThreadLocal behind it on a
 * miss), a sequence store, a store-store fence (free on x86), the field stores and a release
 * store; no JNI, no allocation, no lock. {@link #forCurrentThread()} returns a {@link
 * ThreadHandle} that skips finding the block, and {@link #value(String)} an {@link
 * AttributeValue} that skips the value's lookup: the fast path for tracers. An
 * attribute value is mapped to a dictionary id first: a repeated value is found in a shared
 * hash-indexed array (one load and an identity check), else in a shared map; only a value never
 * seen by the process costs a JNI call, to intern it. The process dictionary
 * holds 65,536 values by default; once full, new values are recorded as "dictionary full" and
 * {@link #setAttribute(int, String)} returns false. Virtual threads (JDK 21+) write through one
 * JNI call per operation, so the write lands in the block of the carrier they run on; see
 * docs/JAVA.md for what that guarantees.
 */
public final class ContextSetter {
  private final String[] names;
  private final int[] slots;
  private final int ownSlots; // bit i set when slot i belongs to this setter

  /**
   * Registers {@code attributes} (at most eight names per process in all; names already
   * registered keep their slot) and binds this setter to them.
   *
   * @throws IllegalArgumentException naming the bad attribute (empty, malformed, duplicate, or
   *     too many names)
   */
  public ContextSetter(Profiler profiler, List<String> attributes) {
    if (profiler == null) {
      throw new IllegalArgumentException("profiler is null: use Profiler.getInstance()");
    }
    if (attributes == null) {
      throw new IllegalArgumentException("attributes is null: pass a list of names (may be empty)");
    }
    names = attributes.toArray(new String[0]);
    for (int i = 0; i < names.length; i++) {
      if (names[i] == null) {
        throw new IllegalArgumentException("attribute #" + (i + 1) + " is null");
      }
    }
    String error = Native.registerAttributes0(names);
    if (error != null) {
      throw new IllegalArgumentException(error);
    }
    slots = new int[names.length];
    int mask = 0;
    for (int i = 0; i < names.length; i++) {
      slots[i] = Native.slotOf0(names[i]);
      mask |= 1 << slots[i];
    }
    ownSlots = mask;
  }

  /** The offset (slot) of {@code attribute} for the other methods; -1 when not registered here. */
  public int offsetOf(String attribute) {
    for (int i = 0; i < names.length; i++) {
      if (names[i].equals(attribute)) {
        return slots[i];
      }
    }
    return -1;
  }

  /**
   * Sets attribute {@code offset} of the calling thread to {@code value} (null clears it).
   *
   * @return false when {@code offset} is not a slot of this setter, or when the value could not
   *     be interned because the dictionary is full (the attribute then reads "dictionary full")
   */
  public boolean setAttribute(int offset, String value) {
    if (!isOwnSlot(offset)) {
      return false;
    }
    return writeAttribute(ThreadContext.current(), offset, ValueIds.idOf(value));
  }

  /** {@link #setAttribute(int, String)} by name; false when the name is not registered here. */
  public boolean setAttribute(String attribute, String value) {
    return setAttribute(offsetOf(attribute), value);
  }

  /** Clears attribute {@code offset} of the calling thread; ignored for a foreign offset. */
  public void clearAttribute(int offset) {
    if (isOwnSlot(offset)) {
      ThreadContext.current().setAttribute(offset, 0);
    }
  }

  /** Sets the calling thread's trace id (high and low 64 bits) and span id; 0 means none. */
  public void setTraceContext(long traceIdHigh, long traceIdLow, long spanId) {
    ThreadContext.current().setTraceContext(traceIdHigh, traceIdLow, spanId);
  }

  /** Clears the calling thread's trace id, span id and all attributes. */
  public void clear() {
    ThreadContext.current().clear();
  }

  /**
   * Opens a scope: sets the trace context now and restores the thread's previous context (trace,
   * span and every attribute) when the scope closes. Use with try-with-resources on the thread
   * that opened it; attributes set inside the scope are undone too.
   *
   * <pre>{@code
   * try (ContextScope scope = setter.open(traceHigh, traceLow, spanId)) {
   *   setter.setAttribute(endpoint, "/checkout");
   *   handle(request);
   * } // the previous context is back
   * }</pre>
   */
  public ContextScope open(long traceIdHigh, long traceIdLow, long spanId) {
    ThreadContext context = ThreadContext.current();
    ContextScope scope = context.push();
    context.setTraceContext(traceIdHigh, traceIdLow, spanId);
    return scope;
  }

  /**
   * {@code value} interned in the profiler's dictionary, for {@link
   * ThreadHandle#setAttribute(int, AttributeValue)}: get it once (the first time a value is seen
   * by the process this is a JNI call) and keep it; setting it then costs no lookup. When the
   * dictionary is full the value is recorded as "dictionary full" ({@link
   * AttributeValue#isRecorded()} is false).
   *
   * @throws IllegalArgumentException when {@code value} is null
   */
  public AttributeValue value(String value) {
    if (value == null) {
      throw new IllegalArgumentException("value is null: pass null to setAttribute to clear");
    }
    return new AttributeValue(value, ValueIds.of(value));
  }

  /**
   * A handle on the calling thread's context for this setter's attributes: the same writes as
   * this class's methods without finding the thread's block on every call (docs/JAVA.md, "The
   * fast path"). Call it once per thread and keep the handle on that thread; using it on another
   * thread throws {@link IllegalStateException}.
   */
  public ThreadHandle forCurrentThread() {
    return new ThreadHandle(ThreadContext.current(), ownSlots);
  }

  /** Writes dictionary id {@code id} into slot {@code offset}; false when it is the overflow id. */
  static boolean writeAttribute(ThreadContext context, int offset, int id) {
    context.setAttribute(offset, id);
    return id != ValueIds.OVERFLOW_ID;
  }

  private boolean isOwnSlot(int offset) {
    return isSlotOf(ownSlots, offset);
  }

  /** Whether {@code offset} is one of the slots in {@code slots} (bit i for slot i). */
  static boolean isSlotOf(int slots, int offset) {
    return offset >= 0 && offset < 32 && (slots & (1 << offset)) != 0;
  }
}
