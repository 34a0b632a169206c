#!/usr/bin/env bash
# Installs the Debian packages ctxprof builds and tests with, if any is missing.
# Usage: tools/install-deps.sh [--update]   (--update: always run apt-get update first, as CI does)
set -euo pipefail

packages=(
  bazel-bootstrap bazel-platforms bazel-rules-java   # Bazel 4.2.3 and the repos it needs offline
  g++ libgtest-dev libbenchmark-dev libunwind-dev    # C++ toolchain and libraries
  clang-format                                       # the format check
  clang libclang-rt-14-dev                           # libFuzzer + sanitizer runtimes (tests/fuzz)
  openjdk-17-jdk-headless junit5                     # the JDK (jfr tool, javac) and JUnit 5
  python3
  zlib1g-dev protobuf-compiler chromium              # ctxprof tool: gzip (pprof), its decode test, the flame page test
  golang-github-google-pprof-dev                     # the pprof schema (profile.proto) that decode test reads
  libssl-dev openssl                                 # upload=https:// (TLS); the upload test's certificate
  libc6-dbg                                          # libc's debug file: the symbolizer tests name clone3, start_thread
  dpkg-dev unzip                                     # //:deb's Depends (dpkg-shlibdeps); the release test reads the jar
)

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
  [ "$status" = "installed" ] || missing+=("$package")
done

if [ "${1:-}" = "--update" ] || [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "ctxprof: missing Debian packages: ${missing[*]}" >&2
    echo "ctxprof: run this script as root (or install them with sudo apt-get install)" >&2
    exit 1
  fi
  echo "ctxprof: installing ${missing[*]:-(nothing missing; refreshing package lists)}" >&2
  apt-get update -qq
  if [ ${#missing[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi
