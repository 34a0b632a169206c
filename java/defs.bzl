"""Builds jars with the local JDK's javac/jar: Bazel's java rules need downloads we can't make."""

load("@local_jdk22//:defs.bzl", "JDK22_JAR", "JDK22_JAVAC")

def java_jar(
        name,
        srcs,
        deps = [],
        release = "11",
        srcs_22 = [],
        manifest = None,
        resources = {},
        visibility = None):
    """Compiles `srcs` against the `deps` jars into `<name>.jar` (Java `release` bytecode).

    `manifest` is a file of main attributes merged into META-INF/MANIFEST.MF; `resources` maps
    files (labels of single files) to their paths inside the jar.

    `srcs_22` are classes for JDK 22 and later: when a JDK 22+ javac is installed
    (@local_jdk22), they are compiled against the others with `--release 22` and stored under
    META-INF/versions/22 of a multi-release jar, where JDK 22+ find them first; otherwise the jar
    has only the `srcs` classes, which then serve every JDK.

    Lint warnings are errors, except `try` (a scope held only for its close() is the idiom).
    """
    versioned = srcs_22 and JDK22_JAVAC
    manifest_flag = "--manifest $(location %s)" % manifest if manifest else ""
    compile_22 = """
versioned=$$(mktemp -d)
$(location {javac22}) --release 22 -Xlint:all,-try -Werror -encoding UTF-8 \\
    -cp "$$classes$${{cp}}" -d "$$versioned" {srcs_22}
$(location {jar22}) --create --file $@ {manifest} -C "$$classes" . --release 22 -C "$$versioned" .
rm -rf "$$versioned"
""".format(
        javac22 = JDK22_JAVAC,
        jar22 = JDK22_JAR,
        srcs_22 = " ".join(["$(locations %s)" % s for s in srcs_22]),
        manifest = manifest_flag,
    ) if versioned else """
$(location @local_jdk//:bin/jar) --create --file $@ {manifest} -C "$$classes" .
""".format(manifest = manifest_flag)
    native.genrule(
        name = name,
        srcs = srcs + srcs_22 + deps + ([manifest] if manifest else []) + list(resources.keys()),
        outs = [name + ".jar"],
        tools = [
            "@local_jdk//:bin/javac",
            "@local_jdk//:bin/jar",
        ] + ([JDK22_JAVAC, JDK22_JAR] if versioned else []),
        cmd = """
set -eu
classes=$$(mktemp -d)
cp=""
for dep in {deps}; do cp="$$cp:$$dep"; done
$(location @local_jdk//:bin/javac) --release {release} -Xlint:all,-try -Werror -encoding UTF-8 \\
    -cp "$${{cp#:}}" -d "$$classes" {srcs}
{copy_resources}
{package}
rm -rf "$$classes"
""".format(
            deps = " ".join(["$(locations %s)" % d for d in deps]),
            srcs = " ".join(["$(locations %s)" % s for s in srcs]),
            release = release,
            copy_resources = "\n".join([
                'mkdir -p "$$classes/$$(dirname {path})" && cp $(location {label}) "$$classes/{path}"'.format(
                    label = label,
                    path = path,
                )
                for label, path in resources.items()
            ]),
            package = compile_22,
        ),
        visibility = visibility,
    )
