#!/usr/bin/python3
"""The demo's OTLP/HTTP profiles receiver: what a collector would see from `otlp=`.

Listens on 127.0.0.1 (loopback only: the demo needs no network) on an ephemeral port written to
PORT_FILE, accepts POST /v1development/profiles with a gzip body, answers 200 with an empty
ExportProfilesServiceResponse and appends one line per request to LOG:

  request N: BYTES bytes gzip, UNZIPPED bytes, P profiles

P counts the profiles of the body (ExportProfilesServiceRequest -> resource_profiles (1) ->
scope_profiles (2) -> profiles (2)), read with a minimal protobuf walk; no schema needed.
Anything else (another path or method, no gzip, a body that does not gunzip) is answered 400 and
logged as "rejected: WHY". The summary line the demo prints is SUMMARY, rewritten after each
request: "REQUESTS BYTES PROFILES".

Usage: otlp_sink.py PORT_FILE LOG SUMMARY   (runs until SIGTERM)
"""
import gzip
import http.server
import os
import sys
import threading

PATH = "/v1development/profiles"


def fields(data):
    """(field number, wire type, value) of each top-level field of a protobuf message."""
    position = 0

    def varint():
        nonlocal position
        value, shift = 0, 0
        while True:
            if position >= len(data) or shift > 63:
                raise ValueError("truncated varint")
            byte = data[position]
            position += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while position < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            yield number, wire, varint()
        elif wire == 1 or wire == 5:
            size = 8 if wire == 1 else 4
            position += size
            yield number, wire, None
        elif wire == 2:
            size = varint()
            if position + size > len(data):
                raise ValueError("truncated field")
            yield number, wire, data[position:position + size]
            position += size
        else:
            raise ValueError("wire type %d" % wire)


def submessages(data, number):
    return [value for field, wire, value in fields(data) if field == number and wire == 2]


def profile_count(body):
    return sum(
        len(submessages(scope, 2))
        for resource in submessages(body, 1)
        for scope in submessages(resource, 2))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status):
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def reject(self, why):
        self.server.log("rejected: " + why)
        self.answer(400)

    def do_GET(self):
        self.reject("GET %s (only POST %s)" % (self.path, PATH))

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.path != PATH:
            return self.reject("POST %s (only %s)" % (self.path, PATH))
        if self.headers.get("Content-Encoding") != "gzip":
            return self.reject("Content-Encoding %r (gzip expected)" %
                               self.headers.get("Content-Encoding"))
        try:
            unzipped = gzip.decompress(body)
            profiles = profile_count(unzipped)
        except (OSError, EOFError, ValueError) as error:
            return self.reject("body of %d bytes: %s" % (len(body), error))
        self.server.received(len(body), len(unzipped), profiles)
        self.answer(200)


class Sink(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, log_path, summary_path):
        super().__init__(("127.0.0.1", 0), Handler)
        self.lock = threading.Lock()
        self.log_path, self.summary_path = log_path, summary_path
        self.requests = self.bytes = self.profiles = 0
        self.write_summary()

    def log(self, line):
        with self.lock, open(self.log_path, "a") as log:
            log.write(line + "\n")

    def received(self, size, unzipped, profiles):
        with self.lock:
            self.requests += 1
            self.bytes += size
            self.profiles += profiles
            with open(self.log_path, "a") as log:
                log.write("request %d: %d bytes gzip, %d bytes, %d profiles\n" %
                          (self.requests, size, unzipped, profiles))
            self.write_summary()

    def write_summary(self):
        # Written aside and renamed: the demo never reads half a line.
        with open(self.summary_path + ".tmp", "w") as summary:
            summary.write("%d %d %d\n" % (self.requests, self.bytes, self.profiles))
        os.replace(self.summary_path + ".tmp", self.summary_path)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: otlp_sink.py PORT_FILE LOG SUMMARY")
    port_file, log_path, summary_path = sys.argv[1:]
    open(log_path, "w").close()
    server = Sink(log_path, summary_path)
    with open(port_file + ".tmp", "w") as out:
        out.write("%d\n" % server.server_address[1])
    os.replace(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
