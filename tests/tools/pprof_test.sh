#!/bin/bash
# `ctxprof convert --to pprof` writes a gzip file whose content protoc decodes as a
# perftools.profiles.Profile (the published schema from Debian's golang-github-google-pprof-dev:
# an encoder-independent decoder) with the hand-derived samples, stacks and labels of
# tests/tools/tools_workload.h (pprof_check.py).
#
# Usage: pprof_test.sh <ctxprof> <write_tools_recording> <profile.proto> <pprof_check.py>
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
[[ -r $proto ]] ||
  fail "pprof schema $proto not found (Debian golang-github-google-pprof-dev; tools/install-deps.sh installs it)"

for mode in jdk ctxprof; do
  "$generator" "$tmp/$mode.jfr" "$mode"
  timeout 60 "$ctxprof" convert --to pprof "$tmp/$mode.jfr" -o "$tmp/$mode.pb.gz" --quiet
  gzip -t "$tmp/$mode.pb.gz" || fail "$mode: not a valid gzip file"
  gzip -dc "$tmp/$mode.pb.gz" > "$tmp/$mode.pb"
  timeout 60 protoc --proto_path="$(dirname "$proto")" --decode=perftools.profiles.Profile \
    "$(basename "$proto")" < "$tmp/$mode.pb" > "$tmp/$mode.txt" ||
    fail "$mode: protoc cannot decode the profile"
  /usr/bin/python3 "$checker" "$tmp/$mode.txt"
done

# Wall samples alone: no CPU time column (the settings' interval is not a wall interval).
timeout 60 "$ctxprof" convert --to pprof --events wall "$tmp/jdk.jfr" -o "$tmp/wall.pb.gz" --quiet
gzip -dc "$tmp/wall.pb.gz" | timeout 60 protoc --proto_path="$(dirname "$proto")" \
  --decode=perftools.profiles.Profile "$(basename "$proto")" > "$tmp/wall.txt" ||
  fail "wall: protoc cannot decode the profile"
[[ $(grep -c '^sample_type {' "$tmp/wall.txt") == 1 && $(grep -c '^sample {' "$tmp/wall.txt") == 4 ]] ||
  fail "wall only: want 1 sample type and 4 samples: $(head -20 "$tmp/wall.txt")"
grep -q '^period:' "$tmp/wall.txt" && fail "wall only: a CPU period was written"

# Allocation and lock events (tools_workload.h, MakeToolsEventWorkload): a count and the weight
# in bytes or nanoseconds per sample.
"$generator" "$tmp/events.jfr" events
for events in alloc lock; do
  timeout 60 "$ctxprof" convert --to pprof --events $events "$tmp/events.jfr" \
    -o "$tmp/$events.pb.gz" --quiet
  gzip -dc "$tmp/$events.pb.gz" | timeout 60 protoc --proto_path="$(dirname "$proto")" \
    --decode=perftools.profiles.Profile "$(basename "$proto")" > "$tmp/$events.txt" ||
    fail "$events: protoc cannot decode the profile"
  /usr/bin/python3 - "$tmp/$events.txt" $events <<'CHECK' || fail "$events: see above"
import re, sys
text = open(sys.argv[1]).read()
strings = re.findall(r'^string_table: "(.*)"$', text, re.M)
types = [(strings[int(t)], strings[int(u)])
         for t, u in re.findall(r'^sample_type \{\s*type: (\d+)\s*unit: (\d+)\s*\}', text, re.M)]
samples = re.findall(r'^sample \{(.*?)^\}', text, re.M | re.S)
values = [[int(v) for v in re.findall(r'^  value: (\d+)$', sample, re.M)] for sample in samples]
want = {"alloc": ([("alloc_samples", "count"), ("alloc_space", "bytes")], 4, 11500),
        "lock": ([("contentions", "count"), ("delay", "nanoseconds")], 2, 7000000)}[sys.argv[2]]
got = (types, len(samples), sum(v[1] for v in values))
if got != want or any(v[0] != 1 for v in values):
    print("FAIL: want %s, got %s (values %s)" % (want, got, values), file=sys.stderr)
    sys.exit(1)
CHECK
done
echo "PASS"
