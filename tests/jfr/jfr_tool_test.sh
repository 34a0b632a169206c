#!/bin/bash
# Writes a synthetic recording with the JFR writer and validates it with the JDK's `jfr` tool
# (JDK 17 always, JDK 25 when installed), following §15 of the shared JFR format note:
# summary, print, print --json (every sample's thread, stack and context compared with what was
# written), metadata, view hot-methods and scrub (JDK 25), and JDK 25's Context lines.
#
# Usage: jfr_tool_test.sh <generator> <checker.py> <jdk|ctxprof> [chunk_size_bytes [flushes]]
# "flushes": the file is written with a chunk per flush (every 100 ms), which the writer folds
# into one chunk when it closes.
set -euo pipefail

generator=$1
checker=$2
mode=$3
chunk_size=${4:-0}
variant=${5:-}
tmp=${TEST_TMPDIR:-$(mktemp -d)}
python=/usr/bin/python3

find_jdk() {  # $1 = major version; prints the JDK's bin folder or nothing
  local candidate
  for candidate in /usr/lib/jvm/java-$1-openjdk-amd64 /usr/lib/jvm/temurin-$1-jdk-amd64 \
      /usr/lib/jvm/*-$1-* /usr/lib/jvm/*$1*; do
    if [[ -x $candidate/bin/jfr ]]; then
      echo "$candidate/bin"
      return
    fi
  done
}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Runs `jfr` under a timeout (malformed files can make it hang); fails on a non-zero exit or
# on anything on stderr.
run_jfr() {  # $1 = bin folder, $2 = output file, rest = jfr arguments
  local bin=$1 out=$2
  shift 2
  if ! timeout 120 "$bin/jfr" "$@" > "$out" 2> "$tmp/stderr"; then
    cat "$tmp/stderr" >&2
    fail "$bin/jfr $* failed or timed out"
  fi
  if [[ -s $tmp/stderr ]]; then
    cat "$tmp/stderr" >&2
    fail "$bin/jfr $* wrote to stderr"
  fi
}

recording=$tmp/recording-$mode.jfr
expected=$tmp/expected-$mode.json
"$generator" "$recording" "$expected" "$mode" "$chunk_size" $variant || fail "generator failed"
[[ -e $recording.compacting ]] && fail "the compaction's temporary file was left behind"

# Header bytes: magic, version 2.1.
header=$(od -An -tx1 -N68 "$recording" | tr -d ' \n')
[[ ${header:0:16} == 464c520000020001 ]] || fail "bad magic/version: ${header:0:16}"
# Single chunk: finished (generation 0) and final; first of several: finished, not final.
want_state=00000003
[[ $chunk_size != 0 ]] && want_state=00000001
[[ ${header:128:8} == "$want_state" ]] || fail "chunk state bytes 64..67 = ${header:128:8}"
[[ $(stat -c %a "$recording") == 600 ]] || fail "recording mode is not 0600"

jdk17=$(find_jdk 17)
[[ -n $jdk17 ]] || fail "JDK 17 not found under /usr/lib/jvm"
jdk25=$(find_jdk 25)
jdks=("$jdk17")
if [[ -n $jdk25 ]]; then
  jdks+=("$jdk25")
else
  echo "skipping JDK 25: not installed"
fi

for bin in "${jdks[@]}"; do
  echo "== $bin"
  run_jfr "$bin" "$tmp/summary.txt" summary "$recording"
  grep -q "missing event metadata" "$tmp/summary.txt" && fail "summary: missing event metadata"
  if [[ $chunk_size != 0 ]]; then
    chunks=$(sed -n 's/^ *Chunks: *//p' "$tmp/summary.txt")
    (( chunks > 1 )) || fail "expected several chunks with chunk size $chunk_size, got $chunks"
    echo "chunks: $chunks"
  fi
  if [[ $variant == flushes ]]; then
    chunks=$(sed -n 's/^ *Chunks: *//p' "$tmp/summary.txt")
    [[ $chunks == 1 ]] || fail "expected the flush chunks folded into one, got $chunks"
  fi
  run_jfr "$bin" "$tmp/print.txt" print "$recording"
  # N/A only where nothing was written: unset context attributes.
  if grep "N/A" "$tmp/print.txt" | grep -vE "(http_route|tenant_id|region) = N/A$"; then
    fail "print shows N/A for a value that was written"
  fi
  run_jfr "$bin" "$tmp/print.json" print --json --stack-depth 1000 "$recording"
  "$python" "$checker" json "$recording" "$expected" "$tmp/print.json" "$mode"
  run_jfr "$bin" "$tmp/metadata.txt" metadata "$recording"
  grep -q "class Context extends jdk.jfr.Event" "$tmp/metadata.txt" || fail "metadata: no Context"
  [[ $(grep -c "@Contextual" "$tmp/metadata.txt") == 6 ]] || fail "metadata: want 6 @Contextual"
  # The binary ids in hex (@MemoryAddress), as `jfr print` shows a Context's span id.
  grep -qE "^ *spanId = 0x[0-9A-F]{8,16}$" "$tmp/print.txt" || fail "print: span id not in hex"
  if [[ $mode == jdk ]]; then
    run_jfr "$bin" "$tmp/samples.txt" print --events jdk.ExecutionSample --stack-depth 3 "$recording"
    grep -q "sampledThread = " "$tmp/samples.txt" || fail "no jdk.ExecutionSample printed"
  fi
done

if [[ -n $jdk25 ]]; then
  "$python" "$checker" contexts "$expected" "$tmp/print.txt" "$mode"
  grep -qE "^ *Context: Context.spanId = 0x[0-9A-F]{8,16}$" "$tmp/print.txt" ||
    fail "JDK 25 Context lines: span id not in hex"
  run_jfr "$jdk25" "$tmp/hot.txt" view hot-methods "$recording"
  if [[ $mode == jdk ]]; then
    grep -q "com.example.svc.Handler" "$tmp/hot.txt" || fail "view hot-methods shows no methods"
  fi
  run_jfr "$jdk25" "$tmp/scrub.txt" scrub --exclude-events ctxprof.Context "$recording" \
    "$tmp/scrubbed.jfr"
  run_jfr "$jdk25" "$tmp/scrubbed.txt" print "$tmp/scrubbed.jfr"
  grep -q "Context:" "$tmp/scrubbed.txt" && fail "scrubbed file still has contexts"
fi
echo "PASS"
