#!/usr/bin/env bash
# The main job: profile the bundled shop service (examples/shop) for about 20 s under its own
# load generator, then print the per-endpoint report and write a flame graph.
#   CTXPROF_DEMO_SECONDS=N   how long the service runs (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh

seconds=${CTXPROF_DEMO_SECONDS:-20}
out=$PWD/out
mkdir -p "$out"

echo "== building the agent, the Java API, the example service and the ctxprof tool"
bazel build -c opt --color=no --curses=no --show_progress_rate_limit=30 \
  //jni:libctxprof.so //java:ctxprof //examples:shop //tools:ctxprof
bin=$(bazel info -c opt bazel-bin 2>/dev/null)
ctxprof="$bin/tools/ctxprof"

echo "== profiling the shop service for ${seconds} s (cpu every 10 ms, wall every 20 ms)"
"$ctxprof" record --lib "$bin/jni/libctxprof.so" \
  --event cpu --interval 10ms --wall 20ms --filter context --attributes 'endpoint;tenant' \
  -o "$out/shop.jfr" -- \
  java -cp "$bin/java/ctxprof.jar:$bin/examples/shop.jar" io.ctxprof.example.ShopService \
  --seconds "$seconds"

echo
echo "== where the CPU goes, per endpoint"
"$ctxprof" report "$out/shop.jfr" --by endpoint --events cpu --top 5
echo
"$ctxprof" flame "$out/shop.jfr" -o "$out/shop-flame.html" --by endpoint
echo "recording:   $out/shop.jfr   (also readable by the JDK's jfr tool and JMC)"
echo "flame graph: $out/shop-flame.html   (one self-contained page; pick an endpoint at the top)"
echo "more:        $ctxprof report $out/shop.jfr --by tenant"
