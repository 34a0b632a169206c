#!/bin/bash
# Repository mode: every chunk file, on its own, passes `jfr summary` and `jfr print` of JDK 17
# (and JDK 25 when installed), and together they hold every sample written.
#
# Also: the JDK's EventStream.openRepository streams every chunk file in order.
#
# Usage: jfr_repository_tool_test.sh <generator> <StreamConsumer.class>
set -euo pipefail
generator=$1
classes=$(dirname "$2")
tmp=${TEST_TMPDIR:-$(mktemp -d)}
repository=$tmp/repository

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

"$generator" "$repository" "$tmp/expected.json" jdk 32768 repository || fail "generator failed"
[[ $(stat -c %a "$repository") == 700 ]] || fail "repository mode is not 0700"
files=("$repository"/*.jfr)
(( ${#files[@]} > 2 )) || fail "expected several chunk files, got ${#files[@]}"
want=$(grep -c '"kind"' "$tmp/expected.json")

homes=(/usr/lib/jvm/java-17-openjdk-amd64)
if [[ -x /usr/lib/jvm/temurin-25-jdk-amd64/bin/jfr ]]; then
  homes+=(/usr/lib/jvm/temurin-25-jdk-amd64)
else
  echo "skipping JDK 25: not installed"
fi
for home in "${homes[@]}"; do
  total=0
  for file in "${files[@]}"; do
    [[ $(stat -c %a "$file") == 600 ]] || fail "$file mode is not 0600"
    timeout 60 "$home/bin/jfr" summary "$file" > "$tmp/summary.txt" 2>&1 ||
      { cat "$tmp/summary.txt"; fail "$home: jfr summary $file"; }
    grep -q "Chunks: 1" "$tmp/summary.txt" || fail "$file is not exactly one chunk"
    timeout 60 "$home/bin/jfr" print "$file" > /dev/null 2> "$tmp/print.err" ||
      { cat "$tmp/print.err"; fail "$home: jfr print $file"; }
    [[ -s $tmp/print.err ]] && { cat "$tmp/print.err"; fail "$home: jfr print $file: stderr"; }
    count=$(awk '$1 == "jdk.ExecutionSample" || $1 == "profiler.WallClockSample" { n += $2 }
      END { print n + 0 }' "$tmp/summary.txt")
    total=$((total + count))
  done
  [[ $total == "$want" ]] || fail "$home: $total samples in ${#files[@]} chunk files, wrote $want"
  echo "ok: $home: ${#files[@]} chunk files, $total samples"
  timeout 120 "$home/bin/java" -cp "$classes" StreamConsumer "$repository" "$tmp/ack" repository \
    > "$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log"; fail "$home: openRepository"; }
  grep -q "^samples $want " "$tmp/consumer.log" ||
    { cat "$tmp/consumer.log"; fail "$home: EventStream.openRepository missed samples"; }
  echo "ok: $home: EventStream.openRepository streamed all $want samples"
done
echo PASS
