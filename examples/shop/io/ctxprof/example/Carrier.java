package io.ctxprof.example;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.Writer;
import java.io.OutputStreamWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * A slow remote dependency of /shipping, run on loopback in the service's process so the
 * example needs nothing else: the carrier answers each quote request 20 ms after it arrives.
 * The client side keeps one connection per worker thread and blocks in the socket read while
 * the carrier "thinks", which is what wall-clock sampling shows as a sleeping thread. The
 * carrier's own threads never have a context.
 */
final class Carrier implements AutoCloseable {
  static final long ANSWER_MILLIS = 20;

  private final ServerSocket server;
  private final Queue<Socket> sockets = new ConcurrentLinkedQueue<>();
  private final ThreadLocal<Connection> connection = new ThreadLocal<>();
  private volatile boolean closed;

  private static final class Connection {
    final Writer out;
    final BufferedReader in;

    Connection(Socket socket) throws IOException {
      OutputStream raw = socket.getOutputStream();
      out = new OutputStreamWriter(raw, StandardCharsets.US_ASCII);
      in =
          new BufferedReader(
              new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));
    }
  }

  Carrier() throws IOException {
    server = new ServerSocket(0, 64, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::accept, "carrier-acceptor");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** Asks for a quote; blocks about ANSWER_MILLIS in the socket read. */
  String quote(int parcel) throws IOException {
    Connection current = connection.get();
    if (current == null) {
      Socket socket = new Socket();
      sockets.add(socket);
      socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getLocalPort()));
      current = new Connection(socket);
      connection.set(current);
    }
    current.out.write(parcel + "\n");
    current.out.flush();
    String answer = current.in.readLine();
    if (answer == null) {
      connection.remove();
      throw new IOException("carrier closed the connection");
    }
    return answer;
  }

  private void accept() {
    int number = 0;
    while (!closed) {
      try {
        Socket socket = server.accept();
        sockets.add(socket);
        Thread answerer = new Thread(() -> answer(socket), "carrier-" + ++number);
        answerer.setDaemon(true);
        answerer.start();
      } catch (IOException e) {
        if (!closed) {
          System.err.println("shop: carrier: accept failed: " + e);
        }
        return;
      }
    }
  }

  private static void answer(Socket socket) {
    try (socket) {
      BufferedReader in =
          new BufferedReader(
              new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));
      Writer out = new OutputStreamWriter(socket.getOutputStream(), StandardCharsets.US_ASCII);
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        Thread.sleep(ANSWER_MILLIS);
        out.write("quote for parcel " + line + ": " + (450 + line.length() * 25) + " cents\n");
        out.flush();
      }
    } catch (IOException | InterruptedException e) {
      // The connection or the carrier was closed: this answerer is done.
    }
  }

  @Override
  public void close() throws IOException {
    closed = true;
    server.close();
    for (Socket socket : sockets) {
      socket.close();
    }
  }
}
