#!/bin/bash
# Reads recordings written by the JDK itself (JDK 17, and JDK 25 when installed) with our
# JfrReader and checks that it finds exactly the events `jfr summary` counts, per type, and
# that randomly corrupted copies end in errors that name an offset, never a crash or hang.
#
# Usage: jdk_recording_test.sh <jfr_dump>
set -euo pipefail
dump=$1
tmp=${TEST_TMPDIR:-$(mktemp -d)}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

check_jdk() {  # $1 = JDK home
  local home=$1 name
  name=$(basename "$home")
  local recording=$tmp/$name.jfr
  # profile settings enable execution samples, thread and class events with stack traces.
  timeout 120 "$home/bin/java" -XX:StartFlightRecording:filename="$recording",settings=profile \
    -version > "$tmp/java.log" 2>&1 || { cat "$tmp/java.log"; fail "$name: java failed"; }
  timeout 120 "$home/bin/jfr" summary "$recording" > "$tmp/summary.txt" || fail "$name: summary"
  # Summary rows: "<type> <count> <bytes>"; keep event types with a non-zero count, not the
  # metadata/checkpoint pseudo-types.
  # ("Duration: 1 s" has three fields too.)
  awk 'NF == 3 && $2 ~ /^[0-9]+$/ && $2 > 0 && $1 !~ /:$/ &&
    $1 !~ /^jdk\.(Metadata|CheckPoint|Checkpoint)$/ \
    { print $1, $2 }' "$tmp/summary.txt" | sort > "$tmp/want.txt"
  "$dump" "$recording" 2> "$tmp/dump.err" | sort > "$tmp/got.txt" || {
    cat "$tmp/dump.err"
    fail "$name: JfrReader rejected the JDK's recording"
  }
  cat "$tmp/dump.err"
  [[ -s $tmp/want.txt ]] || fail "$name: jfr summary listed no events"
  diff "$tmp/want.txt" "$tmp/got.txt" || fail "$name: event counts differ (< jfr summary, > JfrReader)"
  echo "ok: $name: $(wc -l < "$tmp/got.txt") event types, counts equal to jfr summary"
  # Corrupt copies of a real JDK file (more types and encodings than ours): errors, no crash.
  timeout 120 "$dump" --mutate 300 "$recording" || fail "$name: reader failed on a mutated file"
}

check_jdk /usr/lib/jvm/java-17-openjdk-amd64
if [[ -x /usr/lib/jvm/temurin-25-jdk-amd64/bin/jfr ]]; then
  check_jdk /usr/lib/jvm/temurin-25-jdk-amd64
else
  echo "skipping JDK 25: not installed"
fi
echo PASS
