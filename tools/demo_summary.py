#!/usr/bin/env python3
"""The demo's per-endpoint summary and its check against the load generator (tools/demo.sh).

Reads what the demo wrote and prints, per endpoint: the share of the CPU samples, the wall time
sampled on its requests by thread state, the bytes allocated, the time blocked, and the median
and 99th percentile of its requests' span lengths; then the comparison with the load generator
(what the service measured for every request it answered, added up per endpoint): ONE line for
the CPU and wall shares, one for the percentiles.

  --load FILE          the load generator's --summary (tab-separated: endpoint, requests,
                       errors, cpu_nanos, alloc_bytes, blocked_nanos, span_nanos,
                       span_p50_nanos, span_p99_nanos)
  --latency FILE       `ctxprof report --latency --by endpoint` of the recording
  --cpu/--alloc/--lock FILE
                       `ctxprof convert --to collapsed --events cpu|alloc|lock` of the recording
                       (counts: samples, bytes, nanoseconds)
  --states FILE        the agent's collapsed dump (`ctxprof attach PID dump`), whose lines start
                       with [cpu]|[wall] and [running]|[sleeping]|[unknown]: the only output
                       that keeps a wall sample's thread state
  --wall-interval-ms N the wall sampling interval (a wall count is a number of intervals)
  --tolerance P        the largest difference of shares, in percentage points, still called a
                       match (default 5)
  --latency-tolerance P  the largest relative difference of a percentile still called a match
                       (default 10 %)

Exit status 0 when the summary was printed (whether or not the shares match), 1 for missing or
malformed input.
"""

import argparse
import re
import sys


class InputError(Exception):
    pass


def unescape_collapsed(text):
    """Undoes the %XX escaping of `ctxprof convert --to collapsed` (docs/TOOLS.md)."""
    out = bytearray()
    i = 0
    raw = text.encode("utf-8")
    while i < len(raw):
        if raw[i] == ord("%") and i + 2 < len(raw):
            out.append(int(raw[i + 1 : i + 3], 16))
            i += 3
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", errors="replace")


def split_line(path, number, line):
    """A collapsed line: (frames, count); the count follows the last space."""
    stack, _, count = line.rpartition(" ")
    if not stack or not count.isdigit():
        raise InputError(f"{path}:{number}: not a collapsed-stack line (FRAMES COUNT): {line!r}")
    return stack.split(";"), int(count)


def context_value(frame, attribute):
    """The value of `attribute` if `frame` is a context frame [attribute=value], else None."""
    prefix = "[" + attribute + "="
    if frame.startswith(prefix) and frame.endswith("]"):
        return frame[len(prefix) : -1]
    return None


def stack_lines(path):
    """(line number, frames, count) of each non-empty collapsed line of `path`."""
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            line = line.rstrip("\n")
            if line:
                frames, count = split_line(path, number, line)
                yield number, frames, count


def leading_context(frames, attribute):
    """The raw value of `attribute` among the context frames that lead `frames`; None if absent."""
    value = None
    for frame in frames:
        if not frame.startswith("[") or "=" not in frame:
            break
        found = context_value(frame, attribute)
        if found is not None:
            value = found
    return value


def read_collapsed(path, attribute="endpoint"):
    """Sums a `ctxprof convert --to collapsed` file per value of `attribute`; None = no value."""
    totals = {}
    for _, frames, count in stack_lines(path):
        value = leading_context(frames, attribute)
        if value is not None:
            value = unescape_collapsed(value)
        totals[value] = totals.get(value, 0) + count
    return totals


def read_states(path, attribute="endpoint"):
    """Sums the agent dump's wall lines per (value of `attribute`, thread state)."""
    totals = {}
    for number, frames, count in stack_lines(path):
        if len(frames) < 2 or frames[0] not in ("[cpu]", "[wall]"):
            raise InputError(f"{path}:{number}: a dump line starts with [cpu] or [wall]")
        if frames[0] != "[wall]":
            continue
        key = (leading_context(frames[2:], attribute), frames[1].strip("[]"))
        totals[key] = totals.get(key, 0) + count
    return totals


def read_load(path):
    """The load generator's summary: {endpoint: {column: int}} in file order."""
    rows = {}
    with open(path, encoding="utf-8") as lines:
        header = lines.readline().rstrip("\n").split("\t")
        wanted = ["endpoint", "requests", "errors", "cpu_nanos", "alloc_bytes", "blocked_nanos",
                  "span_nanos", "span_p50_nanos", "span_p99_nanos"]
        if header != wanted:
            raise InputError(f"{path}: the header is not {' '.join(wanted)}")
        for number, line in enumerate(lines, 2):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != len(wanted) or not all(f.isdigit() for f in fields[1:]):
                raise InputError(
                    f"{path}:{number}: want {len(wanted)} tab-separated fields, whole numbers "
                    "after the endpoint"
                )
            rows[fields[0]] = dict(zip(wanted[1:], map(int, fields[1:])))
    if not rows:
        raise InputError(f"{path}: no endpoints")
    return rows


def shares(amounts, keys):
    """Each key's share of the sum over `keys`, in percent."""
    total = sum(amounts.get(key, 0) for key in keys)
    return {key: (100.0 * amounts.get(key, 0) / total if total else 0.0) for key in keys}


LATENCY_ROW = re.compile(
    r"^\s*(\d+)" + r"\s+([0-9.]+) (ns|us|ms|s)" * 5 + r'\s+endpoint = "(.*)"$')
UNIT_NANOS = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def read_latency(path):
    """`ctxprof report --latency --by endpoint`: {endpoint: (spans, p50 ns, p99 ns)}."""
    rows = {}
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            match = LATENCY_ROW.match(line.rstrip("\n"))
            if match:
                value = lambda i: float(match.group(i)) * UNIT_NANOS[match.group(i + 1)]
                rows[match.group(12)] = (int(match.group(1)), value(2), value(6))
    if not rows:
        raise InputError(f"{path}: no per-endpoint rows of ctxprof report --latency")
    return rows


def compare_line(what, measured, expected, endpoints, tolerance):
    """The one line saying whether the profile's `what` shares match the generator's."""
    pairs = ", ".join(
        f"{e} {measured[e]:.1f} vs {expected[e]:.1f}" for e in endpoints
    )
    differences = {e: measured[e] - expected[e] for e in endpoints}
    worst = max(abs(d) for d in differences.values())
    if worst <= tolerance:
        return (
            f"{what} shares per endpoint match the load generator's within {worst:.1f} points "
            f"(profile vs generator, %: {pairs})"
        )
    off = ", ".join(
        f"{e} {differences[e]:+.1f}" for e in endpoints if abs(differences[e]) > tolerance
    )
    return (
        f"{what} shares per endpoint differ from the load generator's by more than "
        f"{tolerance:g} points: {off} (profile vs generator, %: {pairs})"
    )


def percentile_line(latency, load, endpoints, tolerance_percent):
    """The one line saying whether the profile's span percentiles match the generator's."""
    worst = 0.0
    pairs = []
    for e in endpoints:
        _, p50, p99 = latency.get(e, (0, 0.0, 0.0))
        for name, ours, theirs in (("p50", p50, load[e]["span_p50_nanos"]),
                                   ("p99", p99, load[e]["span_p99_nanos"])):
            worst = max(worst, abs(ours - theirs) / max(theirs, 1) * 100)
        pairs.append(f"{e} {p50 / 1e6:.2f}/{p99 / 1e6:.1f} vs "
                     f"{load[e]['span_p50_nanos'] / 1e6:.2f}/{load[e]['span_p99_nanos'] / 1e6:.1f}")
    verdict = (f"match the load generator's within {worst:.1f} %" if worst <= tolerance_percent
               else f"differ from the load generator's by up to {worst:.1f} %")
    return (f"Span p50/p99 per endpoint {verdict} (profile vs generator, ms: "
            + ", ".join(pairs) + ")")


def mib(amount):
    return f"{amount / (1 << 20):.1f} MiB"


def summarize(args):
    load = read_load(args.load)
    cpu = read_collapsed(args.cpu)
    alloc = read_collapsed(args.alloc)
    lock = read_collapsed(args.lock)
    states = read_states(args.states)
    latency = read_latency(args.latency)
    endpoints = list(load)
    extra = sorted(v for v in set(cpu) | set(alloc) | set(lock) if v and v not in load)
    if extra:
        raise InputError(f"the profile has endpoints the load generator did not send: {extra}")
    if sum(cpu.get(e, 0) for e in endpoints) == 0:
        raise InputError(f"{args.cpu}: no CPU samples with an endpoint")
    if sum(load[e]["cpu_nanos"] for e in endpoints) == 0:
        raise InputError(f"{args.load}: the service measured no CPU time")

    measured = shares(cpu, endpoints)
    expected = shares({e: load[e]["cpu_nanos"] for e in endpoints}, endpoints)
    wall_seconds = args.wall_interval_ms / 1000.0
    out = [
        "CPU share: of the CPU samples taken in requests. Wall: time sampled on threads in a",
        "request, running (on a CPU, or ready and waiting for one) or sleeping (in a blocking",
        "system call: socket, futex). Allocated: sampled bytes. Blocked: monitor and park waits.",
        "p50/p99: the requests' span lengths (ctxprof.SpanLatency: every span, sampled or not).",
        f"{'endpoint':<12} {'CPU share':>9} {'wall running':>13} {'wall sleeping':>14} "
        f"{'allocated':>11} {'blocked':>11} {'p50':>10} {'p99':>10}",
    ]
    wall = {}
    for e in endpoints:
        running = states.get((e, "running"), 0) + states.get((e, "unknown"), 0)
        sleeping = states.get((e, "sleeping"), 0)
        wall[e] = running + sleeping
        _, p50, p99 = latency.get(e, (0, 0.0, 0.0))
        out.append(
            f"{e:<12} {measured[e]:>7.1f} % {running * wall_seconds:>11.2f} s "
            f"{sleeping * wall_seconds:>12.2f} s {mib(alloc.get(e, 0)):>11} "
            f"{lock.get(e, 0) / 1e6:>8.1f} ms {p50 / 1e6:>7.2f} ms {p99 / 1e6:>7.1f} ms"
        )
    all_cpu = sum(cpu.values())
    outside = all_cpu - sum(cpu.get(e, 0) for e in endpoints)
    out.append(
        f"({all_cpu - outside} CPU samples in requests; {outside} more, "
        f"{100.0 * outside / all_cpu:.1f} % of all, outside any request: the reports' "
        f"\"(no context)\")"
    )
    out.append(compare_line("CPU", measured, expected, endpoints, args.tolerance))
    if sum(wall.values()) and sum(load[e]["span_nanos"] for e in endpoints):
        out.append(compare_line(
            "Wall", shares(wall, endpoints),
            shares({e: load[e]["span_nanos"] for e in endpoints}, endpoints), endpoints,
            args.tolerance))
    out.append(percentile_line(latency, load, endpoints, args.latency_tolerance))
    return "\n".join(out) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag in ("--load", "--cpu", "--alloc", "--lock", "--states", "--latency"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--wall-interval-ms", type=float, required=True)
    parser.add_argument("--tolerance", type=float, default=5.0)
    parser.add_argument("--latency-tolerance", type=float, default=10.0)
    args = parser.parse_args(argv)
    try:
        sys.stdout.write(summarize(args))
    except (InputError, OSError, UnicodeDecodeError) as e:
        print(f"demo_summary: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
