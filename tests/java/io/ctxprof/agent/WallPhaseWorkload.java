package io.ctxprof.agent;

import io.ctxprof.ContextScope;
import io.ctxprof.ContextSetter;
import io.ctxprof.Profiler;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * Ground truth for wall samples (issue 25): worker threads that know what they do at every
 * moment. Each worker cycles through four phases, each in a method of its own (never inlined: the
 * test runs it with -XX:CompileCommand=dontinline):
 *
 * <ul>
 *   <li>{@code phaseRead}, context /read: blocked in a socket read until its driver writes a byte;
 *   <li>{@code phaseLock}, context /lock: blocked entering a monitor its driver holds;
 *   <li>{@code phaseSpin}, context /spin: 10 ms on the CPU;
 *   <li>{@code phaseSleep}, no context: 10 ms in Thread.sleep.
 * </ul>
 *
 * Each worker has a driver thread that holds the monitor, waits until the worker reads, writes
 * the byte 10 ms later, and releases the monitor 10 ms after the worker blocked on it. A worker
 * measures each phase's begin and end itself with System.nanoTime() (CLOCK_MONOTONIC, the
 * samples' ticks under clock=monotonic), inside the context, and prints at the end, per worker,
 * {@code worker TID} and one line {@code phase TID NAME BEGIN END} per phase (TID: its OS thread
 * id). Args: cycles per worker.
 */
public final class WallPhaseWorkload {
  static final int WORKERS = 3;
  static final String[] PHASES = {"read", "lock", "spin", "sleep"};
  static final long PHASE_NANOS = 10_000_000L;
  static volatile long sink;
  private static ContextSetter setter;
  private static int endpointSlot;

  private WallPhaseWorkload() {}

  public static void main(String[] args) throws Exception {
    int cycles = Integer.parseInt(args[0]);
    setter = new ContextSetter(Profiler.getInstance(), List.of("endpoint"));
    endpointSlot = setter.offsetOf("endpoint");
    List<Thread> threads = new ArrayList<>();
    List<Worker> workers = new ArrayList<>();
    try (ServerSocket server = new ServerSocket(0, WORKERS, InetAddress.getLoopbackAddress())) {
      for (int i = 0; i < WORKERS; i++) {
        Socket client = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
        Socket accepted = server.accept();
        Worker worker = new Worker(cycles, accepted.getInputStream());
        workers.add(worker);
        threads.add(worker.thread = new Thread(worker, "wall-phase-worker-" + i));
        threads.add(new Thread(() -> drive(worker, client), "wall-phase-driver-" + i));
      }
    }
    for (Thread thread : threads) {
      thread.start();
    }
    for (Thread thread : threads) {
      thread.join();
    }
    StringBuilder out = new StringBuilder();
    for (Worker worker : workers) {
      if (worker.failure != null) {
        throw new IllegalStateException(worker.failure);
      }
      out.append("worker ").append(worker.tid).append('\n');
      for (int i = 0; i < worker.times.length; i += 2) {
        out.append("phase ").append(worker.tid).append(' ').append(PHASES[(i / 2) % 4]);
        out.append(' ').append(worker.times[i]).append(' ').append(worker.times[i + 1]);
        out.append('\n');
      }
    }
    System.out.print(out);
  }

  static final class Worker implements Runnable {
    final int cycles;
    final InputStream in;
    final Object monitor = new Object();
    final long[] times; // begin and end of each phase, in order
    Thread thread;
    volatile long tid;
    volatile int progress = -1; // cycle * 4 + the phase begun last
    volatile Throwable failure;

    Worker(int cycles, InputStream in) {
      this.cycles = cycles;
      this.in = in;
      this.times = new long[cycles * 8];
    }

    @Override
    public void run() {
      try {
        tid = Long.parseLong(Files.readSymbolicLink(Path.of("/proc/thread-self")).getFileName()
            .toString());
        for (int cycle = 0; cycle < cycles; cycle++) {
          int at = cycle * 8;
          try (ContextScope scope = open("/read")) {
            progress = cycle * 4;
            times[at] = System.nanoTime();
            phaseRead(in);
            times[at + 1] = System.nanoTime();
          }
          try (ContextScope scope = open("/lock")) {
            progress = cycle * 4 + 1;
            times[at + 2] = System.nanoTime();
            times[at + 3] = phaseLock(monitor);
          }
          try (ContextScope scope = open("/spin")) {
            progress = cycle * 4 + 2;
            times[at + 4] = System.nanoTime();
            times[at + 5] = phaseSpin(times[at + 4]);
          }
          progress = cycle * 4 + 3;
          times[at + 6] = System.nanoTime();
          phaseSleep();
          times[at + 7] = System.nanoTime();
        }
      } catch (Throwable e) {
        failure = e;
      } finally {
        progress = Integer.MAX_VALUE;
      }
    }
  }

  private static ContextScope open(String endpoint) {
    ContextScope scope = setter.open(0x25L, endpoint.hashCode(), 1);
    setter.setAttribute(endpointSlot, endpoint);
    return scope;
  }

  static void phaseRead(InputStream in) throws IOException {
    if (in.read() < 0) {
      throw new IOException("the driver closed the socket");
    }
  }

  /** Returns the time the monitor was acquired. */
  static long phaseLock(Object monitor) {
    synchronized (monitor) {
      return System.nanoTime();
    }
  }

  /** Returns the time it stopped, PHASE_NANOS after {@code begin}. */
  static long phaseSpin(long begin) {
    long value = begin;
    long now;
    while ((now = System.nanoTime()) - begin < PHASE_NANOS) {
      for (int i = 0; i < 1000; i++) {
        value = value * 6364136223846793005L + 1442695040888963407L;
      }
    }
    sink = value;
    return now;
  }

  static void phaseSleep() throws InterruptedException {
    Thread.sleep(PHASE_NANOS / 1_000_000L);
  }

  /**
   * Per cycle: holds the worker's monitor from before its read until 10 ms after it blocked on
   * the monitor; writes the byte that ends the read 10 ms after the read began.
   */
  private static void drive(Worker worker, Socket client) {
    try (Socket socket = client) {
      OutputStream out = socket.getOutputStream();
      for (int cycle = 0; cycle < worker.cycles; cycle++) {
        int read = cycle * 4;
        synchronized (worker.monitor) {
          awaitUntil(() -> worker.progress >= read);
          if (worker.progress != read) {
            return; // the worker failed
          }
          Thread.sleep(PHASE_NANOS / 1_000_000L);
          out.write(1);
          out.flush();
          awaitUntil(
              () ->
                  worker.thread.getState() == Thread.State.BLOCKED
                      || worker.progress == Integer.MAX_VALUE);
          Thread.sleep(PHASE_NANOS / 1_000_000L);
        }
        awaitUntil(() -> worker.progress > read + 1);
      }
    } catch (Exception e) {
      worker.failure = e;
    }
  }

  /** Polls `condition` every millisecond until it holds. */
  private static void awaitUntil(BooleanSupplier condition) throws InterruptedException {
    while (!condition.getAsBoolean()) {
      Thread.sleep(1);
    }
  }
}
