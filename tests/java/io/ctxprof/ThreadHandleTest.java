package io.ctxprof;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The fast path (ThreadHandle, AttributeValue, the one-write open) and the block access under
 * it, checked by reading the native block with the profiler's own seqlock reader, on every JDK
 * the suite runs on (17, and 25 when installed).
 */
class ThreadHandleTest {
  private final ContextSetter setter =
      new ContextSetter(Profiler.getInstance(), List.of("endpoint", "tenant"));
  private final int endpoint = setter.offsetOf("endpoint");
  private final int tenant = setter.offsetOf("tenant");

  /** The calling thread's block as the profiler would read it: {trace high, low, span, ids}. */
  private static long[] readOwnBlock() {
    long[] read = TestSupport.readBlock(Native.threadBlock0());
    assertEquals(0, read[0], "own block must read consistently");
    return Arrays.copyOfRange(read, 1, read.length);
  }

  private static String valueIn(long[] block, int slot) {
    return Native.valueOf0((int) block[3 + slot]);
  }

  @Test
  void handleWritesLandInTheirSlots() {
    ThreadHandle handle = setter.forCurrentThread();
    assertSame(Thread.currentThread(), handle.thread());
    handle.clear();
    AttributeValue checkout = setter.value("/checkout");
    assertEquals("/checkout", checkout.value());
    assertTrue(checkout.isRecorded());

    assertTrue(handle.setAttribute(endpoint, checkout));
    assertTrue(handle.setAttribute(tenant, "acme"));
    handle.setTraceContext(0x0123456789abcdefL, 0xfedcba9876543210L, 42L);
    long[] block = readOwnBlock();
    assertEquals(0x0123456789abcdefL, block[0]);
    assertEquals(0xfedcba9876543210L, block[1]);
    assertEquals(42L, block[2]);
    assertEquals("/checkout", valueIn(block, endpoint));
    assertEquals("acme", valueIn(block, tenant));
    for (int slot = 0; slot < 8; slot++) {
      if (slot != endpoint && slot != tenant) {
        assertEquals(0, block[3 + slot], "slot " + slot + " untouched");
      }
    }

    // The same id as the String path: one dictionary for both.
    assertTrue(setter.setAttribute(tenant, "/checkout"));
    assertEquals(readOwnBlock()[3 + endpoint], readOwnBlock()[3 + tenant]);

    handle.clearAttribute(endpoint);
    assertEquals(0, readOwnBlock()[3 + endpoint]);
    assertTrue(handle.setAttribute(tenant, (AttributeValue) null), "null clears");
    assertEquals(0, readOwnBlock()[3 + tenant]);
    handle.clear();
    assertArrayEquals(new long[11], readOwnBlock());
  }

  @Test
  void foreignOffsetsAreRefusedWithoutWriting() {
    ThreadHandle handle = setter.forCurrentThread();
    handle.clear();
    AttributeValue value = setter.value("x");
    assertFalse(handle.setAttribute(-1, value));
    assertFalse(handle.setAttribute(7, value), "slot 7 is not this setter's");
    assertFalse(handle.setAttribute(99, "x"));
    handle.clearAttribute(99);
    IllegalArgumentException error =
        assertThrows(IllegalArgumentException.class, () -> handle.open(1, 2, 3, 7, value));
    assertTrue(error.getMessage().contains("offset 7 is not an attribute"), error.getMessage());
    assertArrayEquals(new long[11], readOwnBlock(), "nothing written");
  }

  @Test
  void oneWriteOpenSetsTraceAndAttributesAndCloseRestores() {
    ThreadHandle handle = setter.forCurrentThread();
    handle.clear();
    handle.setTraceContext(1, 2, 3);
    handle.setAttribute(endpoint, setter.value("/outer"));
    long[] outer = readOwnBlock();
    AttributeValue search = setter.value("/search");
    AttributeValue tenantB = setter.value("tenant-b");
    try (ContextScope span = handle.open(4, 5, 6, endpoint, search, tenant, tenantB)) {
      long[] inside = readOwnBlock();
      assertEquals(4, inside[0]);
      assertEquals(5, inside[1]);
      assertEquals(6, inside[2]);
      assertEquals("/search", valueIn(inside, endpoint));
      assertEquals("tenant-b", valueIn(inside, tenant));
      try (ContextScope nested = handle.open(7, 8, 9, tenant, setter.value("tenant-c"))) {
        long[] deeper = readOwnBlock();
        assertEquals(9, deeper[2]);
        assertEquals("/search", valueIn(deeper, endpoint), "the other slot is kept");
        assertEquals("tenant-c", valueIn(deeper, tenant));
      }
      assertArrayEquals(inside, readOwnBlock());
    }
    assertArrayEquals(outer, readOwnBlock());
  }

  @Test
  void scopesAreReusedPerDepthAndCloseInnermostFirst() {
    ThreadHandle handle = setter.forCurrentThread();
    handle.clear();
    ContextScope first = handle.open(1, 1, 1);
    ContextScope inner = setter.open(2, 2, 2); // both APIs share the thread's scopes
    assertEquals(2, readOwnBlock()[2]);
    first.close(); // closes the inner one too: the context before `first` is back
    assertArrayEquals(new long[11], readOwnBlock());
    inner.close(); // already closed with `first`: no effect
    assertArrayEquals(new long[11], readOwnBlock());
    first.close(); // closing twice restores once
    assertArrayEquals(new long[11], readOwnBlock());

    ContextScope again = handle.open(3, 3, 3);
    assertSame(first, again, "the scope object of depth 0 is reused: no allocation per open");
    again.close();
    assertArrayEquals(new long[11], readOwnBlock());
  }

  @Test
  void aHandleRefusesOtherThreads() throws Exception {
    ThreadHandle handle = setter.forCurrentThread();
    handle.clear();
    handle.setTraceContext(11, 12, 13);
    long[] mine = readOwnBlock();
    AttributeValue value = setter.value("/elsewhere");
    List<Throwable> errors = new ArrayList<>();
    long[][] othersBlock = new long[1][];
    Thread other =
        new Thread(
            () -> {
              errors.add(catchThrowable(() -> handle.setAttribute(endpoint, value)));
              errors.add(catchThrowable(() -> handle.setAttribute(endpoint, "/elsewhere")));
              errors.add(catchThrowable(() -> handle.setTraceContext(1, 1, 1)));
              errors.add(catchThrowable(handle::clear));
              errors.add(catchThrowable(() -> handle.clearAttribute(endpoint)));
              errors.add(catchThrowable(() -> handle.open(1, 1, 1)));
              errors.add(catchThrowable(() -> handle.open(1, 1, 1, endpoint, value)));
              othersBlock[0] = readOwnBlock();
            },
            "not-the-owner");
    other.start();
    other.join();
    assertEquals(7, errors.size());
    for (Throwable error : errors) {
      assertNotNull(error, "a call on another thread was not refused");
      assertTrue(error instanceof IllegalStateException, error.toString());
      assertTrue(
          error.getMessage().contains("ThreadHandle of thread '" + Thread.currentThread().getName())
              && error.getMessage().contains("used on thread 'not-the-owner'")
              && error.getMessage().contains("forCurrentThread()"),
          error.getMessage());
    }
    assertArrayEquals(mine, readOwnBlock(), "the owner's block is unchanged");
    assertArrayEquals(new long[11], othersBlock[0], "nothing landed in the other thread's block");
    handle.clear();
  }

  private static Throwable catchThrowable(Runnable call) {
    try {
      call.run();
      return null;
    } catch (Throwable e) {
      return e;
    }
  }

  @Test
  void valuesAreCheckedAndShared() {
    IllegalArgumentException error =
        assertThrows(IllegalArgumentException.class, () -> setter.value(null));
    assertTrue(error.getMessage().contains("value is null"), error.getMessage());
    assertEquals(setter.value("shared").id, setter.value(new String("shared")).id);
    assertEquals("Zürich 🙂", Native.valueOf0(setter.value("Zürich 🙂").id));
  }

  /**
   * Which memory access this JVM uses: Unsafe up to JDK 21, MemorySegment (the jar's JDK 22+
   * classes) from 22 on when the jar was built with a JDK 22+ javac at hand.
   */
  @Test
  void blockAccessMatchesTheJdk() {
    int feature = Runtime.version().feature();
    if (feature < 22) {
      assertEquals("Unsafe", BlockMemory.KIND);
      return;
    }
    boolean versioned =
        BlockMemory.class.getResource("/META-INF/versions/22/io/ctxprof/BlockMemory.class") != null;
    assumeTrue(
        versioned,
        "skipping the JDK 22+ access check: ctxprof.jar was built without a JDK 22+ javac"
            + " (java/local_jdk22.bzl), so JDK "
            + feature
            + " runs the JDK 11 classes ("
            + BlockMemory.KIND
            + ")");
    assertEquals("MemorySegment", BlockMemory.KIND);
  }

  /**
   * A JVM that uses every write path prints nothing on stderr: no Unsafe memory-access warning
   * on JDK 24+ (JEP 498), no other warning. Library loading from Java is a restricted method on
   * JDK 24+, which the service allows with --enable-native-access (docs/JAVA.md).
   */
  @Test
  void aJvmUsingTheApiPrintsNoWarning() throws Exception {
    String out = runHandleWorkload();
    assertTrue(out.contains("writes done through " + BlockMemory.KIND), out);
  }

  /**
   * The JDK 11 classes' fallback for JDK 24+ (a jar built without a JDK 22+ javac): with the
   * jar's JDK 22+ classes hidden, the same writes go through the ByteBuffer over the map, land
   * in the block and print nothing.
   */
  @Test
  void withoutTheJdk22ClassesJdk24WritesThroughTheBuffer() throws Exception {
    assumeTrue(
        Runtime.version().feature() >= 24,
        "skipping: JDK " + Runtime.version().feature() + " uses Unsafe (ByteBuffer is 24+)");
    String out = runHandleWorkload("-Djdk.util.jar.enableMultiRelease=false");
    assertTrue(out.contains("writes done through ByteBuffer"), out);
  }

  /** HandleWorkload's stdout, from a child JVM that must exit 0 with nothing on stderr. */
  private static String runHandleWorkload(String... options) throws Exception {
    List<String> command = new ArrayList<>();
    command.add(System.getProperty("java.home") + "/bin/java");
    command.add("--enable-native-access=ALL-UNNAMED");
    command.add("-Dctxprof.library=" + System.getProperty("ctxprof.library"));
    command.addAll(List.of(options));
    command.add("-cp");
    command.add(System.getProperty("ctxprof.test.classpath"));
    command.add(HandleWorkload.class.getName());
    Path err = Files.createTempFile("ctxprof-workload", ".err");
    try {
      Process process = new ProcessBuilder(command).redirectError(err.toFile()).start();
      String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(process.waitFor(120, TimeUnit.SECONDS), "the workload did not finish");
      String errors = new String(Files.readAllBytes(err), StandardCharsets.UTF_8);
      assertEquals(0, process.exitValue(), "stdout:\n" + out + "\nstderr:\n" + errors);
      assertEquals("", errors, "the API made the JVM print on stderr");
      System.out.println("child JVM " + command + ": " + out.trim() + "; stderr empty");
      return out;
    } finally {
      Files.deleteIfExists(err);
    }
  }

  /**
   * On a virtual thread (JDK 21+) a handle writes through JNI into the block of the carrier it
   * runs on, and its scopes restore: the carrier's block is read from the virtual thread itself,
   * with nothing in between that could unmount it.
   */
  @Test
  void aVirtualThreadsHandleWritesItsCarriersBlock() throws Exception {
    assumeTrue(
        Runtime.version().feature() >= 21,
        "skipping: JDK " + Runtime.version().feature() + " has no virtual threads");
    List<Object> results = new ArrayList<>();
    Runnable task =
        () -> {
          ThreadHandle handle = setter.forCurrentThread();
          AttributeValue value = setter.value("/virtual");
          handle.clear();
          handle.setAttribute(endpoint, value);
          results.add(readOwnBlock());
          try (ContextScope span = handle.open(5, 6, 7, tenant, setter.value("vt-tenant"))) {
            results.add(readOwnBlock());
          }
          results.add(readOwnBlock());
          handle.clear();
        };
    Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
    Class<?> builderType = Class.forName("java.lang.Thread$Builder");
    Thread virtual = (Thread) builderType.getMethod("start", Runnable.class).invoke(builder, task);
    virtual.join();
    assertEquals(3, results.size(), "the virtual thread failed: " + results);
    long[] set = (long[]) results.get(0);
    long[] opened = (long[]) results.get(1);
    long[] restored = (long[]) results.get(2);
    assertEquals("/virtual", valueIn(set, endpoint));
    assertEquals(7, opened[2]);
    assertEquals("vt-tenant", valueIn(opened, tenant));
    assertEquals("/virtual", valueIn(opened, endpoint));
    assertArrayEquals(set, restored);
  }
}
