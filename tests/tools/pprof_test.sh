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

decode() {  # $1 = pprof.gz file, $2 = decoded text output
  gzip -t "$1" || fail "$1: not a valid gzip file"
  gzip -dc "$1" | timeout 60 protoc --proto_path="$(dirname "$proto")" \
    --decode=perftools.profiles.Profile "$(basename "$proto")" > "$2" ||
    fail "$1: protoc cannot decode the profile"
}

for mode in jdk ctxprof; do
  "$generator" "$tmp/$mode.jfr" "$mode"
  for events in all cpu wall; do
    timeout 60 "$ctxprof" convert --to pprof --events $events "$tmp/$mode.jfr" \
      -o "$tmp/$mode-$events.pb.gz" --quiet
    decode "$tmp/$mode-$events.pb.gz" "$tmp/$mode-$events.txt"
    /usr/bin/python3 "$checker" "$tmp/$mode-$events.txt" "$tmp/$mode.jfr" $events default
  done
done

# Ids only when asked for.
timeout 60 "$ctxprof" convert --to pprof "$tmp/jdk.jfr" -o "$tmp/ids.pb.gz" --quiet \
  --labels kind,thread_id,trace_id,span_id,endpoint,tenant
decode "$tmp/ids.pb.gz" "$tmp/ids.txt"
/usr/bin/python3 "$checker" "$tmp/ids.txt" "$tmp/jdk.jfr" all ids

# Allocation and lock events (tools_workload.h, MakeToolsEventWorkload): the count (1 per
# event) and each kind's measure, bytes or nanoseconds, in its own column.
"$generator" "$tmp/events.jfr" events
for events in alloc lock; do
  timeout 60 "$ctxprof" convert --to pprof --events $events "$tmp/events.jfr" \
    -o "$tmp/$events.pb.gz" --quiet
  decode "$tmp/$events.pb.gz" "$tmp/$events.txt"
  /usr/bin/python3 - "$tmp/$events.txt" $events <<'CHECK' || fail "$events: see above"
import re, sys
text = open(sys.argv[1]).read()
strings = re.findall(r'^string_table: "(.*)"$', text, re.M)
types = [(strings[int(t)], strings[int(u)])
         for t, u in re.findall(r'^sample_type \{\s*type: (\d+)\s*unit: (\d+)\s*\}', text, re.M)]
samples = re.findall(r'^sample \{(.*?)^\}', text, re.M | re.S)
values = [[int(v) for v in re.findall(r'^  value: (\d+)$', sample, re.M)] for sample in samples]
want = {"alloc": ([("samples", "count"), ("alloc", "bytes")], 4, 11500),
        "lock": ([("samples", "count"), ("monitor", "nanoseconds"), ("park", "nanoseconds")], 2,
                 7000000)}[sys.argv[2]]
got = (types, len(samples), sum(sum(v[1:]) for v in values))
if got != want or any(v[0] != 1 or sum(1 for x in v[1:] if x) != 1 for v in values):
    print("FAIL: want %s, got %s (values %s)" % (want, got, values), file=sys.stderr)
    sys.exit(1)
CHECK
done
echo "PASS"
