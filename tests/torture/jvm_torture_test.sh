#!/usr/bin/env bash
# The JVM torture test: a JVM under cpu 1 ms + wall 5 ms sampling with a JFR file, churning
# threads (a few hundred alive, each living 1-50 ms), writing contexts in tight loops with more
# distinct values than the dictionary holds, allocating garbage and loading/unloading classes, for
# CTXPROF_TORTURE_SECONDS, else the 4th argument (CI's BUILD passes 20), else 60 seconds, on JDK 17
# and on JDK 25 when installed. It must exit 0
# without an hs_err file and leave a recording that every installed JDK's `jfr` reads (summary
# and print), with samples; the profiler's counters are printed.
# Args: libctxprof.so ctxprof.jar torture_workloads.jar [seconds]
set -euo pipefail
library=$(realpath "$1")
classpath="$(realpath "$2"):$(realpath "$3")"
source "$(dirname "$0")/harness.sh"

seconds=${CTXPROF_TORTURE_SECONDS:-${4:-60}}
keep_alive=300
for jdk in $(ctxprof_jdks); do
  name=torture-$(basename "$jdk")
  jfr_file=$work/$name.jfr
  # The JVM gets the workload's time plus 60 s to start, finish the recording and exit.
  run_jvm "$jdk" $((seconds + 60)) "$name" \
    "$(agent "event=cpu,interval=1ms,wall=5ms,file=$jfr_file,attributes=endpoint;tenant")" \
    -Xmx256m -cp "$classpath" io.ctxprof.torture.TortureWorkload "$seconds" "$keep_alive"
  expect_clean_exit "$name"
  cat "$work/$name.out"
  ctxprof_lines "$name"
  grep -q '^torture: ' "$work/$name.out" || fail "$name: the workload did not finish"
  # Every installed JDK's `jfr` must read every JDK's recording.
  for reader in $(ctxprof_jdks 2>/dev/null); do
    check_recording "$reader" "$jfr_file" "$name"
    [ "$samples" -gt 0 ] || fail "$name: no samples in $jfr_file"
  done
  print_counters "$jdk" "$jfr_file"
done
finish
