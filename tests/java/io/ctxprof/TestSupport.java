package io.ctxprof;

import java.nio.ByteBuffer;

/** Natives of libctxprof_test_support.so (tests/java/test_support.cc). */
final class TestSupport {
  static {
    System.load(System.getProperty("ctxprof.test.support"));
  }

  private TestSupport() {}

  /** {status (0 consistent, 1 busy, 2 torn), trace high, trace low, span, attributes...}. */
  static native long[] readBlock(ByteBuffer block);

  static native void startReader(ByteBuffer[] blocks);

  /** {consistent, busy, torn, mixed}. */
  static native long[] stopReader();
}
