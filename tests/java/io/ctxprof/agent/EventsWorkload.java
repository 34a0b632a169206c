package io.ctxprof.agent;

import io.ctxprof.ContextScope;
import io.ctxprof.ContextSetter;
import io.ctxprof.Profiler;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

/**
 * Ground truth for allocation and lock events: threads under known contexts allocate, contend on
 * one monitor and wait for one ReentrantLock, and print what they measured themselves, one line
 * each: {@code truth KIND ENDPOINT VALUE} (KIND = alloc in bytes from the JVM's per-thread
 * allocation counter, monitor or park in nanoseconds waited, measured around the acquisition;
 * ENDPOINT = "-" outside any context).
 *
 * <p>Modes:
 *
 * <ul>
 *   <li>{@code alloc}: endpoint /small allocates N byte arrays, /large 3N of the same size, at the
 *       same time, each on its own thread.
 *   <li>{@code churn}: the same arrays, two per request, each request a span of its own: far more
 *       spans a second than a span log holds between two of the profiler's drains.
 *   <li>{@code lock}: endpoints /a and /b, two threads each, contend on one monitor (holding it 10
 *       and 30 ms) and then on one ReentrantLock, rounds under their context.
 *   <li>{@code select}: the same contention (holds of 20 ms) and some allocation, once under
 *       context /in and once without any context.
 *   <li>{@code live}: endpoint /kept allocates byte arrays it keeps, /dropped as many it drops;
 *       then a garbage collection (System.gc()) before the JVM exits.
 *   <li>{@code api OPTIONS}: without the agent, starts the profiler through the Java API with
 *       OPTIONS (the library loaded late); under context /a a thread waits about 50 ms for the
 *       monitor and then for the ReentrantLock, each held by a thread without context meanwhile,
 *       and allocates; then stops the profiler.
 * </ul>
 */
public final class EventsWorkload {
  static final Object MONITOR = new Object();
  static final ReentrantLock LOCK = new ReentrantLock();
  static volatile Object sink;
  static final List<byte[]> KEPT = new ArrayList<>();
  private static ContextSetter setter;
  private static int endpointSlot;

  private EventsWorkload() {}

  public static void main(String[] args) throws Exception {
    setter = new ContextSetter(Profiler.getInstance(), List.of("endpoint"));
    endpointSlot = setter.offsetOf("endpoint");
    warmUp();
    switch (args[0]) {
      case "alloc":
        runAll(allocator("/small", 150_000), allocator("/large", 450_000));
        break;
      case "churn":
        runAll(allocator("/small", 150_000, 2), allocator("/large", 450_000, 2));
        break;
      case "lock":
        {
          Contention contention = new Contention(4);
          runAll(
              contention.contender(0, "/a", 10, 8),
              contention.contender(1, "/a", 10, 8),
              contention.contender(2, "/b", 30, 8),
              contention.contender(3, "/b", 30, 8));
          break;
        }
      case "select":
        {
          Contention inside = new Contention(2);
          runAll(
              inside.contender(0, "/in", 20, 6),
              inside.contender(1, "/in", 20, 6),
              allocator("/in", 60_000));
          Contention outside = new Contention(2);
          runAll(
              outside.contender(0, null, 20, 6),
              outside.contender(1, null, 20, 6),
              allocator(null, 60_000));
          break;
        }
      case "api":
        {
          Profiler.getInstance().start(args[1]);
          CountDownLatch monitorHeld = new CountDownLatch(1);
          CountDownLatch lockHeld = new CountDownLatch(1);
          runAll(
              holder(monitorHeld, lockHeld),
              waiter("/a", monitorHeld, lockHeld),
              allocator("/a", 20_000));
          Profiler.getInstance().stop();
          break;
        }
      case "live":
        runAll(allocator("/kept", 50_000), allocator("/dropped", 50_000));
        sink = null;
        System.gc();
        break;
      default:
        throw new IllegalArgumentException("mode: alloc, lock, select or live");
    }
  }

  /**
   * Loads and initializes on the main thread what the measured threads use, so that they do not
   * wait for class loading or initialization locks inside their contexts.
   */
  private static void warmUp() {
    for (String endpoint : new String[] {"/small", "/large", "/a", "/b", "/in"}) {
      inContext(endpoint, () -> sink = new byte[1000]);
    }
    synchronized (MONITOR) {
      sink = MONITOR;
    }
    LOCK.lock();
    LOCK.unlock();
    await(new CyclicBarrier(1));
  }

  private static void runAll(Runnable... work) throws InterruptedException {
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < work.length; i++) {
      threads.add(new Thread(work[i], "events-" + i));
    }
    for (Thread thread : threads) {
      thread.start();
    }
    for (Thread thread : threads) {
      thread.join();
    }
  }

  /** Runs {@code work} under context {@code endpoint} (none when null). */
  private static void inContext(String endpoint, Runnable work) {
    if (endpoint == null) {
      work.run();
      return;
    }
    try (ContextScope scope = setter.open(0xE7E7L, endpoint.hashCode(), 1)) {
      setter.setAttribute(endpointSlot, endpoint);
      work.run();
    }
  }

  private static synchronized void report(String kind, String endpoint, long value) {
    System.out.println("truth " + kind + " " + (endpoint == null ? "-" : endpoint) + " " + value);
  }

  /** Allocates {@code arrays} byte arrays in one request under {@code endpoint}. */
  private static Runnable allocator(String endpoint, int arrays) {
    return allocator(endpoint, arrays, arrays);
  }

  /** Allocates {@code arrays} byte arrays in requests of {@code perRequest} under endpoint. */
  private static Runnable allocator(String endpoint, int arrays, int perRequest) {
    return () -> {
      com.sun.management.ThreadMXBean bean =
          (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
      long self = Thread.currentThread().getId();
      Runnable request =
          () -> {
            for (int i = 0; i < perRequest; i++) {
              byte[] array = new byte[1000];
              sink = array;
              if ("/kept".equals(endpoint)) {
                KEPT.add(array);
              }
            }
          };
      long before = bean.getThreadAllocatedBytes(self);
      for (int done = 0; done < arrays; done += perRequest) {
        inContext(endpoint, request);
      }
      report("alloc", endpoint, bean.getThreadAllocatedBytes(self) - before);
    };
  }

  /**
   * Threads that contend on MONITOR, then on LOCK, in rounds. Each round starts them together, and
   * whichever acquires first holds until every other is blocked behind it, then its hold: so every
   * round has waits of at least the first hold, however the machine schedules the threads (a
   * thread started or descheduled late would otherwise find the monitor free and wait for
   * nothing). Each thread sums its waits of at least 1 ms, as it measured them.
   */
  private static final class Contention {
    private final Thread[] threads;
    private final AtomicInteger acquired = new AtomicInteger(); // in the current round
    private final CyclicBarrier round;

    Contention(int threads) {
      this.threads = new Thread[threads];
      this.round = new CyclicBarrier(threads, () -> acquired.set(0));
    }

    /** Contender `index` of the threads: `rounds` rounds on each, holding `holdMillis`. */
    Runnable contender(int index, String endpoint, int holdMillis, int rounds) {
      return () -> {
        threads[index] = Thread.currentThread(); // published to the others by the barrier
        report("monitor", endpoint, inRounds(rounds, endpoint, () -> onMonitor(holdMillis)));
        report("park", endpoint, inRounds(rounds, endpoint, () -> onLock(holdMillis)));
      };
    }

    /** The countable time `acquisition` waited over `rounds` rounds under context `endpoint`. */
    private long inRounds(int rounds, String endpoint, LongSupplier acquisition) {
      long[] waited = {0};
      for (int i = 0; i < rounds; i++) {
        await(round);
        inContext(endpoint, () -> waited[0] += acquisition.getAsLong());
      }
      return waited[0];
    }

    private long onMonitor(int holdMillis) {
      long start = System.nanoTime();
      synchronized (MONITOR) {
        long waited = countable(System.nanoTime() - start);
        hold(holdMillis, this::othersBlockedOnMonitor);
        return waited;
      }
    }

    private long onLock(int holdMillis) {
      long start = System.nanoTime();
      LOCK.lock();
      try {
        long waited = countable(System.nanoTime() - start);
        hold(holdMillis, () -> LOCK.getQueueLength() == threads.length - 1);
        return waited;
      } finally {
        LOCK.unlock();
      }
    }

    /** The first of a round to acquire waits until `othersWaiting`; every holder then sleeps. */
    private void hold(int holdMillis, java.util.function.BooleanSupplier othersWaiting) {
      if (acquired.getAndIncrement() == 0) {
        awaitUntil(othersWaiting);
      }
      sleep(holdMillis);
    }

    private boolean othersBlockedOnMonitor() {
      for (Thread thread : threads) {
        if (thread != Thread.currentThread() && thread.getState() != Thread.State.BLOCKED) {
          return false;
        }
      }
      return true;
    }
  }

  /**
   * Holds the monitor and then the lock, saying so through the latches, until the waiter blocks on
   * each and 50 ms more: the waiter's acquisitions certainly block, for at least 50 ms.
   */
  private static Runnable holder(CountDownLatch monitorHeld, CountDownLatch lockHeld) {
    return () -> {
      synchronized (MONITOR) {
        monitorHeld.countDown();
        // Released only once the waiter blocks on it: a waiter descheduled for longer than a
        // fixed hold (a loaded CI machine) would otherwise find the monitor free.
        awaitUntil(() -> waiterThread != null && waiterThread.getState() == Thread.State.BLOCKED);
        sleep(50);
      }
      LOCK.lock();
      try {
        lockHeld.countDown();
        awaitUntil(LOCK::hasQueuedThreads);
        sleep(50);
      } finally {
        LOCK.unlock();
      }
    };
  }

  /** The api mode's waiter thread, which its holder watches. */
  private static volatile Thread waiterThread;

  /** Polls `condition` every millisecond, for at most 30 s. */
  private static void awaitUntil(java.util.function.BooleanSupplier condition) {
    for (int i = 0; i < 30_000 && !condition.getAsBoolean(); i++) {
      sleep(1);
    }
  }

  /** Waits for the holder's monitor, then for its lock, under context `endpoint`. */
  private static Runnable waiter(
      String endpoint, CountDownLatch monitorHeld, CountDownLatch lockHeld) {
    return () ->
        inContext(
            endpoint,
            () -> {
              waiterThread = Thread.currentThread();
              awaitLatch(monitorHeld);
              synchronized (MONITOR) {
                sink = MONITOR;
              }
              awaitLatch(lockHeld);
              LOCK.lock();
              LOCK.unlock();
            });
  }

  private static void awaitLatch(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A wait counts toward the truth when it is at least 1 ms (the tests' lock= threshold). */
  private static long countable(long nanos) {
    return nanos >= 1_000_000 ? nanos : 0;
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void await(CyclicBarrier barrier) {
    try {
      barrier.await();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
