#!/bin/bash
# Native frames read well in every reader (profiler/jfr/native_method.h): the JDK's `jfr print`
# (17 and 25) and `jfr view hot-methods` (25) show each C++ symbol's parameter list once, never
# "name(bool)()"; ctxprof's collapsed stacks show the whole symbol, as before the split; and
# OTLP functions name the whole symbol with no descriptor after it in the system name.
#
# Usage: native_names_test.sh <ctxprof> <write_native_names_recording> <otlp_profiles.proto>
set -uo pipefail

ctxprof=$1
generator=$2
proto=$3
tmp=${TEST_TMPDIR:-$(mktemp -d)}
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

"$generator" "$tmp/native.jfr" || { echo "FAIL: generator" >&2; exit 1; }

# As the JDK prints them: qualifiers after the list are dropped, a C name gets "()"; native
# frames hold line 0, as async-profiler writes them (one byte; -1 takes five).
jdk_names=("libfake.so.PhaseChaitin::gather_lrg_masks(bool)" "libfake.so.Symbol::as_C_string()"
  "libfake.so.std::vector<int, std::allocator<int> >::push_back(int const&)"
  "libfake.so.outer(void (*)(int))" "libfake.so.(anonymous namespace)::helper(char const*)"
  "libfake.so.read()")
for jdk in /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/temurin-25-jdk-amd64; do
  if [[ ! -x $jdk/bin/jfr ]]; then
    fail "$jdk/bin/jfr is missing"
    continue
  fi
  timeout 120 "$jdk/bin/jfr" print --events jdk.ExecutionSample "$tmp/native.jfr" \
    > "$tmp/print.txt" 2> "$tmp/err" || fail "$jdk jfr print: $(cat "$tmp/err")"
  [[ -s $tmp/err ]] && fail "$jdk jfr print wrote to stderr: $(cat "$tmp/err")"
  for name in "${jdk_names[@]}"; do
    grep -qxF "    $name line: 0" "$tmp/print.txt" || fail "$jdk jfr print lacks the frame $name"
  done
  grep -F ')()' "$tmp/print.txt" && fail "$jdk jfr print doubles a parameter list"
  timeout 120 "$jdk/bin/jfr" print --json "$tmp/native.jfr" > /dev/null 2> "$tmp/err" ||
    fail "$jdk jfr print --json: $(cat "$tmp/err")"
done
jdk25=/usr/lib/jvm/temurin-25-jdk-amd64/bin/jfr
if [[ -x $jdk25 ]]; then
  timeout 120 "$jdk25" view hot-methods "$tmp/native.jfr" > "$tmp/hot.txt" 2> "$tmp/err" ||
    fail "jfr view hot-methods: $(cat "$tmp/err")"
  for name in "${jdk_names[0]}" "${jdk_names[2]}" "${jdk_names[4]}"; do  # the leaves
    grep -qF "$name " "$tmp/hot.txt" || fail "jfr view hot-methods lacks $name: $(cat "$tmp/hot.txt")"
  done
  grep -F ')()' "$tmp/hot.txt" && fail "jfr view hot-methods doubles a parameter list"
fi

# ctxprof: the whole symbols, qualifiers included (collapsed escapes ' ' as %20).
timeout 60 "$ctxprof" convert --to collapsed "$tmp/native.jfr" -o "$tmp/collapsed.txt" --quiet ||
  fail "convert --to collapsed"
sort "$tmp/collapsed.txt" > "$tmp/got.txt"
sort > "$tmp/want.txt" << 'WANT'
com.example.svc.Handler1.method1;com.example.svc.Handler2.method2;libfake.so.outer(void%20(*)(int))%20%5Bclone%20.isra.0%5D;libfake.so.std::vector<int,%20std::allocator<int>%20>::push_back(int%20const&) 1
com.example.svc.Handler1.method1;libfake.so.Symbol::as_C_string()%20const;libfake.so.PhaseChaitin::gather_lrg_masks(bool) 1
com.example.svc.Handler1.method1;libfake.so.read;libfake.so.(anonymous%20namespace)::helper(char%20const*) 1
WANT
diff "$tmp/want.txt" "$tmp/got.txt" > "$tmp/diff" || fail "collapsed stacks differ: $(cat "$tmp/diff")"

# OTLP: native functions are the whole symbol, in name and in system name.
timeout 60 "$ctxprof" convert --to otlp "$tmp/native.jfr" -o "$tmp/native.otlp" --quiet ||
  fail "convert --to otlp"
timeout 60 protoc --proto_path="$(dirname "$proto")" \
  --decode=opentelemetry.proto.profiles.v1development.ProfilesData "$(basename "$proto")" \
  < "$tmp/native.otlp" > "$tmp/otlp.txt" || fail "protoc cannot decode the OTLP profiles"
/usr/bin/python3 - "$tmp/otlp.txt" "$(dirname "$0")" << 'CHECK' || fail "OTLP functions: see above"
import sys
sys.path.insert(0, sys.argv[2])
import protoc_text


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


dictionary = protoc_text.parse(open(sys.argv[1], encoding="utf-8").read(), fail)["dictionary"][0]
strings = dictionary["string_table"]
native = {}
for function in dictionary["function_table"][1:]:
    name = strings[function["name_strindex"][0]]
    system_name = strings[function["system_name_strindex"][0]]
    if name.startswith("libfake.so."):
        native[name] = system_name
want = ["libfake.so." + symbol for symbol in (
    "PhaseChaitin::gather_lrg_masks(bool)", "Symbol::as_C_string() const",
    "std::vector<int, std::allocator<int> >::push_back(int const&)",
    "outer(void (*)(int)) [clone .isra.0]", "(anonymous namespace)::helper(char const*)", "read")]
if sorted(native) != sorted(want):
    fail("native functions %r, want %r" % (sorted(native), sorted(want)))
for name, system_name in native.items():
    if system_name != name:
        fail("%s: system name %r, want the name itself" % (name, system_name))
CHECK

if [[ $failures -gt 0 ]]; then
  echo "$failures checks failed" >&2
  exit 1
fi
echo "PASS"
