package io.ctxprof;

/**
 * Restores a thread's previous context when closed (see {@link ContextSetter#open}). Not
 * thread-safe: close it on the thread that opened it; closing twice restores once.
 */
public final class ContextScope implements AutoCloseable {
  private final ThreadContext context;
  private final Thread owner = Thread.currentThread();
  private final long[] savedIds = new long[3];
  private final int[] savedAttributes;
  private boolean closed;

  ContextScope(ThreadContext context, int slots) {
    this.context = context;
    this.savedAttributes = new int[slots];
    context.read(savedIds, savedAttributes);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    if (Thread.currentThread() != owner) {
      throw new IllegalStateException(
          "ContextScope closed on thread '"
              + Thread.currentThread().getName()
              + "' but opened on '"
              + owner.getName()
              + "': close it on the thread that opened it");
    }
    closed = true;
    context.setAll(savedIds[0], savedIds[1], savedIds[2], savedAttributes);
  }
}
