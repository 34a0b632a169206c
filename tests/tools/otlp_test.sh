#!/bin/bash
# `ctxprof convert --to otlp` writes a ProfilesData message that protoc decodes with the schema
# written from the OpenTelemetry spec (otlp_profiles.proto; independent of our encoder), with
# the hand-derived samples, attributes, links and timestamps of tests/tools/tools_workload.h
# (otlp_check.py).
#
# Usage: otlp_test.sh <ctxprof> <write_tools_recording> <otlp_profiles.proto> <otlp_check.py>
set -euo pipefail

ctxprof=$1
generator=$2
proto=$3
checker=$4
tmp=${TEST_TMPDIR:-$(mktemp -d)}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

command -v protoc > /dev/null ||
  fail "protoc is not installed (Debian protobuf-compiler; tools/install-deps.sh installs it)"

decode() {  # $1 = OTLP file, $2 = decoded text output
  timeout 60 protoc --proto_path="$(dirname "$proto")" \
    --decode=opentelemetry.proto.profiles.v1development.ProfilesData "$(basename "$proto")" \
    < "$1" > "$2" || fail "$1: protoc cannot decode the profiles"
}

for mode in jdk ctxprof; do
  "$generator" "$tmp/$mode.jfr" "$mode"
  timeout 60 "$ctxprof" convert --to otlp "$tmp/$mode.jfr" -o "$tmp/$mode.otlp" --quiet
  decode "$tmp/$mode.otlp" "$tmp/$mode.txt"
  /usr/bin/python3 "$checker" "$tmp/$mode.txt" "$tmp/$mode.jfr" default
done
timeout 60 "$ctxprof" convert --to otlp "$tmp/jdk.jfr" -o "$tmp/thread.otlp" --quiet \
  --labels endpoint,tenant,thread_id
decode "$tmp/thread.otlp" "$tmp/thread.txt"
/usr/bin/python3 "$checker" "$tmp/thread.txt" "$tmp/jdk.jfr" thread_id

# Allocation and lock events (tools_workload.h, MakeToolsEventWorkload): one profile per kind,
# in the kind's unit, one timestamp per event and its bytes or nanoseconds as its value; the
# allocation profile's period is the recording's alloc= interval; every stack in the dictionary
# is one a sample uses.
# The same events read as any event type (--events TYPE --value FIELD): one profile per type,
# named after it, in its field's unit (weight is a @DataAmount, duration a @Timespan), no period.
"$generator" "$tmp/events.jfr" events
for events in alloc lock jdk.ObjectAllocationSample jdk.JavaMonitorEnter,jdk.ThreadPark; do
  value=()
  case $events in
    jdk.ObjectAllocationSample) value=(--value weight) ;;
    jdk.*) value=(--value duration) ;;
  esac
  timeout 60 "$ctxprof" convert --to otlp --events $events "${value[@]}" "$tmp/events.jfr" \
    -o "$tmp/$events.otlp" --quiet
  decode "$tmp/$events.otlp" "$tmp/$events.txt"
  /usr/bin/python3 - "$tmp/$events.txt" $events "$(dirname "$checker")" <<'CHECK' ||
import sys
sys.path.insert(0, sys.argv[3])
import otlp_check
import protoc_text


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


data = protoc_text.parse(open(sys.argv[1], encoding="utf-8").read(), fail)
strings = data["dictionary"][0]["string_table"]
# The recording's CPU and wall samples have stacks too: none of them may be left in the table.
otlp_check.check_every_stack_used(data["dictionary"][0], data, fail)
got = {}
for profile in data["resource_profiles"][0]["scope_profiles"][0]["profiles"]:
    sample_type = profile["sample_type"][0]
    name = strings[sample_type["type_strindex"][0]]
    unit = strings[sample_type["unit_strindex"][0]]
    times = values = 0
    for sample in profile.get("samples", []):
        stamps = sample.get("timestamps_unix_nano", [])
        amounts = sample.get("values", [])
        if len(stamps) != len(amounts):
            fail("%s: %d timestamps, %d values" % (name, len(stamps), len(amounts)))
        times += len(stamps)
        values += sum(amounts)
    period = profile.get("period", [0])[0]
    got[name] = (unit, times, values, period)
want = {"alloc": {"alloc": ("bytes", 4, 11500, 524288)},
        "lock": {"monitor": ("nanoseconds", 1, 2000000, 0),
                 "park": ("nanoseconds", 1, 5000000, 0)},
        "jdk.ObjectAllocationSample": {"jdk.ObjectAllocationSample": ("bytes", 4, 11500, 0)},
        "jdk.JavaMonitorEnter,jdk.ThreadPark": {
            "jdk.JavaMonitorEnter": ("nanoseconds", 1, 2000000, 0),
            "jdk.ThreadPark": ("nanoseconds", 1, 5000000, 0)}}[sys.argv[2]]
if got != want:
    fail("profiles %r, want %r" % (got, want))
CHECK
    fail "$events: see above"
done
echo "PASS"
