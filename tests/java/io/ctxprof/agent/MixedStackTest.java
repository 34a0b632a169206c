package io.ctxprof.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ctxprof.agent.ChildProcess.Result;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The mixed stack that the default options record in a JVM (cstack=dwarf), against ZlibWorkload,
 * whose stacks are known: a Java native method's native callees sit right above it
 * (Deflater.deflateBytesBytes -> libzip's JNI function -> zlib's deflate, in libz.so.1 or built
 * into libzip.so), every frame from the
 * first Java frame to the root is a Java frame (no Java frame twice, once named and once as an
 * unnamed code-cache frame; no thread start-up frames under Java frames), and compiled Java code
 * gets no unnamed native leaf.
 */
class MixedStackTest {
  private static final Set<String> JAVA_TYPES = Set.of("Interpreted", "JIT compiled", "Inlined");

  @TempDir Path dir;

  @Test
  void nativeCalleesSitAboveTheJavaNativeMethodAndJavaFramesEndTheStack() throws Exception {
    Path jfr = dir.resolve("mixed.jfr");
    List<String> command =
        new ArrayList<>(
            ChildProcess.javaCommand(
                List.of(ChildProcess.agent("start,event=cpu,interval=2ms,file=" + jfr))));
    command.add(ZlibWorkload.class.getName());
    command.add("3000");
    Result result = ChildProcess.run(command, 120);
    assertEquals(0, result.exit, result.toString());

    // Samples with Deflater.deflateBytesBytes, and whether a zlib frame sits above it, by time.
    TreeMap<Instant, Boolean> deflating = new TreeMap<>();
    long compute = 0; // samples of the compute thread in spin
    long computeJavaLeaf = 0; // ... whose leaf is a Java frame
    long computeUnnamedLeaf = 0; // ... whose leaf is an unnamed code-cache frame
    Map<String, Long> violations = new TreeMap<>();
    for (RecordedEvent event : RecordingFile.readAllEvents(jfr)) {
      if (!event.getEventType().getName().equals("jdk.ExecutionSample")
          || event.getStackTrace() == null) {
        continue;
      }
      List<RecordedFrame> frames = event.getStackTrace().getFrames();
      int firstJava = -1;
      for (int i = 0; i < frames.size(); i++) {
        if (JAVA_TYPES.contains(frames.get(i).getType())) {
          firstJava = i;
          break;
        }
      }
      if (firstJava < 0) {
        continue; // a thread without Java frames: its native stack only
      }
      for (int i = firstJava; i < frames.size(); i++) {
        RecordedFrame frame = frames.get(i);
        if (!JAVA_TYPES.contains(frame.getType())) {
          violations.merge(
              "non-Java frame below a Java frame: " + name(frame) + " (" + frame.getType() + ")",
              1L,
              Long::sum);
        }
      }
      String thread = event.getThread("sampledThread").getJavaName();
      if (name(frames.get(firstJava)).equals("java.util.zip.Deflater.deflateBytesBytes")) {
        // zlib's deflate: in libz.so.1 (Debian's JDK) or built into libzip.so (Temurin's).
        boolean zlib = false;
        for (int i = 0; i < firstJava; i++) {
          zlib |= frames.get(i).getMethod().getName().equals("deflate");
        }
        deflating.merge(event.getStartTime(), zlib, Boolean::logicalAnd);
      }
      if ("compute".equals(thread) && name(frames.get(firstJava)).endsWith("ZlibWorkload.spin")) {
        compute++;
        String leaf = name(frames.get(0));
        if (firstJava == 0) {
          computeJavaLeaf++;
        } else if (leaf.contains("[unknown") || leaf.contains("[jit]")) {
          computeUnnamedLeaf++;
        }
      }
    }
    // Samples taken after libzip/libz were loaded but before the background thread compiled
    // their unwind tables end at the library's first frame; on a starved machine that took over
    // a second in CI (11 of 189 samples reached zlib once). Once one sample reaches zlib the
    // tables are in, and from then on every sample must, but for the JNI function's own
    // instructions and its calls into the VM (none of ~700 samples here, quiet or loaded).
    Instant tablesIn =
        deflating.entrySet().stream()
            .filter(Map.Entry::getValue)
            .map(Map.Entry::getKey)
            .findFirst()
            .orElse(null);
    SortedMap<Instant, Boolean> afterTables =
        tablesIn == null ? new TreeMap<>() : deflating.tailMap(tablesIn);
    long inZlib = afterTables.values().stream().filter(zlib -> zlib).count();
    System.out.println(
        "deflateBytesBytes "
            + deflating.size()
            + " (zlib above it in "
            + inZlib
            + " of the "
            + afterTables.size()
            + " from the first that reached it on), compute "
            + compute
            + " (Java leaf in "
            + computeJavaLeaf
            + ", unnamed leaf in "
            + computeUnnamedLeaf
            + "), violations "
            + violations);
    assertTrue(violations.isEmpty(), violations.toString());
    assertTrue(deflating.size() >= 100, "samples in deflateBytesBytes: " + deflating.size());
    assertTrue(inZlib >= 50, inZlib + " samples reached zlib");
    assertTrue(
        inZlib * 10 >= afterTables.size() * 9,
        inZlib + " of " + afterTables.size() + " reach zlib once the tables are in");
    assertTrue(compute >= 100, "samples in spin: " + compute);
    // A pure Java thread's samples start with its Java frames, never with an unnamed frame of
    // its compiled code (a sample can land in the kernel, a VM stub or a safepoint poll, whose
    // named native frames are legitimately on top: 1-14 % here, more under load).
    assertEquals(0, computeUnnamedLeaf, computeUnnamedLeaf + " of " + compute + " unnamed");
    assertTrue(computeJavaLeaf * 3 >= compute * 2, computeJavaLeaf + " of " + compute);
  }

  private static String name(RecordedFrame frame) {
    return frame.getMethod().getType().getName() + "." + frame.getMethod().getName();
  }
}
