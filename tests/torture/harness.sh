# Sourced by the torture and fault tests: runs a profiled child JVM and checks what it left.
# Callers set `library` (libctxprof.so) and `classpath` (ctxprof.jar:torture_workloads.jar).
source "$(dirname "${BASH_SOURCE[0]}")/../jdks.sh"

work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/torture.XXXXXX")
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# run_jvm JDK SECONDS NAME JAVA_ARGS...: runs java from $work/NAME (so an hs_err file lands there)
# for at most SECONDS; sets `exit_code` (124 on timeout) and leaves NAME.out / NAME.err in $work.
run_jvm() {
  local jdk=$1 seconds=$2 name=$3
  shift 3
  mkdir -p "$work/$name"
  local started=$SECONDS
  exit_code=0
  (cd "$work/$name" && exec timeout -s KILL "$seconds" "$jdk/bin/java" "$@") \
    >"$work/$name.out" 2>"$work/$name.err" || exit_code=$?
  echo "$name: exit $exit_code after $((SECONDS - started)) s"
}

agent() {
  echo "-agentpath:$library=start,$1"
}

# expect_clean_exit NAME: exit 0 and no hs_err file.
expect_clean_exit() {
  local name=$1
  [ "$exit_code" -eq 0 ] || fail "$name: exit code $exit_code; stderr: $(tail -5 "$work/$name.err")"
  local hs_err
  for hs_err in "$work/$name"/hs_err_pid*.log; do
    [ -e "$hs_err" ] || continue
    fail "$name: the JVM crashed: $(grep -m3 -E '^#  SIG|^# (Problematic frame|C )' "$hs_err")"
  done
}

# ctxprof_lines NAME: the profiler's stderr lines.
ctxprof_lines() {
  grep '^ctxprof:' "$work/$1.err" || true
}

# check_recording JDK FILE LABEL [summary]: `jfr summary` and (unless "summary" is given) `jfr
# print` succeed within 120 s each; prints the sample counts and sets `samples`
# (jdk.ExecutionSample + profiler.WallClockSample).
check_recording() {
  local jdk=$1 file=$2 label=$3 only=${4:-}
  samples=0
  if ! timeout 120 "$jdk/bin/jfr" summary "$file" >"$work/summary.txt" 2>&1; then
    fail "$label: jfr summary $file: $(tail -3 "$work/summary.txt")"
    return
  fi
  if [ "$only" != summary ] &&
    ! timeout 120 "$jdk/bin/jfr" print "$file" >/dev/null 2>"$work/print.err"; then
    fail "$label: jfr print $file: $(tail -3 "$work/print.err")"
    return
  fi
  local cpu wall
  cpu=$(awk '$1 == "jdk.ExecutionSample" {print $2}' "$work/summary.txt")
  wall=$(awk '$1 == "profiler.WallClockSample" {print $2}' "$work/summary.txt")
  samples=$((${cpu:-0} + ${wall:-0}))
  echo "$label: $(basename "$file"): ${cpu:-0} cpu + ${wall:-0} wall samples" \
    "(read by jfr $("$jdk/bin/jfr" --version 2>&1 | head -1))"
}

# print_counters JDK FILE: the last ctxprof.ProfilerCounters event's fields on one line.
print_counters() {
  timeout 120 "$1/bin/jfr" print --events ctxprof.ProfilerCounters "$2" |
    awk '/ctxprof.ProfilerCounters/ {line = ""} /=/ && !/startTime|duration|eventThread/ {
           gsub(/ /, ""); line = line " " $0} END {print "counters:" line}'
}

finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed; files in $work" >&2
    exit 1
  fi
  rm -rf "$work"
  echo PASS
}
