"""The HTTP(S) server both receivers run (otlp_receiver.py, pyroscope_receiver.py): a threading
server on a free loopback port, its handler's shared state, TLS when asked, and the port written
to PORT_FILE atomically (the test waits for that file)."""
import http.server
import os
import ssl
import threading


def serve(handler, options):
    """Serves `handler` until killed. `options` has out, port_file, fail and tls (argparse)."""
    os.makedirs(options.out, exist_ok=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.options, server.out = options, options.out
    server.lock, server.count = threading.Lock(), 0
    server.failures_left = options.fail[0]
    if options.tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*options.tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    with open(options.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(options.port_file + ".tmp", options.port_file)
    server.serve_forever()
