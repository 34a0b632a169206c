package io.ctxprof.example;

import io.ctxprof.ContextScope;
import io.ctxprof.ContextSetter;
import io.ctxprof.Profiler;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A tracer-like layer, the way a tracing library would use ctxprof: every request gets a fresh
 * 128-bit trace id and a span id, and the {@code endpoint} and {@code tenant} attributes, for
 * exactly as long as the request is handled. Without libctxprof it does nothing, so the
 * service also runs unprofiled.
 */
final class Tracer {
  static final List<String> ATTRIBUTES = List.of("endpoint", "tenant");

  private final ContextSetter setter;
  private final int endpointOffset;
  private final int tenantOffset;

  private Tracer(ContextSetter setter) {
    this.setter = setter;
    this.endpointOffset = setter == null ? -1 : setter.offsetOf("endpoint");
    this.tenantOffset = setter == null ? -1 : setter.offsetOf("tenant");
  }

  static Tracer create() {
    try {
      return new Tracer(new ContextSetter(Profiler.getInstance(), ATTRIBUTES));
    } catch (UnsatisfiedLinkError e) {
      System.err.println("shop: profiling context disabled: " + e.getMessage());
      return new Tracer(null);
    }
  }

  /** A request's span: closing it restores the thread's previous context. */
  interface Span extends AutoCloseable {
    @Override
    void close();
  }

  /** A span around one request; close it when the request is done. */
  Span startSpan(String endpoint, String tenant) {
    if (setter == null) {
      return () -> {};
    }
    ThreadLocalRandom random = ThreadLocalRandom.current();
    long traceHigh = random.nextLong();
    long traceLow = random.nextLong() | 1; // never the all-zero "no trace"
    long spanId = random.nextLong() | 1;
    ContextScope scope = setter.open(traceHigh, traceLow, spanId);
    setter.setAttribute(endpointOffset, endpoint);
    setter.setAttribute(tenantOffset, tenant);
    return scope::close;
  }
}
