#!/bin/bash
# The tool on recordings the JDK wrote (JDK 17, and JDK 25 when installed; no ctxprof events,
# so no context): report, collapsed and pprof all see exactly the jdk.ExecutionSample events
# `jfr summary` counts, the report has the busy loop's methods, and OTLP gives the busy loop's
# frames the JDK's line numbers (Line.line).
#
# Usage: jdk_recording_tools_test.sh <ctxprof> <BusyLoop.class> <profile.proto> <otlp.proto>
# (profile.proto: the published pprof schema, from Debian's golang-github-google-pprof-dev;
# otlp.proto: tests/tools/otlp_profiles.proto)
set -euo pipefail

ctxprof=$1
busy_class=$2
proto=$3
otlp_proto=$4
tmp=${TEST_TMPDIR:-$(mktemp -d)}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

command -v protoc > /dev/null ||
  fail "protoc is not installed (Debian protobuf-compiler; tools/install-deps.sh installs it)"
[[ -r $proto ]] ||
  fail "pprof schema $proto not found (Debian golang-github-google-pprof-dev; tools/install-deps.sh installs it)"

check_jdk() {  # $1 = JDK home
  local home=$1 name recording samples
  name=$(basename "$home")
  recording=$tmp/$name.jfr
  timeout 120 "$home/bin/java" -XX:StartFlightRecording:filename="$recording",settings=profile \
    -cp "$(dirname "$busy_class")" BusyLoop 3000 > "$tmp/java.log" 2>&1 ||
    { cat "$tmp/java.log"; fail "$name: java failed"; }
  samples=$(timeout 120 "$home/bin/jfr" summary "$recording" |
    awk '$1 == "jdk.ExecutionSample" { print $2 }')
  [[ ${samples:-0} -gt 0 ]] || fail "$name: the JDK recorded no execution samples"

  timeout 60 "$ctxprof" report "$recording" --quiet > "$tmp/report.txt" ||
    fail "$name: report failed"
  grep -qx "samples: $samples (cpu $samples, wall 0)" "$tmp/report.txt" ||
    fail "$name: report header $(head -1 "$tmp/report.txt"), jfr summary counts $samples"
  grep -qx "== (no context): $samples samples (100.00% of all)" "$tmp/report.txt" ||
    fail "$name: not every sample is without context"
  grep -q " BusyLoop.square$" "$tmp/report.txt" || fail "$name: BusyLoop.square not reported"

  timeout 60 "$ctxprof" convert --to collapsed "$recording" -o "$tmp/c.txt" --quiet
  [[ $(awk '{ sum += $NF } END { print sum }' "$tmp/c.txt") == "$samples" ]] ||
    fail "$name: collapsed counts do not add up to $samples"

  timeout 60 "$ctxprof" convert --to pprof "$recording" -o "$tmp/p.pb.gz" --quiet
  gzip -dc "$tmp/p.pb.gz" | timeout 60 protoc --proto_path="$(dirname "$proto")" \
    --decode=perftools.profiles.Profile "$(basename "$proto")" > "$tmp/p.txt" ||
    fail "$name: protoc cannot decode the profile"
  [[ $(grep -c '^sample {' "$tmp/p.txt") == "$samples" ]] || fail "$name: pprof sample count"

  timeout 60 "$ctxprof" convert --to otlp "$recording" -o "$tmp/o.otlp" --quiet
  timeout 60 protoc --proto_path="$(dirname "$otlp_proto")" \
    --decode=opentelemetry.proto.profiles.v1development.ProfilesData "$(basename "$otlp_proto")" \
    < "$tmp/o.otlp" > "$tmp/o.txt" || fail "$name: protoc cannot decode the OTLP profiles"
  /usr/bin/python3 - "$tmp/o.txt" "$(dirname "$0")" << 'CHECK' || fail "$name: OTLP lines"
import sys
sys.path.insert(0, sys.argv[2])
import protoc_text


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


dictionary = protoc_text.parse(open(sys.argv[1], encoding="utf-8").read(), fail)["dictionary"][0]
strings = dictionary["string_table"]
names = [strings[f.get("name_strindex", [0])[0]] for f in dictionary["function_table"]]
busy = 0
for location in dictionary["location_table"][1:]:
    line = location["lines"][0]
    name = names[line["function_index"][0]]
    if name.startswith("BusyLoop."):
        busy += 1
        if line.get("line", [0])[0] <= 0:
            fail("%s: no line number (Line.line) in %r" % (name, line))
if busy == 0:
    fail("no location of BusyLoop")
CHECK
  echo "ok: $name: $samples execution samples in report, collapsed, pprof and OTLP"
}

check_jdk /usr/lib/jvm/java-17-openjdk-amd64
if [[ -x /usr/lib/jvm/temurin-25-jdk-amd64/bin/jfr ]]; then
  check_jdk /usr/lib/jvm/temurin-25-jdk-amd64
else
  echo "skipping JDK 25: not installed"
fi
echo "PASS"
