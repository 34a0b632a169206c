#!/usr/bin/env bash
# Runs every ctxprof test: the whole suite, the native tests again under ASan+UBSan and the
# concurrency tests under TSan, the layering and C++ format checks and the fuzzers (bounded time
# each). The last line is "N passed, N failed" (test targets, the two checks and one result per
# fuzz target); the exit status is non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh ${CTXPROF_APT_UPDATE:+--update} || exit 1

passed=0
failed=0
log_dir=$(mktemp -d)
# --test_output=errors puts a failed test's log into the bazel output; run_bazel_test prints the
# end of it, so a failure in CI (whose output is all anyone sees) says which check failed.
bazel_flags=(--color=no --curses=no --show_progress_rate_limit=60 --test_output=errors)

# Runs one `bazel test` invocation and adds its per-target results to the totals.
run_bazel_test() {
  local name=$1
  shift
  local log="$log_dir/$name.log"
  echo "== bazel test $* ($name)"
  bazel test "${bazel_flags[@]}" "$@" 2>&1 | tee "$log" | grep -E "^//|^INFO: Build|^ERROR|FAILED|Executed"
  local status=${PIPESTATUS[0]}
  local run_passed run_failed
  run_passed=$(grep -cE '^//\S+ +(\(cached\) )?PASSED' "$log")
  run_failed=$(grep -cE '^//\S+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|FLAKY|INCOMPLETE)' "$log")
  if [ "$run_failed" -gt 0 ]; then
    # Each failed test's log sits between "==== Test output for //target:" and a line of '=';
    # print that header and the log's last 60 lines.
    awk '/^==========+ Test output for /{print; keep=1; n=0; next} keep{buf[n++ % 60]=$0}
         keep && /^========================================+$/ {keep=0; s=(n>60?n-60:0); for(i=s;i<n;i++) print buf[i % 60]}' "$log"
  fi
  if [ "$status" -ne 0 ] && [ "$run_failed" -eq 0 ]; then
    echo "== $name: bazel exited with $status before reporting test results (build error?)"
    run_failed=1
  fi
  passed=$((passed + run_passed))
  failed=$((failed + run_failed))
}

run_bazel_test all //...
# Sanitizer passes re-run the native suites (configs in .bazelrc), each a build of its own:
# ASan+UBSan over the folders below, TSan over the tests tagged concurrency. Tests tagged
# no_sanitizers are left to the plain pass: a sanitizer finds nothing there that it does not
# find in another test (each BUILD file says why).
run_bazel_test asan-ubsan --config=asan --config=ubsan --build_tests_only \
  --test_tag_filters=-no_sanitizers \
  //tests/context/... //tests/options/... //tests/sampler/... //tests/symbols/... \
  //tests/end_to_end/... //tests/session/... //tests/jfr_events/... //tests/tools/... \
  //tests/export/...
run_bazel_test tsan --config=tsan --build_tests_only --test_tag_filters=concurrency,-no_sanitizers \
  //tests/...

# The dependency direction (docs/ARCHITECTURE.md): context <- profiler <- jni <- java, the JFR
# format leaf below the recording, and the ctxprof command on the leaf alone, plus the option
# parser (`record` checks options with the agent's own parser, which knows the context block's
# attribute slot count from the header-only //context:context_block).
echo "== layering check"
layering_violations=$(
  {
    bazel query --noshow_progress 'deps(//context/...) intersect (//profiler/... + //jni/... + //java/...)'
    bazel query --noshow_progress 'deps(//profiler/jfr) intersect (//context/... + //profiler/sampler/... + //profiler/session/... + //profiler/jfr_events/... + //profiler/symbols/... + //profiler/export/... + //profiler:all)'
    bazel query --noshow_progress 'deps(//profiler/...) intersect (//jni/... + //java/...)'
    bazel query --noshow_progress 'deps(//tools:ctxprof) intersect (//context/... - //context:context_block)'
  } 2>&1 | grep -E '^//|ERROR'
)
if [ -z "$layering_violations" ]; then
  passed=$((passed + 1))
else
  echo "== layering: these targets are reached against the dependency direction:"
  echo "$layering_violations"
  failed=$((failed + 1))
fi

echo "== clang-format check"
mapfile -t sources < <(git ls-files '*.h' '*.cc' '*.cpp' | grep -v '^third_party/')
if [ ${#sources[@]} -eq 0 ] || clang-format --dry-run -Werror "${sources[@]}"; then
  passed=$((passed + 1))
else
  echo "== clang-format: run 'clang-format -i' on the files above"
  failed=$((failed + 1))
fi

# Fuzzers build with clang outside Bazel (its toolchain is gcc); one result per fuzz target.
# CTXPROF_FUZZ_SECONDS sets the time per target: 20 s here (run_fuzzers.sh alone: 60 s). Each
# run replays the regression inputs and the corpus first; with the fixed seed, the mutations
# after that are largely the previous run's unless the fuzzed code changed, so long searches
# are local runs with a random seed (docs/FUZZING.md).
echo "== fuzzers (tests/fuzz/run_fuzzers.sh)"
CTXPROF_FUZZ_SECONDS=${CTXPROF_FUZZ_SECONDS:-20} tests/fuzz/run_fuzzers.sh 2>&1 |
  tee "$log_dir/fuzz.log"
fuzz_status=${PIPESTATUS[0]}
fuzz_passed=$(grep -cE '^fuzz \S+: PASSED' "$log_dir/fuzz.log")
fuzz_failed=$(grep -cE '^fuzz \S+: FAILED' "$log_dir/fuzz.log")
if [ "$fuzz_status" -ne 0 ] && [ "$fuzz_failed" -eq 0 ]; then
  echo "== fuzzers: run_fuzzers.sh exited with $fuzz_status before reporting results"
  fuzz_failed=1
fi
passed=$((passed + fuzz_passed))
failed=$((failed + fuzz_failed))

rm -rf "$log_dir"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
