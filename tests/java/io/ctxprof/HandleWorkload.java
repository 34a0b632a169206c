package io.ctxprof;

import java.util.List;

/**
 * A child JVM for ThreadHandleTest: every write path of the API (ContextSetter, ThreadHandle,
 * both kinds of scope), enough times for the JIT to compile them, then one line on stdout naming
 * the block access used. The test requires stderr to stay empty.
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
    System.out.println("writes done through " + BlockMemory.KIND);
  }
}
