package io.ctxprof;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Profiler.execute's errors in this JVM: the exception type says what kind of failure it is
 * (I/O, a bad option, the wrong state) and the message names the command, the input and the
 * operating system's error.
 */
class ProfilerTest {
  private final Profiler profiler = Profiler.getInstance();

  @TempDir Path dir;

  @Test
  void anUnwritableRecordingIsAnIoErrorNamingThePathAndTheOsError() {
    UncheckedIOException error =
        assertThrows(
            UncheckedIOException.class,
            () -> profiler.start("event=ctimer,file=/nonexistent/x.jfr"));
    IOException cause = error.getCause();
    assertEquals(IOException.class, cause.getClass());
    String message = cause.getMessage();
    assertTrue(message.startsWith("ctxprof: start: option 'file': "), message);
    assertTrue(message.contains("/nonexistent/x.jfr"), message);
    assertTrue(message.contains("No such file or directory"), message);
    assertEquals(message, error.getMessage());
    assertTrue(profiler.execute("status").startsWith("not running"), "a failed start runs nothing");
  }

  @Test
  void statusCountsTheWallTicksTheSamplerWokeTooLateFor() {
    profiler.start("event=wall,interval=5ms");
    String wall = profiler.execute("status");
    profiler.stop();
    assertTrue(wall.matches("running; engine=none\\+wall; .*; wall_skipped=\\d+; .*"), wall);
    profiler.start("event=ctimer,interval=10ms");
    String cpu = profiler.execute("status");
    profiler.stop();
    assertTrue(!cpu.contains("wall_skipped"), cpu);
  }

  @Test
  void anUnwritableDumpIsAnIoError() {
    profiler.start("event=ctimer,interval=10ms");
    profiler.stop();
    UncheckedIOException error =
        assertThrows(UncheckedIOException.class, () -> profiler.dump("/nonexistent/profile.txt"));
    String message = error.getCause().getMessage();
    assertTrue(message.startsWith("ctxprof: dump: "), message);
    assertTrue(message.contains("/nonexistent/profile.txt"), message);
    assertTrue(message.contains("No such file or directory"), message);
  }

  @Test
  void badOptionsAndWrongStatesKeepTheirTypes() {
    IllegalArgumentException option =
        assertThrows(IllegalArgumentException.class, () -> profiler.start("interval=5"));
    assertTrue(
        option.getMessage().startsWith("ctxprof: start: option 'interval'"), option.getMessage());
    IllegalStateException state = assertThrows(IllegalStateException.class, profiler::stop);
    assertTrue(
        state.getMessage().startsWith("ctxprof: stop: the profiler is not running"),
        state.getMessage());
    profiler.start("event=ctimer,file=" + dir.resolve("ok.jfr"));
    try {
      IllegalStateException again =
          assertThrows(IllegalStateException.class, () -> profiler.start("event=ctimer"));
      String message = again.getMessage();
      assertTrue(message.startsWith("ctxprof: start: the profiler is already running"), message);
      assertTrue(!message.contains("ctxprof_"), "names no C function: " + message);
    } finally {
      profiler.stop();
    }
  }
}
