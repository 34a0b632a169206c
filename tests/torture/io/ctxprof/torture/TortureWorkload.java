package io.ctxprof.torture;

import io.ctxprof.ContextScope;
import io.ctxprof.ContextSetter;
import io.ctxprof.Profiler;
import java.io.IOException;
import java.io.InputStream;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Everything a profiled JVM does that races the profiler, at once, for a bounded time: short-lived
 * threads created and ended continuously (each writing its context in a tight loop and allocating
 * garbage), and classes defined in throwaway class loaders that are dropped so they unload. Prints
 * one "torture: ..." line of totals at the end; exits 0 when it ran to the end.
 *
 * <p>Args: seconds, threads kept alive.
 */
public final class TortureWorkload {
  private static final String PAYLOAD = Payload.class.getName();
  private static final AtomicLong threadsStarted = new AtomicLong();
  private static final AtomicLong contextWrites = new AtomicLong();
  private static final AtomicLong allocatedBytes = new AtomicLong();
  private static final AtomicLong loadersCreated = new AtomicLong();
  private static final AtomicInteger alive = new AtomicInteger();
  // Unloading is only shown when dropped loaders are collected: weak references to every 100th.
  private static final List<WeakReference<ClassLoader>> watched = new ArrayList<>();
  static volatile Object sink;

  private TortureWorkload() {}

  public static void main(String[] args) throws Exception {
    long seconds = Long.parseLong(args[0]);
    int keepAlive = Integer.parseInt(args[1]);
    long end = System.nanoTime() + seconds * 1_000_000_000L;
    ContextSetter setter = new ContextSetter(Profiler.getInstance(), List.of("endpoint", "tenant"));
    byte[] payloadBytes = classBytes(PAYLOAD);

    Thread classChurn = new Thread(() -> churnClasses(payloadBytes, end), "class-churn");
    classChurn.start();
    long peakAlive = 0;
    while (System.nanoTime() < end) {
      // Bounded by the deadline too: threads may end as fast as this thread creates them.
      while (alive.get() < keepAlive && System.nanoTime() < end) {
        alive.incrementAndGet();
        threadsStarted.incrementAndGet();
        Thread worker = new Thread(() -> work(setter), "churn-" + threadsStarted.get());
        worker.start();
      }
      peakAlive = Math.max(peakAlive, alive.get());
      Thread.sleep(1);
    }
    classChurn.join(); // publishes `watched`
    while (alive.get() > 0) {
      Thread.sleep(10);
    }
    System.gc();
    long unloaded = watched.stream().filter(w -> w.get() == null).count();
    System.out.println(
        "torture: threads="
            + threadsStarted.get()
            + " peakAlive="
            + peakAlive
            + " contextWrites="
            + contextWrites.get()
            + " allocatedMiB="
            + allocatedBytes.get() / (1 << 20)
            + " classLoaders="
            + loadersCreated.get()
            + " watchedLoadersCollected="
            + unloaded
            + "/"
            + watched.size());
  }

  /**
   * One short-lived thread: 20-2000 ms of bursts of context writes with many distinct values and
   * garbage, 5 ms pauses between bursts so a few hundred such threads can be alive on few cores.
   */
  private static void work(ContextSetter setter) {
    try {
      ThreadLocalRandom random = ThreadLocalRandom.current();
      int endpoint = setter.offsetOf("endpoint");
      int tenant = setter.offsetOf("tenant");
      long until = System.nanoTime() + random.nextLong(20, 2000) * 1_000_000L;
      long writes = 0;
      long bytes = 0;
      for (int burst = 0; System.nanoTime() < until; burst = (burst + 1) % 20) {
        if (burst == 0) {
          LockSupport.parkNanos(5_000_000L);
        }
        try (ContextScope scope =
            setter.open(random.nextLong(), random.nextLong(), random.nextLong())) {
          // 100,000 distinct tenants: more than the value dictionary holds, so it overflows.
          setter.setAttribute(endpoint, "/endpoint-" + random.nextInt(64));
          setter.setAttribute(tenant, "tenant-" + random.nextInt(100_000));
          setter.setTraceContext(random.nextLong(), random.nextLong(), random.nextLong());
          byte[] garbage = new byte[random.nextInt(64, 8192)];
          sink = garbage;
          bytes += garbage.length;
          writes += 4;
        }
      }
      contextWrites.addAndGet(writes);
      allocatedBytes.addAndGet(bytes);
    } finally {
      alive.decrementAndGet();
    }
  }

  /** Defines the payload class in a new loader every millisecond, calls it, drops the loader. */
  private static void churnClasses(byte[] payloadBytes, long end) {
    try {
      while (System.nanoTime() < end) {
        ClassLoader loader = newLoader(payloadBytes);
        if (loadersCreated.get() % 100 == 0) {
          watched.add(new WeakReference<>(loader));
        }
        Class<?> payload = loader.loadClass(PAYLOAD);
        sink = payload.getMethod("compute", int.class).invoke(null, 1000);
        Thread.sleep(1);
      }
    } catch (ReflectiveOperationException | InterruptedException e) {
      throw new IllegalStateException("class churn failed", e);
    }
  }

  private static ClassLoader newLoader(byte[] payloadBytes) {
    loadersCreated.incrementAndGet();
    ClassLoader loader = new PayloadLoader(payloadBytes);
    try {
      loader.loadClass(PAYLOAD).getMethod("compute", int.class);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("payload class", e);
    }
    return loader;
  }

  private static byte[] classBytes(String name) throws IOException {
    String resource = "/" + name.replace('.', '/') + ".class";
    try (InputStream in = TortureWorkload.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IOException("class file " + resource + " is not on the class path");
      }
      return in.readAllBytes();
    }
  }

  /** Defines its own copy of the payload class instead of delegating to the application loader. */
  private static final class PayloadLoader extends ClassLoader {
    private final byte[] payloadBytes;

    PayloadLoader(byte[] payloadBytes) {
      super(TortureWorkload.class.getClassLoader());
      this.payloadBytes = payloadBytes;
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      if (!name.equals(PAYLOAD)) {
        return super.loadClass(name, resolve);
      }
      synchronized (getClassLoadingLock(name)) {
        Class<?> loaded = findLoadedClass(name);
        return loaded != null ? loaded : defineClass(name, payloadBytes, 0, payloadBytes.length);
      }
    }
  }

  /** The class defined over and over; its method runs long enough to be sampled now and then. */
  public static final class Payload {
    private Payload() {}

    public static double compute(int n) {
      double x = 0;
      for (int i = 0; i < n; i++) {
        x += Math.sqrt(i);
      }
      return x;
    }
  }
}
