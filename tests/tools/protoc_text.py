"""Parses the text that `protoc --decode=MESSAGE` prints into nested dicts of lists (every field
is a list), for the checkers of ctxprof's protobuf outputs (pprof, OTLP). A field the schema in
use lacks (printed by number) is an error: the encoder wrote something the schema does not have.
"""


def parse(text, fail):
    root, stack = {}, []
    node = root
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            node = stack.pop()
        elif line.endswith("{"):
            child = {}
            node.setdefault(line[:-1].strip(), []).append(child)
            stack.append(node)
            node = child
        else:
            key, value = line.split(": ", 1)
            if key.isdigit():
                fail("field number %s is not in the schema: %s" % (key, line))
            if value.startswith('"'):
                # protoc escapes non-ASCII as octal bytes: decode them back to bytes, then UTF-8
                # where the bytes are text.
                raw = value[1:-1].encode("latin-1").decode("unicode_escape").encode("latin-1")
                try:
                    value = raw.decode("utf-8")
                except UnicodeDecodeError:
                    value = raw
            elif value[0].isdigit() or value[0] == "-":
                value = int(value)
            node.setdefault(key, []).append(value)
    return root
