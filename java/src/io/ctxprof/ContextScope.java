package io.ctxprof;

/**
 * Restores a thread's previous context when closed (see {@link ContextSetter#open} and {@link
 * ThreadHandle#open}). Not thread-safe: close it on the thread that opened it; closing twice
 * restores once. Scopes nest: closing one whose inner scopes are still open closes them too.
 *
 * <p>Opening a scope allocates nothing: each thread keeps one scope object per nesting depth,
 * made the first time that depth is reached, and hands it out again for the next scope opened
 * at that depth. The saved context lives in its fields. So use scopes with try-with-resources
 * (or close them in a finally block) and do not keep a reference after closing: the object is
 * then the scope of whatever is opened at that depth later, and closing it again would close
 * that one. (Allocating a scope per open instead cost the allocation whenever escape analysis
 * could not remove it, which depends on how the JIT happened to inline the caller.)
 */
public final class ContextScope implements AutoCloseable {
  private final ThreadContext context;
  private final Thread owner;
  final int depth; // its nesting depth among the thread's scopes
  // The context at open(): trace id, span id and the eight attribute ids, two per long.
  long traceIdHigh;
  long traceIdLow;
  long spanId;
  long attributes01;
  long attributes23;
  long attributes45;
  long attributes67;
  boolean closed;

  /** The thread's scope at nesting {@code depth}, closed until ThreadContext.push reopens it. */
  ContextScope(ThreadContext context, int depth) {
    this.context = context;
    this.owner = context.owner;
    this.depth = depth;
    this.closed = true;
  }

  /** Opens this scope (again): saves the current context. */
  void reopen() {
    closed = false;
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

  // close() stays under 35 bytes of bytecode (C2's MaxInlineSize) so the JIT inlines it even at
  // a call site it does not count as hot; the rare work is in end().
  @Override
  public void close() {
    if (!closed) {
      end();
    }
  }

  private void end() {
    checkOwner();
    closed = true;
    context.closed(this);
    context.restore(this);
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
