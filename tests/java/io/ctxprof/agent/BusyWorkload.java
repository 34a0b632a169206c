package io.ctxprof.agent;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * A service that knows nothing of ctxprof, for the attach tests: the thread "busy-spinner" burns
 * CPU in {@link #spin} forever; main prints "ready", then waits for "quit" (or the end of stdin)
 * and exits 0, so a test can check that the JVM survived what was done to it. Nothing here
 * touches io.ctxprof, so no thread of this JVM ever calls into libctxprof.
 */
public final class BusyWorkload {
  static volatile double sink;

  private BusyWorkload() {}

  public static void main(String[] args) throws IOException {
    Thread spinner = new Thread(BusyWorkload::spin, "busy-spinner");
    spinner.setDaemon(true);
    spinner.start();
    System.out.println("ready");
    System.out.flush();
    BufferedReader input =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = input.readLine()) != null && !line.equals("quit")) {
      // keep serving
    }
  }

  static void spin() {
    double x = 0;
    while (true) {
      for (int i = 0; i < 100_000; i++) {
        x += Math.sqrt(i);
      }
      sink = x;
    }
  }
}
