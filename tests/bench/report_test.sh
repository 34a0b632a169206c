#!/usr/bin/env bash
# //bench:report end to end in --quick mode: every benchmark runs and is parsed, and the
# generated document has every section, a target table whose rows all carry a number and a
# verdict, and the machine described. Plus the refusals: --quick never overwrites docs/.
set -euo pipefail
report="$TEST_SRCDIR/ctxprof/bench/report"
output="$TEST_TMPDIR/PERFORMANCE.md"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$report" --quick --output "$output" 2>"$TEST_TMPDIR/report.err" ||
  fail "report --quick exited $?: $(tail -20 "$TEST_TMPDIR/report.err")"
cat "$TEST_TMPDIR/report.err"

for heading in "## Machine" "## Targets" "## Context write costs, native" \
  "## Context write costs, Java" "## Signal handler cost" "## JFR writer" \
  "## Profiling overhead" "### A CPU-bound JVM workload" "### The platform floor" \
  "### A native program" "## Side by side with async-profiler" \
  "## The shop: this round's features at its request rate"; do
  grep -qxF "$heading" "$output" || fail "no '$heading' section in $output"
done
grep -q "^- CPU: .*logical CPUs" "$output" || fail "the machine's CPU is not described"
grep -q "^- JDK 17" "$output" || fail "JDK 17 is not described"
grep -q "QUICK SMOKE RUN" "$output" || fail "a quick run is not marked as such"

# The targets table: between "## Targets" and the next section, one row per target.
targets=$(awk '/^## Targets/{on=1; next} /^## /{on=0} on && /^\| / && !/^\| What/ && !/^\|---/' \
  "$output")
rows=$(printf '%s\n' "$targets" | grep -c .)
# 11 targets with JDK 17 alone, 13 when JDK 25 is installed too.
[ "$rows" -ge 11 ] || fail "only $rows target rows:\n$targets"
# The native walker's two targets (50 and 200 frames of code without frame pointers).
for depth in 50 200; do
  printf '%s\n' "$targets" |
    grep -qF "| handler p50, $depth native frames without frame pointers, \`unwind=dwarf\` |" ||
    fail "no target row for the DWARF walker at $depth frames:\n$targets"
done
printf '%s\n' "$targets" | while IFS= read -r row; do
  # A number with its unit, then optionally its range over the runs ("1.56 M/s [1.29 .. 1.94]").
  printf '%s' "$row" |
    grep -qE '\| [-+]?[0-9]+(\.[0-9]+)? ?(ns|µs|%|M/s|B|×)( \[[-+]?[0-9.]+ \.\. [-+]?[0-9.]+\])? \| (met|\*\*missed\*\*) \|$' ||
    fail "target row without a number and verdict: $row"
done
if grep -qiE '\bnan\b|\binf\b' "$output"; then fail "NaN or inf in $output"; fi
# Both profiled JVM configurations are there, and took samples.
profiled=$(grep -E '^\| `cpu` at (10|1) ms \|' "$output")
[ "$(printf '%s\n' "$profiled" | grep -c .)" -eq 2 ] || fail "profiled JVM rows: $profiled"
if printf '%s\n' "$profiled" | grep -qE '\| 0 / [0-9]+ \|$'; then
  fail "a profiled JVM run shows no samples: $profiled"
fi
echo "target rows: $rows"
# The shop: its 8 configurations, each with a request rate, the pushes with what the local
# receiver got, and the profilers' threads' CPU shares last.
shop=$(awk '/^## The shop/{on=1; next} /^## /{on=0} on && /^\| (off|ctxprof|the JDK)/' "$output")
[ "$(printf '%s\n' "$shop" | grep -c .)" -eq 8 ] || fail "shop rows:\n$shop"
[ "$(printf '%s\n' "$shop" | grep -cE '\| [0-9.]+ MB \[[0-9.]+ \.\. [0-9.]+\] in [0-9]+ requests \|')" \
  -eq 2 ] || fail "shop rows without received bytes for otlp= and upload=:\n$shop"
share='[0-9.]+ % \[[0-9.]+ \.\. [0-9.]+\]'
[ "$(printf '%s\n' "$shop" | grep -cE "\| $share / $share \|\$")" -eq 8 ] ||
  fail "shop rows without the profilers' threads' CPU shares:\n$shop"

# --quick without --output must not touch docs/PERFORMANCE.md.
if "$report" --quick 2>"$TEST_TMPDIR/refusal.err"; then
  fail "--quick without --output was accepted"
fi
grep -q "give --output FILE" "$TEST_TMPDIR/refusal.err" ||
  fail "unclear refusal: $(cat "$TEST_TMPDIR/refusal.err")"

# --sections: only the named sections (here the quick drops section), and never into docs/.
"$report" --quick --sections drops --output "$TEST_TMPDIR/drops.md" 2>"$TEST_TMPDIR/drops.err" ||
  fail "report --sections drops exited $?: $(tail -20 "$TEST_TMPDIR/drops.err")"
grep -qxF "## Drops under load" "$TEST_TMPDIR/drops.md" || fail "no drops section with --sections"
if grep -qxF "## Signal handler cost" "$TEST_TMPDIR/drops.md"; then
  fail "--sections drops ran other sections too"
fi
if "$report" --sections events 2>"$TEST_TMPDIR/partial.err"; then
  fail "--sections without --output was accepted"
fi
grep -q "give --output FILE" "$TEST_TMPDIR/partial.err" ||
  fail "unclear refusal: $(cat "$TEST_TMPDIR/partial.err")"
if "$report" --quick --sections events,bogus --output "$TEST_TMPDIR/x.md" \
  2>"$TEST_TMPDIR/bogus.err"; then
  fail "an unknown section was accepted"
fi
grep -q "unknown section(s) bogus" "$TEST_TMPDIR/bogus.err" ||
  fail "unclear refusal: $(cat "$TEST_TMPDIR/bogus.err")"
echo "PASS"
