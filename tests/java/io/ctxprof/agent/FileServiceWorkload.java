package io.ctxprof.agent;

import io.ctxprof.AttributeValue;
import io.ctxprof.ContextScope;
import io.ctxprof.ContextSetter;
import io.ctxprof.Profiler;
import io.ctxprof.ThreadHandle;
import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A small file and socket service for the jfrsync ground truth (issue 26; JfrSyncTest): request
 * threads serve /upload (file writes), /download (file reads), /echo (a round trip through a
 * local echo server) and /idle (a 2 ms sleep, nothing else), each request inside its own span
 * (span id = request id), all but /idle committing an application event (ctxprof.test.Order)
 * with its endpoint and id; a background thread writes
 * and reads a file of its own outside any request, and the echo server's threads do their socket
 * I/O outside requests too. The service counts what it did and prints, at the end:
 *
 * <ul>
 *   <li>{@code truth ENDPOINT KIND BYTES}: bytes per endpoint and kind (FileRead, FileWrite,
 *       SocketRead, SocketWrite) as the calls returned them; ENDPOINT {@code background} for
 *       the background thread;
 *   <li>{@code truth orders - COUNT}: the application events committed;
 *   <li>{@code truth idle - COUNT}: the /idle requests.
 * </ul>
 *
 * <p>Args: DIR [OPTIONS | --attach]: the folder for the service's files; with OPTIONS the
 * profiler is started and stopped through the Java API with that start string (else the agent
 * runs it); with --attach main prints "ready", serves when it reads "go" (a profiler attached in
 * between), prints "served" after the truth and exits when it reads "quit".
 */
public final class FileServiceWorkload {
  /** The application's own event, committed once per request. */
  @jdk.jfr.Name("ctxprof.test.Order")
  @jdk.jfr.Label("Order")
  static final class Order extends jdk.jfr.Event {
    String endpoint;
    long requestId;
  }

  static final String[] ENDPOINTS = {"/upload", "/download", "/echo", "/idle"};
  static final int REQUEST_THREADS = 3;
  /** Requests per thread: 45, or the system property fileservice.requests (longer runs). */
  static final int REQUESTS_PER_THREAD = Integer.getInteger("fileservice.requests", 45);

  /** Request threads are virtual threads (JDK 21+) with the system property fileservice.virtual. */
  static final boolean VIRTUAL = Boolean.getBoolean("fileservice.virtual");

  private static final Map<String, long[]> COUNTED = new TreeMap<>();

  private FileServiceWorkload() {}

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    boolean attach = args.length > 1 && args[1].equals("--attach");
    BufferedReader input =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    if (attach) {
      System.out.println("ready");
      System.out.flush();
      if (!"go".equals(input.readLine())) return;
    } else if (args.length > 1) {
      Profiler.getInstance().start(args[1]);
    }
    ContextSetter setter = new ContextSetter(Profiler.getInstance(), List.of("endpoint"));
    int endpoint = setter.offsetOf("endpoint");
    Path shared = dir.resolve("download.bin");
    try (OutputStream out = new FileOutputStream(shared.toFile())) {
      out.write(new byte[200_000]); // before any request: the data /download serves
    }
    try (ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      Thread echo = new Thread(() -> acceptEchoes(server), "echo-server");
      echo.setDaemon(true);
      echo.start();
      AtomicBoolean done = new AtomicBoolean();
      Thread background = new Thread(() -> backgroundIo(dir.resolve("background.bin"), done),
          "background");
      background.start();
      Thread[] requests = new Thread[REQUEST_THREADS];
      for (int t = 0; t < REQUEST_THREADS; t++) {
        int thread = t;
        Runnable task = () -> serve(setter, endpoint, thread, dir, shared, server.getLocalPort());
        requests[t] = VIRTUAL ? VirtualThreadWorkload.virtualThread("request-" + t, task)
            : new Thread(task, "request-" + t);
        requests[t].start();
      }
      for (Thread request : requests) request.join();
      done.set(true);
      background.join();
    }
    if (args.length > 1 && !attach) Profiler.getInstance().stop();
    synchronized (COUNTED) {
      for (Map.Entry<String, long[]> entry : COUNTED.entrySet()) {
        System.out.println("truth " + entry.getKey() + " " + entry.getValue()[0]);
      }
    }
    if (attach) {
      System.out.println("served");
      System.out.flush();
      while (!"quit".equals(input.readLine())) {
        // the profiler is dumped and stopped from outside meanwhile
      }
    }
  }

  private static void count(String endpoint, String kind, long bytes) {
    synchronized (COUNTED) {
      COUNTED.computeIfAbsent(endpoint + " " + kind, k -> new long[1])[0] += bytes;
    }
  }

  private static void serve(ContextSetter setter, int endpointOffset, int thread, Path dir,
      Path shared, int port) {
    ThreadHandle handle = setter.forCurrentThread();
    ThreadLocalRandom random = ThreadLocalRandom.current();
    Path own = dir.resolve("upload-" + thread + ".bin");
    byte[] buffer = new byte[8192];
    try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port)) {
      InputStream fromEcho = socket.getInputStream();
      OutputStream toEcho = socket.getOutputStream();
      for (int i = 0; i < REQUESTS_PER_THREAD; i++) {
        long id = 1000L * (thread + 1) + i;
        String endpoint = ENDPOINTS[i % ENDPOINTS.length];
        AttributeValue value = setter.value(endpoint);
        try (ContextScope scope = handle.open(0, 1, id, endpointOffset, value)) {
          if (endpoint.equals("/upload")) {
            int writes = 1 + random.nextInt(8);
            try (OutputStream out = new FileOutputStream(own.toFile())) {
              for (int w = 0; w < writes; w++) {
                int length = 1 + random.nextInt(buffer.length);
                out.write(buffer, 0, length);
                count(endpoint, "FileWrite", length);
              }
            }
          } else if (endpoint.equals("/download")) {
            try (InputStream in = new FileInputStream(shared.toFile())) {
              int limit = 1 + random.nextInt(100_000);
              int read = 0;
              while (read < limit) {
                int n = in.read(buffer, 0, Math.min(buffer.length, limit - read));
                if (n < 0) break;
                read += n;
                count(endpoint, "FileRead", n);
              }
            }
          } else if (endpoint.equals("/idle")) {
            Thread.sleep(2); // nothing recorded: no I/O, no CPU, no application event
            count("idle", "-", 1);
            continue;
          } else {
            int length = 1 + random.nextInt(buffer.length);
            toEcho.write(buffer, 0, length);
            toEcho.flush();
            count(endpoint, "SocketWrite", length);
            for (int got = 0; got < length; ) {
              int n = fromEcho.read(buffer, got, length - got);
              if (n < 0) throw new IOException("the echo server closed the connection");
              got += n;
              count(endpoint, "SocketRead", n);
            }
          }
          Order order = new Order();
          order.endpoint = endpoint;
          order.requestId = id;
          order.commit();
          count("orders", "-", 1);
        }
        Thread.sleep(1 + random.nextInt(3)); // between requests: no context
      }
    } catch (IOException | InterruptedException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Echoes every connection on a thread of its own, outside any request. */
  private static void acceptEchoes(ServerSocket server) {
    try {
      while (true) {
        Socket connection = server.accept();
        Thread echo = new Thread(() -> echo(connection), "echo-connection");
        echo.setDaemon(true);
        echo.start();
      }
    } catch (IOException closed) {
      // the service is done
    }
  }

  private static void echo(Socket connection) {
    byte[] buffer = new byte[8192];
    try (connection) {
      InputStream in = connection.getInputStream();
      OutputStream out = connection.getOutputStream();
      for (int n; (n = in.read(buffer)) > 0; ) {
        out.write(buffer, 0, n);
        out.flush();
      }
    } catch (IOException closed) {
      // the client is done
    }
  }

  private static void backgroundIo(Path file, AtomicBoolean done) {
    byte[] buffer = new byte[4096];
    try {
      while (!done.get()) {
        try (OutputStream out = new FileOutputStream(file.toFile())) {
          out.write(buffer);
          count("background", "FileWrite", buffer.length);
        }
        try (InputStream in = new FileInputStream(file.toFile())) {
          for (int n; (n = in.read(buffer)) > 0; ) count("background", "FileRead", n);
        }
        Thread.sleep(5);
      }
    } catch (IOException | InterruptedException e) {
      throw new IllegalStateException(e);
    }
  }
}
