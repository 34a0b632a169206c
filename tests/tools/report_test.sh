#!/bin/bash
# `ctxprof report` equals an independent count over `jfr print --json` (report_check.py) for the
# synthetic recording of tests/jfr (12 threads, 1,440 cpu and wall samples, three attributes
# with ASCII, non-ASCII, quoted and 4,096-byte values, stacks up to 300 frames), for each
# attribute and each --events choice, with every method listed (--top 1000000).
#
# Usage: report_test.sh <ctxprof> <write_synthetic_recording> <report_check.py> <jdk|ctxprof>
set -euo pipefail

ctxprof=$1
generator=$2
checker=$3
mode=$4
tmp=${TEST_TMPDIR:-$(mktemp -d)}
jfr=/usr/lib/jvm/java-17-openjdk-amd64/bin/jfr

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

"$generator" "$tmp/recording.jfr" "$tmp/expected.json" "$mode"
timeout 120 "$jfr" print --json --stack-depth 1000 "$tmp/recording.jfr" > "$tmp/print.json" ||
  fail "jfr print --json failed or timed out"

for attribute in http.route tenant-id region; do
  for events in all cpu wall; do
    timeout 60 "$ctxprof" report "$tmp/recording.jfr" --by "$attribute" --events "$events" \
      --top 1000000 --quiet > "$tmp/report.txt" || fail "ctxprof report --by $attribute failed"
    /usr/bin/python3 "$checker" "$tmp/print.json" "$tmp/report.txt" "$attribute" "$events" \
      1000000
  done
done

# The default attribute is the first one when there is no "endpoint"; --top cuts every section.
timeout 60 "$ctxprof" report "$tmp/recording.jfr" --top 3 > "$tmp/default.txt" 2> "$tmp/stderr"
/usr/bin/python3 "$checker" "$tmp/print.json" "$tmp/default.txt" http.route all 3
grep -q "^reading $tmp/recording.jfr: " "$tmp/stderr" || fail "no progress line on stderr"
echo "PASS"
