#!/usr/bin/env bash
# Runs JUnit tests of tests/java on JDK 17 and, when installed, JDK 25.
# Args: ctxprof.jar tests.jar libctxprof.so libctxprof_test_support.so junit-console.jar
#       ctxprof-tool JUNIT_SELECTORS...   (e.g. --select-package io.ctxprof)
set -euo pipefail
api_jar=$(realpath "$1"); tests_jar=$(realpath "$2"); library=$(realpath "$3")
support=$(realpath "$4"); console=$(realpath "$5"); tool=$(realpath "$6")
shift 6

source "$(dirname "$0")/../jdks.sh"

status=0
for jdk in $(ctxprof_jdks); do
  echo "== JUnit on $("$jdk/bin/java" -version 2>&1 | head -1)"
  "$jdk/bin/java" -Dctxprof.library="$library" -Dctxprof.test.support="$support" \
    -Dctxprof.test.classpath="$api_jar:$tests_jar" -Dctxprof.tool="$tool" \
    -jar "$console" --disable-banner --details=summary --fail-if-no-tests \
    --class-path "$api_jar:$tests_jar" "$@" || status=1
done
exit $status
