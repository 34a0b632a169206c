#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (outside Bazel, whose toolchain is gcc) and runs each:
# first every file in tests/fuzz/regressions/<target>/ once, then a time-bounded fuzzing run
# over a scratch copy of tests/fuzz/corpus/<target>/. See docs/FUZZING.md.
#
# Usage: tests/fuzz/run_fuzzers.sh [target...]   (default: all targets)
# Env:   CTXPROF_FUZZ_SECONDS  fuzzing time per target (default 60; 0 = regressions only)
#        CTXPROF_FUZZ_SEED     libFuzzer's -seed= (default 1: a CI failure reproduces with the
#                              same seed; set 0 for a random seed when fuzzing locally)
#        CTXPROF_FUZZ_KEEP     if set, the build and scratch folder is kept (it always is on
#                              failure)
# Prints "fuzz <target>: PASSED" or "fuzz <target>: FAILED" per target; exits non-zero if any
# target failed. A crashing input is copied to the scratch folder's artifacts/ and printed.
set -uo pipefail
cd "$(dirname "$0")/../.."

seconds=${CTXPROF_FUZZ_SECONDS:-60}
seed=${CTXPROF_FUZZ_SEED:-1}
clang=/usr/bin/clang++  # Debian clang 14 (install-deps.sh), with libclang-rt-14-dev
flags=(-std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
  -fno-sanitize-recover=all -I.)

# The sources each target links, listed explicitly: the code under test and nothing else.
declare -A sources=(
  [options]="tests/fuzz/options_fuzzer.cc profiler/options.cc"
  [jfr_reader]="tests/fuzz/jfr_reader_fuzzer.cc profiler/jfr/jfr_reader.cc
                profiler/jfr/jfr_value.cc profiler/jfr/utf8.cc"
  [cfi_table]="tests/fuzz/cfi_table_fuzzer.cc profiler/sampler/cfi_table.cc"
)
# Per-input limits: a hang or a big allocation is a finding, like a crash.
declare -A run_flags=(
  [options]="-timeout=10 -rss_limit_mb=512 -max_len=512 -dict=tests/fuzz/options.dict"
  [jfr_reader]="-timeout=10 -rss_limit_mb=512 -max_len=65536"
  [cfi_table]="-timeout=10 -rss_limit_mb=512 -max_len=16384"
)

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(options jfr_reader cfi_table)

work=$(mktemp -d)

failed=0
for target in "${targets[@]}"; do
  if [ -z "${sources[$target]:-}" ]; then
    echo "fuzz $target: FAILED (unknown target; known: ${!sources[*]})"
    failed=1
    continue
  fi
  binary="$work/${target}_fuzzer"
  artifacts="$work/artifacts/$target/"
  mkdir -p "$artifacts" "$work/corpus/$target"
  # shellcheck disable=SC2086  # the source list is split on purpose
  if ! "$clang" "${flags[@]}" ${sources[$target]} -o "$binary"; then
    echo "fuzz $target: FAILED (build)"
    failed=1
    continue
  fi
  # shellcheck disable=SC2086
  limits=(${run_flags[$target]})
  ok=1
  regressions=(tests/fuzz/regressions/"$target"/*)
  if [ -e "${regressions[0]}" ]; then
    echo "== fuzz $target: ${#regressions[@]} regression inputs"
    "$binary" "${limits[@]}" -artifact_prefix="$artifacts" "${regressions[@]}" \
      >"$work/$target.regressions.log" 2>&1 || ok=0
    [ "$ok" -eq 1 ] || tail -n 40 "$work/$target.regressions.log"
  fi
  if [ "$ok" -eq 1 ] && [ "$seconds" -gt 0 ]; then
    echo "== fuzz $target: ${seconds}s over tests/fuzz/corpus/$target"
    cp tests/fuzz/corpus/"$target"/* "$work/corpus/$target/"
    "$binary" "${limits[@]}" -max_total_time="$seconds" -seed="$seed" -print_final_stats=1 \
      -artifact_prefix="$artifacts" "$work/corpus/$target" >"$work/$target.log" 2>&1 || ok=0
    grep -E "^#[0-9]+\s+DONE|stat::number_of_executed_units|stat::average_exec_per_sec" \
      "$work/$target.log"
    [ "$ok" -eq 1 ] || tail -n 60 "$work/$target.log"
  fi
  if [ "$ok" -eq 1 ]; then
    echo "fuzz $target: PASSED"
  else
    echo "fuzz $target: FAILED (inputs in $artifacts: $(ls "$artifacts"))"
    failed=1
  fi
done
# A failure keeps the folder: its artifacts are the inputs to add to regressions/.
if [ -n "${CTXPROF_FUZZ_KEEP:-}" ] || [ "$failed" -ne 0 ]; then
  echo "fuzz: build and scratch folder kept in $work"
else
  rm -rf "$work"
fi
exit "$failed"
