package io.ctxprof.example;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * The shop's load generator, a process of its own: {@code LoadGenerator --port N [--clients N]
 * (--requests N | --seconds S | --count-while FILE) [--summary PATH] [--counted PATH]}. Its clients send a fixed
 * mix of requests over HTTP on loopback (in every 20 consecutive requests 6 /checkout, 5
 * /catalog, 5 /inventory and 4 /shipping, tenants in turn), each waiting for its answer before
 * the next.
 *
 * <p>For each endpoint it adds up what the service measured for every answered request
 * (response headers X-Cpu-Nanos, X-Alloc-Bytes, X-Blocked-Nanos, X-Span-Nanos; see {@link
 * ShopService}), and at the end prints requests x cost per endpoint and each endpoint's share of the CPU time: the
 * shares a CPU profile of the service should show. It stops after N requests, after S seconds,
 * or with {@code --count-while} once FILE has appeared and gone again; then it counts only the
 * requests that started after FILE appeared and ended before it was removed, so its numbers
 * cover the same window as a recording made while FILE exists (the demo creates it right after
 * {@code ctxprof attach} started and removes it right before the stop). {@code --summary} writes
 * the numbers as tab-separated values for tools (the demo's comparison, tools/demo_summary.py).
 * {@code --counted} creates PATH once a request is counted, so a tool can keep its window open
 * until there is something to count (on a loaded machine a cold service's first answers can take
 * seconds).
 */
public final class LoadGenerator {
  /** The request mix: one cycle of endpoint indices into ShopService.ENDPOINTS. */
  static final int[] CYCLE = {0, 1, 2, 3, 0, 1, 2, 0, 3, 1, 2, 0, 1, 3, 2, 0, 1, 2, 3, 0};

  static final String[] TENANTS = {"acme", "globex", "initech"};

  /** What the service measured for one endpoint's counted requests. */
  static final class EndpointTotals {
    final LongAdder requests = new LongAdder();
    final LongAdder errors = new LongAdder();
    final LongAdder cpuNanos = new LongAdder();
    final LongAdder allocatedBytes = new LongAdder();
    final LongAdder blockedNanos = new LongAdder();
    final LongAdder latencyNanos = new LongAdder();
    final LongAdder spanNanos = new LongAdder();
    // Every counted request's span length, for the percentiles the demo compares (a few
    // hundred thousand at most: 8 bytes each).
    private long[] spans = new long[1024];
    private int spanCount;

    synchronized void addSpan(long nanos) {
      if (spanCount == spans.length) {
        spans = java.util.Arrays.copyOf(spans, spanCount * 2);
      }
      spans[spanCount++] = nanos;
    }

    /** The span length at quantile {@code q} (nearest rank), 0 without requests. */
    synchronized long spanQuantile(double q) {
      if (spanCount == 0) {
        return 0;
      }
      long[] sorted = java.util.Arrays.copyOf(spans, spanCount);
      java.util.Arrays.sort(sorted);
      return sorted[(int) Math.min(spanCount - 1, Math.ceil(q * spanCount) - 1)];
    }
  }

  /** Whether requests count: always, except with --count-while before and after its window. */
  private enum Phase {
    BEFORE,
    COUNTING,
    DONE
  }

  private final int port;
  private final EndpointTotals[] totals = new EndpointTotals[ShopService.ENDPOINTS.length];
  private final AtomicLong next = new AtomicLong();
  private final AtomicBoolean firstErrorShown = new AtomicBoolean();
  private final LongAdder uncounted = new LongAdder();
  private volatile Phase phase = Phase.COUNTING;
  private final Path counted;
  private final AtomicBoolean countedCreated = new AtomicBoolean();

  LoadGenerator(int port, Path counted) {
    this.port = port;
    this.counted = counted;
    for (int i = 0; i < totals.length; i++) {
      totals[i] = new EndpointTotals();
    }
  }

  public static void main(String[] args) throws Exception {
    int port = -1;
    int clients = 8;
    int seconds = 0;
    int requests = 0;
    Path window = null;
    String summary = null;
    Path counted = null;
    for (int i = 0; i < args.length; i += 2) {
      if (i + 1 >= args.length) {
        usage("'" + args[i] + "' needs a value");
      }
      String value = args[i + 1];
      switch (args[i]) {
        case "--port":
          port = ShopService.parseNumber(args[i], value, 1, 65535);
          break;
        case "--clients":
          clients = ShopService.parseNumber(args[i], value, 1, 256);
          break;
        case "--seconds":
          seconds = ShopService.parseNumber(args[i], value, 1, 3600);
          break;
        case "--requests":
          requests = ShopService.parseNumber(args[i], value, 1, 100_000_000);
          break;
        case "--count-while":
          window = Paths.get(value);
          break;
        case "--summary":
          summary = value;
          break;
        case "--counted":
          counted = Paths.get(value);
          break;
        default:
          usage("unknown argument '" + args[i] + "'");
      }
    }
    int stops = (seconds > 0 ? 1 : 0) + (requests > 0 ? 1 : 0) + (window != null ? 1 : 0);
    if (port < 0 || stops != 1) {
      usage("give --port and one of --requests, --seconds, --count-while");
    }
    LoadGenerator load = new LoadGenerator(port, counted);
    long started = System.nanoTime();
    if (window != null) {
      load.watch(window);
    }
    load.run(clients, seconds, requests);
    double elapsed = (System.nanoTime() - started) / 1e9;
    load.report(System.out, clients, elapsed);
    if (summary != null) {
      Files.write(Paths.get(summary), load.summary().getBytes(StandardCharsets.UTF_8));
    }
    long errors = 0;
    for (EndpointTotals endpoint : load.totals) {
      errors += endpoint.errors.sum();
    }
    System.exit(errors == 0 ? 0 : 1);
  }

  private static void usage(String problem) {
    System.err.println(
        "load: " + problem + ": use --port N [--clients N] (--requests N | --seconds S |"
            + " --count-while FILE) [--summary PATH] [--counted PATH]");
    System.exit(2);
  }

  /** The path and query of request number {@code index}: endpoint by the cycle, tenant in turn. */
  static String requestFor(long index) {
    String endpoint = ShopService.ENDPOINTS[CYCLE[(int) (index % CYCLE.length)]];
    String tenant = TENANTS[(int) (index % TENANTS.length)];
    return endpoint + "?tenant=" + tenant + "&n=" + (5 + index % 10);
  }

  /**
   * Counts only while {@code file} exists: a daemon thread polls it every 10 ms and moves the
   * phase from BEFORE to COUNTING when it appears and to DONE when it is gone again.
   */
  void watch(Path file) {
    phase = Phase.BEFORE;
    Thread watcher =
        new Thread(
            () -> {
              try {
                while (!Files.exists(file)) {
                  Thread.sleep(10);
                }
                phase = Phase.COUNTING;
                System.out.println("load: " + file + " exists: counting requests");
                while (Files.exists(file)) {
                  Thread.sleep(10);
                }
              } catch (InterruptedException e) {
                // ends the window like the file's removal
              }
              phase = Phase.DONE;
            },
            "load-window");
    watcher.setDaemon(true);
    watcher.start();
  }

  /**
   * Sends requests from {@code clients} threads until {@code requests} were sent, {@code
   * seconds} passed or the counting window closed, whichever was asked for.
   */
  void run(int clients, int seconds, int requests) throws InterruptedException {
    long deadline = seconds > 0 ? System.nanoTime() + seconds * 1_000_000_000L : Long.MAX_VALUE;
    Thread[] threads = new Thread[clients];
    for (int i = 0; i < clients; i++) {
      threads[i] =
          new Thread(
              () -> {
                while (true) {
                  long index = next.getAndIncrement();
                  if ((requests > 0 && index >= requests)
                      || System.nanoTime() >= deadline
                      || phase == Phase.DONE) {
                    return;
                  }
                  send(index, deadline);
                }
              },
              "load-client-" + (i + 1));
      threads[i].start();
    }
    for (Thread thread : threads) {
      thread.join();
    }
  }

  private void send(long index, long deadline) {
    boolean countingAtStart = phase == Phase.COUNTING;
    String pathAndQuery = requestFor(index);
    EndpointTotals endpoint = totals[CYCLE[(int) (index % CYCLE.length)]];
    long start = System.nanoTime();
    try {
      HttpURLConnection connection =
          (HttpURLConnection) new URL("http://127.0.0.1:" + port + pathAndQuery).openConnection();
      connection.setConnectTimeout(5000);
      connection.setReadTimeout(30000);
      int status = connection.getResponseCode();
      try (InputStream in =
          status == 200 ? connection.getInputStream() : connection.getErrorStream()) {
        if (in != null) {
          in.readAllBytes();
        }
      }
      if (status != 200) {
        throw new IOException("HTTP status " + status);
      }
      long end = System.nanoTime();
      if (!countingAtStart || phase != Phase.COUNTING || end > deadline) {
        uncounted.increment();
        return;
      }
      endpoint.requests.increment();
      endpoint.cpuNanos.add(header(connection, "X-Cpu-Nanos"));
      endpoint.allocatedBytes.add(header(connection, "X-Alloc-Bytes"));
      endpoint.blockedNanos.add(header(connection, "X-Blocked-Nanos"));
      endpoint.latencyNanos.add(end - start);
      long span = header(connection, "X-Span-Nanos");
      endpoint.spanNanos.add(span);
      endpoint.addSpan(span);
      if (counted != null && countedCreated.compareAndSet(false, true)) {
        markCounted();
      }
    } catch (IOException | RuntimeException e) {
      endpoint.errors.increment();
      if (firstErrorShown.compareAndSet(false, true)) {
        System.err.println("load: " + pathAndQuery + " failed: " + e);
      }
    }
  }

  /** Creates the --counted file; a path it cannot create ends the run, naming the path. */
  private void markCounted() {
    try {
      Files.write(counted, new byte[0]);
    } catch (IOException e) {
      System.err.println("load: cannot create --counted " + counted + ": " + e);
      System.exit(2);
    }
  }

  private static long header(HttpURLConnection connection, String name) throws IOException {
    String value = connection.getHeaderField(name);
    if (value == null) {
      throw new IOException("the answer has no " + name + " header");
    }
    return Long.parseLong(value);
  }

  /** Each endpoint's share of the CPU time the service measured, in percent (0 when none). */
  double[] cpuShares() {
    long total = 0;
    for (EndpointTotals endpoint : totals) {
      total += endpoint.cpuNanos.sum();
    }
    double[] shares = new double[totals.length];
    for (int i = 0; i < totals.length; i++) {
      shares[i] = total == 0 ? 0 : 100.0 * totals[i].cpuNanos.sum() / total;
    }
    return shares;
  }

  void report(PrintStream out, int clients, double elapsedSeconds) {
    long counted = 0;
    long errors = 0;
    for (EndpointTotals endpoint : totals) {
      counted += endpoint.requests.sum();
      errors += endpoint.errors.sum();
    }
    out.printf(
        Locale.ROOT,
        "load: %d clients sent %d requests in %.1f s, %d errors; counted %d (%d outside the"
            + " counting window)%n",
        clients,
        counted + uncounted.sum() + errors,
        elapsedSeconds,
        errors,
        counted,
        uncounted.sum());
    out.println("load: per endpoint, requests x what the service measured per request:");
    out.printf(
        Locale.ROOT,
        "load:   %-10s %8s %11s %14s %14s %11s %10s%n",
        "endpoint",
        "requests",
        "CPU ms/req",
        "alloc KiB/req",
        "blocked ms/req",
        "latency ms",
        "CPU share");
    double[] shares = cpuShares();
    for (int i = 0; i < totals.length; i++) {
      EndpointTotals endpoint = totals[i];
      double n = Math.max(1, endpoint.requests.sum());
      out.printf(
          Locale.ROOT,
          "load:   %-10s %8d %11.3f %14.1f %14.3f %11.2f %8.1f %%%n",
          ShopService.ENDPOINTS[i],
          endpoint.requests.sum(),
          endpoint.cpuNanos.sum() / n / 1e6,
          endpoint.allocatedBytes.sum() / n / 1024,
          endpoint.blockedNanos.sum() / n / 1e6,
          endpoint.latencyNanos.sum() / n / 1e6,
          shares[i]);
    }
  }

  /** Tab-separated totals: a header line, then one line per endpoint. */
  String summary() {
    StringBuilder out =
        new StringBuilder(
            "endpoint\trequests\terrors\tcpu_nanos\talloc_bytes\tblocked_nanos\tspan_nanos"
                + "\tspan_p50_nanos\tspan_p99_nanos\n");
    for (int i = 0; i < totals.length; i++) {
      EndpointTotals endpoint = totals[i];
      out.append(ShopService.ENDPOINTS[i])
          .append('\t')
          .append(endpoint.requests.sum())
          .append('\t')
          .append(endpoint.errors.sum())
          .append('\t')
          .append(endpoint.cpuNanos.sum())
          .append('\t')
          .append(endpoint.allocatedBytes.sum())
          .append('\t')
          .append(endpoint.blockedNanos.sum())
          .append('\t')
          .append(endpoint.spanNanos.sum())
          .append('\t')
          .append(endpoint.spanQuantile(0.50))
          .append('\t')
          .append(endpoint.spanQuantile(0.99))
          .append('\n');
    }
    return out.toString();
  }
}
