"""Builds jars with the local JDK's javac/jar: Bazel's java rules need downloads we can't make."""

def java_jar(name, srcs, deps = [], release = "11", visibility = None):
    """Compiles `srcs` against the `deps` jars into `<name>.jar` (Java `release` bytecode).

    Lint warnings are errors, except `try` (a scope held only for its close() is the idiom).
    """
    native.genrule(
        name = name,
        srcs = srcs + deps,
        outs = [name + ".jar"],
        tools = [
            "@local_jdk//:bin/javac",
            "@local_jdk//:bin/jar",
        ],
        cmd = """
set -eu
classes=$$(mktemp -d)
cp=""
for dep in {deps}; do cp="$$cp:$$dep"; done
$(location @local_jdk//:bin/javac) --release {release} -Xlint:all,-try -Werror -encoding UTF-8 \\
    -cp "$${{cp#:}}" -d "$$classes" {srcs}
$(location @local_jdk//:bin/jar) --create --file $@ -C "$$classes" .
rm -rf "$$classes"
""".format(
            deps = " ".join(["$(locations %s)" % d for d in deps]),
            srcs = " ".join(["$(locations %s)" % s for s in srcs]),
            release = release,
        ),
        visibility = visibility,
    )
