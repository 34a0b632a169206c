package io.ctxprof;

/** Offsets of the native context block, taken from the library (context/context_block.h). */
final class ContextLayout {
  final int blockSize;
  final int sequenceOffset;
  final int traceIdHighOffset;
  final int traceIdLowOffset;
  final int spanIdOffset;
  final int attributesOffset;
  final int attributeSize;
  final int attributeSlots;

  private ContextLayout(int[] fields) {
    if (fields == null || fields.length != 8) {
      throw new IllegalStateException("libctxprof reported a malformed context layout");
    }
    blockSize = fields[0];
    sequenceOffset = fields[1];
    traceIdHighOffset = fields[2];
    traceIdLowOffset = fields[3];
    spanIdOffset = fields[4];
    attributesOffset = fields[5];
    attributeSize = fields[6];
    attributeSlots = fields[7];
    if (attributeSize != Integer.BYTES || blockSize < attributesOffset + attributeSlots * 4) {
      throw new IllegalStateException(
          "libctxprof's context layout does not match this ctxprof.jar: rebuild both together");
    }
  }

  static ContextLayout fromLibrary() {
    return new ContextLayout(Native.layout0());
  }

  int attributeOffset(int slot) {
    return attributesOffset + slot * attributeSize;
  }
}
