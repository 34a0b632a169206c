#!/usr/bin/python3
"""Checks what pyroscope_receiver.py recorded for one upload_test.sh scenario.

Usage: upload_check.py OUT REPOSITORY JFR_TOOL LABELS_PROTO EXPECT_JSON
EXPECT_JSON: {"statuses": [..] (the statuses in order; "*200" = any number of 200s),
              "path": "/pyro/ingest", "name": "...", "sampleRate": "100",
              "all_chunks": true (every repository chunk file was uploaded, byte for byte)}

For every accepted upload: the JFR part equals a chunk file of the repository, byte for byte;
from/until are the chunk's time range in milliseconds (its header); and the labels snapshot
(decoded by protoc with LABELS_PROTO) resolves every contextId the chunk's samples carry (JDK
`jfr print --json`, which lists events in file order) to the labels of the chunk's ctxprof.Context
events with that contextId.

And what makes Pyroscope's parser (Grafana's jfr-parser, read from its source) count what we
count (docs/JFR.md, "Pyroscope"): the chunk counts nanoseconds (header ticksPerSecond 1e9: the
parser takes durations as nanoseconds), and no CPU, allocation, lock or park event comes after a
profiler.WallClockSample whose `samples` is not 1 (the parser weighs those events by it).
"""
import glob
import json
import os
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import protoc_text  # noqa: E402


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def chunk_millis(path):
    with open(path, "rb") as f:
        header = f.read(68)
    start, duration = struct.unpack(">qQ", header[32:48])
    return start // 1000000, max((start + duration) // 1000000, start // 1000000 + 1)


def ticks_per_second(path):
    with open(path, "rb") as f:
        header = f.read(68)
    return struct.unpack(">Q", header[56:64])[0]


# The events Pyroscope's parser weighs by the `samples` of the last profiler.WallClockSample.
CARRIED_WEIGHT_TYPES = ("jdk.ExecutionSample", "jdk.ObjectAllocationInNewTLAB",
                        "jdk.ObjectAllocationOutsideTLAB", "jdk.JavaMonitorEnter",
                        "jdk.ThreadPark", "profiler.LiveObject")


def labels_of(path, proto):
    """contextId -> {name: value} from a LabelsSnapshot file (empty if absent)."""
    if not os.path.exists(path):
        return {}
    decoded = subprocess.run(
        ["protoc", "--proto_path=" + os.path.dirname(proto),
         "--decode=ctxprof.test.LabelsSnapshot", os.path.basename(proto)],
        stdin=open(path, "rb"), capture_output=True, check=True, text=True).stdout
    snapshot = protoc_text.parse(decoded, fail)
    strings = {e["key"][0]: e.get("value", [""])[0] for e in snapshot.get("strings", [])}
    contexts = {}
    for entry in snapshot.get("contexts", []):
        labels = {}
        for label in entry.get("value", [{}])[0].get("labels", []):
            labels[strings[label["key"][0]]] = strings[label["value"][0]]
        contexts[entry["key"][0]] = labels
    return contexts


def events_of(path, jfr_tool):
    text = subprocess.run([jfr_tool, "print", "--json", path], capture_output=True, check=True,
                          text=True).stdout
    return json.loads(text)["recording"]["events"]


def check_chunk(number, jfr_path, labels_path, jfr_tool, proto, stats):
    if ticks_per_second(jfr_path) != 1000000000:
        fail("upload %d: ticksPerSecond %d, not nanoseconds" % (number, ticks_per_second(jfr_path)))
    snapshot = labels_of(labels_path, proto)
    context_labels, sample_ids = {}, set()
    carried = 1  # the parser's weight before any wall sample
    for event in events_of(jfr_path, jfr_tool):
        values = event["values"]
        if event["type"] == "profiler.WallClockSample":
            carried = values["samples"]
            stats["wall_events"] += 1
            stats["wall_samples"] += carried
        elif event["type"] in CARRIED_WEIGHT_TYPES:
            stats["weighed"] += 1
            if carried != 1:
                fail("upload %d: %s after a wall sample of weight %d" % (
                    number, event["type"], carried))
        if event["type"] == "ctxprof.Context":
            want = {}
            # The binary ids (longs, 0 = none) as the snapshot's W3C hex labels.
            high, low, span = (values[k] % 2**64 for k in ("traceIdHigh", "traceIdLow", "spanId"))
            if high or low:
                want["trace_id"] = "%016x%016x" % (high, low)
            if span:
                want["span_id"] = "%016x" % span
            for name in ("endpoint", "tenant"):
                if values.get(name) is not None:
                    want[name] = values[name]
            context_labels[values["contextId"]] = want
        elif event["type"] in ("jdk.ExecutionSample", "profiler.WallClockSample"):
            if "contextId" not in values:
                fail("upload %d: %s without contextId" % (number, event["type"]))
            if values["contextId"] != 0:
                sample_ids.add(values["contextId"])
    if not sample_ids and snapshot:
        fail("upload %d: a labels snapshot for a chunk without context" % number)
    for context_id in sample_ids:
        if context_id not in snapshot:
            fail("upload %d: contextId %d not in the labels snapshot" % (number, context_id))
        if snapshot[context_id] != context_labels.get(context_id):
            fail("upload %d: contextId %d: labels %r, the chunk's context %r" % (
                number, context_id, snapshot[context_id], context_labels.get(context_id)))
    return len(sample_ids)


def main():
    out, repository, jfr_tool, proto, expect_json = sys.argv[1:6]
    expect = json.loads(expect_json)
    requests = [json.loads(line) for line in open(os.path.join(out, "requests.jsonl"))]
    for request in requests:
        if request["problems"]:
            fail("request %d: %s" % (request["number"], "; ".join(request["problems"])))
    statuses = [r["status"] for r in requests]
    want = expect["statuses"]
    if want and want[-1] == "*200":
        if statuses[:len(want) - 1] != want[:-1] or any(s != 200 for s in statuses[len(want) - 1:]):
            fail("statuses %r, want %r" % (statuses, want))
    elif statuses != want:
        fail("statuses %r, want %r" % (statuses, want))
    chunks = {open(p, "rb").read(): p for p in glob.glob(os.path.join(repository, "*.jfr"))}
    uploaded = set()
    contexts = 0
    stats = {"wall_events": 0, "wall_samples": 0, "weighed": 0}
    for request in requests:
        if request["status"] != 200:
            continue
        number = request["number"]
        for key in ("path", "name", "sampleRate"):
            got = request["path"] if key == "path" else request["query"][key]
            if got != expect[key]:
                fail("request %d: %s %r, want %r" % (number, key, got, expect[key]))
        if request["query"]["spyName"] != "ctxprof":
            fail("request %d: spyName %r" % (number, request["query"]["spyName"]))
        jfr_path = os.path.join(out, "%03d.jfr" % number)
        chunk = chunks.get(open(jfr_path, "rb").read())
        if chunk is None:
            fail("request %d: the JFR part is no chunk file of %s" % (number, repository))
        if chunk in uploaded:
            fail("request %d: %s uploaded twice" % (number, chunk))
        uploaded.add(chunk)
        millis = chunk_millis(chunk)
        got = (int(request["query"]["from"]), int(request["query"]["until"]))
        if got != millis:
            fail("request %d: from/until %r, the chunk header says %r" % (number, got, millis))
        contexts += check_chunk(number, jfr_path, os.path.join(out, "%03d.labels" % number),
                                jfr_tool, proto, stats)
    if expect.get("all_chunks") and len(uploaded) != len(chunks):
        fail("%d of %d chunk files uploaded" % (len(uploaded), len(chunks)))
    if uploaded and contexts == 0:
        fail("no uploaded sample carries a context")
    # The driver's main thread sleeps: its wall samples stand for several intervals each, so
    # the weight rule above was exercised.
    if uploaded and stats["wall_samples"] <= stats["wall_events"]:
        fail("no wall sample of weight > 1 (%r): the carried-weight check checked nothing" % stats)
    print("ok: %d requests (statuses %r), %d chunks uploaded, %d contexts resolved, %d events "
          "after wall samples of weight 1 (%d wall samples in %d events)" % (
              len(requests), statuses, len(uploaded), contexts, stats["weighed"],
              stats["wall_samples"], stats["wall_events"]))


if __name__ == "__main__":
    main()
