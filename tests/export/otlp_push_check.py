#!/usr/bin/python3
"""Checks what otlp_receiver.py got from an otlp= exporter: every request's path, headers and
status as expected; each accepted body decodes with protoc and the schema written from the
OpenTelemetry spec (tests/tools/otlp_profiles.proto) with no unknown field; the resource carries
the expected attributes; the profiles present are the expected kinds; and the per-(kind,
endpoint) totals over the accepted requests equal those of `ctxprof convert --to otlp` of the
same chunk files (samples: timestamps; events: the sum of values).

Usage: otlp_push_check.py OUT PROTO CTXPROF CONFIG_JSON CHUNK...
  CONFIG_JSON: {"path": ..., "statuses": [200, ...] (in order; "*200" = any number of 200s),
                "resource": {key: value}, "kinds": [...], "events": ["all", "alloc", "lock"],
                "linked_kinds": [kinds some sample of which must link to a trace and span],
                "report": true to compare cpu + wall per endpoint with `ctxprof report` too}
"""
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import protoc_text  # noqa: E402

failures = []


def fail(message):
    failures.append(message)


def decode(proto, data):
    result = subprocess.run(
        ["protoc", "--proto_path=" + os.path.dirname(proto),
         "--decode=opentelemetry.proto.profiles.v1development.ProfilesData",
         os.path.basename(proto)], input=data, capture_output=True, timeout=60)
    if result.returncode != 0:
        fail("protoc cannot decode: %s" % result.stderr.decode(errors="replace"))
        return {}
    return protoc_text.parse(result.stdout.decode("utf-8"), fail)


def totals(data, into, links=None):
    """Adds the data's per-(kind, endpoint) totals to `into`; returns the kinds present. With
    `links` (a Counter), counts the samples whose link has a non-zero trace and span id."""
    dictionary = data.get("dictionary", [{}])[0]
    strings = dictionary.get("string_table", [])
    attributes = []
    for attribute in dictionary.get("attribute_table", []):
        attributes.append((strings[attribute.get("key_strindex", [0])[0]],
                           attribute.get("value", [{}])[0].get("string_value", [None])[0]))
    link_table = dictionary.get("link_table", [])
    kinds = []
    for resource_profiles in data.get("resource_profiles", []):
        for scope in resource_profiles.get("scope_profiles", []):
            for profile in scope.get("profiles", []):
                typed = (profile.get("period_type") or profile["sample_type"])[0]
                kind = strings[typed.get("type_strindex", [0])[0]]
                kinds.append(kind)
                for sample in profile.get("samples", []):
                    labels = dict(attributes[i] for i in sample.get("attribute_indices", []))
                    amount = (sum(sample["values"]) if sample.get("values")
                              else len(sample.get("timestamps_unix_nano", [])))
                    into[(kind, labels.get("endpoint"))] += amount
                    link = link_table[sample.get("link_index", [0])[0]]
                    if links is not None and any(
                            (v if isinstance(v, bytes) else v.encode("latin-1")).strip(b"\0")
                            for v in link.get("trace_id", []) + link.get("span_id", [])):
                        links[kind] += 1
    return kinds


def report(ctxprof, chunks):
    """{endpoint or None: samples} from `ctxprof report --by endpoint`; None sums "(no
    context)" and "endpoint (unset)" (a context without the attribute), as OTLP has no endpoint
    attribute on either."""
    text = subprocess.run([ctxprof, "report", *chunks, "--by", "endpoint", "--quiet"],
                          check=True, capture_output=True, text=True, timeout=60).stdout
    reported = {}
    for line in text.splitlines():
        match = re.match(
            r'== (?:endpoint = "(.*)"|\(no context\)|endpoint \(unset\)): (\d+) samples', line)
        if match:
            reported[match.group(1)] = reported.get(match.group(1), 0) + int(match.group(2))
        total = re.match(r"samples: (\d+) ", line)
        if total:
            # The headline total as a section of its own: a section the pattern above missed
            # makes the sums differ.
            reported["(all)"] = int(total.group(1))
    return reported


def main():
    out, proto, ctxprof, config = sys.argv[1:5]
    chunks = sys.argv[5:]
    config = json.loads(config)
    requests = [json.loads(line) for line in open(os.path.join(out, "requests.jsonl"))]
    statuses = [r["status"] for r in requests]
    want = config["statuses"]
    fixed = [s for s in want if s != "*200"]
    if statuses[:len(fixed)] != fixed or any(s != 200 for s in statuses[len(fixed):]):
        fail("statuses %r, want %r" % (statuses, want))
    got = collections.Counter()
    links = collections.Counter()
    kinds = set()
    for request in requests:
        for problem in request["problems"]:
            fail("request %d: %s" % (request["number"], problem))
        if request["path"] != config["path"]:
            fail("request %d: path %r, want %r" % (request["number"], request["path"],
                                                   config["path"]))
        if not (request.get("user_agent") or "").startswith("ctxprof-otlp-exporter/"):
            fail("request %d: User-Agent %r" % (request["number"], request.get("user_agent")))
        if request["status"] != 200:
            continue
        data = decode(proto, open(os.path.join(out, "%03d.pb" % request["number"]), "rb").read())
        resources = data.get("resource_profiles", [])
        if len(resources) != 1:
            fail("request %d: %d ResourceProfiles" % (request["number"], len(resources)))
            continue
        resource = {}
        for attribute in resources[0].get("resource", [{}])[0].get("attributes", []):
            resource[attribute["key"][0]] = attribute["value"][0]["string_value"][0]
        for key, value in config["resource"].items():
            if resource.get(key) != value:
                fail("request %d: resource %s = %r, want %r" % (request["number"], key,
                                                                 resource.get(key), value))
        kinds.update(totals(data, got, links))
    if sorted(kinds) != sorted(config["kinds"]):
        fail("profile kinds %r, want %r" % (sorted(kinds), sorted(config["kinds"])))
    expected = collections.Counter()
    with tempfile.TemporaryDirectory() as scratch:
        for chunk in chunks:
            for events in config["events"]:
                converted = os.path.join(scratch, "out.otlp")
                subprocess.run([ctxprof, "convert", "--to", "otlp", chunk, "-o", converted,
                                "--events", events, "--quiet"], check=True, timeout=60,
                               stderr=subprocess.DEVNULL)
                totals(decode(proto, open(converted, "rb").read()), expected)
    if got != expected:
        fail("per-(kind, endpoint) totals differ from `ctxprof convert --to otlp`:\n  pushed  %r"
             "\n  convert %r" % (sorted(got.items(), key=str), sorted(expected.items(), key=str)))
    for kind in config.get("linked_kinds", []):
        if links[kind] == 0:
            fail("no %s sample links to a trace and span" % kind)
    if config.get("report"):
        # `ctxprof report --by endpoint` over the same chunks: its per-endpoint sample counts
        # are the pushed cpu + wall totals.
        pushed = collections.Counter()
        for (kind, endpoint), amount in got.items():
            if kind in ("cpu", "wall"):
                pushed[endpoint] += amount
                pushed["(all)"] += amount
        reported = report(ctxprof, chunks)
        if reported != dict(pushed):
            fail("per-endpoint samples differ from `ctxprof report`: pushed %r, report %r" %
                 (sorted(pushed.items(), key=str), sorted(reported.items(), key=str)))
    if not any(amount > 0 and endpoint for (kind, endpoint), amount in got.items()):
        fail("no sample carries an endpoint: %r" % sorted(got.items(), key=str))
    for message in failures:
        print("FAIL: %s" % message, file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
