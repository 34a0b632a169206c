package io.ctxprof.agent;

import java.security.MessageDigest;

/**
 * SHA-256 over 64 KiB buffers on the main thread for {@code args[0]} milliseconds of its CPU
 * time. Nearly all of
 * its CPU is in DigestBase.engineUpdate's call of implCompressMultiBlock: the JVM's SHA-256 stub
 * (sha256_implCompressMB) where the VM has that intrinsic, SHA2.implCompress0 in Java where it
 * has not.
 */
public final class DigestWorkload {
  static volatile byte sink;

  private DigestWorkload() {}

  public static void main(String[] args) throws Exception {
    MessageDigest digest = MessageDigest.getInstance("SHA-256");
    byte[] data = new byte[64 * 1024];
    CpuBudget budget = new CpuBudget(Long.parseLong(args[0]));
    while (budget.left()) {
      digest.update(data);
      sink = digest.digest()[0];
    }
  }
}
