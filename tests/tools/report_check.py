#!/usr/bin/python3
"""Computes `ctxprof report` independently from `jfr print --json` and compares it with the
tool's output, byte for byte.

It joins each sample to the ctxprof.Context event of the same thread (osThreadId) with
start <= time < start + duration (JDK nanoseconds), counts per value of one attribute the
samples (sum of weights) and per method ("class.method") the self samples (leaf frame) and
total samples (stack contains it, once per sample), and renders the report's documented
layout (docs/TOOLS.md).

Usage: report_check.py <print.json> <report.txt> <attribute> <cpu|wall|all> <top>
Exits non-zero with a unified diff when the two differ.
"""
import calendar
import difflib
import json
import re
import sys


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def instant_nanos(text):
    m = re.fullmatch(r"(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)(?:\.(\d{1,9}))?Z", text)
    if not m:
        fail("unexpected time format: " + text)
    seconds = calendar.timegm(tuple(int(x) for x in m.groups()[:6]) + (0, 0, 0))
    return seconds * 10**9 + int((m.group(7) or "").ljust(9, "0"))


def duration_nanos(text):
    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d{1,9}))?S)?", text)
    if not m:
        fail("unexpected duration format: " + text)
    h, mi, s = (int(x or 0) for x in m.groups()[:3])
    return ((h * 60 + mi) * 60 + s) * 10**9 + int((m.group(4) or "").ljust(9, "0"))


def quote(value):  # the report's quoting: JSON escapes for '"', '\\' and control bytes
    out = '"'
    for ch in value:
        if ch in '"\\':
            out += "\\" + ch
        elif ord(ch) < 0x20 or ord(ch) == 0x7f:
            out += "\\u%04x" % ord(ch)
        else:
            out += ch
    return out + '"'


def share(part, whole):
    return "%.2f%%" % (100.0 * part / whole if whole else 0.0)


def main():
    print_json, report_path, attribute, events, top = sys.argv[1:6]
    top = int(top)
    recording = json.load(open(print_json, encoding="utf-8"))["recording"]["events"]

    field = attribute.replace(".", "_").replace("-", "_")
    contexts = {}  # osThreadId -> [(start, end, values)]
    samples = []   # (kind, tid, time, weight, frames leaf first)
    for event in recording:
        values, kind = event["values"], None
        if event["type"] in ("jdk.ExecutionSample", "ctxprof.CpuSample"):
            kind = "cpu"
        elif event["type"] == "profiler.WallClockSample":
            kind = "wall"
        elif event["type"] == "ctxprof.Context":
            start = instant_nanos(values["startTime"])
            contexts.setdefault(values["eventThread"]["osThreadId"], []).append(
                (start, start + duration_nanos(values["duration"]), values))
            continue
        else:
            continue
        if events != "all" and kind != events:
            continue
        thread = values["sampledThread" if event["type"] == "jdk.ExecutionSample" else "eventThread"]
        stack = values["stackTrace"]
        frames = [] if stack is None else [
            f["method"]["type"]["name"].replace("/", ".") + "." + f["method"]["name"]
            for f in stack["frames"]]
        samples.append((kind, thread["osThreadId"], instant_nanos(values["startTime"]),
                        values.get("samples", values.get("weight", 1)), frames))

    def context_of(tid, time):
        found = [c for c in contexts.get(tid, []) if c[0] <= time < c[1]]
        if len(found) > 1:
            fail("overlapping contexts on thread %d at %d" % (tid, time))
        return found[0][2] if found else None

    sections = {}  # title -> [samples, {method: [self, total]}]
    total = cpu = wall = 0
    for kind, tid, time, weight, frames in samples:
        total += weight
        if kind == "cpu":
            cpu += weight
        else:
            wall += weight
        context = context_of(tid, time)
        if context is None:
            key = (2, "(no context)", b"")
        elif context.get(field):
            value = context[field]
            key = (0, attribute + " = " + quote(value), value.encode("utf-8"))
        else:
            key = (1, attribute + " (unset)", b"")
        section = sections.setdefault(key, [0, {}])
        section[0] += weight
        for method in set(frames):
            section[1].setdefault(method, [0, 0])[1] += weight
        if frames:
            section[1][frames[0]][0] += weight

    # Values: most samples first, ties by the value's UTF-8 bytes; then (unset), (no context).
    def order(item):
        (group, _, raw), (count, _) = item
        return (group, -count if group == 0 else 0, raw)

    lines = ["samples: %d (cpu %d, wall %d)" % (total, cpu, wall), "by: " + attribute]
    row = "%10s %8s %8s %10s %8s %8s  %s"
    for (_, title, _), (count, methods) in sorted(sections.items(), key=order):
        lines += ["", "== %s: %d samples (%s of all)" % (title, count, share(count, total)),
                  row % ("self", "self%", "all%", "total", "total%", "all%", "method")]
        ranked = sorted(methods.items(),
                        key=lambda m: (-m[1][0], -m[1][1], m[0].encode("utf-8")))[:top]
        for method, (self_count, total_count) in ranked:
            lines.append(row % (self_count, share(self_count, count), share(self_count, total),
                                total_count, share(total_count, count), share(total_count, total),
                                method))
    expected = "\n".join(lines) + "\n"
    actual = open(report_path, encoding="utf-8").read()
    if actual != expected:
        diff = difflib.unified_diff(expected.splitlines(), actual.splitlines(), "expected (jfr json)",
                                    "ctxprof report", lineterm="", n=1)
        fail("report differs from the count over jfr print --json:\n" + "\n".join(list(diff)[:60]))
    print("ok: %d samples, %d sections, attribute %s, events %s" % (total, len(sections),
                                                                     attribute, events))


if __name__ == "__main__":
    main()
