package io.ctxprof;

import java.lang.invoke.VarHandle;

/**
 * The Java writer of a thread's span log (context/span_log.h): each context write of a platform
 * thread first ends the interval of the context it replaces, appending {begin, end, context} to
 * the log when that context is not empty, and stamps the next interval's begin inside the block
 * write. Offsets come from the library (spanLogLayout0), like ContextLayout's.
 *
 * <p>Ordering, as the native writer: a record slot is overwritten only after a load of the log's
 * tail (the reader's), with acquire, that shows the slot consumed; the record stores are ordered
 * before the head store by a release fence. The writer keeps the tail it loaded last: the tail
 * only grows while the thread lives, so every slot below that tail + RECORDS is still free, and
 * the acquire after that load already ordered the reader's copies of them before any later
 * store of ours. The tail is loaded again only when the log looks full by the kept one; a full
 * log drops the record, counts it and notes the head it could not pass (plus one), so that the
 * record appended there next is marked as the first after a loss; that append is always one that
 * loads the tail again (a drop returns the tail that made the log look full), so the fast path
 * pays nothing for it. No JNI, allocation or lock: a record is ten plain stores
 * and a head store into the mapping.
 *
 * <p>{@code -Dctxprof.spanTiming=false} turns timing off for the process (Java and native
 * writers): the writes then cost what they did before spans were timed, since {@link #TIMED} is
 * a constant the JIT folds away.
 */
final class SpanLog {
  static final boolean TIMED = !"false".equals(System.getProperty("ctxprof.spanTiming"));

  private static final int RECORDS;
  private static final int RECORD_BYTES;
  static final int HEAD;
  static final int DROPPED;
  static final int OPEN_BEGIN;
  static final int TAIL;
  private static final int FIRST_RECORD;
  static final int DROPPED_AT;
  private static final long AFTER_LOSS = 1L << 63;

  static {
    int[] fields = Native.spanLogLayout0();
    if (fields == null || fields.length != 9 || Integer.bitCount(fields[1]) != 1) {
      throw new IllegalStateException("libctxprof reported a malformed span log layout");
    }
    RECORDS = fields[1];
    RECORD_BYTES = fields[2];
    HEAD = fields[3];
    DROPPED = fields[4];
    OPEN_BEGIN = fields[5];
    TAIL = fields[6];
    FIRST_RECORD = fields[7];
    DROPPED_AT = fields[8];
    if (RECORD_BYTES != 80) {
      throw new IllegalStateException(
          "libctxprof's span log layout does not match this ctxprof.jar: rebuild both together");
    }
    if (!TIMED) {
      Native.setSpanTiming0(false);
    }
  }

  private SpanLog() {}

  /** The calling thread's log as an offset in the context map, or -1 when it is untimed. */
  static long ofCurrentThread() {
    if (!TIMED) {
      return -1;
    }
    java.nio.ByteBuffer log = Native.spanLog0();
    return log == null ? -1 : BlockMemory.offsetOf(log);
  }

  /**
   * Appends the closed interval [open_begin, now) of the context whose fields are given, unless
   * nothing was open yet; the caller has checked that the context is not empty. {@code tailSeen}
   * is the log's tail as this thread loaded it last (0 at first); returns it, loaded again when
   * the log looked full by it.
   */
  static long append(
      long log,
      long tailSeen,
      long now,
      long traceHigh,
      long traceLow,
      long spanId,
      long attributes01,
      long attributes23,
      long attributes45,
      long attributes67) {
    long begin = BlockMemory.getLong(log + OPEN_BEGIN);
    if (begin == 0) {
      return tailSeen;
    }
    long head = BlockMemory.getLong(log + HEAD); // only this thread writes it
    long tail = tailSeen;
    long owner = 0; // a platform thread writes only its own intervals
    if (head - tail >= RECORDS) {
      tail = BlockMemory.getLong(log + TAIL);
      VarHandle.acquireFence(); // the reader's copies of old records precede our overwrite
      if (head - tail >= RECORDS) {
        BlockMemory.putLong(log + DROPPED_AT, head + 1);
        BlockMemory.putLong(log + DROPPED, BlockMemory.getLong(log + DROPPED) + 1);
        return tail;
      }
      // A drop returned the tail that made the log full, so the first append after drops
      // comes here: it marks its record as the first after a loss (span_log.h).
      if (BlockMemory.getLong(log + DROPPED_AT) == head + 1) {
        owner = AFTER_LOSS;
      }
    }
    long record = log + FIRST_RECORD + (head & (RECORDS - 1)) * RECORD_BYTES;
    BlockMemory.putLong(record, begin);
    BlockMemory.putLong(record + 8, now);
    BlockMemory.putLong(record + 16, traceHigh);
    BlockMemory.putLong(record + 24, traceLow);
    BlockMemory.putLong(record + 32, spanId);
    BlockMemory.putLong(record + 40, attributes01);
    BlockMemory.putLong(record + 48, attributes23);
    BlockMemory.putLong(record + 56, attributes45);
    BlockMemory.putLong(record + 64, attributes67);
    BlockMemory.putLong(record + 72, owner);
    VarHandle.releaseFence(); // the record is complete before the reader can see the new head
    BlockMemory.putLong(log + HEAD, head + 1);
    return tail;
  }
}
