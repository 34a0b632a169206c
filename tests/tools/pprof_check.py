#!/usr/bin/python3
"""Checks `protoc --decode=perftools.profiles.Profile` text of the pprof file that
`ctxprof convert --to pprof` wrote for the recording of tests/tools/tools_workload.h, against
that file's table (written down here again by hand).

Usage: pprof_check.py <decoded.txt>
"""
import re
import sys


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def parse(text):
    """protoc's text format -> nested dicts of lists (every field is a list)."""
    root, stack = {}, []
    node = root
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            node = stack.pop()
        elif line.endswith("{"):
            child = {}
            node.setdefault(line[:-1].strip(), []).append(child)
            stack.append(node)
            node = child
        else:
            key, value = line.split(": ", 1)
            if key.isdigit():
                # protoc prints a field its schema lacks by number: the encoder wrote a field
                # that the pprof schema in use (Debian's, tests/tools/BUILD.bazel) does not have.
                fail("field number %s is not in the pprof schema: %s" % (key, line))
            if value.startswith('"'):
                # protoc escapes non-ASCII as octal bytes: decode them back to UTF-8.
                raw = value[1:-1].encode("latin-1").decode("unicode_escape").encode("latin-1")
                value = raw.decode("utf-8")
            else:
                value = int(value)
            node.setdefault(key, []).append(value)
    return root


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
INTERVAL = 10000000  # the recording's ProfilerSettings interval


def main():
    profile = parse(open(sys.argv[1], encoding="utf-8").read())
    strings = profile["string_table"]
    if strings[0] != "":
        fail("string_table[0] is %r, pprof requires \"\"" % strings[0])
    types = [(strings[t.get("type", [0])[0]], strings[t.get("unit", [0])[0]])
             for t in profile["sample_type"]]
    if types != [("samples", "count"), ("cpu", "nanoseconds")]:
        fail("sample types %r" % types)
    functions = {f["id"][0]: strings[f["name"][0]] for f in profile["function"]}
    if sorted(functions.values()) != sorted({n for s in STACKS.values() for n in s}):
        fail("functions %r" % sorted(functions.values()))
    locations = {l["id"][0]: functions[l["line"][0]["function_id"][0]] for l in profile["location"]}
    samples = profile["sample"]
    if len(samples) != len(SAMPLES):
        fail("%d samples, want %d" % (len(samples), len(SAMPLES)))
    for i, (sample, want) in enumerate(zip(samples, SAMPLES)):
        tid, kind, stack, endpoint, tenant, context = want
        names = [locations[l] for l in sample.get("location_id", [])]
        if names != STACKS[stack]:
            fail("sample %d: stack %r, want %r" % (i + 1, names, STACKS[stack]))
        values = sample.get("value", [])
        if values != [1, INTERVAL if kind == "cpu" else 0]:
            fail("sample %d: values %r" % (i + 1, values))
        labels = {}
        for label in sample.get("label", []):
            key = strings[label["key"][0]]
            labels[key] = strings[label["str"][0]] if "str" in label else label["num"][0]
        want_labels = {"kind": kind, "thread_id": tid}
        if context is not None:
            want_labels["trace_id"] = "%016x%016x" % (0x1000 + context, 0x2000 + context)
            want_labels["span_id"] = "%016x" % (0x3000 + context)
            if endpoint:
                want_labels["endpoint"] = endpoint
            want_labels["tenant"] = tenant
        if labels != want_labels:
            fail("sample %d: labels %r, want %r" % (i + 1, labels, want_labels))
    if strings[profile["period_type"][0]["type"][0]] != "cpu" or profile["period"] != [INTERVAL]:
        fail("period %r" % profile.get("period"))
    print("ok: %d samples, %d functions, %d locations" % (len(samples), len(functions),
                                                          len(locations)))


if __name__ == "__main__":
    main()
