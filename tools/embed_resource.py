#!/usr/bin/env python3
"""Writes a C++ header holding a file's bytes, for resources embedded at build time.

Usage: embed_resource.py INPUT OUTPUT NAMESPACE NAME

OUTPUT defines `inline constexpr std::string_view NAME` in NAMESPACE with INPUT's bytes exactly
(any byte, NUL included), one string literal per line of INPUT so the header reads like it.
"""
import os
import re
import sys


def literal(line):
    out = []
    for i, byte in enumerate(line):
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "?" and i > 0 and line[i - 1] == ord("?"):
            out.append("\\077")  # no "??x" trigraph in the literal
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:
            # Three octal digits always end the escape, whatever character follows.
            out.append("\\%03o" % byte)
    return '    "' + "".join(out) + '"'


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: embed_resource.py INPUT OUTPUT NAMESPACE NAME")
    source, output, namespace, name = sys.argv[1:]
    with open(source, "rb") as f:
        lines = f.read().splitlines(keepends=True) or [b""]
    guard = re.sub(r"\W", "_", namespace.replace("::", "_") + "_" + os.path.basename(output))
    guard = guard.upper() + "_"
    with open(output, "w") as f:
        f.write("// Generated from %s by tools/embed_resource.py: edit that file.\n" % source)
        f.write("#ifndef %s\n#define %s\n\n#include <string_view>\n\n" % (guard, guard))
        f.write("namespace %s {\n\n" % namespace)
        # An array sized by its literal keeps embedded NULs; the view leaves out the final one.
        f.write("inline constexpr char %sBytes[] =\n" % name)
        f.write("\n".join(literal(line) for line in lines) + ";\n")
        f.write("inline constexpr std::string_view %s(%sBytes, sizeof(%sBytes) - 1);\n\n"
                % (name, name, name))
        f.write("}  // namespace %s\n\n#endif  // %s\n" % (namespace, guard))


main()
