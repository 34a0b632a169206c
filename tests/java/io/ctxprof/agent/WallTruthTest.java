package io.ctxprof.agent;

import static io.ctxprof.agent.ChildProcess.agent;
import static io.ctxprof.agent.ChildProcess.runJava;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ctxprof.agent.ChildProcess.Result;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Ground truth for wall samples (issue 25, "wall samples are never stale"): WallPhaseWorkload's
 * workers measure each phase's begin and end on themselves; every CPU and wall sample of a worker
 * taken more than 1 ms from any of its phase boundaries must show the phase it was in at the
 * sample's time: that phase's context, and that phase's method on its stack (or, for a running
 * sample, which is never a repeat, no phase method at all: a Java walk that stopped short is the
 * walker's limit, counted and printed, not a stale stack). Under clock=monotonic a sample's
 * ticks are CLOCK_MONOTONIC nanoseconds, the clock of System.nanoTime(), so no clock conversion
 * stands between the truth and the samples. Nothing depends on how fast the machine is: a late
 * thread only makes its phases longer.
 */
class WallTruthTest {
  private static final long TOLERANCE_NANOS = 1_000_000L;
  private static final Map<String, String> CONTEXT_OF_PHASE =
      Map.of("read", "/read", "lock", "/lock", "spin", "/spin", "sleep", "-");

  @TempDir Path dir;

  @Test
  void everySampleShowsThePhaseAtItsTime() throws Exception {
    Path jfr = dir.resolve("wall.jfr");
    Result result =
        runJava(
            List.of(
                "-XX:CompileCommand=quiet",
                "-XX:CompileCommand=dontinline,io.ctxprof.agent.WallPhaseWorkload::phase*",
                agent(
                    "start,event=cpu+wall,wall=5ms,clock=monotonic,contextid=true,"
                        + "attributes=endpoint,file="
                        + jfr)),
            "WallPhaseWorkload",
            "80");
    assertEquals(0, result.exit, result.toString());
    assertTrue(result.stderr.isEmpty(), "the JVM printed: " + result.stderr);
    Map<Long, List<long[]>> boundaries = new HashMap<>(); // tid -> {begin, end, phase index}
    for (String line : result.stdout) {
      String[] parts = line.split(" ");
      if (parts[0].equals("worker")) {
        boundaries.put(Long.parseLong(parts[1]), new ArrayList<>());
      } else if (parts[0].equals("phase")) {
        boundaries
            .get(Long.parseLong(parts[1]))
            .add(
                new long[] {
                  Long.parseLong(parts[3]),
                  Long.parseLong(parts[4]),
                  List.of(WallPhaseWorkload.PHASES).indexOf(parts[2])
                });
      } else {
        throw new AssertionError("the JVM printed: " + line);
      }
    }
    assertEquals(WallPhaseWorkload.WORKERS, boundaries.size(), result.toString());

    JfrRecording recording = JfrRecording.read(jfr);
    Map<Long, String> endpoints = new HashMap<>(); // contextId -> endpoint
    for (RecordedEvent context : recording.ofType("ctxprof.Context")) {
      endpoints.put(context.getLong("contextId"), context.getString("endpoint"));
    }
    Map<String, Integer> judged = new TreeMap<>(); // "type phase" -> samples judged
    List<String> wrong = new ArrayList<>();
    Map<String, Integer> walks = new TreeMap<>(); // samples with no phase, by stack
    for (String type : List.of("jdk.ExecutionSample", "profiler.WallClockSample")) {
      for (RecordedEvent sample : recording.ofType(type)) {
        String thread = type.equals("jdk.ExecutionSample") ? "sampledThread" : "eventThread";
        long tid = JfrRecording.threadKey(sample.getThread(thread));
        List<long[]> phases = boundaries.get(tid);
        if (phases == null) {
          continue; // not a worker
        }
        long time = sample.getLong("startTime"); // the raw ticks: CLOCK_MONOTONIC nanoseconds
        long[] truth = phaseAt(phases, time);
        if (truth == null) {
          continue; // within the tolerance of a boundary, or before or after the workload
        }
        String phase = WallPhaseWorkload.PHASES[(int) truth[2]];
        String shownPhase = phaseOnStack(sample);
        long id = sample.getLong("contextId");
        String shownContext = id == 0 ? "-" : endpoints.getOrDefault(id, "(unknown id " + id + ")");
        judged.merge(type + " " + phase, 1, Integer::sum);
        String state = stateOf(sample);
        boolean running = state.equals("STATE_RUNNABLE") || state.equals("STATE_DEFAULT");
        boolean rightStack =
            phase.equals(shownPhase)
                // A running sample is always taken at its time (a repeat copies a sleeping one):
                // a stack with no phase on it is a Java walk that stopped short (JDK 25 in
                // System.nanoTime's VM code), not a stale one.
                || (running && !List.of(WallPhaseWorkload.PHASES).contains(shownPhase));
        if (!List.of(WallPhaseWorkload.PHASES).contains(shownPhase)) {
          walks.merge(type + " " + state + " " + topFrames(sample), 1, Integer::sum);
        }
        if (!rightStack || !CONTEXT_OF_PHASE.get(phase).equals(shownContext)) {
          wrong.add(
              String.format(
                  "%s %s at +%.2f ms into %s (%.2f ms long) of tid %d shows %s under %s: %s",
                  type,
                  state,
                  (time - truth[0]) / 1e6,
                  phase,
                  (truth[1] - truth[0]) / 1e6,
                  tid,
                  shownPhase,
                  shownContext,
                  topFrames(sample)));
        }
      }
    }
    System.out.println(
        "wall truth on JDK " + Runtime.version().feature() + ": judged " + judged + "; "
            + wrong.size() + " wrong; with no phase on the stack: " + walks);
    wrong.stream().limit(20).forEach(System.out::println);
    // The check means something only if every phase was sampled, by wall and (spin) CPU samples.
    for (String phase : WallPhaseWorkload.PHASES) {
      assertTrue(
          judged.getOrDefault("profiler.WallClockSample " + phase, 0) >= 50,
          "too few wall samples judged in " + phase + ": " + judged);
    }
    assertTrue(
        judged.getOrDefault("jdk.ExecutionSample spin", 0) >= 50,
        "too few CPU samples judged in spin: " + judged);
    assertEquals(0, wrong.size(), "samples not showing the phase at their time: " + wrong.size()
        + " of " + judged.values().stream().mapToInt(Integer::intValue).sum());
  }

  /**
   * The phase (begin, end, index) whose inside holds `time` more than the tolerance away from
   * every boundary of the thread; null when there is none.
   */
  private static long[] phaseAt(List<long[]> phases, long time) {
    for (int i = 0; i < phases.size(); i++) {
      long[] phase = phases.get(i);
      if (time >= phase[0] + TOLERANCE_NANOS && time <= phase[1] - TOLERANCE_NANOS) {
        return phase;
      }
    }
    return null;
  }

  /** The innermost frames of the sample's stack, for the failure message. */
  private static String topFrames(RecordedEvent sample) {
    if (sample.getStackTrace() == null) {
      return "[]";
    }
    List<String> frames = new ArrayList<>();
    for (RecordedFrame frame : sample.getStackTrace().getFrames()) {
      if (frames.size() == 8) {
        break;
      }
      frames.add(frame.getMethod().getType().getName() + "." + frame.getMethod().getName());
    }
    return frames.toString();
  }

  /** The state's name (a jdk.types.ThreadState). */
  private static String stateOf(RecordedEvent sample) {
    Object state = sample.getValue("state");
    return state instanceof RecordedObject
        ? ((RecordedObject) state).getString("name")
        : String.valueOf(state);
  }

  /** The workload's phase method on the sample's stack, "(none)" when it has none. */
  private static String phaseOnStack(RecordedEvent sample) {
    if (sample.getStackTrace() == null) {
      return "(no stack)";
    }
    for (RecordedFrame frame : sample.getStackTrace().getFrames()) {
      String method = frame.getMethod().getName();
      if (frame.getMethod().getType().getName().equals(WallPhaseWorkload.class.getName())
          && method.startsWith("phase")) {
        return method.substring("phase".length()).toLowerCase();
      }
    }
    return "(none)";
  }
}
