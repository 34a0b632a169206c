package io.ctxprof.example;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;

/**
 * Sends requests to the shop on loopback from a few client threads for a bounded time: a
 * weighted mix of endpoints (checkout 30 %, search 30 %, recommend 20 %, inventory 20 %) and
 * tenants.
 */
final class LoadGenerator {
  private final int port;
  private final int clients;
  private final String[] tenants;
  private final LongAdder sent = new LongAdder();
  private final LongAdder errors = new LongAdder();

  LoadGenerator(int port, int clients, String[] tenants) {
    this.port = port;
    this.clients = clients;
    this.tenants = tenants;
  }

  /** Runs for {@code millis} and returns the number of requests sent. */
  long run(long millis) throws InterruptedException {
    long deadline = System.nanoTime() + millis * 1_000_000L;
    Thread[] threads = new Thread[clients];
    for (int i = 0; i < clients; i++) {
      threads[i] = new Thread(() -> loop(deadline), "shop-client-" + (i + 1));
      threads[i].start();
    }
    for (Thread thread : threads) {
      thread.join();
    }
    return sent.sum();
  }

  long errors() {
    return errors.sum();
  }

  private void loop(long deadline) {
    ThreadLocalRandom random = ThreadLocalRandom.current();
    while (System.nanoTime() < deadline) {
      int pick = random.nextInt(100);
      String endpoint =
          pick < 30 ? "/checkout" : pick < 60 ? "/search" : pick < 80 ? "/recommend" : "/inventory";
      String tenant = tenants[random.nextInt(tenants.length)];
      request(endpoint + "?tenant=" + tenant + "&n=" + (5 + random.nextInt(10)));
    }
  }

  private void request(String pathAndQuery) {
    sent.increment();
    try {
      HttpURLConnection connection =
          (HttpURLConnection) new URL("http://127.0.0.1:" + port + pathAndQuery).openConnection();
      connection.setConnectTimeout(5000);
      connection.setReadTimeout(30000);
      try (InputStream in = connection.getInputStream()) {
        in.readAllBytes();
      }
      if (connection.getResponseCode() != 200) {
        errors.increment();
      }
    } catch (IOException e) {
      errors.increment();
    }
  }
}
