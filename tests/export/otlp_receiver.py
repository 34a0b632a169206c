#!/usr/bin/python3
"""A stand-in for an OpenTelemetry Collector's OTLP/HTTP profiles receiver, for otlp_test.sh.
It checks each request the way the OTLP specification defines it and records what it got:

  POST <path> (default /v1development/profiles), Content-Type application/x-protobuf,
  Content-Encoding gzip, the expected extra headers; the body gunzips to an
  ExportProfilesServiceRequest (decoded later by otlp_push_check.py with protoc).

Each request's findings go to OUT/requests.jsonl (never a header's value: they are secrets);
the gunzipped body to OUT/NNN.pb. A request that breaks a rule is answered 400 and logged with
"problems".

Usage: otlp_receiver.py OUT PORT_FILE [--header NAME VALUE]... [--fail N STATUS]
         [--retry-after SECONDS] [--partial REJECTED MESSAGE] [--tls CERT KEY]
  --header NAME VALUE         a header every request must carry with that value
  --fail N STATUS             answer the first N well-formed requests with STATUS (then 200)
  --retry-after SECONDS       send Retry-After: SECONDS with those answers
  --partial REJECTED MESSAGE  answer 200 with an ExportProfilesServiceResponse whose
                              partial_success has rejected_profiles and error_message
  --tls CERT KEY              serve https with this certificate and key
"""
import argparse
import gzip
import http.server
import json
import os
import time

import receiver_server


def varint(value):
    out = b""
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        server = self.server
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        with server.lock:
            server.count += 1
            number = server.count
        record = {"number": number, "path": self.path, "problems": [], "time": time.time()}
        problems = record["problems"]
        record["content_type"] = self.headers.get("Content-Type")
        record["content_encoding"] = self.headers.get("Content-Encoding")
        record["user_agent"] = self.headers.get("User-Agent")
        if record["content_type"] != "application/x-protobuf":
            problems.append("Content-Type %r" % record["content_type"])
        if record["content_encoding"] != "gzip":
            problems.append("Content-Encoding %r" % record["content_encoding"])
        for name, value in server.options.header or []:
            if self.headers.get(name) != value:
                problems.append("header %s missing or not the expected value" % name)
        if record["content_encoding"] == "gzip":
            try:
                with open(os.path.join(server.out, "%03d.pb" % number), "wb") as f:
                    f.write(gzip.decompress(body))
            except OSError as e:
                problems.append("body is not gzip: %s" % e)
        status = 400 if problems else 200
        if not problems and server.failures_left > 0:
            server.failures_left -= 1
            status = server.options.fail[1]
        record["status"] = status
        with server.lock:
            with open(os.path.join(server.out, "requests.jsonl"), "a") as f:
                f.write(json.dumps(record) + "\n")
        # 200: an ExportProfilesServiceResponse (empty, or with partial_success); else a short
        # text.
        reply = b"" if status == 200 else json.dumps(problems or ["try later"]).encode()
        if status == 200 and server.options.partial:
            message = server.options.partial[1].encode()
            partial = (b"\x08" + varint(int(server.options.partial[0])) + b"\x12" +
                       varint(len(message)) + message)
            reply = b"\x0a" + varint(len(partial)) + partial
        self.send_response(status)
        if status not in (200, 400) and server.options.retry_after is not None:
            self.send_header("Retry-After", str(server.options.retry_after))
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(reply)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("port_file")
    parser.add_argument("--header", nargs=2, action="append")
    parser.add_argument("--fail", nargs=2, type=int, default=[0, 200])
    parser.add_argument("--retry-after", type=int)
    parser.add_argument("--partial", nargs=2)
    parser.add_argument("--tls", nargs=2)
    options = parser.parse_args()
    receiver_server.serve(Handler, options)


if __name__ == "__main__":
    main()
