#!/usr/bin/python3
"""Checks `jfr print --json` (and JDK 25 `jfr print` text) of a synthetic recording against
the expectation written by write_synthetic_recording.

Usage:
  jfr_tool_check.py json <recording.jfr> <expected.json> <print.json> <jdk|ctxprof|contextid>
  jfr_tool_check.py contexts <expected.json> <print.txt> <jdk|ctxprof|contextid>

Modes (write_synthetic_recording's): jdk = CPU samples as jdk.ExecutionSample, ctxprof = as
ctxprof.CpuSample, contextid = jdk plus a contextId on every sample event, which must equal the
contextId of the ctxprof.Context event that covers the sample (0 when none does).

Exits non-zero with a message naming the first mismatch.
"""
import json
import re
import struct
import sys


WALL_TYPE = "profiler.WallClockSample"


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def instant_nanos(text):
    # 2026-11-21T22:26:40.001234567Z -> nanoseconds since the epoch
    m = re.fullmatch(r"(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)(?:\.(\d{1,9}))?Z", text)
    if not m:
        fail("unexpected time format: " + text)
    import calendar
    y, mo, d, h, mi, s = (int(x) for x in m.groups()[:6])
    seconds = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))
    fraction = (m.group(7) or "").ljust(9, "0")
    return seconds * 10**9 + int(fraction)


def duration_nanos(text):
    # java.time.Duration.toString(): PT[nH][nM][n[.fraction]S]
    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d{1,9}))?S)?", text)
    if not m:
        fail("unexpected duration format: " + text)
    h, mi, s = (int(x or 0) for x in m.groups()[:3])
    fraction = (m.group(4) or "").ljust(9, "0")
    return ((h * 60 + mi) * 60 + s) * 10**9 + int(fraction)


def w3c_ids(values):
    """The W3C hex ids of a ctxprof.Context's binary fields (longs, 0 = none), as the
    expectation names them: traceId (32 lowercase digits), spanId (16)."""
    ids = {}
    high, low, span = (values[k] % 2**64 for k in ("traceIdHigh", "traceIdLow", "spanId"))
    if high or low:
        ids["traceId"] = "%016x%016x" % (high, low)
    if span:
        ids["spanId"] = "%016x" % span
    return ids


def first_header(path):
    with open(path, "rb") as f:
        header = f.read(68)
    start_nanos, = struct.unpack(">q", header[32:40])
    start_ticks, ticks_per_second = struct.unpack(">QQ", header[48:64])
    return start_nanos, start_ticks, ticks_per_second


def check_json(recording, expected_path, json_path, mode):
    expected = json.load(open(expected_path, encoding="utf-8"))["samples"]
    events = json.load(open(json_path, encoding="utf-8"))["recording"]["events"]
    start_nanos, start_ticks, ticks_per_second = first_header(recording)
    divisor = ticks_per_second / 1e9

    def to_nanos(ticks):  # the JDK's TimeConverter, with Java's truncating long cast
        return start_nanos + int((ticks - start_ticks) / divisor)

    cpu_type = "ctxprof.CpuSample" if mode == "ctxprof" else "jdk.ExecutionSample"
    samples, contexts = [], []
    for event in events:
        values = event["values"]
        if event["type"] in (cpu_type, WALL_TYPE) and ("contextId" in values) != (mode == "contextid"):
            fail("%s: contextId field %s in mode %s" % (
                event["type"], "present" if "contextId" in values else "absent", mode))
        if event["type"] in (cpu_type, WALL_TYPE):
            thread = values["sampledThread" if event["type"] == "jdk.ExecutionSample" else "eventThread"]
            samples.append((event["type"], thread, instant_nanos(values["startTime"]), values))
        elif event["type"] == "ctxprof.Context":
            start = instant_nanos(values["startTime"])
            contexts.append((values["eventThread"]["osThreadId"], start,
                             start + duration_nanos(values["duration"]), values))
        elif event["type"] in ("jdk.ExecutionSample", "ctxprof.CpuSample"):
            fail("unexpected CPU sample event type %s in mode %s" % (event["type"], mode))

    if len(samples) != len(expected):
        fail("%d samples in jfr output, %d written" % (len(samples), len(expected)))
    by_key = {}
    for sample in samples:
        by_key.setdefault((sample[1]["osThreadId"], sample[2]), []).append(sample)

    contexts_by_thread = {}
    for c in contexts:
        contexts_by_thread.setdefault(c[0], []).append(c)
    for tid, intervals in contexts_by_thread.items():
        intervals.sort(key=lambda c: c[1])
        for a, b in zip(intervals, intervals[1:]):
            if a[2] > b[1]:
                fail("context intervals of thread %d overlap: %r %r" % (tid, a[:3], b[:3]))
    covered = set()

    for i, want in enumerate(expected):
        nanos = to_nanos(want["ticks"])
        candidates = by_key.get((want["tid"], nanos), [])
        if len(candidates) != 1:
            fail("sample %d (tid %d at %d ns): %d matching events" % (i, want["tid"], nanos, len(candidates)))
        event_type, thread, _, values = candidates[0]
        wanted_type = cpu_type if want["kind"] == "cpu" else WALL_TYPE
        if event_type != wanted_type:
            fail("sample %d: type %s, want %s" % (i, event_type, wanted_type))
        java_name = want["thread"] if want["javaThreadId"] > 0 else None
        if (thread["osName"], thread["javaName"], thread["javaThreadId"]) != (
                want["thread"], java_name, want["javaThreadId"]):
            fail("sample %d: thread %r, want %r" % (i, thread, want))
        stack = values["stackTrace"]
        frames = [[f["method"]["type"]["name"].replace("/", ".") + "." + f["method"]["name"],
                   f["lineNumber"]] for f in stack["frames"]]
        if frames != want["frames"] or stack["truncated"] != want["truncated"]:
            fail("sample %d: stack differs: %d frames (truncated=%s), want %d (truncated=%s); "
                 "first %r want %r" % (i, len(frames), stack["truncated"], len(want["frames"]),
                                      want["truncated"], frames[:2], want["frames"][:2]))
        matching = [c for c in contexts_by_thread.get(want["tid"], []) if c[1] <= nanos < c[2]]
        if mode == "contextid":
            want_id = matching[0][3]["contextId"] if matching else 0
            if values["contextId"] != want_id or (matching and want_id == 0):
                fail("sample %d: contextId %r, the covering context has %r" % (
                    i, values["contextId"], want_id))
        if want["context"] is None:
            if matching:
                fail("sample %d: has no context but lies in interval %r" % (i, matching[0][:3]))
            continue
        if len(matching) != 1:
            fail("sample %d (tid %d at %d): %d context intervals cover it" % (i, want["tid"], nanos, len(matching)))
        got = w3c_ids(matching[0][3])
        got.update({k: v for k, v in matching[0][3].items()
                    if k not in ("startTime", "duration", "eventThread", "contextId", "traceIdHigh",
                                 "traceIdLow", "spanId") and v is not None})
        if got != want["context"]:
            fail("sample %d: context %r, want %r" % (i, got, want["context"]))
        covered.add(id(matching[0]))
    if len(covered) != len(contexts):
        fail("%d context intervals cover no sample" % (len(contexts) - len(covered)))
    print("ok: %d samples, %d context intervals match" % (len(samples), len(contexts)))


def check_context_lines(expected_path, text_path, mode):
    """JDK 25 `jfr print`: Context lines appear exactly under samples that have a context."""
    expected = json.load(open(expected_path, encoding="utf-8"))["samples"]
    text = open(text_path, encoding="utf-8").read()
    blocks = re.findall(r"^(\S+) \{\n(.*?)^\}", text, re.S | re.M)
    counts = {}
    for event_type, body in blocks:
        has_context = "Context: Context.traceId" in body
        counts[(event_type, has_context)] = counts.get((event_type, has_context), 0) + 1
    cpu_type = "ctxprof.CpuSample" if mode == "ctxprof" else "jdk.ExecutionSample"
    for kind, event_type in (("wall", WALL_TYPE), ("cpu", cpu_type)):
        with_context = sum(1 for s in expected if s["kind"] == kind and s["context"] is not None)
        total = sum(1 for s in expected if s["kind"] == kind)
        if event_type == "jdk.ExecutionSample":
            # No eventThread: JDK 25 never attaches contexts to it (documented limitation).
            with_context = 0
        got_with = counts.get((event_type, True), 0)
        got_total = got_with + counts.get((event_type, False), 0)
        if (got_with, got_total) != (with_context, total):
            fail("%s: %d of %d printed with Context lines, want %d of %d" %
                 (event_type, got_with, got_total, with_context, total))
        print("ok: %s: %d of %d samples show Context lines" % (event_type, got_with, got_total))


if __name__ == "__main__":
    if sys.argv[1] == "json":
        check_json(*sys.argv[2:6])
    elif sys.argv[1] == "contexts":
        check_context_lines(*sys.argv[2:5])
    else:
        fail("unknown command " + sys.argv[1])
