#!/bin/bash
# The ctxprof binary's surface: --help everywhere, exit codes (0 ok, 1 bad input, 2 usage),
# errors for missing, empty, truncated and random-bytes inputs that name the file and (from
# JfrReader) the offset, progress on stderr, collapsed output to a file and stdout, and
# `record` driving a stand-in "java" (a script that prints its arguments and exits 7) with a
# stand-in library, `attach`'s and `otel`'s usage errors and refusals of processes that are not JVMs
# (tests/java/io/ctxprof/attach/AttachTest.java attaches to real ones). Every run is under a
# timeout.
#
# Usage: cli_test.sh <ctxprof> <write_tools_recording>
set -uo pipefail

ctxprof=$1
generator=$2
tmp=${TEST_TMPDIR:-$(mktemp -d)}
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# expect <exit code> <text stderr must contain ("" = anything)> <ctxprof arguments...>
expect() {
  local want=$1 text=$2
  shift 2
  timeout 30 "$ctxprof" "$@" > "$tmp/out" 2> "$tmp/err"
  local got=$?
  if [[ $got -ne $want ]]; then
    fail "ctxprof $*: exit $got, want $want; stderr: $(head -c 300 "$tmp/err")"
  elif [[ -n $text ]] && ! grep -qF -- "$text" "$tmp/err"; then
    fail "ctxprof $*: stderr lacks \"$text\": $(head -c 300 "$tmp/err")"
  fi
}

"$generator" "$tmp/good.jfr" ctxprof || { echo "FAIL: generator" >&2; exit 1; }
size=$(stat -c %s "$tmp/good.jfr")

# Help: exit 0, usage on stdout.
for command in "" report flame convert record attach otel; do
  expect 0 "" $command --help
  grep -q "^usage: ctxprof" "$tmp/out" || fail "ctxprof $command --help: no usage on stdout"
done
expect 0 "" help
# record and attach list every agent option (profiler/options.cc's table, whose keys and defaults
# tests/options/options_test.cc checks against the parser) with its default.
agent_options=(event=cpu interval=10ms wall filter threads=16 depth=128 unwind=dwarf cstack=dwarf
  kernel=true clock=tsc signal=SIGPROF wallsignal=SIGVTALRM buffer=2048 file repository attributes
  alloc live lock select=all chunksize maxsize chunktime maxage flush=1s cpusamples=jdk
  wallsamples=profiler contexts=triggered contextid=false jfrsync jfrthreshold upload
  uploadname=ctxprof uploadlabels uploadtoken uploadbasic uploadtenant uploadca otlp
  otelcontext=false)
for command in record attach; do
  expect 0 "" $command --help
  listed=$(sed -n '/^Agent options/,$s/^  \([^ ]*\)  .*/\1/p' "$tmp/out" | tr '\n' ' ')
  [[ $listed == "${agent_options[*]} " ]] ||
    fail "ctxprof $command --help lists agent options: $listed; want: ${agent_options[*]}"
done
expect 0 "" record --lib x -h

# Usage errors: exit 2.
expect 2 "usage: ctxprof COMMAND"
expect 2 'unknown command "frob" (commands: report, flame, convert, record, attach, otel; see ctxprof --help)' frob
expect 2 'unknown command "frob"' frob --help
[[ -s $tmp/out ]] && fail "ctxprof frob --help wrote to stdout: $(head -c 300 "$tmp/out")"
# `ctxprof --help` lists every command, and each listed name runs that command's help.
listed=$(timeout 30 "$ctxprof" --help | sed -n '/^Commands:$/,/^$/s/^  \([a-z]*\) .*/\1/p')
[[ $(echo "$listed" | tr '\n' ' ') == "report flame convert record attach otel " ]] ||
  fail "ctxprof --help lists: $listed"
for command in $listed; do
  expect 0 "" "$command" --help
  grep -q "^usage: ctxprof $command " "$tmp/out" || fail "ctxprof $command --help: not its usage"
done
expect 2 'unknown option "--bogus"' report "$tmp/good.jfr" --bogus
expect 2 "no recording to read" report
expect 2 "--top wants a number" report "$tmp/good.jfr" --top 0
expect 2 '--events wants cpu, wall, all, alloc, lock or event types (e.g. jdk.FileRead,jdk.SocketRead), got "heap"' \
  report "$tmp/good.jfr" --events heap
expect 2 '--events jdk.FileRead,,x: "" is not an event type name (a type is named like jdk.FileRead; give types only, comma-separated)' \
  report "$tmp/good.jfr" --events jdk.FileRead,,x
expect 2 '"cpu" is not an event type name' report "$tmp/good.jfr" --events jdk.FileRead,cpu
expect 2 "--value FIELD weighs events of --events TYPE,... (e.g. --events jdk.FileRead --value bytesRead); cpu, wall, alloc and lock have their own weights" \
  report "$tmp/good.jfr" --events alloc --value weight
expect 1 "--events jdk.FileRead: no such events in the recording (its events with a stack trace: ctxprof.CpuSample profiler.WallClockSample)" \
  report "$tmp/good.jfr" --events jdk.FileRead
expect 1 "--value duration: ctxprof.CpuSample has no field of that name (its numeric fields: weight); choose one with --value" \
  report "$tmp/good.jfr" --events ctxprof.CpuSample
expect 1 "--value state: ctxprof.CpuSample's field is not a number (its numeric fields: weight)" \
  report "$tmp/good.jfr" --events ctxprof.CpuSample --value state
expect 2 "--by nope: the recording has no such attribute (it has: endpoint tenant)" \
  report "$tmp/good.jfr" --by nope
expect 2 "-o FLAME.html is required" flame "$tmp/good.jfr"
expect 2 "--to wants collapsed, pprof or otlp" convert "$tmp/good.jfr" -o "$tmp/x"
expect 2 '--labels: "nope" is not a label of this recording (labels: kind, thread, thread_id, trace_id, span_id, endpoint, tenant; or none)' \
  convert --to pprof "$tmp/good.jfr" -o "$tmp/x" --labels kind,nope
expect 2 "--labels applies to --to pprof and --to otlp" convert --to collapsed "$tmp/good.jfr" \
  -o "$tmp/x" --labels kind
expect 2 "--diff wants two recordings, BEFORE AFTER (got 1)" flame --diff \
  "$tmp/good.jfr" -o "$tmp/x.html"
expect 2 "--by and --threads each choose the sections" report "$tmp/good.jfr" --threads --by tenant
expect 2 'unknown option "--threads"' convert --to pprof "$tmp/good.jfr" -o "$tmp/x" --threads
expect 2 "-o OUT is required" convert --to pprof "$tmp/good.jfr"
expect 2 "--by needs a value" flame "$tmp/good.jfr" -o "$tmp/x.html" --by
expect 2 "no command" record -o "$tmp/r.jfr"
# Span lengths: a number with its unit; the message names the option, the input and the fix.
for bad in 10 abc 1.2.3ms -5ms 10h ms .ms 99999999999m; do
  expect 2 "report: --min-duration wants a span length with its unit (ns, us, ms, s or m), e.g. 250ms or 1.5s; got \"$bad\"" \
    report "$tmp/good.jfr" --min-duration "$bad"
done
expect 2 "flame: --max-duration wants a span length with its unit" flame "$tmp/good.jfr" \
  -o "$tmp/x.html" --max-duration 5
expect 2 "convert: --min-duration (2000000 ns) is longer than --max-duration (1000 ns): no span can be both; swap them" \
  convert --to collapsed "$tmp/good.jfr" -o - --min-duration 2ms --max-duration 1us
expect 2 "--diff with a duration compares the spans it selects with the rest: give --min-duration or --max-duration, not both" \
  flame --diff "$tmp/good.jfr" -o "$tmp/x.html" --min-duration 1ms --max-duration 2ms
expect 2 "report: --latency counts every span and the CPU samples per --by value; it takes no --threads, --events, --min-duration or --max-duration" \
  report "$tmp/good.jfr" --latency --events wall
expect 2 'unknown option "--latency"' convert --to collapsed "$tmp/good.jfr" -o - --latency

# Bad input: exit 1, the file named, the offset where JfrReader stopped.
expect 1 "cannot read $tmp/missing.jfr: No such file" report "$tmp/missing.jfr"
mkdir -p "$tmp/no-recordings"
expect 1 "$tmp/no-recordings: no .jfr files in this folder" report "$tmp/no-recordings"
: > "$tmp/empty.jfr"
expect 1 "nothing to read: every input is empty" report "$tmp/empty.jfr"
grep -qF "$tmp/empty.jfr: empty, skipped" "$tmp/err" || fail "no note about the empty file"
head -c 20000 /dev/urandom > "$tmp/random.jfr"
expect 1 "$tmp/random.jfr: offset 0: not a JFR chunk" report "$tmp/random.jfr"
{ printf 'FLR\0'; head -c 20000 /dev/urandom; } > "$tmp/random-flr.jfr"
expect 1 "$tmp/random-flr.jfr: offset " flame "$tmp/random-flr.jfr" -o "$tmp/x.html"
for cut in 10 100 $((size / 2)) $((size - 1)); do
  head -c $cut "$tmp/good.jfr" > "$tmp/cut$cut.jfr"
  expect 1 "$tmp/cut$cut.jfr: offset " convert --to pprof "$tmp/cut$cut.jfr" -o "$tmp/x.pb.gz"
done
[[ -e $tmp/x.html || -e $tmp/x.pb.gz ]] && fail "an output file was written for bad input"
expect 1 "cannot write $tmp/no/such/dir/x" convert --to collapsed "$tmp/good.jfr" \
  -o "$tmp/no/such/dir/x"

# Success: progress on stderr, the same collapsed stacks in a file and on stdout.
expect 0 "reading $tmp/good.jfr: " convert --to collapsed "$tmp/good.jfr" -o "$tmp/c.txt"
grep -qF "1 file: 1 chunks, 12 samples, 5 contexts, 6 stacks" "$tmp/err" ||
  fail "no sample summary on stderr: $(cat "$tmp/err")"
expect 0 "" convert --to collapsed "$tmp/good.jfr" -o - --quiet
cmp -s "$tmp/out" "$tmp/c.txt" || fail "collapsed on stdout differs from the file"
[[ -s $tmp/err ]] && fail "--quiet still wrote to stderr: $(cat "$tmp/err")"
[[ $(awk '{ sum += $NF } END { print sum }' "$tmp/c.txt") == 12 ]] ||
  fail "collapsed counts do not add up to 12 samples"
# Span selectors on the runs of samples of this recording (a ctxprof.Context per run): 1ns keeps
# every sample with a context (the collapsed lines that start with a context frame, not
# "[no frames]"), 1 minute
# none; --latency needs ctxprof.SpanLatency events, which an untimed recording has not.
expect 0 "" convert --to collapsed "$tmp/good.jfr" -o - --quiet --min-duration 1ns
grep '^\[' "$tmp/c.txt" | grep -v '^\[no frames\] ' | cmp -s - "$tmp/out" ||
  fail "--min-duration 1ns: not the samples with a context: $(cat "$tmp/out")"
expect 0 "" convert --to collapsed "$tmp/good.jfr" -o - --quiet --min-duration 1m
[[ -s $tmp/out ]] && fail "--min-duration 1m kept samples: $(cat "$tmp/out")"
expect 1 "report --latency: the recording has no ctxprof.SpanLatency events" \
  report "$tmp/good.jfr" --latency
# Any event type: ctxprof's own CPU sample events weighed by their weight field are the cpu
# samples, line for line.
expect 0 "" convert --to collapsed "$tmp/good.jfr" -o "$tmp/cpu.txt" --quiet --events cpu
expect 0 "" convert --to collapsed "$tmp/good.jfr" -o - --quiet --events ctxprof.CpuSample \
  --value weight
cmp -s "$tmp/out" "$tmp/cpu.txt" ||
  fail "--events ctxprof.CpuSample --value weight differs from --events cpu: $(cat "$tmp/out")"
# Several recordings add up; a folder is read as a repository (its .jfr files).
mkdir -p "$tmp/two"
cp "$tmp/good.jfr" "$tmp/two/a.jfr"
cp "$tmp/good.jfr" "$tmp/two/b.jfr"
for inputs in "$tmp/good.jfr $tmp/good.jfr" "$tmp/two"; do
  # shellcheck disable=SC2086  # two paths on purpose
  expect 0 "2 files: 2 chunks, 24 samples" convert --to collapsed $inputs -o "$tmp/c2.txt"
  [[ $(awk '{ sum += $NF } END { print sum }' "$tmp/c2.txt") == 24 ]] ||
    fail "two copies of the recording do not add up to 24 samples ($inputs)"
done

# record: the command line reaches "java" and its exit status comes back.
mkdir -p "$tmp/bin"
printf '#!/bin/sh\nprintf "%%s\\n" "$@" > "%s/java-args"\nexit 7\n' "$tmp" > "$tmp/bin/java"
chmod +x "$tmp/bin/java"
: > "$tmp/libctxprof.so"
PATH=$tmp/bin:$PATH expect 7 "recording to $tmp/r.jfr" record --lib "$tmp/libctxprof.so" \
  --event cpu --interval 10ms --wall 20ms --attributes 'endpoint;tenant' -o "$tmp/r.jfr" \
  -- java -Xmx64m Main arg
printf '%s\n' "-agentpath:$tmp/libctxprof.so=start,event=cpu,interval=10ms,wall=20ms,attributes=endpoint;tenant,file=$tmp/r.jfr" \
  -Xmx64m Main arg > "$tmp/want-args"
cmp -s "$tmp/java-args" "$tmp/want-args" ||
  fail "java got: $(cat "$tmp/java-args" 2> /dev/null), want: $(cat "$tmp/want-args")"
expect 1 "--lib $tmp/nope.so: no such file" record --lib "$tmp/nope.so" -- java Main
# Each key the help lists is one the agent's parser knows: record refuses no listed key as
# unknown (a bad value is refused with the option's own message; a good one runs "java").
for option in "${agent_options[@]}"; do
  PATH=$tmp/bin:$PATH timeout 30 "$ctxprof" record --lib "$tmp/libctxprof.so" \
    --option "${option%%=*}=?" -o "$tmp/r.jfr" -- java Main > /dev/null 2> "$tmp/err"
  grep -qF "unknown option" "$tmp/err" && fail "record --option ${option%%=*}=?: $(cat "$tmp/err")"
done
# Options the agent would refuse are refused before any JVM starts, with the agent's message.
rm -f "$tmp/java-args"
PATH=$tmp/bin:$PATH expect 2 "record: option 'event'" record --lib "$tmp/libctxprof.so" \
  --event bogus -o "$tmp/r.jfr" -- java Main
PATH=$tmp/bin:$PATH expect 2 "record: option 'interval': value '5' is not a duration" \
  record --lib "$tmp/libctxprof.so" --interval 5 -o "$tmp/r.jfr" -- java Main
[[ -e $tmp/java-args ]] && fail "java ran although the options were refused"
# A JVM that exits 0 without the agent writing the recording (it refused to start): exit 1.
printf '#!/bin/sh\nexit 0\n' > "$tmp/bin/java-ok"
printf '#!/bin/sh\nprintf x > "%s/written.jfr"\nexit 0\n' "$tmp" > "$tmp/bin/java-writes"
chmod +x "$tmp/bin/java-ok" "$tmp/bin/java-writes"
PATH=$tmp/bin:$PATH expect 1 "the agent wrote no recording to $tmp/never.jfr" \
  record --lib "$tmp/libctxprof.so" -o "$tmp/never.jfr" -- java-ok Main
PATH=$tmp/bin:$PATH expect 0 "recording to $tmp/written.jfr" \
  record --lib "$tmp/libctxprof.so" -o "$tmp/written.jfr" -- java-writes Main
expect 127 "cannot run $tmp/bin/absent" record --lib "$tmp/libctxprof.so" -- "$tmp/bin/absent"

# attach: usage errors, then targets that are not JVMs, which must survive the attempt.
expect 2 "attach: want PID and an action" attach
expect 2 '"abc" is not a process id' attach abc status
expect 2 'unknown action "go"' attach 1 go
expect 2 "attach dump: -o FILE is required" attach 1 dump
expect 2 "attach stop: --event is an option of start" attach 1 stop --event cpu
expect 2 'attach start: unknown option "--bogus"' attach 1 start --bogus
expect 2 "--timeout wants seconds" attach 1 status --timeout 0
expect 1 "attach: --lib $tmp/nope.so: no such file" attach $$ status --lib "$tmp/nope.so"
expect 1 "no process 4194305" attach 4194305 status --lib "$tmp/libctxprof.so"
long_value=$(printf 'a%.0s' {1..1100})
expect 1 "bytes; the JVM takes at most 1024" attach $$ start --option "x=$long_value" \
  --lib "$tmp/libctxprof.so"
sleep 30 &
sleeper=$!
expect 1 "process $sleeper has no attach socket and does not catch SIGQUIT" \
  attach $sleeper status --lib "$tmp/libctxprof.so"
kill -0 $sleeper 2> /dev/null || fail "attach killed a process that does not catch SIGQUIT"
kill $sleeper
mkdir -p "$tmp/catcher"
(cd "$tmp/catcher" && exec bash -c 'trap ":" QUIT; while :; do sleep 0.05; done') &
catcher=$!
sleep 0.3
expect 1 "process $catcher did not open /tmp/.java_pid$catcher within 500 ms of SIGQUIT" \
  attach $catcher status --lib "$tmp/libctxprof.so" --timeout 0.5
kill -0 $catcher 2> /dev/null || fail "attach killed a process that catches SIGQUIT"
[[ -e $tmp/catcher/.attach_pid$catcher ]] && fail "attach left its trigger file behind"

# otel: usage errors, a process that is gone, one that publishes no OpenTelemetry context
# (tests/otel/otel_reader_test.cc reads real ones through the same reader).
expect 2 "otel: wants one process id: ctxprof otel PID" otel
expect 2 '"abc" is not a process id' otel abc
expect 1 "process 4194305: cannot read /proc/4194305/maps: No such file or directory" otel 4194305
sleep 30 &
sleeper=$!
expect 1 "process $sleeper publishes no OpenTelemetry context (no OTEL_CTX mapping): start its \
profiling with otelcontext=true, e.g. ctxprof attach $sleeper start --otelcontext true" otel $sleeper
kill $sleeper
kill $catcher

if [[ $failures -gt 0 ]]; then
  echo "$failures checks failed" >&2
  exit 1
fi
echo "PASS"
