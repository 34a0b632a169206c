package io.ctxprof.agent;

import io.ctxprof.ContextScope;
import io.ctxprof.ContextSetter;
import io.ctxprof.Profiler;
import java.util.List;

/**
 * A service-like workload run under the agent: worker threads handle requests one after another,
 * each request with its own context (a trace id whose high half names the endpoint, a span id,
 * endpoint and tenant), doing CPU work in an endpoint-specific method. Prints "thread NAME ID"
 * for every worker so the test can check thread names and ids in the recording.
 *
 * <p>Args: seconds, workers.
 */
public final class ServiceWorkload {
  static final long CHECKOUT_TRACE_HIGH = 0xC0C0C0C0L;
  static final long SEARCH_TRACE_HIGH = 0x5E5E5E5EL;
  static volatile double sink;

  private ServiceWorkload() {}

  public static void main(String[] args) throws Exception {
    long seconds = Long.parseLong(args[0]);
    int workers = Integer.parseInt(args[1]);
    ContextSetter setter = new ContextSetter(Profiler.getInstance(), List.of("endpoint", "tenant"));
    int endpoint = setter.offsetOf("endpoint");
    int tenant = setter.offsetOf("tenant");
    long end = System.nanoTime() + seconds * 1_000_000_000L;
    Thread[] threads = new Thread[workers];
    for (int w = 0; w < workers; w++) {
      final int worker = w;
      threads[w] =
          new Thread(
              () -> {
                long request = 0;
                while (System.nanoTime() < end) {
                  request++;
                  boolean checkout = (request + worker) % 2 == 0;
                  long high = checkout ? CHECKOUT_TRACE_HIGH : SEARCH_TRACE_HIGH;
                  try (ContextScope scope = setter.open(high, request, worker * 1000L + request)) {
                    if (checkout) {
                      setter.setAttribute(endpoint, "/checkout");
                      setter.setAttribute(tenant, "acme-" + worker);
                      handleCheckout();
                    } else {
                      setter.setAttribute(endpoint, "/search");
                      setter.setAttribute(tenant, "globex-" + worker);
                      handleSearch();
                    }
                  }
                  idleWithoutContext();
                }
              },
              "worker-" + w);
      System.out.println("thread worker-" + w + " " + threads[w].getId());
    }
    for (Thread thread : threads) {
      thread.start();
    }
    for (Thread thread : threads) {
      thread.join();
    }
  }

  static void handleCheckout() {
    double x = 0;
    for (int i = 0; i < 3_000_000; i++) {
      x += Math.sqrt(i) * 1.0001;
    }
    sink = x;
  }

  static void handleSearch() {
    long h = 17;
    for (int i = 0; i < 6_000_000; i++) {
      h = h * 31 + (i ^ (h >>> 7));
    }
    sink = h;
  }

  static void idleWithoutContext() {
    long h = 3;
    for (int i = 0; i < 200_000; i++) {
      h = h * 7 + i;
    }
    sink = h;
  }
}
