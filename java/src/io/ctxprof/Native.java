package io.ctxprof;

import java.nio.ByteBuffer;

/**
 * The JNI surface of libctxprof (jni/java_api.cc). Package-private: the public API is {@link
 * Profiler} and {@link ContextSetter}. Every method may be called from any Java thread.
 */
final class Native {
  private Native() {}

  /** The block layout as {@code ctxprof::ContextLayout}'s fields, in declaration order. */
  static native int[] layout0();

  /**
   * A direct buffer over the calling thread's 64-byte context block, or null when the thread's
   * tid is beyond the context map (counted natively; the thread then simply has no context).
   */
  static native ByteBuffer threadBlock0();

  /**
   * A direct buffer over the whole context map (every tid's block, at most 256 MiB of address
   * space that is mostly never touched, then the span logs, 304 MiB), for BlockMemory, which names
   * each thread's block and span log by its offset in it. Only the block's own thread may write
   * a block or a log's writer fields.
   */
  static native ByteBuffer contextMap0();

  /** context/span_log.h's SpanLogLayout, in its field order (SpanLog.java). */
  static native int[] spanLogLayout0();

  /** The calling thread's span log (claimed on first call), or null when it has none. */
  static native ByteBuffer spanLog0();

  /** The address of the span clock (ctxprof_span_ticks), for a java.lang.foreign downcall (java/src22). */
  static native long spanTicksAddress0();

  /**
   * A one-byte buffer over the OpenTelemetry record pool's "publishing" flag
   * (context/otel_thread_record.h), inside the context map; null (no exception) without a
   * store. Called by OtelRecord's initializer, which it registers so that an attach start can
   * call its sync().
   */
  static native ByteBuffer otelFlag0();

  /**
   * The calling thread's OpenTelemetry thread record (claimed on first call, and published in
   * otel_thread_ctx_v1), or null while publishing is off or when every record is taken.
   */
  static native ByteBuffer otelRecord0();

  /** Turns span timing of the native writers (C API, JNI) on or off, process-wide. */
  static native void setSpanTiming0(boolean enabled);

  /** The address of a direct buffer's memory (a block, or the map). */
  static native long blockAddress0(ByteBuffer block);

  /** Interns {@code value} in the process dictionary; 1 means the dictionary was full. */
  static native int intern0(String value);

  /** The value of a dictionary id ("" for an unknown id), for tests and diagnostics. */
  static native String valueOf0(int id);

  /** Registers attribute names (append-only); null on success, else the error message. */
  static native String registerAttributes0(String[] names);

  /** The slot of a registered attribute name, or -1. */
  static native int slotOf0(String name);

  // The same writes through JNI: used for virtual threads (a native frame pins the virtual
  // thread to its carrier, so the carrier's block is the right one) and as the benchmark
  // baseline the direct-buffer path is compared with.
  static native void setAttributeJni0(int slot, int id);

  static native void setTraceContextJni0(long traceIdHigh, long traceIdLow, long spanId);

  static native void setAllJni0(long traceIdHigh, long traceIdLow, long spanId, int[] attributes);

  static native void clearJni0();

  /** Runs a profiler command ("start,...", "stop", "dump,file=...", "status"). */
  static native String execute0(String command);
}
