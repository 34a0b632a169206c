#!/usr/bin/python3
"""Checks `protoc --decode=opentelemetry.proto.profiles.v1development.ProfilesData` text (with
the schema tests/tools/otlp_profiles.proto, written from the published spec) of the file that
`ctxprof convert --to otlp` wrote for tests/tools/tools_workload.h: the spec's dictionary rules,
one profile per sample kind with its period, every sample's stack, attributes, link and
timestamps, against the table of pprof_check.py (written down there by hand).

Usage: otlp_check.py <decoded.txt> <recording.jfr> <default|thread_id>
  default     attributes endpoint and tenant
  thread_id   --labels endpoint,tenant,thread_id
"""
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pprof_check  # noqa: E402  (the workload's table and the chunk header reader)
import protoc_text  # noqa: E402

fail = pprof_check.fail


def as_bytes(value):
    return value if isinstance(value, bytes) else value.encode("utf-8")


def check_every_stack_used(dictionary, data, fail):
    """The spec: every stack of the dictionary is referenced by a sample (index 0 excepted)."""
    used = set()
    for resource in data["resource_profiles"]:
        for scope in resource["scope_profiles"]:
            for profile in scope["profiles"]:
                for sample in profile.get("samples", []):
                    used.add(sample.get("stack_index", [0])[0])
    orphans = set(range(1, len(dictionary["stack_table"]))) - used
    if orphans:
        fail("%d of %d stacks are referenced by no sample: %r" % (
            len(orphans), len(dictionary["stack_table"]) - 1, sorted(orphans)))


def main():
    decoded, recording, labelling = sys.argv[1:4]
    data = protoc_text.parse(open(decoded, encoding="utf-8").read(), fail)
    dictionary = data["dictionary"][0]
    strings = dictionary["string_table"]
    if strings[0] != "":
        fail("string_table[0] is %r" % strings[0])
    for table in ("mapping_table", "location_table", "function_table", "attribute_table",
                  "stack_table"):
        if dictionary[table][0] != {}:
            fail("%s[0] is %r, the spec wants the zero value" % (table, dictionary[table][0]))
    zero_link = dictionary["link_table"][0]
    if (as_bytes(zero_link["trace_id"][0]), as_bytes(zero_link["span_id"][0])) != (
            b"\0" * 16, b"\0" * 8):
        fail("link_table[0] is %r, want zero-filled ids" % zero_link)

    functions = [strings[f.get("name_strindex", [0])[0]] for f in dictionary["function_table"]]
    # A Java method's system name adds its descriptor; a native symbol has none to add.
    for function in dictionary["function_table"][1:]:
        name = strings[function["name_strindex"][0]]
        system_name = strings[function["system_name_strindex"][0]]
        want = name if name.startswith("libfake.so.") else name + "(I)V"
        if system_name != want:
            fail("%s: system name %r, want %r" % (name, system_name, want))
    attributes = []
    for attribute in dictionary["attribute_table"]:
        attributes.append((strings[attribute.get("key_strindex", [0])[0]],
                           attribute.get("value", [{}])[0].get("string_value", [None])[0]))
    locations = []
    for location in dictionary["location_table"]:
        lines = location.get("lines", [])
        name = functions[lines[0].get("function_index", [0])[0]] if lines else None
        if lines:
            # No line number for native frames (the spec's 0 = unset), JAVA_LINE otherwise.
            want_line = [] if name.startswith("libfake.so.") else [pprof_check.JAVA_LINE]
            if lines[0].get("line", []) != want_line:
                fail("%s: line %r, want %r" % (name, lines[0].get("line"), want_line))
            kinds = [attributes[i] for i in location.get("attribute_indices", [])]
            want_kind = "native" if name.startswith("libfake.so.") else "jvm"
            if kinds != [("profile.frame.type", want_kind)]:
                fail("%s: location attributes %r" % (name, kinds))
        locations.append(name)
    stacks = [[locations[i] for i in stack.get("location_indices", [])]
              for stack in dictionary["stack_table"]]

    check_every_stack_used(dictionary, data, fail)

    resources = data["resource_profiles"]
    if len(resources) != 1 or len(resources[0]["scope_profiles"]) != 1:
        fail("want one resource with one scope: %r" % resources)
    scope = resources[0]["scope_profiles"][0]
    if scope["scope"][0]["name"] != ["ctxprof"]:
        fail("scope %r" % scope["scope"])
    start, duration = pprof_check.chunk_range(recording)
    profiles = scope["profiles"]
    if len(profiles) != 2:
        fail("%d profiles, want cpu and wall" % len(profiles))
    for profile, kind, period in zip(profiles, ("cpu", "wall"),
                                     (pprof_check.CPU_INTERVAL, pprof_check.WALL_INTERVAL)):
        sample_type = profile["sample_type"][0]
        period_type = profile["period_type"][0]
        if (strings[sample_type["type_strindex"][0]], strings[sample_type["unit_strindex"][0]],
                strings[period_type["type_strindex"][0]], strings[period_type["unit_strindex"][0]],
                profile["period"]) != ("samples", "count", kind, "nanoseconds", [period]):
            fail("%s: sample/period type %r %r period %r" % (kind, sample_type, period_type,
                                                             profile["period"]))
        if (profile["time_unix_nano"], profile["duration_nano"]) != ([start], [duration]):
            fail("%s: time range %r %r, chunk %r" % (kind, profile["time_unix_nano"],
                                                     profile["duration_nano"], (start, duration)))
        got = collections.Counter()
        for sample in profile["samples"]:
            if "values" in sample:
                fail("%s: values written (weights are timestamps): %r" % (kind, sample))
            times = sample["timestamps_unix_nano"]
            if any(not start <= t < start + duration for t in times):
                fail("%s: timestamps %r outside [%d, %d)" % (kind, times, start, start + duration))
            labels = tuple(sorted(attributes[i] for i in sample.get("attribute_indices", [])))
            link = dictionary["link_table"][sample.get("link_index", [0])[0]]
            ids = (as_bytes(link["trace_id"][0]).hex(), as_bytes(link["span_id"][0]).hex())
            stack = tuple(stacks[sample.get("stack_index", [0])[0]])
            got[(stack, labels, ids)] += len(times)
        want = collections.Counter()
        for tid, sample_kind, stack, endpoint, tenant, context in pprof_check.SAMPLES:
            if sample_kind != kind:
                continue
            labels = []
            if endpoint:
                labels.append(("endpoint", endpoint))
            if tenant:
                labels.append(("tenant", tenant))
            if labelling == "thread_id":
                labels.append(("thread_id", str(tid)))
            ids = ("0" * 32, "0" * 16) if context is None else (
                "%016x%016x" % (0x1000 + context, 0x2000 + context), "%016x" % (0x3000 + context))
            want[(tuple(pprof_check.STACKS[stack]), tuple(sorted(labels)), ids)] += 1
        if got != want:
            fail("%s: samples\n  %r\nwant\n  %r" % (kind, sorted(got.items()), sorted(want.items())))
        print("ok: %s: %d events in %d samples" % (kind, sum(got.values()),
                                                   len(profile["samples"])))


if __name__ == "__main__":
    main()
