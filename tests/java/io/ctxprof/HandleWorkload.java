package io.ctxprof;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * A child JVM for ThreadHandleTest: every write path of the API (ContextSetter, ThreadHandle,
 * both kinds of scope), enough times for the JIT to compile them, then one context read back
 * through the library's own view of the block (not BlockMemory's), and one line on stdout naming
 * the block access used. Exits with 1 when the block does not hold what was written. The test
 * requires stderr to stay empty.
 */
public final class HandleWorkload {
  private HandleWorkload() {}

  public static void main(String[] args) {
    ContextSetter setter =
        new ContextSetter(Profiler.getInstance(), List.of("endpoint", "tenant"));
    int endpoint = setter.offsetOf("endpoint");
    int tenant = setter.offsetOf("tenant");
    ThreadHandle handle = setter.forCurrentThread();
    AttributeValue checkout = setter.value("/checkout");
    AttributeValue acme = setter.value("acme");
    for (int i = 0; i < 200_000; i++) {
      setter.setAttribute(endpoint, (i & 1) == 0 ? "/checkout" : "/search");
      handle.setAttribute(tenant, acme);
      try (ContextScope span = setter.open(i, ~i, i)) {
        handle.setAttribute(endpoint, checkout);
      }
      try (ContextScope span = handle.open(i, ~i, i, endpoint, checkout, tenant, acme)) {
        handle.setTraceContext(i, i, i);
      }
      setter.clear();
    }
    try (ContextScope span = setter.open(0x1234, 0x5678, 0x9abc)) {
      setter.setAttribute(tenant, "acme");
      ByteBuffer block = Native.threadBlock0().order(ByteOrder.nativeOrder());
      String read =
          Long.toHexString(block.getLong(ContextLayout.TRACE_ID_HIGH))
              + " "
              + Long.toHexString(block.getLong(ContextLayout.TRACE_ID_LOW))
              + " "
              + Long.toHexString(block.getLong(ContextLayout.SPAN_ID))
              + " "
              + Native.valueOf0(block.getInt(ContextLayout.ATTRIBUTES + tenant * Integer.BYTES));
      if (!read.equals("1234 5678 9abc acme")) {
        System.out.println("the block holds '" + read + "', not '1234 5678 9abc acme'");
        System.exit(1);
      }
    }
    System.out.println("writes done through " + BlockMemory.KIND);
  }
}
