#!/usr/bin/env bash
# The main job. Until the profiler lands this runs the context-store benchmarks: what one
# context write, clear and read costs next to the alternatives (docs/PERFORMANCE.md).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
bazel run -c opt --color=no --curses=no //bench:context_bench -- \
  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_min_time=0.2 \
  "$@"
