package io.ctxprof.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ctxprof.agent.ChildProcess.Result;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Java frame types come from the VM (jni/vm_stack_walker.h): with -Xint every Java frame is
 * Interpreted; once warm, InliningWorkload.mix runs inlined into InliningWorkload.hot, which runs
 * JIT compiled. Every recording also keeps the invariant of physical frames: an Inlined frame's
 * caller belongs to the same compiled frame (Inlined or JIT compiled).
 */
class FrameTypeTest {
  private static final String WORKLOAD = InliningWorkload.class.getName();

  @TempDir Path dir;

  @Test
  void interpreterOnlyRunHasOnlyInterpretedJavaFrames() throws Exception {
    Map<String, Integer> types = record(List.of("-Xint"), "interpreted.jfr");
    System.out.println("frame types, -Xint: " + types);
    assertTrue(types.getOrDefault("Interpreted", 0) >= 200, "too few frames: " + types);
    for (String key : types.keySet()) {
      if (key.startsWith(WORKLOAD + ".")) {
        assertTrue(key.endsWith(" Interpreted"), "-Xint: " + types);
      } else {
        // JIT compiled: Java native methods are typed so (jni/jvm_resolvers.cc, for
        // async-profiler's converter), and some call back into Java (reflection, class loading).
        // The recording has no modifiers to tell them from compiled code; the workload's own
        // methods above are the ground truth.
        assertTrue(
            key.equals("Interpreted")
                || key.equals("JIT compiled")
                || key.equals("Native")
                || key.equals("Kernel"),
            "-Xint: " + types);
      }
    }
    assertTrue(types.getOrDefault(WORKLOAD + ".mix Interpreted", 0) >= 20, types.toString());
  }

  @Test
  void warmRunShowsTheSmallMethodInlinedIntoItsCompiledCaller() throws Exception {
    Map<String, Integer> types = record(List.of(), "warm.jfr");
    System.out.println("frame types, warm: " + types);
    int inlined = types.getOrDefault("mix Inlined into hot JIT compiled", 0);
    assertTrue(inlined >= 20, "mix inlined into compiled hot in " + inlined + " samples");
  }

  /**
   * Records InliningWorkload with {@code jvmOptions} and counts frame types: per type name,
   * per "class.method type" of the workload's methods, and "mix Inlined into hot JIT compiled".
   */
  private Map<String, Integer> record(List<String> jvmOptions, String name) throws Exception {
    Path jfr = dir.resolve(name);
    List<String> command = new java.util.ArrayList<>(ChildProcess.javaCommand(jvmOptions));
    command.add(
        "-agentpath:" + ChildProcess.LIBRARY + "=start,event=cpu,interval=2ms,file=" + jfr);
    command.add(WORKLOAD);
    command.add("4000");
    Result result = ChildProcess.run(command, 120);
    assertEquals(0, result.exit, result.toString());
    Map<String, Integer> counts = new TreeMap<>();
    for (RecordedEvent event : RecordingFile.readAllEvents(jfr)) {
      if (!event.getEventType().getName().equals("jdk.ExecutionSample")
          || event.getStackTrace() == null) {
        continue;
      }
      List<RecordedFrame> frames = event.getStackTrace().getFrames();
      for (int i = 0; i < frames.size(); i++) {
        RecordedFrame frame = frames.get(i);
        if (!frame.isJavaFrame()) {
          continue;
        }
        String type = frame.getType();
        counts.merge(type, 1, Integer::sum);
        String method = frame.getMethod().getType().getName() + "." + frame.getMethod().getName();
        if (method.startsWith(WORKLOAD + ".")) {
          counts.merge(method + " " + type, 1, Integer::sum);
        }
        if (type.equals("Inlined")) {
          String callerType = i + 1 < frames.size() ? frames.get(i + 1).getType() : "none";
          assertTrue(
              callerType.equals("Inlined") || callerType.equals("JIT compiled"),
              "an Inlined frame's caller is " + callerType + ": " + method);
        }
        if (method.equals(WORKLOAD + ".mix") && type.equals("Inlined")) {
          RecordedFrame caller = frames.get(i + 1);
          if (caller.getMethod().getName().equals("hot")
              && caller.getType().equals("JIT compiled")) {
            counts.merge("mix Inlined into hot JIT compiled", 1, Integer::sum);
          }
        }
      }
    }
    return counts;
  }
}
