#!/usr/bin/env bash
# Runs every ctxprof test: the whole suite, the native tests again under ASan+UBSan and the
# concurrency tests under TSan, and the C++ format check. The last line is
# "N passed, N failed" (test targets plus the format check); the exit status is non-zero when
# anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh ${CTXPROF_APT_UPDATE:+--update} || exit 1

passed=0
failed=0
log_dir=$(mktemp -d)
bazel_flags=(--color=no --curses=no --show_progress_rate_limit=60)

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
  if [ "$status" -ne 0 ] && [ "$run_failed" -eq 0 ]; then
    echo "== $name: bazel exited with $status before reporting test results (build error?)"
    run_failed=1
  fi
  passed=$((passed + run_passed))
  failed=$((failed + run_failed))
}

run_bazel_test all //...
# Sanitizer passes re-run the native suites; the configs come from .bazelrc.
run_bazel_test asan-ubsan --config=asan --config=ubsan --build_tests_only \
  //tests/context/... //tests/sampler/... //tests/recording/... //tests/tools/...
run_bazel_test tsan --config=tsan --build_tests_only --test_tag_filters=concurrency //tests/...

echo "== clang-format check"
mapfile -t sources < <(git ls-files '*.h' '*.cc' '*.cpp' | grep -v '^third_party/')
if [ ${#sources[@]} -eq 0 ] || clang-format --dry-run -Werror "${sources[@]}"; then
  passed=$((passed + 1))
else
  echo "== clang-format: run 'clang-format -i' on the files above"
  failed=$((failed + 1))
fi

rm -rf "$log_dir"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
