#!/bin/bash
# Readers of a recording while ctxprof's writer is still writing it (JDK 17, and JDK 25 when
# installed). The writer waits after each flush until every reader has seen every sample so far.
#
# Repository mode (repository=): the chunk file in progress is streamed; the JDK's
# EventStream.openRepository follows it live, flush by flush, and `ctxprof report` on the folder
# reads it up to its last flush and says so.
#
# File mode (file=): the file is published in whole chunks, so at each flush it is a finished
# recording for every reader: `jfr summary` and `jfr print` of both JDKs (JDK 25's refuse an
# unfinished chunk), EventStream.openFile (which reads to the end and stops) and `ctxprof convert`
# (which says the recording is not finished) all see exactly the samples published so far.
#
# Usage: jfr_streaming_test.sh <stream_writer> <StreamConsumer.class> <ctxprof>
set -euo pipefail
writer=$1
classes=$(dirname "$2")
ctxprof=$3
tmp=${TEST_TMPDIR:-$(mktemp -d)}
batches=3
per_batch=200

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

homes=(/usr/lib/jvm/java-17-openjdk-amd64)
if [[ -x /usr/lib/jvm/temurin-25-jdk-amd64/bin/java ]]; then
  homes+=(/usr/lib/jvm/temurin-25-jdk-amd64)
else
  echo "skipping JDK 25: not installed"
fi

ack() {  # $1 = ack file, $2 = count (atomic: readers of the file never see half a number)
  echo "$2" > "$1.tmp" && mv "$1.tmp" "$1"
}

# Waits until the writer's log says "published N" for the Nth batch; prints N.
wait_published() {  # $1 = writer log, $2 = batch, $3 = writer pid
  local line
  while true; do
    line=$(grep '^published ' "$1" | sed -n "${2}p")
    [[ -n $line ]] && { echo "${line#published }"; return; }
    kill -0 "$3" 2> /dev/null || { cat "$1" >&2; fail "writer exited"; }
    sleep 0.05
  done
}

# Samples ctxprof's collapsed output adds up to.
ctxprof_samples() {  # $@ = inputs; stderr goes to $tmp/ctxprof.err
  "$ctxprof" convert --to collapsed "$@" -o - --quiet 2> "$tmp/ctxprof.err" |
    awk '{ sum += $NF } END { print sum + 0 }'
}

# --- Repository mode: live streaming of the unfinished chunk.
for home in "${homes[@]}"; do
  name=$(basename "$home")
  repository=$tmp/stream-$name
  rm -rf "$repository" "$tmp"/ack-*
  timeout 120 "$writer" repository "$repository" $batches $per_batch \
    "$tmp/ack-consumer" "$tmp/ack-script" > "$tmp/writer.log" 2>&1 &
  writer_pid=$!
  while ! ls "$repository"/*.jfr > /dev/null 2>&1 || [[ ! -s $(ls "$repository"/*.jfr | head -1) ]]; do
    kill -0 $writer_pid 2> /dev/null || { cat "$tmp/writer.log"; fail "$name: writer exited"; }
    sleep 0.05
  done
  timeout 120 "$home/bin/java" -cp "$classes" StreamConsumer "$repository" "$tmp/ack-consumer" \
    repository > "$tmp/consumer.log" 2>&1 &
  consumer_pid=$!
  for batch in $(seq $batches); do
    published=$(wait_published "$tmp/writer.log" "$batch" $writer_pid)
    got=$(ctxprof_samples "$repository")
    [[ $got == "$published" ]] || fail "$name: ctxprof read $got of $published published samples"
    grep -q "is being written (or its writer stopped): read up to its last flush" \
      "$tmp/ctxprof.err" || fail "ctxprof did not say the chunk is unfinished: $(cat "$tmp/ctxprof.err")"
    ack "$tmp/ack-script" "$published"
  done
  wait $consumer_pid || { cat "$tmp/consumer.log"; fail "$name: consumer failed"; }
  wait $writer_pid || { cat "$tmp/writer.log"; fail "$name: writer failed or timed out"; }
  cat "$tmp/writer.log" "$tmp/consumer.log"
  grep -q "^samples $((batches * per_batch)) contexts [1-9]" "$tmp/consumer.log" ||
    fail "$name: consumer did not see every sample and some contexts"
  [[ $(grep -c "every reader has read" "$tmp/writer.log") == "$batches" ]] ||
    fail "$name: not every batch was read while the chunk was unfinished"
  echo "ok: $name: EventStream.openRepository and ctxprof followed the unfinished chunk"
done

# --- File mode: every reader reads the growing file, up to its last flush.
recording=$tmp/growing.jfr
rm -f "$recording" "$tmp/ack-script"
timeout 300 "$writer" file "$recording" $batches $per_batch "$tmp/ack-script" \
  > "$tmp/writer.log" 2>&1 &
writer_pid=$!
for batch in $(seq $batches) final; do
  if [[ $batch == final ]]; then
    wait $writer_pid || { cat "$tmp/writer.log"; fail "file mode: writer failed or timed out"; }
    published=$((batches * per_batch))
  else
    published=$(wait_published "$tmp/writer.log" "$batch" $writer_pid)
  fi
  for home in "${homes[@]}"; do
    name=$(basename "$home")
    timeout 60 "$home/bin/jfr" summary "$recording" > "$tmp/summary.txt" 2>&1 ||
      { cat "$tmp/summary.txt"; fail "$name: jfr summary of the file being written"; }
    got=$(awk '$1 == "jdk.ExecutionSample" || $1 == "profiler.WallClockSample" { n += $2 }
      END { print n + 0 }' "$tmp/summary.txt")
    [[ $got == "$published" ]] || fail "$name: jfr summary counts $got of $published samples"
    timeout 60 "$home/bin/jfr" print "$recording" > /dev/null 2> "$tmp/print.err" ||
      { cat "$tmp/print.err"; fail "$name: jfr print of the file being written"; }
    timeout 60 "$home/bin/java" -cp "$classes" StreamConsumer "$recording" "$tmp/ack-unused" \
      > "$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log"; fail "$name: openFile"; }
    grep -q "^samples $published " "$tmp/consumer.log" ||
      fail "$name: EventStream.openFile: $(cat "$tmp/consumer.log"), want $published samples"
  done
  got=$(ctxprof_samples "$recording")
  [[ $got == "$published" ]] || fail "ctxprof read $got of $published samples of the file"
  if [[ $batch == final ]]; then
    [[ -s $tmp/ctxprof.err ]] && fail "ctxprof notes on the finished file: $(cat "$tmp/ctxprof.err")"
  else
    grep -q "the recording is not finished (no final chunk)" "$tmp/ctxprof.err" ||
      fail "ctxprof did not say the file is not finished: $(cat "$tmp/ctxprof.err")"
    ack "$tmp/ack-script" "$published"
  fi
  echo "ok: file being written, after batch $batch: every reader saw $published samples"
done
echo PASS
