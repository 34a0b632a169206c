package io.ctxprof.agent;

import static io.ctxprof.agent.ChildProcess.agent;
import static io.ctxprof.agent.ChildProcess.runJava;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ctxprof.agent.ChildProcess.Result;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Ground truth for `ctxprof --events TYPE --value FIELD` (issue 26, item 4): FileEventsWorkload
 * reads files of known sizes inside the spans of two endpoints and outside any span, and commits
 * an application event (ctxprof.test.Order) per request; the JDK's own recorder writes the
 * jdk.FileRead and Order events into one file, ctxprof (contexts=all) its spans into another, and
 * the test concatenates the two (the JDK counts in nanosecond ticks, ctxprof in TSC ticks, so the
 * join goes through each chunk's epoch time). Then per endpoint, bytes read (--value bytesRead)
 * and order amounts (--value amount) in `convert --to collapsed` equal what the workload counted,
 * and the reads outside spans have no context; `report` shows the same bytes; pprof carries
 * jdk.FileRead as a sample type "jdk.FileRead/bytes" whose values add up to the bytesRead of all
 * the JDK's jdk.FileRead events (decoded with protoc and the published pprof schema); unknown
 * types and fields are refused with a message naming them.
 */
class FileEventsTest {
  private static final String TOOL = System.getProperty("ctxprof.tool");
  private static final Path PPROF_PROTO =
      Path.of("/usr/share/gocode/src/github.com/google/pprof/proto/profile.proto");

  @TempDir Path dir;

  @Test
  void jdkAndApplicationEventsJoinTheirSpans() throws Exception {
    Path ours = dir.resolve("ours.jfr");
    Path jdks = dir.resolve("jdk.jfr");
    Result result =
        runJava(
            List.of(agent("start,event=cpu,contexts=all,attributes=endpoint,file=" + ours)),
            "FileEventsWorkload",
            jdks.toString());
    assertEquals(0, result.exit, result.toString());
    Map<String, Long> truth = new HashMap<>();
    for (String line : result.stdout) {
      String[] parts = line.split(" ");
      assertTrue(parts.length == 4 && parts[0].equals("truth"), "the JVM printed: " + line);
      truth.put(parts[1] + " " + parts[2], Long.parseLong(parts[3]));
    }
    Path both = dir.resolve("both.jfr");
    Files.write(both, Files.readAllBytes(ours));
    Files.write(both, Files.readAllBytes(jdks), StandardOpenOption.APPEND);

    Map<String, Long> bytes = byEndpoint(both, "jdk.FileRead", "bytesRead");
    assertEquals(truth.get("bytes /small"), bytes.get("/small"), "bytes read in /small: " + bytes);
    assertEquals(truth.get("bytes /large"), bytes.get("/large"), "bytes read in /large: " + bytes);
    // Outside spans: the workload's reads, and the JDK's own (class files, /proc) it did not count.
    assertTrue(bytes.get("-") >= truth.get("bytes -"), "bytes read outside spans: " + bytes);
    Map<String, Long> amounts = byEndpoint(both, "ctxprof.test.Order", "amount");
    assertEquals(truth.get("amount /small"), amounts.get("/small"), "orders: " + amounts);
    assertEquals(truth.get("amount /large"), amounts.get("/large"), "orders: " + amounts);
    assertEquals(null, amounts.get("-"), "an order outside its span: " + amounts);

    Result report =
        ChildProcess.run(
            List.of(TOOL, "report", "--events", "jdk.FileRead", "--value", "bytesRead",
                "--top", "1", "--quiet", both.toString()),
            120);
    assertEquals(0, report.exit, report.toString());
    String text = String.join("\n", report.stdout);
    assertTrue(
        text.contains("== endpoint = \"/large\": 2.10 MiB bytesRead"), "report: " + text);

    long jdkBytes = 0;
    for (RecordedEvent event : RecordingFile.readAllEvents(jdks)) {
      if (event.getEventType().getName().equals("jdk.FileRead")) {
        jdkBytes += Math.max(0, event.getLong("bytesRead"));
      }
    }
    assertEquals(jdkBytes, pprofTotal(both, "jdk.FileRead", "bytes"), "pprof jdk.FileRead/bytes");

    Result unknown =
        ChildProcess.run(
            List.of(TOOL, "report", "--events", "jdk.NoSuchEvent", "--quiet", both.toString()),
            120);
    assertEquals(1, unknown.exit, unknown.toString());
    assertTrue(
        String.join("\n", unknown.stderr)
            .contains("--events jdk.NoSuchEvent: no such events in the recording"),
        unknown.toString());
    Result badField =
        ChildProcess.run(
            List.of(TOOL, "report", "--events", "jdk.FileRead", "--value", "path", "--quiet",
                both.toString()),
            120);
    assertEquals(1, badField.exit, badField.toString());
    assertTrue(
        String.join("\n", badField.stderr)
            .contains("--value path: jdk.FileRead's field is not a number (its numeric fields:"),
        badField.toString());
  }

  /** `convert --to collapsed --events TYPE --value FIELD`: endpoint ("-": none) -> amount. */
  private static Map<String, Long> byEndpoint(Path jfr, String type, String field)
      throws Exception {
    Result result =
        ChildProcess.run(
            List.of(TOOL, "convert", "--to", "collapsed", "--events", type, "--value", field,
                "--quiet", jfr.toString(), "-o", "-"),
            120);
    assertEquals(0, result.exit, result.toString());
    Map<String, Long> amounts = new HashMap<>();
    for (String line : result.stdout) {
      int space = line.lastIndexOf(' ');
      String endpoint = line.startsWith("[endpoint=") ? line.substring(10, line.indexOf(']')) : "-";
      amounts.merge(endpoint, Long.parseLong(line.substring(space + 1)), Long::sum);
    }
    return amounts;
  }

  /** The sum of pprof's sample values of sample type {@code type}/{@code unit}. */
  private long pprofTotal(Path jfr, String type, String unit) throws Exception {
    Path gz = dir.resolve("out.pb.gz");
    Result convert =
        ChildProcess.run(
            List.of(TOOL, "convert", "--to", "pprof", "--events", type, "--value", "bytesRead",
                "--quiet", jfr.toString(), "-o", gz.toString()),
            120);
    assertEquals(0, convert.exit, convert.toString());
    Path raw = dir.resolve("out.pb");
    try (InputStream in = new GZIPInputStream(Files.newInputStream(gz));
        OutputStream out = Files.newOutputStream(raw)) {
      in.transferTo(out);
    }
    Path text = dir.resolve("out.txt");
    Result decode =
        ChildProcess.run(
            List.of("sh", "-c", "protoc --proto_path=" + PPROF_PROTO.getParent()
                + " --decode=perftools.profiles.Profile " + PPROF_PROTO.getFileName() + " < "
                + raw + " > " + text),
            120);
    assertEquals(0, decode.exit, "protoc: " + decode);
    // The text format: sample_type { type: I unit: J } ..., sample { ... value: V ... },
    // string_table: "..." in order.
    List<String> strings = new ArrayList<>();
    List<long[]> sampleTypes = new ArrayList<>();
    List<List<Long>> values = new ArrayList<>();
    String block = null;
    long[] current = null;
    for (String line : Files.readAllLines(text)) {
      String trimmed = line.trim();
      if (trimmed.equals("sample_type {")) {
        block = "sample_type";
        current = new long[2];
        sampleTypes.add(current);
      } else if (trimmed.equals("sample {")) {
        block = "sample";
        values.add(new ArrayList<>());
      } else if (trimmed.endsWith("{")) {
        block = "other";
      } else if (trimmed.equals("}")) {
        block = null;
      } else if (trimmed.startsWith("string_table: ")) {
        strings.add(unquote(trimmed.substring("string_table: ".length())));
      } else if ("sample_type".equals(block) && trimmed.startsWith("type: ")) {
        current[0] = Long.parseLong(trimmed.substring(6));
      } else if ("sample_type".equals(block) && trimmed.startsWith("unit: ")) {
        current[1] = Long.parseLong(trimmed.substring(6));
      } else if ("sample".equals(block) && trimmed.startsWith("value: ")) {
        values.get(values.size() - 1).add(Long.parseLong(trimmed.substring(7)));
      }
    }
    int index = -1;
    for (int i = 0; i < sampleTypes.size(); i++) {
      if (strings.get((int) sampleTypes.get(i)[0]).equals(type)
          && strings.get((int) sampleTypes.get(i)[1]).equals(unit)) {
        index = i;
      }
    }
    assertTrue(index >= 0, "no sample type " + type + "/" + unit + " in " + strings);
    long total = 0;
    for (List<Long> sample : values) {
      total += sample.get(index);
    }
    return total;
  }

  private static String unquote(String quoted) {
    return quoted.substring(1, quoted.length() - 1).replace("\\\"", "\"").replace("\\\\", "\\");
  }
}
