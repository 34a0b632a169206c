package io.ctxprof;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The Java API's writes, checked by reading the native block with the profiler's own seqlock
 * reader. The attribute registry is process-wide and append-only, so every test uses names from
 * the same small set.
 */
class ContextSetterTest {
  private static final List<String> NAMES = List.of("endpoint", "tenant");

  private final Profiler profiler = Profiler.getInstance();
  private final ContextSetter setter = new ContextSetter(profiler, NAMES);

  /** The calling thread's block as the profiler would read it. */
  private static long[] readOwnBlock() {
    long[] read = TestSupport.readBlock(Native.threadBlock0());
    assertEquals(0, read[0], "own block must read consistently");
    return read;
  }

  @Test
  void layoutComesFromTheLibrary() {
    assertEquals(64, ContextLayout.BLOCK_SIZE);
    assertEquals(0, ContextLayout.SEQUENCE);
    assertEquals(8, ContextLayout.TRACE_ID_HIGH);
    assertEquals(16, ContextLayout.TRACE_ID_LOW);
    assertEquals(24, ContextLayout.SPAN_ID);
    assertEquals(32, ContextLayout.ATTRIBUTES);
    assertEquals(8, ContextLayout.ATTRIBUTE_SLOTS);
  }

  @Test
  void getInstanceReturnsOneProfiler() {
    assertSame(profiler, Profiler.getInstance());
  }

  @Test
  void offsetsAreRegistrySlots() {
    int endpoint = setter.offsetOf("endpoint");
    int tenant = setter.offsetOf("tenant");
    assertTrue(endpoint >= 0 && tenant >= 0 && endpoint != tenant);
    assertEquals(-1, setter.offsetOf("not-registered"));
    assertEquals(endpoint, new ContextSetter(profiler, List.of("endpoint")).offsetOf("endpoint"));
  }

  @Test
  void writesLandInTheThreadsBlock() {
    setter.clear();
    int endpoint = setter.offsetOf("endpoint");
    assertTrue(setter.setAttribute(endpoint, "/checkout"));
    setter.setTraceContext(0x0123456789abcdefL, 0xfedcba9876543210L, 42L);
    long[] read = readOwnBlock();
    assertEquals(0x0123456789abcdefL, read[1]);
    assertEquals(0xfedcba9876543210L, read[2]);
    assertEquals(42L, read[3]);
    assertEquals("/checkout", Native.valueOf0((int) read[4 + endpoint]));

    assertTrue(setter.setAttribute("tenant", "acme"));
    read = readOwnBlock();
    assertEquals("acme", Native.valueOf0((int) read[4 + setter.offsetOf("tenant")]));
    assertEquals("/checkout", Native.valueOf0((int) read[4 + endpoint]), "other slot kept");

    setter.clearAttribute(endpoint);
    assertEquals(0, readOwnBlock()[4 + endpoint]);
    assertTrue(setter.setAttribute(endpoint, null), "null clears");

    setter.clear();
    long[] cleared = readOwnBlock();
    assertArrayEquals(new long[cleared.length], cleared);
  }

  @Test
  void repeatedValuesReuseOneIdAndNonAsciiRoundTrips() {
    int tenant = setter.offsetOf("tenant");
    for (String value : List.of("Zürich", "東京", "🙂 tenant", "naïve", "")) {
      assertTrue(setter.setAttribute(tenant, value));
      int id = (int) readOwnBlock()[4 + tenant];
      assertEquals(value, Native.valueOf0(id));
      assertTrue(setter.setAttribute(tenant, new String(value))); // equal, not identical
      assertEquals(id, (int) readOwnBlock()[4 + tenant]);
    }
  }

  @Test
  void unknownOffsetsAreRejectedWithoutWriting() {
    setter.clear();
    assertFalse(setter.setAttribute(-1, "x"));
    assertFalse(setter.setAttribute(7, "x"), "slot 7 is not this setter's");
    assertFalse(setter.setAttribute("not-registered", "x"));
    setter.clearAttribute(99);
    long[] read = readOwnBlock();
    assertArrayEquals(new long[read.length], read);
  }

  @Test
  void scopesRestoreThePreviousContext() {
    setter.clear();
    int endpoint = setter.offsetOf("endpoint");
    setter.setTraceContext(1, 2, 3);
    setter.setAttribute(endpoint, "/outer");
    long[] outer = readOwnBlock();
    try (ContextScope scope = setter.open(4, 5, 6)) {
      setter.setAttribute(endpoint, "/inner");
      try (ContextScope nested = setter.open(7, 8, 9)) {
        assertEquals(9, readOwnBlock()[3]);
      }
      long[] inner = readOwnBlock();
      assertEquals(6, inner[3]);
      assertEquals("/inner", Native.valueOf0((int) inner[4 + endpoint]));
    }
    assertArrayEquals(outer, readOwnBlock());
  }

  @Test
  @SuppressWarnings("deprecation") // Thread.getId(): threadId() is JDK 19+
  void threadsSharingALookupSlotEachWriteTheirOwnBlock() throws Exception {
    int endpoint = setter.offsetOf("endpoint");
    CountDownLatch firstWrote = new CountDownLatch(1);
    CountDownLatch secondWrote = new CountDownLatch(1);
    Throwable[] failures = new Throwable[2];
    Thread first =
        new Thread(
            () -> {
              try {
                assertTrue(setter.setAttribute(endpoint, "/first"));
                firstWrote.countDown();
                secondWrote.await();
                long[] read = readOwnBlock(); // the second thread now holds the slot
                assertEquals("/first", Native.valueOf0((int) read[4 + endpoint]));
                assertTrue(setter.setAttribute(endpoint, "/first again"));
                read = readOwnBlock();
                assertEquals("/first again", Native.valueOf0((int) read[4 + endpoint]));
              } catch (Throwable e) {
                failures[0] = e;
              }
            });
    Runnable secondBody =
        () -> {
          try {
            firstWrote.await();
            assertTrue(setter.setAttribute(endpoint, "/second"));
            long[] read = readOwnBlock();
            assertEquals("/second", Native.valueOf0((int) read[4 + endpoint]));
          } catch (Throwable e) {
            failures[1] = e;
          } finally {
            secondWrote.countDown();
          }
        };
    Thread second = new Thread(secondBody);
    while ((second.getId() - first.getId()) % ThreadContext.BY_ID_SLOTS != 0) {
      second = new Thread(secondBody); // ids are handed out at construction
    }
    first.start();
    second.start();
    first.join();
    second.join();
    for (Throwable failure : failures) {
      if (failure != null) {
        throw new AssertionError(failure);
      }
    }
  }

  @Test
  void aScopeMustBeClosedOnItsOwnThread() throws Exception {
    ContextScope scope = setter.open(1, 1, 1);
    IllegalStateException[] error = new IllegalStateException[1];
    Thread other = new Thread(() -> error[0] = assertThrows(IllegalStateException.class, scope::close));
    other.start();
    other.join();
    assertTrue(error[0].getMessage().contains("close it on the thread that opened it"));
    scope.close();
  }

  @Test
  void badAttributeListsAreClearErrors() {
    IllegalArgumentException duplicate =
        assertThrows(
            IllegalArgumentException.class,
            () -> new ContextSetter(profiler, List.of("endpoint", "endpoint")));
    assertTrue(duplicate.getMessage().contains("'endpoint' is listed twice"), duplicate.getMessage());
    IllegalArgumentException empty =
        assertThrows(IllegalArgumentException.class, () -> new ContextSetter(profiler, List.of("")));
    assertTrue(empty.getMessage().contains("is empty"), empty.getMessage());
    IllegalArgumentException tooMany =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new ContextSetter(
                    profiler, List.of("a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9")));
    assertTrue(tooMany.getMessage().contains("at most 8"), tooMany.getMessage());
    IllegalArgumentException nul =
        assertThrows(
            IllegalArgumentException.class,
            () -> new ContextSetter(profiler, Arrays.asList("endpoint", null)));
    assertTrue(nul.getMessage().contains("attribute #2 is null"), nul.getMessage());
  }

  // Must match test_support.cc's Mix: all fields of write n of writer w derive from (w, n).
  static long mix(long x) {
    x ^= x >>> 33;
    x *= 0xff51afd7ed558ccdL;
    x ^= x >>> 33;
    return x;
  }

  @Test
  void aConcurrentNativeReaderNeverSeesAMixedContext() throws Exception {
    int writers = 2;
    ByteBuffer[] blocks = new ByteBuffer[writers];
    CountDownLatch ready = new CountDownLatch(writers);
    CountDownLatch go = new CountDownLatch(1);
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong writes = new AtomicLong();
    Thread[] threads = new Thread[writers];
    for (int w = 0; w < writers; w++) {
      final int writer = w;
      threads[w] =
          new Thread(
              () -> {
                ThreadContext context = ThreadContext.current();
                blocks[writer] = Native.threadBlock0();
                ready.countDown();
                try {
                  go.await();
                } catch (InterruptedException e) {
                  return;
                }
                int[] attributes = new int[8];
                long n = 1;
                while (!stop.get()) {
                  long high = ((long) writer << 48) | n++;
                  long low = mix(high);
                  long span = mix(low);
                  for (int i = 0; i < 8; i++) {
                    attributes[i] = (int) mix(span + i);
                  }
                  context.setAll(high, low, span, attributes);
                }
                writes.addAndGet(n - 1);
                context.clear();
              });
      threads[w].start();
    }
    ready.await();
    TestSupport.startReader(blocks);
    go.countDown();
    Thread.sleep(1000);
    stop.set(true);
    for (Thread thread : threads) {
      thread.join();
    }
    long[] counts = TestSupport.stopReader();
    System.out.printf(
        "java writes: %d; native reader: %d consistent, %d busy, %d torn, %d mixed%n",
        writes.get(), counts[0], counts[1], counts[2], counts[3]);
    assertEquals(0, counts[3], "a consistent read returned a context no writer wrote whole");
    assertNotEquals(0, counts[0], "the reader never saw a consistent context");
    assertTrue(writes.get() > 0);
  }
}
