# Sourced by test scripts: ctxprof_jdks prints the JDK homes to test on, one per line.
# JDK 17 is required (Debian's openjdk-17); JDK 25 (Temurin, not a Debian package) is used when
# installed and skipped with a message otherwise.
ctxprof_jdk17() {
  local home
  for home in /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/java-17-openjdk-*; do
    [ -x "$home/bin/java" ] && { echo "$home"; return 0; }
  done
  echo "JDK 17 not found under /usr/lib/jvm: install openjdk-17-jdk-headless" >&2
  return 1
}

ctxprof_jdk25() {
  local home
  for home in /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/temurin-25*; do
    [ -x "$home/bin/java" ] && { echo "$home"; return 0; }
  done
  return 1
}

ctxprof_jdks() {
  ctxprof_jdk17
  ctxprof_jdk25 || echo "skipping JDK 25: not installed (looked for /usr/lib/jvm/temurin-25*)" >&2
}
