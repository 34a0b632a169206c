package io.ctxprof.example;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * A small shop service on the JDK's built-in HTTP server (loopback only):
 * {@code ShopService [--port N] [--port-file PATH] [--workers N]} serves /checkout (CPU),
 * /catalog (allocations), /inventory (a contended lock) and /shipping (a slow dependency) until
 * it gets SIGTERM, then prints what it served and exits. It needs no profiler: the tracer binds
 * libctxprof's context store when the library is found ({@code -Dctxprof.library=PATH}), and
 * profiling is started from outside with {@code ctxprof attach PID start}.
 *
 * <p>Like a tracing middleware, it measures each request inside its span and returns the
 * numbers in response headers: {@code X-Cpu-Nanos} (the worker thread's CPU time),
 * {@code X-Alloc-Bytes} (bytes the thread allocated), {@code X-Blocked-Nanos} (time waiting
 * for the inventory monitor) and {@code X-Span-Nanos} (the span's length, from before it opens
 * to after it closes). The load generator adds them up per endpoint: that is the ground
 * truth the demo compares the profile with.
 */
public final class ShopService {
  static final String[] ENDPOINTS = {"/checkout", "/catalog", "/inventory", "/shipping"};

  private final Tracer tracer = Tracer.create();
  private final Carrier carrier;
  private final Handlers handlers;
  private final Map<String, LongAdder> served = new ConcurrentHashMap<>();
  private final java.lang.management.ThreadMXBean threads = ManagementFactory.getThreadMXBean();
  private final com.sun.management.ThreadMXBean allocations =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  private ShopService() throws IOException {
    carrier = new Carrier();
    handlers = new Handlers(carrier);
  }

  public static void main(String[] args) throws Exception {
    int port = 0;
    int workers = 8;
    Path portFile = null;
    for (int i = 0; i < args.length; i++) {
      String value = i + 1 < args.length ? args[i + 1] : null;
      if (value == null) {
        usage("'" + args[i] + "' needs a value");
      }
      switch (args[i]) {
        case "--port":
          port = parseNumber(args[i], args[++i], 0, 65535);
          break;
        case "--workers":
          workers = parseNumber(args[i], args[++i], 1, 256);
          break;
        case "--port-file":
          portFile = Paths.get(args[++i]);
          break;
        default:
          usage("unknown argument '" + args[i] + "'");
      }
    }
    new ShopService().serve(port, workers, portFile);
  }

  private static void usage(String problem) {
    System.err.println(
        "shop: " + problem + ": use [--port N] [--port-file PATH] [--workers 1..256]");
    System.exit(2);
  }

  static int parseNumber(String flag, String text, int min, int max) {
    try {
      int value = Integer.parseInt(text);
      if (value >= min && value <= max) {
        return value;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    System.err.println("shop: " + flag + " wants a number from " + min + " to " + max
        + ", got '" + text + "'");
    System.exit(2);
    return -1;
  }

  private void serve(int port, int workerCount, Path portFile) throws IOException {
    // Without TCP_NODELAY the server's separate header and body writes meet the client's
    // delayed ACK: every answer would take 40 ms more.
    System.setProperty("sun.net.httpserver.nodelay", "true");
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 128);
    AtomicInteger workerNumber = new AtomicInteger();
    ExecutorService workers =
        Executors.newFixedThreadPool(
            workerCount, r -> new Thread(r, "shop-worker-" + workerNumber.incrementAndGet()));
    server.setExecutor(workers);
    for (String endpoint : ENDPOINTS) {
      server.createContext(endpoint, exchange -> handle(endpoint, exchange));
    }
    Runtime.getRuntime()
        .addShutdownHook(new Thread(() -> stop(server, workers), "shop-shutdown"));
    server.start();
    int bound = server.getAddress().getPort();
    System.out.println(
        "shop: serving on 127.0.0.1:" + bound + " with " + workerCount + " workers (pid "
            + ProcessHandle.current().pid() + "); stop with SIGTERM");
    if (portFile != null) { // last: whoever waits for the file finds the line above printed
      Path partial = Paths.get(portFile + ".partial");
      Files.write(partial, (bound + "\n").getBytes(StandardCharsets.US_ASCII));
      Files.move(partial, portFile, StandardCopyOption.ATOMIC_MOVE);
    }
  }

  /** The shutdown hook: stop accepting, finish the requests in flight, report. */
  private void stop(HttpServer server, ExecutorService workers) {
    server.stop(1);
    workers.shutdown();
    try {
      workers.awaitTermination(5, TimeUnit.SECONDS);
      carrier.close();
    } catch (InterruptedException | IOException e) {
      System.err.println("shop: shutdown: " + e);
    }
    Map<String, Long> summary = new TreeMap<>();
    served.forEach((key, count) -> summary.put(key, count.sum()));
    long total = summary.values().stream().mapToLong(Long::longValue).sum();
    StringBuilder line = new StringBuilder("shop: stopped after serving " + total + " requests:");
    summary.forEach((key, count) -> line.append(' ').append(key).append(' ').append(count));
    System.out.println(line);
  }

  private void handle(String endpoint, HttpExchange exchange) throws IOException {
    URI uri = exchange.getRequestURI();
    String tenant = queryValue(uri, "tenant", "acme");
    String body;
    int status = 200;
    long cpuNanos;
    long allocatedBytes;
    long blockedNanos = 0;
    long threadId = Thread.currentThread().getId();
    long spanStart = System.nanoTime();
    try (Tracer.Span span = tracer.startSpan(endpoint, tenant)) {
      long cpuStart = threads.getCurrentThreadCpuTime();
      long allocatedStart = allocations.getThreadAllocatedBytes(threadId);
      try {
        int parameter = Integer.parseInt(queryValue(uri, "n", "7"));
        switch (endpoint) {
          case "/checkout":
            body = Handlers.checkout(parameter);
            break;
          case "/catalog":
            body = Handlers.catalog(parameter);
            break;
          case "/inventory":
            Inventory.Reservation reservation = handlers.inventory(parameter);
            blockedNanos = reservation.blockedNanos;
            body = "sku " + parameter + ": " + reservation.left + " left";
            break;
          default:
            body = handlers.shipping(parameter);
            break;
        }
      } catch (IOException | RuntimeException e) {
        status = 500;
        body = e.toString();
      }
      cpuNanos = threads.getCurrentThreadCpuTime() - cpuStart;
      allocatedBytes = allocations.getThreadAllocatedBytes(threadId) - allocatedStart;
    }
    long spanNanos = System.nanoTime() - spanStart;
    served.computeIfAbsent(endpoint, k -> new LongAdder()).increment();
    byte[] bytes = (body + "\n").getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("X-Cpu-Nanos", Long.toString(cpuNanos));
    exchange.getResponseHeaders().set("X-Alloc-Bytes", Long.toString(allocatedBytes));
    exchange.getResponseHeaders().set("X-Blocked-Nanos", Long.toString(blockedNanos));
    exchange.getResponseHeaders().set("X-Span-Nanos", Long.toString(spanNanos));
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  private static String queryValue(URI uri, String key, String fallback) {
    String query = uri.getRawQuery();
    if (query == null) {
      return fallback;
    }
    for (String pair : query.split("&")) {
      int equals = pair.indexOf('=');
      if (equals > 0 && pair.substring(0, equals).equals(key)) {
        return pair.substring(equals + 1);
      }
    }
    return fallback;
  }
}
