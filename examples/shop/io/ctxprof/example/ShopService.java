package io.ctxprof.example;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * A small shop service on the JDK's built-in HTTP server (loopback only), with its own load
 * generator: {@code ShopService [--seconds N] [--clients N]} serves /checkout, /search,
 * /recommend and /inventory for N seconds under load, then prints what it served and exits.
 */
public final class ShopService {
  private static final String[] TENANTS = {"acme", "globex", "initech"};

  private final Tracer tracer = Tracer.create();
  private final Map<String, LongAdder> served = new ConcurrentHashMap<>();

  public static void main(String[] args) throws Exception {
    int seconds = 20;
    int clients = 4;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--seconds":
          seconds = Integer.parseInt(args[++i]);
          break;
        case "--clients":
          clients = Integer.parseInt(args[++i]);
          break;
        default:
          System.err.println("shop: unknown argument '" + args[i] + "': use --seconds N, --clients N");
          System.exit(2);
      }
    }
    if (seconds < 1 || seconds > 3600 || clients < 1 || clients > 64) {
      System.err.println("shop: --seconds must be 1..3600 and --clients 1..64");
      System.exit(2);
    }
    new ShopService().run(seconds, clients);
  }

  private void run(int seconds, int clients) throws Exception {
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
    AtomicInteger workerNumber = new AtomicInteger();
    ExecutorService workers =
        Executors.newFixedThreadPool(
            4, r -> new Thread(r, "shop-worker-" + workerNumber.incrementAndGet()));
    server.setExecutor(workers);
    for (String endpoint : new String[] {"/checkout", "/search", "/recommend", "/inventory"}) {
      server.createContext(endpoint, exchange -> handle(endpoint, exchange));
    }
    server.start();
    int port = server.getAddress().getPort();
    System.out.println("shop: serving on 127.0.0.1:" + port + " for " + seconds + " s");

    LoadGenerator load = new LoadGenerator(port, clients, TENANTS);
    long requests = load.run(seconds * 1000L);

    server.stop(0);
    workers.shutdown();
    Map<String, Long> summary = new TreeMap<>();
    served.forEach((key, count) -> summary.put(key, count.sum()));
    System.out.println("shop: " + requests + " requests sent, " + load.errors() + " errors");
    summary.forEach((key, count) -> System.out.println("shop:   " + key + " " + count));
  }

  private void handle(String endpoint, HttpExchange exchange) throws IOException {
    URI uri = exchange.getRequestURI();
    String tenant = queryValue(uri, "tenant", "acme");
    int parameter = Integer.parseInt(queryValue(uri, "n", "7"));
    String body;
    int status = 200;
    try (AutoCloseable span = tracer.startSpan(endpoint, tenant)) {
      switch (endpoint) {
        case "/checkout":
          body = Handlers.checkout(parameter);
          break;
        case "/search":
          body = Handlers.search("chair");
          break;
        case "/recommend":
          body = Handlers.recommend(parameter);
          break;
        default:
          body = Handlers.inventory(parameter);
          break;
      }
    } catch (Exception e) {
      status = 500;
      body = e.toString();
    }
    served.computeIfAbsent(endpoint + " " + tenant, k -> new LongAdder()).increment();
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
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
