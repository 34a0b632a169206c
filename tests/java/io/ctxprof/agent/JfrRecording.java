package io.ctxprof.agent;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

/**
 * The events of a recording and its ctxprof.Context intervals, joined by thread and time (what a
 * reader that does not know ctxprof's fields does): the OS thread id, or for a virtual thread (OS
 * thread id 0, as JDK 25's JFR writes it) its Java thread id.
 */
final class JfrRecording {
  /** The CPU samples (jdk.ExecutionSample). */
  final List<RecordedEvent> samples = new ArrayList<>();

  final List<RecordedEvent> events = new ArrayList<>();
  final Map<Long, List<RecordedEvent>> contexts = new HashMap<>();

  static JfrRecording read(Path file) throws IOException {
    JfrRecording recording = new JfrRecording();
    for (RecordedEvent event : RecordingFile.readAllEvents(file)) {
      recording.events.add(event);
      String type = event.getEventType().getName();
      if (type.equals("jdk.ExecutionSample")) {
        recording.samples.add(event);
      } else if (type.equals("ctxprof.Context")) {
        recording
            .contexts
            .computeIfAbsent(threadKey(event.getThread()), t -> new ArrayList<>())
            .add(event);
      }
    }
    return recording;
  }

  /** JDK 25's getOSThreadId() is -1 for every virtual thread: the field itself is read. */
  static long threadKey(RecordedThread thread) {
    long os = thread.getLong("osThreadId");
    return os != 0 ? os : -thread.getJavaThreadId();
  }

  /** CPU samples with a frame of a method named {@code method}. */
  long samplesIn(String method) {
    return samples.stream()
        .filter(
            s ->
                s.getStackTrace() != null
                    && s.getStackTrace().getFrames().stream()
                        .anyMatch(f -> f.getMethod().getName().equals(method)))
        .count();
  }

  /** The stacks (leaf first) of the events of {@code type} that have one. */
  List<List<RecordedFrame>> stacksOf(String type) {
    List<List<RecordedFrame>> stacks = new ArrayList<>();
    for (RecordedEvent event : ofType(type)) {
      if (event.getStackTrace() != null) stacks.add(event.getStackTrace().getFrames());
    }
    return stacks;
  }

  List<RecordedEvent> ofType(String type) {
    List<RecordedEvent> found = new ArrayList<>();
    for (RecordedEvent event : events) {
      if (event.getEventType().getName().equals(type)) {
        found.add(event);
      }
    }
    return found;
  }

  /**
   * The context intervals of the sample's thread that contain it: none (no context), one, or
   * several. The writer's intervals overlap only when a thread's samples reached it out of tick
   * order (docs/JFR.md); a sample inside several intervals cannot be attributed by a join.
   */
  List<RecordedEvent> contextsOf(RecordedEvent sample) {
    return contextsAt(sample.getThread("sampledThread"), sample.getStartTime());
  }

  /** The context intervals of {@code thread} that contain {@code time}. */
  List<RecordedEvent> contextsAt(RecordedThread thread, Instant time) {
    List<RecordedEvent> found = new ArrayList<>();
    for (RecordedEvent context : contexts.getOrDefault(threadKey(thread), List.of())) {
      if (!time.isBefore(context.getStartTime()) && time.isBefore(context.getEndTime())) {
        found.add(context);
      }
    }
    return found;
  }
}
