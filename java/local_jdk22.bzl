"""@local_jdk22: a JDK 22+ javac, when one is installed, for the jar's java.lang.foreign classes.

The Java API is built with the local JDK 17 (@local_jdk) as Java 11 bytecode. Its JDK 22+
version of BlockMemory (java/src22) needs a javac that knows java.lang.foreign (final in 22).
This rule looks at $CTXPROF_JDK22_HOME, else at every /usr/lib/jvm/*/release, and exposes the
newest JDK >= 22 it finds as `@local_jdk22//:bin/javac` and `:bin/jar` (JDK 17's jar cannot read
JDK 22 class files), with `JDK22_JAVAC`, `JDK22_JAR` (those labels, or None) and `JDK22_VERSION`
in `@local_jdk22//:defs.bzl`. None found: the jar is built without its JDK 22+ classes and
JDK 22+ run the JDK 11 code (docs/JAVA.md). Re-detects when the variable changes or on
`bazel sync --configure`.
"""

def _java_version(repository_ctx, home):
    release = repository_ctx.path(home + "/release")
    if not release.exists or not repository_ctx.path(home + "/bin/javac").exists:
        return None
    for line in repository_ctx.read(release).splitlines():
        if line.startswith("JAVA_VERSION="):
            version = line.split("=", 1)[1].strip().strip('"')
            feature = version.split(".")[0].split("-")[0].split("+")[0]
            if feature.isdigit():
                return (int(feature), version)
    return None

def _local_jdk22_impl(repository_ctx):
    override = repository_ctx.os.environ.get("CTXPROF_JDK22_HOME", "")
    if override:
        homes = [override]
    else:
        jvm = repository_ctx.path("/usr/lib/jvm")
        homes = [str(entry) for entry in jvm.readdir()] if jvm.exists else []
    best = None
    for home in sorted(homes):
        version = _java_version(repository_ctx, home)
        if version and version[0] >= 22 and (best == None or version[0] > best[1][0]):
            best = (home, version)
    if best:
        for tool in ("javac", "jar"):
            repository_ctx.symlink(best[0] + "/bin/" + tool, "bin/" + tool)
        repository_ctx.file("BUILD.bazel", 'exports_files(["bin/javac", "bin/jar"])\n')
        repository_ctx.file("defs.bzl", 'JDK22_JAVAC = "@local_jdk22//:bin/javac"\n' +
                                        'JDK22_JAR = "@local_jdk22//:bin/jar"\n' +
                                        'JDK22_VERSION = "%s"\n' % best[1][1])
    else:
        repository_ctx.file("BUILD.bazel", "")
        repository_ctx.file("defs.bzl", "JDK22_JAVAC = None\nJDK22_JAR = None\nJDK22_VERSION = None\n")

local_jdk22 = repository_rule(
    implementation = _local_jdk22_impl,
    environ = ["CTXPROF_JDK22_HOME"],
    configure = True,
    local = True,
)
