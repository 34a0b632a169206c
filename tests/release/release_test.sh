#!/bin/bash
# The release archive as a user gets it: unpacked into an empty folder, with nothing of the build
# tree around. Checks its contents, `bin/ctxprof --version`, then on JDK 17 (and JDK 25 when
# installed): `ctxprof attach PID start/status/stop` on a plain JVM and `ctxprof record`, both
# through a link on PATH and without --lib (the tool finds ../lib/libctxprof.so from
# /proc/self/exe), and a Java program whose whole class path is lib/ctxprof.jar (no
# -Dctxprof.library: the jar's own copy of the library is loaded and its temporary copy removed
# at exit). Every recording must have samples of the workload's own method.
#
# The Debian package is not installed (a shared test machine); it is unpacked with dpkg-deb -x
# and its /usr/bin/ctxprof must record with /usr/lib/ctxprof/libctxprof.so, unasked.
#
# Usage: release_test.sh <ctxprof-VERSION-linux-x64.tar.gz> <VERSION> <Spin.java> <JarAlone.java>
#                        <ctxprof_VERSION_amd64.deb>
set -euo pipefail

archive=$1
version=$2
spin_java=$3
jar_alone_java=$4
deb=$5
source "$(dirname "$0")/../jdks.sh"
tmp=${TEST_TMPDIR:-$(mktemp -d)}
target_pid=

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

stop_target() {
  if [[ -n $target_pid ]]; then
    kill "$target_pid" 2> /dev/null || true
    wait "$target_pid" 2> /dev/null || true
    target_pid=
  fi
}
trap stop_target EXIT

unpacked=$tmp/unpacked
rm -rf "$unpacked" && mkdir "$unpacked"
tar --extract --gzip --file "$archive" --directory "$unpacked"
top=$unpacked/ctxprof-$version-linux-x64
want="ctxprof-$version-linux-x64/
ctxprof-$version-linux-x64/NOTICE
ctxprof-$version-linux-x64/README.md
ctxprof-$version-linux-x64/bin/
ctxprof-$version-linux-x64/bin/ctxprof
ctxprof-$version-linux-x64/lib/
ctxprof-$version-linux-x64/lib/ctxprof.jar
ctxprof-$version-linux-x64/lib/libctxprof.so"
got=$(tar --list --gzip --file "$archive")
[[ $got == "$want" ]] || fail "archive holds:
$got
want:
$want"

# --version, run directly and through a link on PATH (argv[0] without a folder).
[[ $("$top/bin/ctxprof" --version) == "ctxprof $version" ]] ||
  fail "bin/ctxprof --version: $("$top/bin/ctxprof" --version)"
mkdir -p "$tmp/path"
ln -sf "$top/bin/ctxprof" "$tmp/path/ctxprof"
export PATH=$tmp/path:$PATH
[[ $(ctxprof --version) == "ctxprof $version" ]] || fail "ctxprof --version through PATH"

# The jar: Maven coordinates and the manifest's version.
jar=$top/lib/ctxprof.jar
unzip -p "$jar" META-INF/maven/io.ctxprof/ctxprof/pom.properties > "$tmp/pom.properties"
grep -qx "groupId=io.ctxprof" "$tmp/pom.properties" || fail "pom.properties: no groupId"
grep -qx "artifactId=ctxprof" "$tmp/pom.properties" || fail "pom.properties: no artifactId"
grep -qx "version=$version" "$tmp/pom.properties" || fail "pom.properties: not version $version"
unzip -p "$jar" META-INF/maven/io.ctxprof/ctxprof/pom.xml | grep -q "<version>$version</version>" ||
  fail "pom.xml: not version $version"
unzip -p "$jar" META-INF/MANIFEST.MF | tr -d '\r' | grep -qx "Implementation-Version: $version" ||
  fail "MANIFEST.MF: no Implementation-Version: $version"

# The report of `recording` has samples in `method` (Class.method).
expect_samples() {
  local what=$1 recording=$2 method=$3
  [[ -s $recording ]] || fail "$what: no recording $recording"
  # Every method (--top): the leaf is often a stub (Math.sin) or the JIT, the method in total.
  ctxprof report "$recording" --top 100000 --quiet > "$tmp/report.txt" 2> "$tmp/report.err" ||
    fail "$what: ctxprof report: $(cat "$tmp/report.err")"
  grep -q "$method" "$tmp/report.txt" ||
    fail "$what: no $method in the report: $(head -20 "$tmp/report.txt")"
}

check_jdk() {
  local home=$1 name
  name=$(basename "$home")
  echo "== $name"

  # attach: a plain JVM, started without any ctxprof option. Its output has a file per JDK: the
  # background shell truncates a shared one only after the loop below may have read it, so the
  # previous JDK's "ready" could be taken for this one's.
  local spin_out=$tmp/spin-$name.out
  "$home/bin/java" -XX:+EnableDynamicAgentLoading "$spin_java" > "$spin_out" 2>&1 &
  target_pid=$!
  for _ in $(seq 300); do
    grep -q ready "$spin_out" && break
    kill -0 "$target_pid" 2> /dev/null || fail "$name: Spin exited: $(cat "$spin_out")"
    sleep 0.1
  done
  grep -q ready "$spin_out" || fail "$name: Spin did not start: $(cat "$spin_out")"
  local recording=$tmp/attach-$name.jfr
  timeout 60 ctxprof attach "$target_pid" start --interval 10ms -o "$recording" ||
    fail "$name: attach start"
  sleep 2
  timeout 60 ctxprof attach "$target_pid" status > "$tmp/status.txt" || fail "$name: attach status"
  grep -q "^running; .*; version=$version$" "$tmp/status.txt" ||
    fail "$name: status: $(cat "$tmp/status.txt")"
  timeout 60 ctxprof attach "$target_pid" stop || fail "$name: attach stop"
  stop_target
  expect_samples "$name attach" "$recording" "Spin.spin"

  # record: the tool starts the JVM with -agentpath of the library it found.
  recording=$tmp/record-$name.jfr
  timeout 120 ctxprof record --interval 10ms -o "$recording" -- "$home/bin/java" "$spin_java" 3000 \
    > "$tmp/record.out" 2>&1 || fail "$name: record: $(cat "$tmp/record.out")"
  expect_samples "$name record" "$recording" "Spin.spin"

  # The jar alone, copied into a folder of its own (no libctxprof.so next to it): no library
  # path, no agent; its own java.io.tmpdir to see the library's copy go.
  recording=$tmp/jar-$name.jfr
  rm -rf "$tmp/java-tmp" "$tmp/jar-only" && mkdir "$tmp/java-tmp" "$tmp/jar-only"
  cp "$jar" "$tmp/jar-only/ctxprof.jar"
  timeout 120 "$home/bin/java" -Djava.io.tmpdir="$tmp/java-tmp" -cp "$tmp/jar-only/ctxprof.jar" \
    "$jar_alone_java" \
    "$recording" > "$tmp/jar.out" 2>&1 || fail "$name: jar alone: $(cat "$tmp/jar.out")"
  grep -q "^status: running; .*; version=$version$" "$tmp/jar.out" ||
    fail "$name: jar alone: $(cat "$tmp/jar.out")"
  grep -qx "library: $tmp/java-tmp/ctxprof-[^/]*/libctxprof.so" "$tmp/jar.out" ||
    fail "$name: jar alone: the library was not the jar's temporary copy: $(cat "$tmp/jar.out")"
  grep -qx "Implementation-Version: $version" "$tmp/jar.out" ||
    fail "$name: jar alone: no Implementation-Version: $(cat "$tmp/jar.out")"
  [[ -z $(ls -A "$tmp/java-tmp") ]] ||
    fail "$name: the library's temporary copy outlived the JVM: $(ls -AR "$tmp/java-tmp")"
  expect_samples "$name jar alone" "$recording" "JarAlone.burn"
}

jdks=$(ctxprof_jdks)
for home in $jdks; do
  check_jdk "$home"
done

# The Debian package: its files, its version, and its ctxprof recording with its own library.
echo "== $(basename "$deb")"
[[ $(dpkg-deb --field "$deb" Package Version Architecture) == "Package: ctxprof
Version: $version
Architecture: amd64" ]] || fail "deb control: $(dpkg-deb --field "$deb")"
dpkg-deb --field "$deb" Depends | grep -q "libc6" || fail "deb: no Depends on libc6"
want_deb="./usr/bin/ctxprof
./usr/lib/ctxprof/libctxprof.so
./usr/share/doc/ctxprof/README.md
./usr/share/doc/ctxprof/copyright
./usr/share/java/ctxprof.jar"
got_deb=$(dpkg-deb --contents "$deb" | awk '$1 !~ /^d/ { print $6 }')
[[ $got_deb == "$want_deb" ]] || fail "deb holds:
$got_deb
want:
$want_deb"
installed=$tmp/deb-root
rm -rf "$installed" && mkdir "$installed"
dpkg-deb --extract "$deb" "$installed"
[[ $("$installed/usr/bin/ctxprof" --version) == "ctxprof $version" ]] || fail "deb: --version"
home=$(echo "$jdks" | head -1)
recording=$tmp/deb.jfr
timeout 120 "$installed/usr/bin/ctxprof" record --interval 10ms -o "$recording" -- \
  "$home/bin/java" "$spin_java" 3000 > "$tmp/deb.out" 2>&1 || fail "deb: record: $(cat "$tmp/deb.out")"
expect_samples "deb record" "$recording" "Spin.spin"
echo "PASS: $(echo "$jdks" | wc -l) JDK(s)"
