#!/usr/bin/env bash
# The main job: profile the bundled shop service (examples/shop) the way a service is profiled in
# production. The service starts as a plain JVM (no agent flag); its load generator runs as a
# separate JVM; after the warm-up `ctxprof attach` starts profiling the running service (CPU and
# wall samples, allocations, lock waits), records about 20 s and stops. Then the demo prints,
# per endpoint, the share of CPU, wall time by thread state, bytes allocated and time blocked
# with the top methods of each, the requests' span lengths (p50/p99) and what the slowest
# /inventory requests do differently, writes flame graphs and pprof files, and says whether the
# CPU and wall shares and the percentiles match what the load generator measured. While it
# records, the profiler also pushes each finished chunk as OTLP profiles to a local receiver
# (tools/otlp_sink.py on 127.0.0.1), as it would to an OpenTelemetry Collector, and publishes
# each request thread's OpenTelemetry context, which `ctxprof otel` reads mid-recording.
# Before that main recording, a short pass of its own records with jfrsync (the JDK's own Flight
# Recorder in the same file as ctxprof's samples and spans): jfrsync writes one file= while the
# main recording is a repository of chunks for OTLP. From it the demo prints the socket time per
# endpoint from the JDK's jdk.SocketRead events and the shop's own shop.Order events per
# endpoint, and, with JDK 25's `jfr print` as the judge, one event of each with its request's
# Context lines.
#   CTXPROF_DEMO_SECONDS=N   how long the profile records (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh

seconds=${CTXPROF_DEMO_SECONDS:-20}
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 2 ] || [ "$seconds" -gt 3600 ]; then
  echo "demo: CTXPROF_DEMO_SECONDS must be a whole number of seconds from 2 to 3600" >&2
  exit 2
fi
warmup=5          # seconds of load before profiling starts: the JIT compiles the hot paths
wall_interval_ms=20
jfrsync_seconds=5  # the jfrsync pass, before the main recording
jdk25=/usr/lib/jvm/temurin-25-jdk-amd64  # its jfr tool prints the Context lines
out=out  # relative to the repository root, as the messages and the page titles show it
mkdir -p "$out"
counting=$out/load.counting  # exists while the load generator counts requests
recording=$out/shop-repo  # one JFR file per chunk: otlp= pushes each finished chunk
jfrsync_recording=$out/shop-jfrsync.jfr  # ctxprof's and the JDK's events in one file
rm -f "$jfrsync_recording" "$out"/shop-jfrsync-print.txt "$out"/shop.port "$out"/shop.jfr "$out"/shop-states.txt "$out"/load.tsv "$counting" \
  "$out"/otlp.port "$out"/otlp.log "$out"/otlp.summary
rm -rf "$recording"
mkdir -p "$recording"

echo "== building the agent, the Java API, the example service and the ctxprof tool"
bazel build -c opt --color=no --curses=no --show_progress_rate_limit=30 \
  //jni:libctxprof.so //java:ctxprof //examples:shop //tools:ctxprof
bin=$(bazel info -c opt bazel-bin 2>/dev/null)
ctxprof="$bin/tools/ctxprof"
classpath="$bin/java/ctxprof.jar:$bin/examples/shop.jar"

service=""
load=""
sink=""
cleanup() {
  for pid in $load $service $sink; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
    fi
  done
}
trap cleanup EXIT

# Waits up to $2 seconds for the command in $1 to succeed; fails naming $3 and showing $4.
wait_for() {
  local deadline=$((SECONDS + $2))
  until eval "$1"; do
    if [ $SECONDS -ge $deadline ]; then
      echo "demo: $3 did not happen within $2 s; its log ($4):" >&2
      cat "$4" >&2
      exit 1
    fi
    sleep 0.2
  done
}

echo "== starting the OTLP receiver (tools/otlp_sink.py: 127.0.0.1, a free port)"
python3 tools/otlp_sink.py "$out/otlp.port" "$out/otlp.log" "$out/otlp.summary" \
  >"$out/otlp.out" 2>&1 &
sink=$!
wait_for "[ -s '$out/otlp.port' ] || ! kill -0 $sink 2>/dev/null" 10 "the OTLP receiver's start" \
  "$out/otlp.out"
kill -0 "$sink" 2>/dev/null || { cat "$out/otlp.out" >&2; exit 1; }
otlp_url="http://127.0.0.1:$(cat "$out/otlp.port")"
echo "listening on $otlp_url"

echo "== starting the shop service (a plain JVM: no agent, no profiling yet)"
# The tracer in the service binds libctxprof's context store through the Java API (docs/JAVA.md);
# that loads the library but starts no profiling.
OTEL_SERVICE_NAME=shop java -Dctxprof.library="$bin/jni/libctxprof.so" -cp "$classpath" \
  io.ctxprof.example.ShopService --port-file "$out/shop.port" >"$out/shop.log" 2>&1 &
service=$!
wait_for "[ -s '$out/shop.port' ] || ! kill -0 $service 2>/dev/null" 30 "the service's start" \
  "$out/shop.log"
kill -0 "$service" 2>/dev/null || { cat "$out/shop.log" >&2; exit 1; }
cat "$out/shop.log"

echo "== starting the load generator (another JVM, 8 clients); ${warmup} s of warm-up for the JIT"
# It counts only the requests made while $counting exists: the same window as the recording.
java -cp "$classpath" io.ctxprof.example.LoadGenerator --port "$(cat "$out/shop.port")" \
  --clients 8 --count-while "$counting" --summary "$out/load.tsv" >"$out/load.log" 2>&1 &
load=$!
sleep "$warmup"
kill -0 "$load" 2>/dev/null || { cat "$out/load.log" >&2; exit 1; }

echo "== ctxprof attach $service start --jfrsync default --select if-context: the JDK's own Flight"
echo "   Recorder (its default configuration) in the same file as ctxprof's CPU samples and spans,"
echo "   every socket read of a request kept whatever its length; ${jfrsync_seconds} s into $jfrsync_recording"
# Before the load generator counts: this pass is not part of the comparison at the end. The
# JDK's recorder starts a little before the session and stops a little after it, so events of
# those moments have no span (the "(no context)" rows of the shop.Order report below).
"$ctxprof" attach "$service" start --event cpu --interval 10ms --jfrsync default \
  --select if-context -o "$PWD/$jfrsync_recording"
sleep "$jfrsync_seconds"
"$ctxprof" attach "$service" stop

echo "== ctxprof attach $service start: CPU every 10 ms, wall every ${wall_interval_ms} ms on threads in a request,"
echo "   allocations (4m; 16x finer in requests), every lock wait in a request; recording ${seconds} s"
echo "   into $recording/, each finished chunk (every 10 s and the last at the stop) pushed to $otlp_url"
"$ctxprof" attach "$service" start --event cpu --interval 10ms --wall "${wall_interval_ms}ms" \
  --filter context --alloc 4m --lock 1s --select if-context --otelcontext true \
  --option "repository=$PWD/$recording" --option "otlp=$otlp_url"
touch "$counting"
half=$((seconds / 2))
sleep "$half"
echo "== ctxprof otel $service: what an OpenTelemetry profiler in the host reads now (OTEP 4719"
echo "   process context, then each thread's OTEP 4947 record: the threads in a request)"
# A worker is between requests only briefly; a few tries make one in a request certain.
for _ in 1 2 3 4 5; do
  "$ctxprof" otel "$service" >"$out/otel.txt"
  if grep -q '^thread .* endpoint=' "$out/otel.txt"; then break; fi
  sleep 0.2
done
cat "$out/otel.txt"
if ! grep -q '^thread .* endpoint=' "$out/otel.txt"; then
  echo "demo: ctxprof otel found no thread in a request (no record with an endpoint) in 5 tries" >&2
  exit 1
fi
sleep $((seconds - half))
rm "$counting"
"$ctxprof" attach "$service" stop
# The collapsed dump of the session just stopped: the one output with each wall sample's thread
# state (running or sleeping), which the JFR-based reports do not split by.
"$ctxprof" attach "$service" dump -o "$out/shop-states.txt"

echo "== what the OTLP receiver got (POST /v1development/profiles, gzip; one profile per kind)"
# The stop queues the last chunk and waits up to 2 s for the queue (docs/TOOLS.md "Pushing to a
# collector"); the receiver's count may land just after the stop returns.
wait_for "[ \"\$(cut -d' ' -f1 '$out/otlp.summary')\" -gt 0 ]" 10 \
  "a push to the OTLP receiver" "$out/otlp.log"
read -r otlp_requests otlp_bytes otlp_profiles <"$out/otlp.summary"
cat "$out/otlp.log"
echo "the OTLP receiver got $otlp_requests requests, $otlp_bytes bytes (gzip), $otlp_profiles profiles"
kill -TERM "$sink"
wait "$sink" 2>/dev/null || true
sink=""

echo "== the load generator's account (what it sent, what the service measured per request)"
load_status=0
wait "$load" || load_status=$?
load=""
cat "$out/load.log"
if [ "$load_status" -ne 0 ]; then
  echo "demo: the load generator exited with status $load_status" >&2
  exit 1
fi

echo "== stopping the service (SIGTERM)"
kill -TERM "$service"
service_status=0
wait "$service" || service_status=$?
service=""
tail -n 1 "$out/shop.log"
if [ "$service_status" -ne 143 ] && [ "$service_status" -ne 0 ]; then
  echo "demo: the service exited with status $service_status" >&2
  exit 1
fi

for events in cpu wall alloc lock; do
  case $events in
    cpu) title="CPU samples (10 ms each)" ;;
    wall) title="wall-clock samples of threads in a request (${wall_interval_ms} ms each)" ;;
    alloc) title="bytes allocated (sampled; the leaf is the class allocated)" ;;
    lock) title="time blocked on a monitor or in a park (the leaf is the lock's class)" ;;
  esac
  echo
  echo "== top methods per endpoint: $title"
  "$ctxprof" report "$recording" --by endpoint --events "$events" --top 4 --quiet
  "$ctxprof" convert --to collapsed --events "$events" "$recording" \
    -o "$out/shop-$events.collapsed" --quiet
  "$ctxprof" flame "$recording" --by endpoint --events "$events" \
    -o "$out/shop-flame-$events.html" --quiet
done
"$ctxprof" convert --to pprof "$recording" -o "$out/shop.pb.gz" --quiet
for events in alloc lock; do
  "$ctxprof" convert --to pprof --events "$events" "$recording" -o "$out/shop-$events.pb.gz" \
    --quiet
done

echo
echo "== request latency per endpoint: every span's length (ctxprof.SpanLatency), CPU per span"
"$ctxprof" report "$recording" --latency --by endpoint --quiet | tee "$out/shop-latency.txt"
# The slowest tenth of /inventory's requests against the rest, by wall time: what they do
# differently. p90 comes from the line above (its value and unit).
p90=$(awk '/endpoint = "\/inventory"$/ { print $4 $5; exit }' "$out/shop-latency.txt")
if [ -z "$p90" ]; then
  echo "demo: no /inventory row in ctxprof report --latency" >&2
  exit 1
fi
for selector in "--min-duration $p90" "--max-duration $p90"; do
  echo
  echo "== /inventory requests with $selector: wall time by method"
  # shellcheck disable=SC2086  # the selector is an option and its value
  "$ctxprof" report "$recording" --by endpoint --events wall $selector --top 4 --quiet |
    awk '/^== endpoint = "\/inventory"/ { show = 1 } /^== / && !/"\/inventory"/ { show = 0 } show'
done
"$ctxprof" flame --diff --min-duration "$p90" --by endpoint --events wall "$recording" \
  -o "$out/shop-flame-slow-diff.html" --quiet

echo
echo "== the JDK's events in their requests' context ($jfrsync_recording: jfrsync=default)"
echo "== socket time per endpoint, from the JDK's jdk.SocketRead events (the carrier's own threads"
echo "   wait in reads between quotes: \"(no context)\")"
"$ctxprof" report "$jfrsync_recording" --by endpoint --events jdk.SocketRead --top 3 --quiet
echo
echo "== the shop's own shop.Order event (a jdk.jfr.Event committed by /checkout), items per endpoint"
echo "   (\"(no context)\": orders of the moments the JDK's recorder ran before the session's start"
echo "   or after its stop)"
"$ctxprof" report "$jfrsync_recording" --by endpoint --events shop.Order --value items --top 1 \
  --quiet
echo
if [ -x "$jdk25/bin/jfr" ]; then
  echo "== JDK 25's own jfr print on $jfrsync_recording: the request's Context lines on the JDK's"
  echo "   and the application's events (the first of each type in a request)"
  "$jdk25/bin/jfr" print --events jdk.SocketRead,shop.Order --stack-depth 9 \
    "$jfrsync_recording" >"$out/shop-jfrsync-print.txt"
  for type in jdk.SocketRead shop.Order; do
    awk -v type="$type" 'BEGIN { RS = "\n\n" } $1 == type && /Context: Context.endpoint/ {
      print; print ""; exit }' "$out/shop-jfrsync-print.txt"
  done
  # Per type: events, and how many carry a request's Context lines, per endpoint.
  awk 'BEGIN { RS = "\n\n" }
    $1 == "jdk.SocketRead" || $1 == "shop.Order" {
      total[$1]++
      if (match($0, /Context: Context.endpoint = "[^"]*"/)) {
        in_request[$1]++
        per_endpoint[$1 " " substr($0, RSTART + 29, RLENGTH - 30)]++
      }
    }
    END {
      for (type in total) {
        line = type ": " total[type] " events, " in_request[type] + 0 " with Context lines:"
        for (key in per_endpoint) {
          split(key, part, " ")
          if (part[1] == type) line = line " " part[2] " " per_endpoint[key]
        }
        print "JDK 25 jfr print: " line
      }
    }' "$out/shop-jfrsync-print.txt" | sort
else
  echo "== JDK 25 not installed at $jdk25: skipping its jfr print of the Context lines (JDK 17's"
  echo "   jfr tool has no Context lines; the ctxprof reports above join the same way)"
fi

echo
echo "recording:    $recording/   (one JFR file per chunk; each also readable by the JDK's jfr tool and JMC)"
echo "              $jfrsync_recording   (jfrsync: ctxprof's samples and spans, then the JDK's events)"
echo "flame graphs: $out/shop-flame-{cpu,wall,alloc,lock}.html   (pick an endpoint at the top)"
echo "              $out/shop-flame-slow-diff.html: requests of at least $p90 against the rest"
echo "pprof:        $out/shop.pb.gz (cpu, wall), $out/shop-alloc.pb.gz, $out/shop-lock.pb.gz"
echo "              e.g. go tool pprof -tagfocus endpoint=/checkout -top $out/shop.pb.gz"
echo
echo "== per endpoint, from the profile"
python3 tools/demo_summary.py --load "$out/load.tsv" --cpu "$out/shop-cpu.collapsed" \
  --alloc "$out/shop-alloc.collapsed" --lock "$out/shop-lock.collapsed" \
  --states "$out/shop-states.txt" --latency "$out/shop-latency.txt" \
  --wall-interval-ms "$wall_interval_ms"
