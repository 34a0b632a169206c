#!/usr/bin/python3
"""A stand-in for a Pyroscope server's ingest endpoint, for upload_test.sh (a real Pyroscope is
not installable here). It checks each request the way Pyroscope's API documents and its ingest
handler reads it, and records what it got:

  POST <prefix>/ingest with query name, from, until (13-digit milliseconds), sampleRate,
  spyName and format=jfr; Content-Type multipart/form-data with a boundary; the configured
  Authorization and X-Scope-OrgID headers; file parts "jfr" (gzip of a JFR chunk) and, optional,
  "labels" (gzip of a LabelsSnapshot protobuf).

Each request's findings go to OUT/requests.jsonl; the unpacked parts to OUT/NNN.jfr and
OUT/NNN.labels. A request that breaks a rule is answered 400 and logged with "problem".

Usage: pyroscope_receiver.py OUT PORT_FILE [--tls CERT KEY] [--auth HEADER] [--tenant ID]
         [--fail N STATUS] [--hang]
  --fail N STATUS  answer the first N well-formed requests with STATUS (then 200)
  --hang           accept connections and never answer
"""
import argparse
import gzip
import http.server
import json
import os
import re
import time
import urllib.parse

import receiver_server


def parse_multipart(body, boundary):
    """Returns {name: (filename, content_type, bytes)} of the form-data parts."""
    parts = {}
    delimiter = b"--" + boundary.encode()
    chunks = body.split(delimiter)
    if len(chunks) < 3 or not chunks[-1].startswith(b"--"):
        raise ValueError("body does not end with the closing delimiter")
    if chunks[0] not in (b"", b"\r\n"):
        raise ValueError("data before the first delimiter")
    for chunk in chunks[1:-1]:
        if not chunk.startswith(b"\r\n") or not chunk.endswith(b"\r\n"):
            raise ValueError("part not framed by CRLF")
        head, sep, content = chunk[2:-2].partition(b"\r\n\r\n")
        if not sep:
            raise ValueError("part without headers")
        headers = {}
        for line in head.decode("ascii").split("\r\n"):
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        disposition = headers.get("content-disposition", "")
        name = re.search(r'\bname="([^"]*)"', disposition)
        filename = re.search(r'\bfilename="([^"]*)"', disposition)
        if not disposition.startswith("form-data") or not name:
            raise ValueError("bad Content-Disposition %r" % disposition)
        parts[name.group(1)] = (filename.group(1) if filename else None,
                                headers.get("content-type"), content)
    return parts


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        server = self.server
        if server.options.hang:
            time.sleep(3600)
            return
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        with server.lock:
            server.count += 1
            number = server.count
        record = {"number": number, "problems": []}
        problems = record["problems"]
        url = urllib.parse.urlsplit(self.path)
        record["path"] = url.path
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        record["query"] = {k: v[0] for k, v in query.items()}
        for key in ("name", "from", "until", "sampleRate", "spyName", "format"):
            if len(query.get(key, [])) != 1:
                problems.append("query %s: %r" % (key, query.get(key)))
        if query.get("format") != ["jfr"]:
            problems.append("format is not jfr")
        times = [query.get(k, [""])[0] for k in ("from", "until")]
        if not all(re.fullmatch(r"\d{13}", t) for t in times) or int(times[0]) >= int(times[1]):
            problems.append("from/until not increasing 13-digit milliseconds: %r" % times)
        if not re.fullmatch(r"[1-9]\d*", query.get("sampleRate", [""])[0]):
            problems.append("sampleRate %r" % query.get("sampleRate"))
        record["authorization"] = self.headers.get("Authorization")
        record["tenant"] = self.headers.get("X-Scope-OrgID")
        if record["authorization"] != server.options.auth:
            problems.append("Authorization header differs from the expected one")
        if record["tenant"] != server.options.tenant:
            problems.append("X-Scope-OrgID %r, want %r" % (record["tenant"], server.options.tenant))
        content_type = self.headers.get("Content-Type", "")
        boundary = re.fullmatch(r"multipart/form-data; boundary=([-A-Za-z0-9'()+_,./:=?]{1,70})",
                                content_type)
        if not boundary:
            problems.append("Content-Type %r" % content_type)
        else:
            try:
                parts = parse_multipart(body, boundary.group(1))
                record["parts"] = sorted(parts)
                for name, (filename, part_type, content) in parts.items():
                    if filename != name:
                        problems.append("part %s: filename %r" % (name, filename))
                    if content[:2] != b"\x1f\x8b":
                        problems.append("part %s is not gzip" % name)
                        continue
                    unpacked = gzip.decompress(content)
                    path = os.path.join(server.out, "%03d.%s" % (number, name))
                    with open(path, "wb") as f:
                        f.write(unpacked)
                if "jfr" not in parts:
                    problems.append("no jfr part")
                elif not open(os.path.join(server.out, "%03d.jfr" % number), "rb").read(4) == \
                        b"FLR\0":
                    problems.append("the jfr part is not a JFR chunk")
                if "labels" in parts and parts["labels"][1] != "application/x-protobuf":
                    problems.append("labels content type %r" % parts["labels"][1])
                if set(parts) - {"jfr", "labels"}:
                    problems.append("unexpected parts %r" % sorted(parts))
            except ValueError as e:
                problems.append("multipart: %s" % e)
        status = 400 if problems else 200
        if not problems and server.failures_left > 0:
            server.failures_left -= 1
            status = server.options.fail[1]
        record["status"] = status
        with server.lock:
            with open(os.path.join(server.out, "requests.jsonl"), "a") as f:
                f.write(json.dumps(record) + "\n")
        reply = (json.dumps(problems) if problems else "ok").encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(reply)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(reply)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("port_file")
    parser.add_argument("--tls", nargs=2)
    parser.add_argument("--auth")
    parser.add_argument("--tenant")
    parser.add_argument("--fail", nargs=2, type=int, default=[0, 200])
    parser.add_argument("--hang", action="store_true")
    options = parser.parse_args()
    receiver_server.serve(Handler, options)


if __name__ == "__main__":
    main()
