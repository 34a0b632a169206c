package io.ctxprof;

/**
 * Offsets of the native context block, taken from the library (context/context_block.h) when
 * this class initializes, which {@link Profiler#getInstance()} triggers after binding the
 * library. They are static finals on purpose: the JIT folds them into the write paths as
 * constants, which instance fields would not allow.
 */
final class ContextLayout {
  static final int BLOCK_SIZE;
  static final int SEQUENCE;
  static final int TRACE_ID_HIGH;
  static final int TRACE_ID_LOW;
  static final int SPAN_ID;
  static final int ATTRIBUTES;
  static final int ATTRIBUTE_SLOTS;

  static {
    int[] fields = Native.layout0();
    if (fields == null || fields.length != 8) {
      throw new IllegalStateException("libctxprof reported a malformed context layout");
    }
    BLOCK_SIZE = fields[0];
    SEQUENCE = fields[1];
    TRACE_ID_HIGH = fields[2];
    TRACE_ID_LOW = fields[3];
    SPAN_ID = fields[4];
    ATTRIBUTES = fields[5];
    ATTRIBUTE_SLOTS = fields[7];
    // ContextScope saves the eight slots in fields, so the slot count is part of the contract.
    if (fields[6] != Integer.BYTES
        || ATTRIBUTE_SLOTS != 8
        || BLOCK_SIZE < ATTRIBUTES + ATTRIBUTE_SLOTS * Integer.BYTES) {
      throw new IllegalStateException(
          "libctxprof's context layout does not match this ctxprof.jar: rebuild both together");
    }
  }

  private ContextLayout() {}
}
