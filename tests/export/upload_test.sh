#!/bin/bash
# upload=: a native program (upload_driver, through the C API) uploads its finished chunks to
# pyroscope_receiver.py, a local stand-in for a Pyroscope server that checks each request as
# Pyroscope's API defines it (request line, headers, multipart body, LabelsSnapshot); then
# upload_check.py compares what arrived with the repository and the chunks' contexts.
#
# Scenarios: http with a bearer token (environment) and a tenant (file), every chunk uploaded;
# https with basic auth (file), a CA file and one 503 that is retried; https without the CA
# (certificate rejected, dropped, said so); 401 (dropped at once); a server that never answers
# (the session stops within the exit bound); option errors; and no secret in any output or
# recording.
#
# Usage: upload_test.sh <upload_driver> <pyroscope_receiver.py> <upload_check.py>
#        <jfr_labels.proto>
set -uo pipefail

driver=$1
receiver=$2
checker=$3
proto=$4
tmp=${TEST_TMPDIR:-$(mktemp -d)}
jfr=/usr/lib/jvm/java-17-openjdk-amd64/bin/jfr
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

command -v protoc > /dev/null ||
  { echo "FAIL: protoc is not installed (tools/install-deps.sh installs it)" >&2; exit 1; }
command -v openssl > /dev/null ||
  { echo "FAIL: openssl is not installed (tools/install-deps.sh installs it)" >&2; exit 1; }
[[ -x $jfr ]] || { echo "FAIL: JDK 17 jfr not found at $jfr" >&2; exit 1; }

source "$(dirname "$0")/receiver.sh"

run_driver() {  # $1 = name, $2 = options, $3 = seconds; output in $tmp/$1.out / .err
  timeout 60 "$driver" "$2" "$3" > "$tmp/$1.out" 2> "$tmp/$1.err"
  echo $? > "$tmp/$1.status"
}

base="event=cpu+wall,interval=10ms,wall=10ms,attributes=endpoint;tenant,chunktime=300ms"
token=sekret-token-0123456789
export CTXPROF_TEST_TOKEN=$token
echo "tenant-7" > "$tmp/tenant"
printf 'profiler:pa55-w0rd\n' > "$tmp/basic"
basic_header="Basic $(printf 'profiler:pa55-w0rd' | base64)"

# 1. http, bearer token from the environment, tenant from a file: every chunk arrives.
mkdir -p "$tmp/a"
start_receiver "$tmp/a" --auth "Bearer $token" --tenant tenant-7
run_driver a "$base,repository=$tmp/repo-a,upload=http://127.0.0.1:$port/pyro/,uploadname=driver,uploadlabels=env=test;region=eu,uploadtoken=env:CTXPROF_TEST_TOKEN,uploadtenant=file:$tmp/tenant" 1.5
stop_receiver
[[ $(cat "$tmp/a.status") == 0 ]] || fail "scenario a: driver exit $(cat "$tmp/a.status"): $(cat "$tmp/a.err")"
grep -q "dropped" "$tmp/a.err" && fail "scenario a: drops: $(cat "$tmp/a.err")"
/usr/bin/python3 "$checker" "$tmp/a" "$tmp/repo-a" "$jfr" "$proto" \
  '{"statuses": ["*200"], "path": "/pyro/ingest", "name": "driver{env=test,region=eu}", "sampleRate": "100", "all_chunks": true}' ||
  fail "scenario a"
# Several chunks (300 ms each over 1.5 s; 2 even on a slow TSan run), so rotation reached the
# uploader, not only the close.
(( $(ls "$tmp"/repo-a/*.jfr | wc -l) >= 2 )) || fail "scenario a: fewer than 2 chunks"
# No secret anywhere: not in the output, not in the recording (settings, counters, contexts).
if grep -rqF -e "$token" -e "pa55-w0rd" "$tmp/a.out" "$tmp/a.err" "$tmp"/repo-a; then
  fail "scenario a: a secret appears in the output or the recording"
fi
"$jfr" print --events jdk.ActiveSetting,ctxprof.ProfilerSettings "$tmp"/repo-a/ctxprof-000001.jfr \
  > "$tmp/a.settings" || fail "scenario a: jfr print"
grep -qF "$token" "$tmp/a.settings" && fail "scenario a: the token is in the recording's settings"
grep -q 'name = "event"' "$tmp/a.settings" || fail "scenario a: no jdk.ActiveSetting event"
# The last chunk's counters: every earlier chunk uploaded, none dropped.
"$jfr" print --events ctxprof.ProfilerCounters "$(ls "$tmp"/repo-a/*.jfr | tail -1)" > "$tmp/a.counters"
grep -q "droppedUploads = 0" "$tmp/a.counters" || fail "scenario a: counters $(cat "$tmp/a.counters")"

# 2. https, basic auth from a file, the CA given; the first request gets 503 and is retried.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 \
  -subj /CN=localhost -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" 2> "$tmp/openssl.log" ||
  fail "openssl cannot make a certificate: $(cat "$tmp/openssl.log")"
mkdir -p "$tmp/b"
start_receiver "$tmp/b" --tls "$tmp/cert.pem" "$tmp/key.pem" --auth "$basic_header" --fail 1 503
run_driver b "$base,repository=$tmp/repo-b,upload=https://127.0.0.1:$port,uploadca=$tmp/cert.pem,uploadbasic=file:$tmp/basic" 2
stop_receiver
[[ $(cat "$tmp/b.status") == 0 ]] || fail "scenario b: driver exit $(cat "$tmp/b.status"): $(cat "$tmp/b.err")"
/usr/bin/python3 "$checker" "$tmp/b" "$tmp/repo-b" "$jfr" "$proto" \
  '{"statuses": [503, "*200"], "path": "/ingest", "name": "ctxprof", "sampleRate": "100", "all_chunks": true}' ||
  fail "scenario b"
grep -rqF "pa55-w0rd" "$tmp/b.out" "$tmp/b.err" "$tmp"/repo-b && fail "scenario b: the password leaked"

# 3. https without the CA: the self-signed certificate is rejected; the chunks are dropped and
#    the reason printed.
mkdir -p "$tmp/c"
start_receiver "$tmp/c" --tls "$tmp/cert.pem" "$tmp/key.pem"
run_driver c "$base,repository=$tmp/repo-c,upload=https://localhost:$port" 0.5
stop_receiver
[[ $(cat "$tmp/c.status") == 0 ]] || fail "scenario c: driver exit $(cat "$tmp/c.status")"
grep -q "upload: .* dropped (1 so far): .*certificate verify failed: self-signed certificate" \
  "$tmp/c.err" || fail "scenario c: no drop message naming the certificate: $(cat "$tmp/c.err")"
[[ -s $tmp/c/requests.jsonl ]] && fail "scenario c: a request got through"

# 4. 401: dropped at once (no retry), with a hint at the credentials options.
mkdir -p "$tmp/d"
start_receiver "$tmp/d" --fail 100 401
run_driver d "$base,repository=$tmp/repo-d,upload=http://127.0.0.1:$port" 0.8
stop_receiver
grep -q "HTTP 401 ok (check uploadtoken=, uploadbasic= and uploadtenant=)" "$tmp/d.err" ||
  fail "scenario d: no 401 message: $(cat "$tmp/d.err")"
requests=$(wc -l < "$tmp/d/requests.jsonl")
chunks=$(ls "$tmp"/repo-d/*.jfr | wc -l)
[[ $requests == "$chunks" ]] || fail "scenario d: $requests requests for $chunks chunks (a 401 was retried?)"

# 5. A server that never answers: the session still stops within the exit bound (2 s, plus a
#    wide margin for a loaded machine), and the chunks it could not send are reported.
mkdir -p "$tmp/e"
start_receiver "$tmp/e" --hang
run_driver e "$base,repository=$tmp/repo-e,upload=http://127.0.0.1:$port" 0.5
stop_receiver
stop_millis=$(sed -n 's/^stop took \([0-9]*\) ms$/\1/p' "$tmp/e.out")
[[ -n $stop_millis ]] && (( stop_millis < 8000 )) ||
  fail "scenario e: stop took ${stop_millis:-?} ms with a server that never answers"
grep -q "upload: .* dropped" "$tmp/e.err" || fail "scenario e: no drop reported: $(cat "$tmp/e.err")"

# 6. Option errors name the option and never a secret.
run_driver f "$base,upload=http://127.0.0.1:9" 0
grep -q "'upload'.*needs repository=" "$tmp/f.err" || fail "no repository: $(cat "$tmp/f.err")"
run_driver g "$base,repository=$tmp/repo-g,upload=http://127.0.0.1:9,uploadtoken=env:CTXPROF_NOT_SET" 0
grep -q "uploadtoken=env:CTXPROF_NOT_SET: the environment variable is not set" "$tmp/g.err" ||
  fail "unset variable: $(cat "$tmp/g.err")"
run_driver h "$base,repository=$tmp/repo-h,upload=http://127.0.0.1:9,uploadtoken=$token" 0
grep -q "must say where the secret is" "$tmp/h.err" || fail "literal token: $(cat "$tmp/h.err")"
grep -qF "$token" "$tmp/h.err" && fail "the error message repeats the literal token"
run_driver i "$base,repository=$tmp/repo-i,upload=http://user:$token@127.0.0.1:9" 0
grep -q "the URL carries credentials" "$tmp/i.err" || fail "URL credentials: $(cat "$tmp/i.err")"
grep -qF "$token" "$tmp/i.err" && fail "the error message repeats the URL's password"
run_driver j "event=cpu+wall,interval=10ms,wall=20ms,repository=$tmp/repo-j,upload=http://127.0.0.1:9" 0
grep -q "one sample rate per upload" "$tmp/j.err" || fail "intervals: $(cat "$tmp/j.err")"

if (( failures > 0 )); then
  echo "$failures failure(s)"
  exit 1
fi
echo "PASS"
