#!/usr/bin/python3
"""Checks `protoc --decode=perftools.profiles.Profile` text of the pprof file that
`ctxprof convert --to pprof` wrote for the recording of tests/tools/tools_workload.h, against
that file's table (written down here again by hand).

Usage: pprof_check.py <decoded.txt> <recording.jfr> <all|cpu|wall> <default|ids>
  all|cpu|wall   the --events the file was converted with
  default|ids    the labels: default (kind and the attributes), or ids (--labels
                 kind,thread_id,trace_id,span_id,endpoint,tenant)
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protoc_text  # noqa: E402


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


H = "com.example.svc.Handler"
STACKS = {  # leaf first, as pprof stores locations
    0: [H + "4.method4", H + "2.method2", H + "1.method1"],
    1: [H + "5.method5", H + "2.method2", H + "1.method1"],
    2: [H + "6.method6", H + "3.method3", H + "1.method1"],
    3: ["libfake.so.native_function_3", H + "1.method8", H + "3.method3", H + "1.method1"],
    4: [],
    5: [H + "1.größe_22", H + "1.method1"],
}
# (tid, kind, stack, endpoint, tenant, context number) per sample, in recording order.
SAMPLES = [
    (101, "cpu", 0, "/checkout", "acme", 0), (101, "cpu", 0, "/checkout", "acme", 0),
    (101, "wall", 1, "/checkout", "acme", 0), (102, "cpu", 2, "/search", "acme", 2),
    (102, "cpu", 3, "/search", "acme", 2), (102, "wall", 2, "/search", "a b;c=[x]%", 3),
    (101, "cpu", 1, "/checkout", "globex", 1), (101, "cpu", 5, None, None, None),
    (102, "cpu", 4, None, None, None), (102, "wall", 3, None, "acme", 4),
    (101, "wall", 0, "/checkout", "globex", 1), (102, "cpu", 2, "/search", "acme", 2),
]
CPU_INTERVAL = 10000000   # the recording's interval (jdk.ActiveSetting / ProfilerSettings)
WALL_INTERVAL = 20000000  # its wall interval (jdk.ActiveSetting "wall")
JAVA_LINE = 100           # FakeFrameResolver: 100 + bci; native frames have none


def chunk_range(recording):
    """(start, duration) in epoch nanoseconds from the (single) chunk header."""
    with open(recording, "rb") as f:
        header = f.read(68)
    start, duration = struct.unpack(">qQ", header[32:48])
    return start, duration


def main():
    decoded, recording, events, labelling = sys.argv[1:5]
    profile = protoc_text.parse(open(decoded, encoding="utf-8").read(), fail)
    strings = profile["string_table"]
    if strings[0] != "":
        fail("string_table[0] is %r, pprof requires \"\"" % strings[0])
    types = [(strings[t.get("type", [0])[0]], strings[t.get("unit", [0])[0]])
             for t in profile["sample_type"]]
    want_types = [("samples", "count")] + [(kind, "nanoseconds") for kind in ("cpu", "wall")
                                           if events in ("all", kind)]
    if types != want_types:
        fail("sample types %r, want %r" % (types, want_types))
    # What pprof and speedscope show first: every sample must have its weight there.
    default = strings[profile.get("default_sample_type", [0])[0]]
    if default != ("samples" if events == "all" else events):
        fail("default_sample_type %r with --events %s" % (default, events))
    if (profile.get("time_nanos", [0])[0], profile.get("duration_nanos", [0])[0]) != \
            chunk_range(recording):
        fail("time_nanos/duration_nanos %r/%r, the chunk header says %r" % (
            profile.get("time_nanos"), profile.get("duration_nanos"), chunk_range(recording)))
    functions = {f["id"][0]: strings[f["name"][0]] for f in profile["function"]}
    # A Java method's system name adds its descriptor; a native symbol has none to add.
    for function in profile["function"]:
        name = strings[function["name"][0]]
        system_name = strings[function["system_name"][0]]
        want = name if name.startswith("libfake.so.") else name + "(I)V"
        if system_name != want:
            fail("%s: system name %r, want %r" % (name, system_name, want))
    wanted = [s for s in SAMPLES if events in ("all", s[1])]
    if sorted(functions.values()) != sorted({n for s in wanted for n in STACKS[s[2]]}):
        fail("functions %r" % sorted(functions.values()))
    locations = {}
    for location in profile["location"]:
        line = location["line"][0]
        name = functions[line["function_id"][0]]
        # pprof's "unknown line" is 0, which proto3 leaves out; never JFR's -1.
        want_line = [] if name.startswith("libfake.so.") else [JAVA_LINE]
        if line.get("line", []) != want_line:
            fail("%s: line %r, want %r" % (name, line.get("line"), want_line))
        locations[location["id"][0]] = name
    samples = profile["sample"]
    if len(samples) != len(wanted):
        fail("%d samples, want %d" % (len(samples), len(wanted)))
    for i, (sample, want) in enumerate(zip(samples, wanted)):
        tid, kind, stack, endpoint, tenant, context = want
        names = [locations[l] for l in sample.get("location_id", [])]
        if names != STACKS[stack]:
            fail("sample %d: stack %r, want %r" % (i + 1, names, STACKS[stack]))
        values = sample.get("value", [])
        want_values = [1] + [(CPU_INTERVAL if kind == "cpu" else 0) for t in types if t[0] == "cpu"] \
            + [(WALL_INTERVAL if kind == "wall" else 0) for t in types if t[0] == "wall"]
        if values != want_values:
            fail("sample %d: values %r, want %r" % (i + 1, values, want_values))
        labels = {}
        for label in sample.get("label", []):
            key = strings[label["key"][0]]
            labels[key] = strings[label["str"][0]] if "str" in label else label["num"][0]
        want_labels = {"kind": kind}
        if labelling == "ids":
            want_labels["thread_id"] = tid
        if context is not None:
            if labelling == "ids":
                want_labels["trace_id"] = "%016x%016x" % (0x1000 + context, 0x2000 + context)
                want_labels["span_id"] = "%016x" % (0x3000 + context)
            if endpoint:
                want_labels["endpoint"] = endpoint
            want_labels["tenant"] = tenant
        if labels != want_labels:
            fail("sample %d: labels %r, want %r" % (i + 1, labels, want_labels))
    period_kind = "cpu" if events in ("all", "cpu") else "wall"
    want_period = CPU_INTERVAL if period_kind == "cpu" else WALL_INTERVAL
    if strings[profile["period_type"][0]["type"][0]] != period_kind or \
            profile["period"] != [want_period]:
        fail("period %r" % profile.get("period"))
    print("ok: %s/%s: %d samples, %d functions, %d locations" % (
        events, labelling, len(samples), len(functions), len(locations)))


if __name__ == "__main__":
    main()
