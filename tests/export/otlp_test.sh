#!/bin/bash
# otlp=: profiles pushed over OTLP/HTTP to otlp_receiver.py, a local stand-in for an
# OpenTelemetry Collector that checks path, Content-Type, Content-Encoding and headers; then
# otlp_push_check.py decodes each body with protoc and the schema written from the spec
# (tests/tools/otlp_profiles.proto) and compares per-(kind, endpoint) totals with `ctxprof
# convert --to otlp` of the same chunk files.
#
# Scenarios: a native program (upload_driver, through the C API) with otlp=env and the
# OTEL_EXPORTER_OTLP_* / OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES variables, every chunk
# pushed (cpu, wall); the runtime-event kinds (alloc, monitor, park) of a synthetic recording
# through the same exporter (otlp_chunk_sender) with the per-signal endpoint and one 503 that is
# retried after its Retry-After; a 400 (dropped at once); a partial success (printed); a receiver that is down (drops counted, the process fine);
# option and variable errors; upload= and otlp= together; https with the CA of
# OTEL_EXPORTER_OTLP_CERTIFICATE; a JVM under the agent (all five kinds
# from real allocations and lock waits); and no header value in any output or recording.
#
# Usage: otlp_test.sh native|jvm <upload_driver> <otlp_chunk_sender> <write_tools_recording>
#        <ctxprof> <otlp_receiver.py> <otlp_push_check.py> <otlp_profiles.proto>
#        <pyroscope_receiver.py> [<libctxprof.so> <ctxprof.jar> <ctxprof_tests.jar>]
#   native: every scenario but the JVM's (the sanitizer passes run these); jvm: the JVM's alone
#   (a sanitized library cannot be loaded into a plain JVM), with the three JVM arguments.
set -uo pipefail

mode=$1
shift
driver=$1
sender=$2
generator=$3
ctxprof=$4
receiver=$5
checker=$6
proto=$7
pyroscope_receiver=$8
agent=${9:-}
api_jar=${10:-}
tests_jar=${11:-}
java=/usr/lib/jvm/java-17-openjdk-amd64/bin/java
tmp=${TEST_TMPDIR:-$(mktemp -d)}
jfr=/usr/lib/jvm/java-17-openjdk-amd64/bin/jfr
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

command -v protoc > /dev/null ||
  { echo "FAIL: protoc is not installed (tools/install-deps.sh installs it)" >&2; exit 1; }
[[ -x $jfr && -x $java ]] || { echo "FAIL: JDK 17 not found at ${jfr%/jfr}" >&2; exit 1; }
command -v openssl > /dev/null ||
  { echo "FAIL: openssl is not installed (tools/install-deps.sh installs it)" >&2; exit 1; }

source "$(dirname "$0")/receiver.sh"

check() {  # $1 = scenario, $2 = config JSON, rest = chunk files
  local name=$1 config=$2
  shift 2
  /usr/bin/python3 "$checker" "$tmp/$name" "$proto" "$ctxprof" "$config" "$@" ||
    fail "scenario $name"
}

secret=sekret-0123456789
# Percent-encoded as OTEL_EXPORTER_OTLP_HEADERS wants: "Bearer sekret-..." and "acme,eu".
export OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer%20$secret, X-Tenant = acme%2Ceu"
export OTEL_SERVICE_NAME=checkout
export OTEL_RESOURCE_ATTRIBUTES="deployment.environment.name=test%3D1,service.name=not-this-one"
base="event=cpu+wall,interval=10ms,wall=10ms,attributes=endpoint;tenant,chunktime=300ms"

if [[ $mode == native ]]; then
# a. otlp=env with OTEL_EXPORTER_OTLP_ENDPOINT (a path is kept, /v1development/profiles
#    appended): every chunk of the repository arrives, cpu and wall, totals as convert's.
mkdir -p "$tmp/a"
start_receiver "$tmp/a" --header Authorization "Bearer $secret" --header X-Tenant "acme,eu"
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$port/base/ \
  timeout 60 "$driver" "$base,repository=$tmp/repo-a,otlp=env" 1.5 > "$tmp/a.out" 2> "$tmp/a.err"
status=$?
stop_receiver
[[ $status == 0 ]] || fail "scenario a: driver exit $status: $(cat "$tmp/a.err")"
grep -q "dropped" "$tmp/a.err" && fail "scenario a: drops: $(cat "$tmp/a.err")"
(( $(ls "$tmp"/repo-a/*.jfr | wc -l) >= 2 )) || fail "scenario a: fewer than 2 chunks"
[[ $(wc -l < "$tmp/a/requests.jsonl") == $(ls "$tmp"/repo-a/*.jfr | wc -l) ]] ||
  fail "scenario a: $(wc -l < "$tmp/a/requests.jsonl") requests for $(ls "$tmp"/repo-a/*.jfr | wc -l) chunks"
check a '{"path": "/base/v1development/profiles", "statuses": ["*200"], "kinds": ["cpu", "wall"],
          "resource": {"service.name": "checkout", "deployment.environment.name": "test=1",
                       "telemetry.sdk.name": "ctxprof"},
          "events": ["all"], "linked_kinds": ["cpu", "wall"], "report": true}' "$tmp"/repo-a/*.jfr
# The last chunk's counters: every earlier chunk pushed, none dropped.
"$jfr" print --events ctxprof.ProfilerCounters "$(ls "$tmp"/repo-a/*.jfr | tail -1)" > "$tmp/a.counters"
grep -q "droppedUploads = 0" "$tmp/a.counters" || fail "scenario a: counters $(cat "$tmp/a.counters")"
grep -Eq "uploadedChunks = [1-9]" "$tmp/a.counters" || fail "scenario a: counters $(cat "$tmp/a.counters")"
if grep -rqF -e "$secret" "$tmp/a.out" "$tmp/a.err" "$tmp"/repo-a "$tmp"/a/requests.jsonl; then
  fail "scenario a: a header value appears in the output, the recording or the receiver's log"
fi

# b. alloc, monitor and park (a synthetic recording, which has a cpu sample too),
#    OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT used as is; the first request gets 503 with
#    Retry-After: 2 and is retried after those 2 s (the sender's own backoff is 100 ms).
"$generator" "$tmp/events.jfr" events || fail "write_tools_recording events"
mkdir -p "$tmp/b"
start_receiver "$tmp/b" --header Authorization "Bearer $secret" --fail 1 503 --retry-after 2
OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT=http://127.0.0.1:$port/custom/profiles \
  OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9/not-this \
  timeout 60 "$sender" "repository=$tmp/unused,otlp=env" "$tmp/events.jfr" > "$tmp/b.out" 2> "$tmp/b.err"
stop_receiver
grep -q "^uploaded 1 dropped 0$" "$tmp/b.out" || fail "scenario b: $(cat "$tmp/b.out" "$tmp/b.err")"
/usr/bin/python3 -c '
import json, sys
times = [json.loads(line)["time"] for line in open(sys.argv[1])]
sys.exit(0 if len(times) == 2 and times[1] - times[0] >= 1.8 else 1)' "$tmp/b/requests.jsonl" ||
  fail "scenario b: Retry-After not honoured: $(cat "$tmp/b/requests.jsonl")"
check b '{"path": "/custom/profiles", "statuses": [503, 200], "kinds": ["alloc", "cpu", "monitor", "park"],
          "resource": {"service.name": "checkout"}, "events": ["all", "alloc", "lock"]}' "$tmp/events.jfr"

# c. 400 (bad data): dropped at once, not retried.
mkdir -p "$tmp/c"
start_receiver "$tmp/c" --fail 5 400
timeout 60 "$sender" "repository=$tmp/unused,otlp=http://127.0.0.1:$port" "$tmp/events.jfr" \
  > "$tmp/c.out" 2> "$tmp/c.err"
stop_receiver
grep -q "^uploaded 0 dropped 1$" "$tmp/c.out" || fail "scenario c: $(cat "$tmp/c.out" "$tmp/c.err")"
grep -q "otlp: .* dropped (1 so far): POST /v1development/profiles to 127.0.0.1:[0-9]*: HTTP 400" \
  "$tmp/c.err" || fail "scenario c: no drop message: $(cat "$tmp/c.err")"
[[ $(wc -l < "$tmp/c/requests.jsonl") == 1 ]] || fail "scenario c: a 400 was retried"

# d. The receiver is down: drops are counted and said, the profiled process is fine and stops
#    within the exit bound (2 s, plus a wide margin for a loaded machine).
start_receiver "$tmp/d-probe"
dead=$port
stop_receiver
timeout 60 "$driver" "$base,repository=$tmp/repo-d,otlp=http://127.0.0.1:$dead" 0.8 \
  > "$tmp/d.out" 2> "$tmp/d.err"
status=$?
[[ $status == 0 ]] || fail "scenario d: driver exit $status: $(cat "$tmp/d.err")"
grep -q "otlp: .* dropped (1 so far): .*127.0.0.1:$dead" "$tmp/d.err" ||
  fail "scenario d: no drop reported: $(cat "$tmp/d.err")"
stop_millis=$(sed -n 's/^stop took \([0-9]*\) ms$/\1/p' "$tmp/d.out")
[[ -n $stop_millis ]] && (( stop_millis < 8000 )) ||
  fail "scenario d: stop took ${stop_millis:-?} ms with the receiver down"
timeout 60 "$sender" "repository=$tmp/unused,otlp=http://127.0.0.1:$dead" "$tmp/events.jfr" \
  > "$tmp/d2.out" 2> "$tmp/d2.err"
grep -q "^uploaded 0 dropped 1$" "$tmp/d2.out" || fail "scenario d: $(cat "$tmp/d2.out" "$tmp/d2.err")"
grep -q "(after 5 attempts)" "$tmp/d2.err" || fail "scenario d: not retried: $(cat "$tmp/d2.err")"

# e. Option and variable errors name the option or variable, never a header value.
timeout 60 "$driver" "$base,otlp=http://127.0.0.1:9" 0 > /dev/null 2> "$tmp/e1.err"
grep -q "'otlp'.*needs repository=" "$tmp/e1.err" || fail "no repository: $(cat "$tmp/e1.err")"
timeout 60 "$driver" "$base,repository=$tmp/repo-e,otlp=grpc://127.0.0.1:9" 0 > /dev/null 2> "$tmp/e2.err"
grep -q "'otlp'.*is not an http:// or https:// URL" "$tmp/e2.err" || fail "scheme: $(cat "$tmp/e2.err")"
timeout 60 "$driver" "$base,repository=$tmp/repo-e,otlp=http://user:$secret@127.0.0.1:9" 0 \
  > /dev/null 2> "$tmp/e3.err"
grep -q "the URL carries credentials" "$tmp/e3.err" || fail "URL credentials: $(cat "$tmp/e3.err")"
OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer%2$secret" \
  timeout 60 "$driver" "$base,repository=$tmp/repo-e,otlp=http://127.0.0.1:9" 0 > /dev/null 2> "$tmp/e4.err"
grep -q "OTEL_EXPORTER_OTLP_HEADERS: item 1 is not key=value" "$tmp/e4.err" ||
  fail "bad headers: $(cat "$tmp/e4.err")"
OTEL_EXPORTER_OTLP_ENDPOINT=localhost:4318 \
  timeout 60 "$driver" "$base,repository=$tmp/repo-e,otlp=env" 0 > /dev/null 2> "$tmp/e5.err"
grep -q "otlp=env: option 'OTEL_EXPORTER_OTLP_ENDPOINT'.*is not an http:// or https:// URL" \
  "$tmp/e5.err" || fail "bad endpoint variable: $(cat "$tmp/e5.err")"
grep -qF "$secret" "$tmp"/e*.err && fail "an error message repeats a secret"

# f. A malformed OTEL_RESOURCE_ATTRIBUTES is ignored as a whole, with a notice; service.name
#    still comes from OTEL_SERVICE_NAME.
mkdir -p "$tmp/f"
start_receiver "$tmp/f"
OTEL_EXPORTER_OTLP_HEADERS= OTEL_RESOURCE_ATTRIBUTES="team=a%zz,region=eu" \
  timeout 60 "$sender" "repository=$tmp/unused,otlp=http://127.0.0.1:$port/" "$tmp/events.jfr" \
  > "$tmp/f.out" 2> "$tmp/f.err"
stop_receiver
grep -q "otlp: OTEL_RESOURCE_ATTRIBUTES ignored: item 1" "$tmp/f.err" || fail "scenario f: $(cat "$tmp/f.err")"
check f '{"path": "/v1development/profiles", "statuses": [200], "kinds": ["alloc", "cpu", "monitor", "park"],
          "resource": {"service.name": "checkout", "region": null}, "events": ["all", "alloc", "lock"]}' \
  "$tmp/events.jfr"

# g. A 200 with partial_success: counted as sent, not retried, the collector's message printed.
mkdir -p "$tmp/g"
start_receiver "$tmp/g" --partial 2 "unknown stack index"
timeout 60 "$sender" "repository=$tmp/unused,otlp=http://127.0.0.1:$port" "$tmp/events.jfr" \
  > "$tmp/g.out" 2> "$tmp/g.err"
stop_receiver
grep -q "^uploaded 1 dropped 0$" "$tmp/g.out" || fail "scenario g: $(cat "$tmp/g.out" "$tmp/g.err")"
grep -q "otlp: .*events.jfr: the collector rejected 2 profile(s): unknown stack index" "$tmp/g.err" ||
  fail "scenario g: no partial-success message: $(cat "$tmp/g.err")"
[[ $(wc -l < "$tmp/g/requests.jsonl") == 1 ]] || fail "scenario g: a partial success was retried"

# h. upload= and otlp= at once: every chunk reaches both. (The counters' sum over both is not
#    checked by number: how many were sent when the last chunk was closed is a race.)
mkdir -p "$tmp/h" "$tmp/h-pyroscope"
start_receiver "$tmp/h"
otlp_port=$port
/usr/bin/python3 "$pyroscope_receiver" "$tmp/h-pyroscope" "$tmp/pyroscope-port" \
  2> "$tmp/h-pyroscope.log" &
pyroscope_pid=$!
for _ in $(seq 100); do
  [[ -s $tmp/pyroscope-port ]] && break
  sleep 0.1
done
OTEL_EXPORTER_OTLP_HEADERS= timeout 60 "$driver" \
  "$base,repository=$tmp/repo-h,upload=http://127.0.0.1:$(cat "$tmp/pyroscope-port"),otlp=http://127.0.0.1:$otlp_port" \
  1 > "$tmp/h.out" 2> "$tmp/h.err"
status=$?
stop_receiver
kill "$pyroscope_pid" 2> /dev/null && wait "$pyroscope_pid" 2> /dev/null
[[ $status == 0 ]] || fail "scenario h: driver exit $status: $(cat "$tmp/h.err")"
grep -q "dropped" "$tmp/h.err" && fail "scenario h: drops: $(cat "$tmp/h.err")"
chunks=$(ls "$tmp"/repo-h/*.jfr | wc -l)
for log in "$tmp/h/requests.jsonl" "$tmp/h-pyroscope/requests.jsonl"; do
  [[ $(grep -c '"status": 200' "$log") == "$chunks" ]] ||
    fail "scenario h: $log: $(grep -c '"status": 200' "$log") accepted for $chunks chunks"
done
check h '{"path": "/v1development/profiles", "statuses": ["*200"], "kinds": ["cpu", "wall"],
          "resource": {"service.name": "checkout"}, "events": ["all"]}' "$tmp"/repo-h/*.jfr
"$jfr" print --events ctxprof.ProfilerCounters "$(ls "$tmp"/repo-h/*.jfr | tail -1)" > "$tmp/h.counters"
grep -q "droppedUploads = 0" "$tmp/h.counters" || fail "scenario h: counters $(cat "$tmp/h.counters")"

# j. https: the collector's self-signed certificate is trusted through
#    OTEL_EXPORTER_OTLP_CERTIFICATE; without it the chunk is dropped and the message names the
#    variable.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 \
  -subj /CN=localhost -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" 2> "$tmp/openssl.log" ||
  fail "openssl cannot make a certificate: $(cat "$tmp/openssl.log")"
mkdir -p "$tmp/j"
start_receiver "$tmp/j" --tls "$tmp/cert.pem" "$tmp/key.pem"
OTEL_EXPORTER_OTLP_CERTIFICATE=$tmp/cert.pem timeout 60 "$sender" \
  "repository=$tmp/unused,otlp=https://localhost:$port" "$tmp/events.jfr" > "$tmp/j.out" 2> "$tmp/j.err"
grep -q "^uploaded 1 dropped 0$" "$tmp/j.out" || fail "scenario j: $(cat "$tmp/j.out" "$tmp/j.err")"
timeout 60 "$sender" "repository=$tmp/unused,otlp=https://localhost:$port" "$tmp/events.jfr" \
  > "$tmp/j2.out" 2> "$tmp/j2.err"
stop_receiver
grep -q "^uploaded 0 dropped 1$" "$tmp/j2.out" || fail "scenario j: $(cat "$tmp/j2.out" "$tmp/j2.err")"
grep -q "certificate verify failed: self-signed certificate (OTEL_EXPORTER_OTLP_CERTIFICATE=PATH" \
  "$tmp/j2.err" || fail "scenario j: no message naming the variable: $(cat "$tmp/j2.err")"
check j '{"path": "/v1development/profiles", "statuses": [200], "kinds": ["alloc", "cpu", "monitor", "park"],
          "resource": {"service.name": "checkout"}, "events": ["all", "alloc", "lock"]}' \
  "$tmp/events.jfr"

else
# i. A JVM under the agent: its allocations, monitor and ReentrantLock waits under context
#    (tests/java EventsWorkload "select") reach the collector as alloc, monitor and park profiles
#    besides cpu and wall, with the same totals as convert's.
mkdir -p "$tmp/i"
start_receiver "$tmp/i" --header Authorization "Bearer $secret"
timeout 120 "$java" -cp "$tests_jar:$api_jar" \
  "-agentpath:$agent=start,event=cpu+wall,alloc=64k,lock=1ms,attributes=endpoint,repository=$tmp/repo-i,otlp=http://127.0.0.1:$port" \
  io.ctxprof.agent.EventsWorkload select > "$tmp/i.out" 2> "$tmp/i.err"
status=$?
stop_receiver
[[ $status == 0 ]] || fail "scenario i: JVM exit $status: $(cat "$tmp/i.err")"
grep -q "dropped" "$tmp/i.err" && fail "scenario i: drops: $(cat "$tmp/i.err")"
check i '{"path": "/v1development/profiles", "statuses": ["*200"],
          "kinds": ["alloc", "cpu", "monitor", "park", "wall"],
          "resource": {"service.name": "checkout"}, "events": ["all", "alloc", "lock"]}' \
  "$tmp"/repo-i/*.jfr
grep -rqF "$secret" "$tmp/i.out" "$tmp/i.err" "$tmp"/repo-i && fail "scenario i: a header value leaked"
fi

if (( failures > 0 )); then
  echo "$failures failure(s)"
  exit 1
fi
echo "PASS"
