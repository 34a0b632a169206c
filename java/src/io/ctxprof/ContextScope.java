package io.ctxprof;

/**
 * Restores a thread's previous context when closed (see {@link ContextSetter#open}). Not
 * thread-safe: close it on the thread that opened it; closing twice restores once.
 *
 * <p>The saved context lives in this object's fields (no arrays), so opening a scope allocates
 * one small object, which escape analysis removes when the scope is opened and closed in one
 * compiled method (try-with-resources): open, the writes and close are then all inlined.
 */
public final class ContextScope implements AutoCloseable {
  private final ThreadContext context;
  private final Thread owner;
  // The context at open(): trace id, span id and the eight attribute ids, two per long.
  long traceIdHigh;
  long traceIdLow;
  long spanId;
  long attributes01;
  long attributes23;
  long attributes45;
  long attributes67;
  private boolean closed;

  ContextScope(ThreadContext context, Thread owner) {
    this.context = context;
    this.owner = owner;
    context.save(this);
  }

  int savedAttribute(int slot) {
    long pair;
    switch (slot >> 1) {
      case 0:
        pair = attributes01;
        break;
      case 1:
        pair = attributes23;
        break;
      case 2:
        pair = attributes45;
        break;
      default:
        pair = attributes67;
        break;
    }
    return (int) ((slot & 1) == 0 ? pair : pair >>> 32);
  }

  static long pair(int even, int odd) {
    return (even & 0xffffffffL) | ((long) odd << 32);
  }

  // close() stays under 35 bytes of bytecode so the JIT inlines it at any call site: a scope
  // whose close() is not inlined escapes, and is then allocated on every open.
  @Override
  public void close() {
    if (!closed) {
      checkOwner();
      closed = true;
      context.restore(this);
    }
  }

  private void checkOwner() {
    if (Thread.currentThread() != owner) {
      throw wrongThread();
    }
  }

  private IllegalStateException wrongThread() {
    return new IllegalStateException(
        "ContextScope closed on thread '"
            + Thread.currentThread().getName()
            + "' but opened on '"
            + owner.getName()
            + "': close it on the thread that opened it");
  }
}
