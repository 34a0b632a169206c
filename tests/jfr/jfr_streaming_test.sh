#!/bin/bash
# The JDK's EventStream.openFile reads a ctxprof recording while it is being written: the
# writer waits after each flush until the consumer has seen every sample so far.
#
# Usage: jfr_streaming_test.sh <stream_writer> <StreamConsumer.class>
set -euo pipefail
writer=$1
classes=$(dirname "$2")
tmp=${TEST_TMPDIR:-$(mktemp -d)}
batches=3
per_batch=200

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

check_jdk() {  # $1 = JDK home
  local home=$1 name recording ack consumer
  name=$(basename "$home")
  recording=$tmp/stream-$name.jfr
  ack=$tmp/ack-$name
  rm -f "$recording" "$ack"
  # Start the writer first so the file exists; it blocks until the consumer acknowledges.
  timeout 120 "$writer" "$recording" "$ack" $batches $per_batch > "$tmp/writer.log" 2>&1 &
  local writer_pid=$!
  while [[ ! -s $recording ]]; do
    kill -0 $writer_pid 2> /dev/null || { cat "$tmp/writer.log"; fail "$name: writer exited"; }
    sleep 0.05
  done
  timeout 120 "$home/bin/java" -cp "$classes" StreamConsumer "$recording" "$ack" \
    > "$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log"; fail "$name: consumer failed"; }
  wait $writer_pid || { cat "$tmp/writer.log"; fail "$name: writer failed or timed out"; }
  cat "$tmp/writer.log" "$tmp/consumer.log"
  grep -q "^samples $((batches * per_batch)) contexts [1-9]" "$tmp/consumer.log" ||
    fail "$name: consumer did not see every sample and some contexts"
  [[ $(grep -c "of the unfinished chunk" "$tmp/writer.log") == "$batches" ]] ||
    fail "$name: not every batch was acknowledged while the chunk was unfinished"
  echo "ok: $name streamed the unfinished chunk"
}

check_jdk /usr/lib/jvm/java-17-openjdk-amd64
if [[ -x /usr/lib/jvm/temurin-25-jdk-amd64/bin/java ]]; then
  check_jdk /usr/lib/jvm/temurin-25-jdk-amd64
else
  echo "skipping JDK 25: not installed"
fi
echo PASS
