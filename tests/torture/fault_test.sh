#!/usr/bin/env bash
# Fault tests of the JVM agent, one per sh_test: what the profiler does when the world breaks
# around a profiled JVM (docs/RELIABILITY.md). Each case runs on JDK 17 (the faults are the
# platform's and the agent's, not the JDK version's) and is bounded by its own timeouts.
# Args: case libctxprof.so ctxprof.jar torture_workloads.jar [case's native library]
set -euo pipefail
fault=$1
library=$(realpath "$2")
classpath="$(realpath "$3"):$(realpath "$4")"
native=${5:+$(realpath "$5")}
source "$(dirname "$0")/harness.sh"
jdk=$(ctxprof_jdk17)
workload=(-cp "$classpath" io.ctxprof.torture.FaultWorkload)

# start_jvm NAME JAVA_ARGS...: like run_jvm but in the background (`jvm_pid`), returning once the
# workload printed "ready" (the session is recording).
start_jvm() {
  local name=$1
  shift
  mkdir -p "$work/$name"
  (cd "$work/$name" && exec "$jdk/bin/java" "$@") >"$work/$name.out" 2>"$work/$name.err" &
  jvm_pid=$!
  for _ in $(seq 300); do
    grep -q '^ready$' "$work/$name.out" && return 0
    kill -0 "$jvm_pid" 2>/dev/null || break
    sleep 0.1
  done
  fail "$name: no 'ready' within 30 s, or the JVM exited: $(tail -3 "$work/$name.err")"
}

# wait_jvm NAME SECONDS: waits for the background JVM at most SECONDS; sets `exit_code`.
wait_jvm() {
  local name=$1
  for _ in $(seq $(($2 * 10))); do
    kill -0 "$jvm_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$jvm_pid" 2>/dev/null; then
    fail "$name: still running after $2 s; killing it"
    kill -KILL "$jvm_pid"
  fi
  exit_code=0
  wait "$jvm_pid" || exit_code=$?
  echo "$name: exit $exit_code"
}

case $fault in
  deleted_folder)
    # The repository folder is removed while chunks are being written: the next chunk file
    # cannot be created. The JVM runs on and exits 0; the profiler says what failed.
    repository=$work/repository
    start_jvm deleted "$(agent "interval=1ms,repository=$repository,chunktime=100ms")" \
      "${workload[@]}" spin 4
    sleep 0.5
    echo "chunk files before rm -rf: $(ls "$repository" | wc -l)"
    # rm -rf can lose the race with a chunk created after it read the folder (rmdir: "Directory
    # not empty"); like a user, retry until the folder is gone.
    for attempt in $(seq 50); do
      rm -rf "$repository" 2>/dev/null && break
      sleep 0.01
    done
    [ ! -e "$repository" ] || fail "deleted: $repository still there after $attempt rm -rf"
    [ "$attempt" = 1 ] || echo "rm -rf took $attempt attempts (raced a new chunk file)"
    wait_jvm deleted 60
    expect_clean_exit deleted
    ctxprof_lines deleted
    ctxprof_lines deleted | grep -q "$repository" ||
      fail "deleted: no ctxprof line names $repository: $(cat "$work/deleted.err")"
    [ ! -e "$repository" ] || echo "note: the profiler re-created $repository"
    ;;
  disk_full)
    # RLIMIT_FSIZE of 64 KiB stands in for a full disk (a 4 s recording is ~250 KiB, but as little
    # as 249 KiB on a loaded machine, so 256 KiB was not always reached): the write past it fails
    # with EFBIG (HotSpot ignores SIGXFSZ, which would otherwise kill the process). The JVM exits
    # 0 and the profiler names the file; the file never exceeds the limit.
    jfr_file=$work/full/recording.jfr
    mkdir -p "$work/full"
    # A subshell, so the limit binds the JVM only and not this script's later writes.
    (ulimit -f 64 && run_jvm "$jdk" 60 full \
      "$(agent "interval=1ms,wall=1ms,file=$jfr_file")" "${workload[@]}" spin 4
      echo "$exit_code" >"$work/full.exit")
    exit_code=$(cat "$work/full.exit")
    expect_clean_exit full
    ctxprof_lines full
    ctxprof_lines full | grep -q "$jfr_file" ||
      fail "full: no ctxprof line names $jfr_file: $(cat "$work/full.err")"
    size=$(stat -c %s "$jfr_file")
    echo "recording size: $size bytes (limit $((64 * 1024)))"
    [ "$size" -le $((64 * 1024)) ] || fail "full: $jfr_file is $size bytes, above the limit"
    ;;
  no_space)
    # A real full filesystem (ENOSPC, not RLIMIT_FSIZE): a 64 KiB tmpfs mounted in a private
    # mount namespace (unshare -m as root, else unshare -Urm in a new user namespace), holding
    # the file= recording of a JVM that samples for 6 s (~60 KiB/s, so it fills within ~1 s).
    # The profiler must say so at once, from its background thread, while the JVM still runs
    # (polled below: the line is there before the workload's last line "done" and before the JVM
    # exits), say it once (at exit only a short reference), show it in the Java API's status,
    # and never write past the filesystem's size. The JVM exits 0.
    fs=$work/tmpfs
    fs_kib=64
    jfr_file=$fs/recording.jfr
    mkdir -p "$fs" "$work/nospace"
    ns=""
    for flags in -m -Urm; do
      # shellcheck disable=SC2016 # $1 is the inner shell's
      if unshare "$flags" sh -c 'mount -t tmpfs -o size=1m none "$1"' sh "$fs" \
        2>>"$work/unshare.err"; then
        ns=$flags
        break
      fi
    done
    if [ -z "$ns" ]; then
      echo "SKIP no_space: cannot mount a tmpfs in a private mount namespace here (unshare -m" \
        "and unshare -Urm failed: $(tr '\n' ' ' <"$work/unshare.err")); this case needs root" \
        "or unprivileged user namespaces"
      rm -rf "$work"
      exit 0
    fi
    echo "mount namespace: unshare $ns; tmpfs of $fs_kib KiB at $fs"
    # The shell inside the namespace mounts the tmpfs, runs the JVM and, before the namespace
    # (and the tmpfs) goes away, writes the recording's size where this script can read it.
    # shellcheck disable=SC2016 # the inner shell expands its own arguments
    (cd "$work/nospace" && exec unshare "$ns" sh -c '
      mount -t tmpfs -o size="$1"k none "$2" || exit 97
      size_file=$3
      recording=$4
      shift 4
      "$@"
      code=$?
      stat -c %s "$recording" >"$size_file"
      exit $code' sh "$fs_kib" "$fs" "$work/nospace.size" "$jfr_file" \
      "$jdk/bin/java" "$(agent "interval=1ms,wall=1ms,file=$jfr_file")" \
      "${workload[@]}" status 6) >"$work/nospace.out" 2>"$work/nospace.err" &
    jvm_pid=$!
    started=$SECONDS
    reported=""
    for _ in $(seq 300); do
      if [ -z "$reported" ] &&
        ctxprof_lines nospace | grep -F "$jfr_file" | grep -qF "No space left on device"; then
        if grep -q '^done$' "$work/nospace.out"; then
          reported="after the workload's last line"
        elif kill -0 "$jvm_pid" 2>/dev/null; then
          reported="while the JVM runs, $((SECONDS - started)) s after its start"
        else
          reported="after the JVM exited"
        fi
        echo "nospace: the ctxprof line appeared $reported"
      fi
      kill -0 "$jvm_pid" 2>/dev/null || break
      sleep 0.1
    done
    wait_jvm nospace 20
    [ "$exit_code" -ne 97 ] || fail "nospace: mount failed inside the namespace"
    expect_clean_exit nospace
    ctxprof_lines nospace
    grep '^status: ' "$work/nospace.out" || fail "nospace: the workload printed no status"
    case $reported in
      while*) ;;
      "") fail "nospace: no ctxprof line names $jfr_file and 'No space left on device'" ;;
      *) fail "nospace: the ctxprof line appeared only $reported, not while the JVM ran" ;;
    esac
    full_lines=$(ctxprof_lines nospace | grep -cF "No space left on device" || true)
    [ "$full_lines" -eq 1 ] ||
      fail "nospace: the error was printed $full_lines times, expected once (a reference at exit)"
    ctxprof_lines nospace | grep -F "$jfr_file" | grep -qF "sampling goes on" ||
      fail "nospace: the ctxprof line does not say that sampling goes on"
    grep '^status: ' "$work/nospace.out" | grep -F "$jfr_file" |
      grep -qF "No space left on device" ||
      fail "nospace: the Java API's status does not show the write error"
    size=$(cat "$work/nospace.size" 2>/dev/null || echo missing)
    echo "recording size: $size bytes (filesystem $((fs_kib * 1024)))"
    [ "$size" != missing ] && [ "$size" -le $((fs_kib * 1024)) ] ||
      fail "nospace: $jfr_file is $size bytes, above the filesystem's size"
    ;;
  sigkill)
    # SIGKILL at a random moment (1.5-3 s after ready), three times: every chunk file but the
    # newest (the one being written) must be valid on its own (`jfr summary`, with samples). The
    # newest is reported, not required to be valid.
    for round in 1 2 3; do
      repository=$work/repository-$round
      start_jvm "killed-$round" \
        "$(agent "interval=1ms,wall=5ms,repository=$repository,chunktime=500ms")" \
        "${workload[@]}" spin 30
      delay_ms=$((1500 + RANDOM % 1500))
      sleep "$((delay_ms / 1000)).$(printf %03d $((delay_ms % 1000)))"
      kill -KILL "$jvm_pid"
      wait_jvm "killed-$round" 10
      mapfile -t chunks < <(ls "$repository"/*.jfr | sort)
      # ~4 chunk files by then; at least one finished chunk even on a starved machine.
      [ "${#chunks[@]}" -ge 2 ] ||
        fail "killed-$round: only ${#chunks[@]} chunk files after ${delay_ms} ms"
      finished=0
      for chunk in "${chunks[@]:0:${#chunks[@]}-1}"; do
        check_recording "$jdk" "$chunk" "killed-$round" summary
        [ "$samples" -gt 0 ] || fail "killed-$round: no samples in finished chunk $chunk"
        finished=$((finished + 1))
      done
      newest=${chunks[-1]}
      if timeout 60 "$jdk/bin/jfr" summary "$newest" >/dev/null 2>&1; then
        state=valid
      else
        state="not readable (expected: killed while writing it)"
      fi
      echo "killed-$round: killed $delay_ms ms after ready; $finished finished chunks valid;" \
        "newest $(basename "$newest") $(stat -c %s "$newest") bytes: $state"
    done
    ;;
  native_crash)
    # The application's own JNI code writes to address 16 while cpu and wall signals fly: our
    # SIGSEGV handling (fault_guard) must pass it on to HotSpot, which writes hs_err and aborts,
    # within the timeout (no hang), blaming the application's frame.
    run_jvm "$jdk" 60 crash "$(agent "interval=1ms,wall=5ms,file=$work/crash.jfr")" \
      -Dctxprof.test.crash="$native" "${workload[@]}" crash 2
    hs_err=$(ls "$work/crash"/hs_err_pid*.log 2>/dev/null || true)
    [ "$exit_code" -ne 0 ] && [ "$exit_code" -ne 124 ] && [ "$exit_code" -ne 137 ] ||
      fail "crash: exit $exit_code, expected the JVM's crash exit (134, SIGABRT)"
    grep -q '^crashing$' "$work/crash.out" || fail "crash: the workload did not reach the crash"
    if [ -z "$hs_err" ]; then
      fail "crash: no hs_err file"
    else
      grep -m3 -E '^#  SIGSEGV|^# (Problematic frame)|^# C ' "$hs_err"
      grep -q '^#  SIGSEGV' "$hs_err" || fail "crash: $hs_err does not report a SIGSEGV"
      grep -q 'writeToAddress16' "$hs_err" ||
        fail "crash: $hs_err does not name the crashing frame writeToAddress16"
    fi
    ;;
  foreign_sigprof)
    # Another library owns SIGPROF before the agent starts (LD_PRELOAD constructor): the agent
    # refuses in one line naming the signal and the fix, and the JVM runs on; with
    # signal=SIGRTMIN+4 the same JVM setup profiles normally.
    LD_PRELOAD=$native run_jvm "$jdk" 60 refused \
      "$(agent "interval=1ms,file=$work/refused.jfr")" "${workload[@]}" spin 1
    expect_clean_exit refused
    ctxprof_lines refused
    [ "$(ctxprof_lines refused | wc -l)" -eq 1 ] || fail "refused: expected one ctxprof line"
    ctxprof_lines refused | grep -q 'SIGPROF.*signal=' ||
      fail "refused: the ctxprof line does not name SIGPROF and suggest signal="
    LD_PRELOAD=$native run_jvm "$jdk" 60 other_signal \
      "$(agent "interval=1ms,signal=SIGRTMIN+4,file=$work/other_signal.jfr")" \
      "${workload[@]}" spin 2
    expect_clean_exit other_signal
    [ -z "$(ctxprof_lines other_signal)" ] ||
      fail "other_signal: unexpected: $(ctxprof_lines other_signal)"
    check_recording "$jdk" "$work/other_signal.jfr" other_signal
    [ "$samples" -ge 100 ] || fail "other_signal: $samples samples in 2 s at 1 ms, expected >= 100"
    ;;
  *)
    echo "unknown fault '$fault'" >&2
    exit 2
    ;;
esac
finish
