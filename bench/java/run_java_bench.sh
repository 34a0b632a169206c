#!/usr/bin/env bash
# bazel run -c opt //bench:java_context_bench [-- --forks N ...]; CTXPROF_JDK picks the JDK home.
set -euo pipefail
api_jar=$(realpath "$1"); bench_jar=$(realpath "$2"); library=$(realpath "$3")
shift 3
source "$(dirname "$(realpath "$0")")/../tests/jdks.sh" 2>/dev/null ||
  source "${RUNFILES_DIR:-$0.runfiles}/ctxprof/tests/jdks.sh"
jdk=${CTXPROF_JDK:-$(ctxprof_jdk17)}
exec "$jdk/bin/java" --enable-native-access=ALL-UNNAMED -Dctxprof.library="$library" \
  -cp "$api_jar:$bench_jar" \
  io.ctxprof.ContextBench "$@"
