package io.ctxprof;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Timed spans written from Java (SpanLog, SpanClock): the records a platform thread's scopes
 * append to its span log, read back from the mapping as the profiler's reader would (no session
 * runs here, so nothing else drains the log), on every JDK the suite runs on.
 */
class SpanLogTest {
  private final ContextSetter setter =
      new ContextSetter(Profiler.getInstance(), List.of("endpoint", "tenant"));
  private final int endpoint = setter.offsetOf("endpoint");
  private final int tenant = setter.offsetOf("tenant");

  /**
   * {begin, end, span id, attribute pair 0-1, owner} of the records appended since {@code from}.
   */
  private static List<long[]> recordsSince(long log, long from) {
    int[] layout = Native.spanLogLayout0();
    long head = BlockMemory.getLong(log + SpanLog.HEAD);
    List<long[]> records = new ArrayList<>();
    for (long i = from; i < head; i++) {
      long record = log + layout[7] + (i & (layout[1] - 1)) * layout[2];
      records.add(
          new long[] {
            BlockMemory.getLong(record),
            BlockMemory.getLong(record + 8),
            BlockMemory.getLong(record + 32),
            BlockMemory.getLong(record + 40),
            BlockMemory.getLong(record + 72)
          });
    }
    return records;
  }

  private static void runOnNewThread(Runnable body) throws InterruptedException {
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Thread thread = new Thread(() -> {
      try {
        body.run();
      } catch (Throwable e) {
        failure.set(e);
      }
    });
    thread.start();
    thread.join();
    if (failure.get() != null) {
      throw new AssertionError(failure.get());
    }
  }

  @Test
  void nestedScopesLogNonOverlappingIntervalsWithTheirRealTimes() throws InterruptedException {
    runOnNewThread(
        () -> {
          ThreadHandle handle = setter.forCurrentThread();
          long log = ((ThreadContext.BlockContext) ThreadContext.current()).log;
          assertTrue(log >= 0, "a platform thread gets a span log");
          long from = BlockMemory.getLong(log + SpanLog.HEAD);
          AttributeValue checkout = setter.value("/checkout");
          AttributeValue acme = setter.value("acme");
          long before = SpanClock.now();
          try (ContextScope outer = handle.open(1, 2, 10, endpoint, checkout, tenant, acme)) {
            sleep(5);
            try (ContextScope inner = handle.open(1, 2, 11)) {
              sleep(5);
            }
            sleep(5);
          }
          long after = SpanClock.now();
          List<long[]> records = recordsSince(log, from);
          assertEquals(3, records.size(), "outer, inner, outer again");
          assertEquals(10, records.get(0)[2]);
          assertEquals(11, records.get(1)[2]);
          assertEquals(10, records.get(2)[2]);
          assertEquals(ContextScope.pair(checkout.id, acme.id), records.get(2)[3]);
          assertTrue(before <= records.get(0)[0]);
          assertEquals(records.get(0)[1], records.get(1)[0], "the inner span starts as outer ends");
          assertEquals(records.get(1)[1], records.get(2)[0], "and outer resumes as it ends");
          assertTrue(records.get(2)[1] <= after);
          for (long[] record : records) {
            assertTrue(record[1] > record[0], "an interval ends after it begins");
          }
        });
  }

  @Test
  void anAttributeChangeEndsOneIntervalAndStartsTheNext() throws InterruptedException {
    runOnNewThread(
        () -> {
          long log = ((ThreadContext.BlockContext) ThreadContext.current()).log;
          long from = BlockMemory.getLong(log + SpanLog.HEAD);
          try (ContextScope scope = setter.open(0, 5, 20)) {
            setter.setAttribute(endpoint, "/a");
            setter.setAttribute(endpoint, "/b");
          }
          List<long[]> records = recordsSince(log, from);
          assertEquals(3, records.size(), "span 20 alone, with /a, with /b");
          assertEquals(0, records.get(0)[3]);
          assertEquals(setter.value("/a").id, (int) records.get(1)[3]);
          assertEquals(setter.value("/b").id, (int) records.get(2)[3]);
        });
  }

  /**
   * A log the reader does not drain fills up to exactly its size and then drops (counted); once
   * the reader has moved its tail, the writer sees the room again (it keeps the tail it loaded
   * last and loads it again only when the log looks full).
   */
  @Test
  void aFullLogDropsUntilTheReaderMovesItsTail() throws InterruptedException {
    runOnNewThread(
        () -> {
          long log = ((ThreadContext.BlockContext) ThreadContext.current()).log;
          int records = Native.spanLogLayout0()[1];
          setter.setAttribute(endpoint, "/a"); // from here on, every write ends a nonempty one
          long dropped = BlockMemory.getLong(log + SpanLog.DROPPED);
          for (int i = 0; i < records + 10; i++) {
            setter.setAttribute(endpoint, (i & 1) == 0 ? "/b" : "/a");
          }
          setter.setAttribute(endpoint, "/b"); // dropped too; the block now holds /b
          long head = BlockMemory.getLong(log + SpanLog.HEAD);
          long tail = BlockMemory.getLong(log + SpanLog.TAIL);
          assertEquals(records, head - tail, "the log is full, never past full");
          assertTrue(BlockMemory.getLong(log + SpanLog.DROPPED) >= dropped + 10, "drops counted");

          BlockMemory.putLong(log + SpanLog.TAIL, head); // the reader copied every record
          long droppedBefore = BlockMemory.getLong(log + SpanLog.DROPPED);
          setter.setAttribute(endpoint, "/c");
          setter.setAttribute(endpoint, "/d");
          assertEquals(head + 2, BlockMemory.getLong(log + SpanLog.HEAD), "appends again");
          assertEquals(droppedBefore, BlockMemory.getLong(log + SpanLog.DROPPED));
          List<long[]> appended = recordsSince(log, head);
          assertEquals(setter.value("/b").id, (int) appended.get(0)[3], "the interval /c ended");
          assertEquals(setter.value("/c").id, (int) appended.get(1)[3]);
          assertEquals(1L << 63, appended.get(0)[4], "the first record after the loss is marked");
          assertEquals(0, appended.get(1)[4], "only the first");
          setter.clear();
        });
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }
}
