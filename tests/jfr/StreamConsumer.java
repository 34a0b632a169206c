// Streams a recording while ctxprof's writer is still writing it, with the JDK's own
// EventStream.openFile. After every flush segment it publishes the number of samples seen so
// far in <ack file>, which the writer waits for before it writes the next batch: that proves
// the samples were read from the unfinished chunk. Prints the totals when the chunk is done.
//
// With a third argument "repository", <recording> is a folder of chunk files read with
// EventStream.openRepository from the beginning; the stream ends at the chunk with the final flag.
//
// Usage: java StreamConsumer <recording> <ack file> [repository]
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import jdk.jfr.consumer.EventStream;
import jdk.jfr.consumer.RecordedEvent;

public class StreamConsumer {
  private static long samples;
  private static long contexts;
  private static long flushes;
  private static String problem;

  private static void sample(RecordedEvent event) {
    samples++;
    if (event.getThread() == null && event.getThread("sampledThread") == null) {
      problem = "sample without thread: " + event;
    } else if (event.getStackTrace() == null) {
      problem = "sample without stack: " + event;
    }
  }

  public static void main(String[] args) throws Exception {
    Path recording = Paths.get(args[0]);
    Path ack = Paths.get(args[1]);
    Path ackTemp = Paths.get(args[1] + ".tmp");
    boolean repository = args.length > 2 && args[2].equals("repository");
    try (EventStream stream =
        repository ? EventStream.openRepository(recording) : EventStream.openFile(recording)) {
      if (repository) {
        stream.setStartTime(java.time.Instant.EPOCH);  // every chunk, not only new ones
      }
      stream.onEvent("jdk.ExecutionSample", StreamConsumer::sample);
      stream.onEvent("profiler.WallClockSample", StreamConsumer::sample);
      stream.onEvent("ctxprof.Context", event -> {
        contexts++;
        if (event.getLong("traceIdHigh") == 0
            && event.getLong("traceIdLow") == 0
            && event.getLong("spanId") == 0) {
          problem = "context without ids: " + event;
        }
      });
      stream.onFlush(() -> {
        flushes++;
        try {
          Files.writeString(ackTemp, Long.toString(samples));
          Files.move(ackTemp, ack, StandardCopyOption.ATOMIC_MOVE,
              StandardCopyOption.REPLACE_EXISTING);
        } catch (Exception e) {
          problem = "cannot write " + ack + ": " + e;
        }
      });
      stream.start();
    }
    System.out.println("samples " + samples + " contexts " + contexts + " flushes " + flushes);
    if (problem != null) {
      System.out.println("problem: " + problem);
      System.exit(1);
    }
  }
}
