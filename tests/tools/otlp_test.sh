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
echo "PASS"
