"""Regenerates docs/PERFORMANCE.md from fresh measurements on this machine.

    bazel run -c opt //bench:report                      # ~10 minutes; rewrites docs/PERFORMANCE.md
    bazel run -c opt //bench:report -- --output FILE     # somewhere else
    bazel run //bench:report -- --quick --output FILE    # a fast smoke run; numbers meaningless
    bazel run -c opt //bench:report -- --sections events --output FILE   # only those sections
    ASYNC_PROFILER=/path/to/libasyncProfiler.so bazel run -c opt //bench:report   # ~9 min more

It runs every benchmark of the repository (context writes in C++ and Java, the signal handler's
cost distribution, the JFR writer, the platform's signal floor, the profiling overhead of a native
program and of a CPU-bound JVM workload with profiling off and on, interleaved, the same workload
under ctxprof and async-profiler side by side when $ASYNC_PROFILER names async-profiler's agent
library, and of allocation and lock events on an allocation-heavy and a contended JVM workload,
async-profiler's too when it is there)
and writes one Markdown file with the machine described. Every figure comes from this run; the
prose around the tables only states how to read them, and every "met"/"missed" is computed against
the target.

Benchmarks are noisy on shared machines: the script compares configurations within one run
(interleaved rounds, medians, spread as min..max) and records the load average before and after.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shlex
import statistics
import struct
import subprocess
import sys
import tempfile
import time


class ReportError(Exception):
    """A benchmark failed or printed something this script cannot read."""


def log(message):
    print("report: " + message, file=sys.stderr, flush=True)


def run(command, timeout, env=None):
    """Runs command (a list); returns its stdout. Raises ReportError naming it on failure."""
    shown = " ".join(shlex.quote(part) for part in command)
    try:
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise ReportError("timed out after %d s: %s" % (timeout, shown))
    except OSError as error:
        raise ReportError("cannot run %s: %s" % (shown, error))
    if result.returncode != 0:
        # Both streams: the JVM prints a failed start-up (an agent that does not load) on stdout.
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise ReportError("exit %d from %s\n%s" % (result.returncode, shown, tail))
    return result.stdout


def median(values):
    return statistics.median(values)


def spread(values, fmt):
    return "[%s .. %s]" % (fmt % min(values), fmt % max(values))


def verdict(ok):
    return "met" if ok else "**missed**"


TARGETS = []  # (what, target, measured, met) rows of the summary, in section order


def check(what, target, measured, ok):
    """Records a target for the summary; returns the verdict for the section's own table."""
    TARGETS.append((what, target, measured, ok))
    return verdict(ok)


def rotated(items, round_index):
    """items, rotated by round_index: no configuration always runs first (or last)."""
    shift = round_index % len(items)
    return items[shift:] + items[:shift]


# ---------------------------------------------------------------------------------------------
# The machine


def first_line(command):
    try:
        return run(command, timeout=30).strip().splitlines()[0]
    except (ReportError, IndexError):
        return "unknown"


def cpu_description():
    model, flags = "unknown CPU", set()
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name" and model == "unknown CPU":
                model = value.strip()
            elif key == "flags" and not flags:
                flags = set(value.split())
    tsc = "invariant TSC" if {"constant_tsc", "nonstop_tsc"} <= flags else "TSC not invariant"
    virtual = "virtual machine" if "hypervisor" in flags else "bare metal"
    return "%s, %d logical CPUs, %s, %s" % (model, os.cpu_count(), virtual, tsc)


def memory_gib():
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / (1024 * 1024)
    return 0.0


def os_name():
    try:
        with open("/etc/os-release") as release:
            for line in release:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def describe_jdk(jdk):
    """(short name such as "JDK 17.0.15", its runtime build line), from one `java -version`."""
    try:
        output = subprocess.run([jdk + "/bin/java", "-version"], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ReportError("cannot run %s/bin/java -version: %s" % (jdk, error))
    match = re.search(r'version "([^"]+)"', output)
    lines = output.strip().splitlines()
    return ("JDK " + (match.group(1) if match else os.path.basename(jdk)),
            lines[1] if len(lines) > 1 else (lines[0] if lines else "unknown"))


# ---------------------------------------------------------------------------------------------
# Native context writes (Google Benchmark)

CONTEXT_ROWS = [
    # (benchmark name prefix, label, what it measures, target in ns or None)
    ("BM_SetAttribute/real_time/threads:1", "`BM_SetAttribute`",
     "one attribute slot, seqlock-protected, cached block pointer", 2.0),
    ("BM_SetFullContext", "`BM_SetFullContext`",
     "trace id, span id and two attributes in one write", 5.0),
    ("BM_ClearContext", "`BM_ClearContext`", "trace, span and all eight slots to zero", None),
    ("BM_ReadSameThread", "`BM_ReadSameThread`",
     "consistent copy of the own block (the signal handler's read)", None),
    ("BM_ReadOtherThread", "`BM_ReadOtherThread`",
     "consistent copy of an idle thread's block (the wall sampler's read)", None),
    ("BM_Alt_PlainStore", "`BM_Alt_PlainStore`",
     "unprotected store into the block (readers can tear)", None),
    ("BM_Alt_ThreadLocal", "`BM_Alt_ThreadLocal`",
     "store into a `thread_local` block (invisible to other threads)", None),
    ("BM_Alt_SyscallTid", "`BM_Alt_SyscallTid`",
     "`gettid` syscall + lookup + seqlock write on every write", None),
    ("BM_Alt_Mutex", "`BM_Alt_Mutex`",
     "mutex-protected store (a signal handler could never take the lock)", None),
    ("BM_DictionaryHit", "`BM_DictionaryHit`", "intern a known 12-byte value (lock-free probe)",
     None),
    ("BM_DictionaryMiss", "`BM_DictionaryMiss`", "intern a new value (locked insert)", None),
]


def context_section(options):
    log("context writes: //bench:context_bench")
    repetitions = 1 if options.quick else 5
    min_time = 0.01 if options.quick else 0.2
    output = run([options.context_bench, "--benchmark_format=json",
                  "--benchmark_repetitions=%d" % repetitions,
                  "--benchmark_min_time=%g" % min_time], timeout=900)
    results = {}
    for benchmark in json.loads(output)["benchmarks"]:
        if benchmark.get("error_occurred"):
            raise ReportError("context_bench %s: %s" % (benchmark["name"],
                                                        benchmark.get("error_message")))
        if repetitions > 1 and benchmark.get("aggregate_name") != "median":
            continue
        name = benchmark.get("run_name", benchmark["name"])
        results[name] = benchmark["real_time"] if "real_time" in name else benchmark["cpu_time"]

    def get(prefix):
        for name, value in results.items():
            if name == prefix or name.startswith(prefix + "/"):
                return value
        raise ReportError("context_bench printed no %s" % prefix)

    one = get("BM_SetAttribute/real_time/threads:1")
    # With several threads Google Benchmark divides the wall time by the iterations of all
    # threads: the time per write per thread is that times the thread count.
    adjacent = 2 * get("BM_SetAttribute/real_time/threads:2")
    apart = 2 * get("BM_SetAttribute_BlocksAPageApart/real_time/threads:2")
    rows = ["| Benchmark | Median | What it measures | Target |", "|---|---:|---|---|"]
    for prefix, label, what, target in CONTEXT_ROWS:
        value = get(prefix)
        goal = ("≤ %g ns — %s" % (target, check(label + " (native)", "≤ %g ns" % target,
                                                 "%.2f ns" % value, value <= target))
                if target else "")
        rows.append("| %s | %.2f ns | %s | %s |" % (label, value, what, goal))
        if prefix.startswith("BM_SetAttribute/"):
            rows.append(
                "| `BM_SetAttribute` ×2 threads | %.2f ns per write per thread | two threads, "
                "blocks of consecutive tids (64 B apart) | within 20 %% of 1 thread — %s (%+.0f %%) |"
                % (adjacent, check("`BM_SetAttribute`, 2 threads vs 1", "within 20 %",
                                   "%+.0f %%" % ((adjacent / one - 1) * 100),
                                   adjacent <= 1.2 * one), (adjacent / one - 1) * 100))
            rows.append(
                "| `BM_SetAttribute_BlocksAPageApart` ×2 | %.2f ns per write per thread | two "
                "threads, blocks 4 KiB apart (no shared line or page) | (%+.0f %% vs 1 thread) |"
                % (apart, (apart / one - 1) * 100))
    seqlock_extra = one - get("BM_Alt_PlainStore")
    syscall_ratio = get("BM_Alt_SyscallTid") / one
    if adjacent <= 1.2 * one:
        two_threads = ("Two threads writing their own blocks stay within 20 % of one thread: "
                       "blocks are 64-byte aligned, so neighbours share no cache line.")
    elif apart >= 0.85 * adjacent:
        two_threads = (
            "Two threads slow each other down by %+.0f %% with adjacent blocks and by %+.0f %% "
            "with blocks a page apart: moving the blocks apart does not remove the slowdown, so "
            "it is not false sharing (the blocks are 64-byte aligned) but the two CPUs "
            "competing, as hyperthread siblings or vCPUs of one host core do. The 20 %% target "
            "needs two real cores to be checked." % ((adjacent / one - 1) * 100, (apart / one - 1) * 100))
    else:
        two_threads = (
            "Two threads slow down by %+.0f %% with adjacent blocks but only %+.0f %% with blocks "
            "a page apart: neighbouring blocks interfere (adjacent-line prefetch or sharing) and "
            "need more padding." % ((adjacent / one - 1) * 100, (apart / one - 1) * 100))
    notes = [
        "- The seqlock costs %.2f ns over an unprotected store: on x86-64 its release "
        "operations are plain stores to a line the thread already owns." % seqlock_extra,
        "- " + two_threads,
        "- Looking the tid up on every write (`BM_Alt_SyscallTid`) costs %.0f× the write, "
        "which is why callers cache the block pointer (Java per thread, the C API in "
        "initial-exec TLS)." % syscall_ratio,
        "- Dictionary lookups are paid once per distinct value per thread: the Java side "
        "caches ids.",
    ]
    command = ("bazel run -c opt //bench:context_bench -- --benchmark_repetitions=%d "
               "--benchmark_min_time=%g" % (repetitions, min_time))
    return ("## Context write costs, native\n\n`%s`, medians of %d repetition(s).\n\n" %
            (command, repetitions) + "\n".join(rows) + "\n\n" + "\n".join(notes) + "\n")


# ---------------------------------------------------------------------------------------------
# Java context writes (bench/java/io/ctxprof/ContextBench.java)

JAVA_FLOORS = [
    # (prefix of the floor's row in ContextBench's output, label); the rows end in the block
    # access, e.g. " (Unsafe)". The ordered store is the unit of the targets below.
    ("floor: plain 8-byte store", "floor: plain 8-byte store into the context map"),
    ("floor: ordered 8-byte store", "floor: ordered 8-byte store (release fence + store)"),
]
FLOOR_UNIT = "per ordered-store floor"
FAST_PATH_RATIOS = "ContextSetter / fast path"
JAVA_OPERATIONS = [
    # (operation printed by ContextBench, its JNI twin or None, label, target or None). A target
    # is ("floor", N): at most N ordered-store floors, ratios taken in the same fork (issue 14's
    # ns targets — 3 ns for the fast path's setAttribute, 5 ns through ContextSetter, 15 ns for
    # the one-write span — in units of this machine's floor, 0.6 ns, when they became ratios);
    # or ("fast path", operation, N): at most N times that operation, in the same fork (issue 29:
    # a span through ContextSetter costs at most twice the fast path's one-write span).
    ("setAttribute (handle, AttributeValue)", "setAttribute via JNI",
     "setAttribute: `ThreadHandle` + `AttributeValue` (fast path)", ("floor", 5)),
    ("setAttribute (handle, cached String)", None,
     "setAttribute: `ThreadHandle` + String (cached id)", None),
    ("setAttribute (cached value)", "setAttribute via JNI",
     "setAttribute: `ContextSetter` + String (cached id)", ("floor", 8)),
    ("setTraceContext", "setTraceContext via JNI", "setTraceContext: `ContextSetter`", None),
    ("clear", "clear via JNI", "clear: `ContextSetter`", None),
    ("span lifecycle (handle, one-write open)", "span lifecycle via JNI",
     "span lifecycle: `ThreadHandle.open(trace, 2 attributes)` in one write + close (fast path)",
     ("floor", 25)),
    ("span lifecycle (handle, AttributeValues)", "span lifecycle via JNI",
     "span lifecycle: `ThreadHandle.open(trace)` + 2 `setAttribute` + close", None),
    ("span lifecycle (open trace + 2 attributes, close restores)", "span lifecycle via JNI",
     "span lifecycle: `ContextSetter.open(trace)` + 2 `setAttribute(String)` + close",
     ("fast path", "span lifecycle (handle, one-write open)", 2.0)),
]
JAVA_LINE = re.compile(r"^(.*?)\s+([0-9.]+) ns\s+\[([0-9.]+) \.\. ([0-9.]+)\]\s+([0-9.]+) B/op$")
JAVA_RATIO = re.compile(r"^(.*?)\s+([0-9.]+)x\s+\[([0-9.]+) \.\. ([0-9.]+)\]$")
JAVA_RATIO_SECTION = re.compile(r"^(.*), same fork\s+median\s+fork ratios$")
JAVA_HEADER = re.compile(r"^Java (\S+) \(block access: (\w+)")


def java_bench(options, jdk):
    """({operation: (median ns, low, high, B/op)}, {ratio section: {name: (median, low, high)}},
    block access, arguments) of one ContextBench run."""
    arguments = (["--forks", "1", "--warmups", "1", "--iterations", "2", "--millis", "50"]
                 if options.quick else ["--forks", "3"])
    output = run([jdk + "/bin/java", "--enable-native-access=ALL-UNNAMED",
                  "-Dctxprof.library=" + options.library, "-cp",
                  options.api_jar + ":" + options.bench_jar, "io.ctxprof.ContextBench"]
                 + arguments, timeout=1200)
    results, ratios, access, section = {}, {}, None, None
    for line in output.splitlines():
        line = line.strip()
        match = JAVA_LINE.match(line)
        if match:
            results[match.group(1)] = tuple(float(match.group(i)) for i in (2, 3, 4, 5))
        heading = JAVA_RATIO_SECTION.match(line)
        if heading:
            section = heading.group(1).strip()
            ratios[section] = {}
        ratio = JAVA_RATIO.match(line)
        if ratio and section:
            ratios[section][ratio.group(1)] = tuple(float(ratio.group(i)) for i in (2, 3, 4))
        header = JAVA_HEADER.match(line)
        if header:
            access = header.group(2)
    if access is None:
        raise ReportError("ContextBench on %s printed no block access:\n%s" % (jdk, output))
    return results, ratios, access, " ".join(arguments)


def java_row(results, prefix, jdk_name):
    """The one row of `results` whose operation starts with `prefix` (the floors' end in their
    block access)."""
    for operation, values in results.items():
        if operation.startswith(prefix):
            return operation, values
    raise ReportError("ContextBench on %s printed no '%s...'" % (jdk_name, prefix))


def java_ratio(ratios, section, name, jdk_name):
    if name not in ratios.get(section, {}):
        raise ReportError("ContextBench on %s printed no ratio '%s' under '%s'"
                          % (jdk_name, name, section))
    return ratios[section][name]


def java_section(options):
    columns, accesses = [], []
    for jdk in options.jdks:
        log("Java context writes on %s" % options.jdk_names[jdk])
        results, ratios, access, arguments = java_bench(options, jdk)
        columns.append((options.jdk_names[jdk], results, ratios))
        accesses.append("%s: %s" % (options.jdk_names[jdk], access))
    header = ("| Operation | " + " | ".join(name + " (median [fork medians])" for name, _, _ in columns)
              + " | Ordered-store floors (median [forks]) | Allocated | Through JNI | Target |")
    rows = [header, "|---|" + "---:|" * len(columns) + "---:|---:|---:|---|"]
    for prefix, label in JAVA_FLOORS:
        cells = []
        for name, results, _ in columns:
            _, (value, low, high, _) = java_row(results, prefix, name)
            cells.append("%.2f ns %s" % (value, spread([low, high], "%.2f")))
        rows.append("| %s | %s | 1× (the unit) |  |  |  |" % (label, " | ".join(cells))
                    if prefix == JAVA_FLOORS[-1][0] else
                    "| %s | %s |  |  |  |  |" % (label, " | ".join(cells)))
    for operation, jni_operation, label, target in JAVA_OPERATIONS:
        cells, floors, jni, allocated, verdicts = [], [], [], [], []
        for name, results, ratios in columns:
            for wanted in filter(None, (operation, jni_operation)):
                if wanted not in results:
                    raise ReportError("ContextBench on %s printed no '%s'" % (name, wanted))
            value, low, high, bytes_per_op = results[operation]
            cells.append("%.1f ns %s" % (value, spread([low, high], "%.1f")))
            in_floors = java_ratio(ratios, FLOOR_UNIT, operation, name)
            floors.append("%.0f× %s" % (in_floors[0], spread(in_floors[1:], "%.0f")))
            allocated.append("%.0f B" % bytes_per_op)
            if jni_operation:
                jni.append("%.0f" % results[jni_operation][0])
            if target and target[0] == "floor":
                verdicts.append("%s %s" % (name, check(
                    "Java %s on %s" % (label, name), "≤ %d× the ordered-store floor" % target[1],
                    "%.0f×" % in_floors[0],
                    in_floors[0] <= target[1])))
            elif target:
                pair = "%s / %s" % (operation, target[1])
                ratio = java_ratio(ratios, FAST_PATH_RATIOS, pair, name)
                verdicts.append("%s %.2f× %s %s" % (name, ratio[0], spread(ratio[1:], "%.2f"), check(
                    "Java %s on %s" % (label, name),
                    "≤ %g× the fast path's one-write span" % target[2],
                    "%.2f×" % ratio[0],
                    ratio[0] <= target[2])))
        goal = ""
        if target and target[0] == "floor":
            goal = "≤ %d× floor — %s" % (target[1], ", ".join(verdicts))
        elif target:
            goal = "≤ %g× the fast path's one-write span, same fork — %s" % (
                target[2], ", ".join(verdicts))
        rows.append("| %s | %s | %s | %s | %s | %s |" % (
            label, " | ".join(cells), " / ".join(floors), " / ".join(allocated),
            " / ".join(jni) + " ns" if jni else "", goal))
    skipped = ("" if len(options.jdks) > 1 else
               "\nJDK 25 (Temurin) is not installed here: only JDK 17 was measured.\n")
    return (java_header(arguments, accesses, skipped) + "\n".join(rows) + "\n\n"
            + java_notes(columns) + timed_spans_section([(name, results) for name, results, _ in columns]))


# (timed operation, its untimed twin, label, clock reads per operation, target ratio, target).
TIMED_OPERATIONS = [
    ("span lifecycle (handle, one-write open)", "span lifecycle (handle, one-write open), untimed",
     "span lifecycle: `ThreadHandle.open(trace, 2 attributes)` + close", 2, 3.0, "≤ 3×"),
    ("setAttribute (handle, AttributeValue)", "setAttribute (handle, AttributeValue), untimed",
     "`ThreadHandle.setAttribute(AttributeValue)`", 1, 1.1, "unchanged (≤ 1.1×)"),
]


def timed_spans_section(columns):
    rows = ["| Operation | JDK | timed | untimed | ratio | timed − untimed − clock reads | Target |",
            "|---|---|---:|---:|---:|---:|---|"]
    clocks = []
    for name, results in columns:
        clock_rows = [key for key in results if key.startswith("floor: span clock read")]
        if not clock_rows:
            raise ReportError("ContextBench on %s printed no span clock floor" % name)
        clock = results[clock_rows[0]][0]
        clocks.append("%s: %.1f ns (%s)" % (name, clock, clock_rows[0].split("(")[1].rstrip(")")))
        for timed, untimed, label, reads, ratio_target, target in TIMED_OPERATIONS:
            for wanted in (timed, untimed):
                if wanted not in results:
                    raise ReportError("ContextBench on %s printed no '%s'" % (name, wanted))
            ratio = results[timed][0] / results[untimed][0]
            verdict = check("Timed %s on %s" % (label, name), target, "%.2f×" % ratio,
                            ratio <= ratio_target)
            rows.append("| %s | %s | %.1f ns | %.1f ns | %.2f× | %.1f ns | %s — %s |" % (
                label, name, results[timed][0], results[untimed][0], ratio,
                results[timed][0] - results[untimed][0] - reads * clock, target, verdict))
    return ("### Timed spans (issue 25)\n\n"
            "The same fork measures each write with the thread's span log (the default) and "
            "without it (`-Dctxprof.spanTiming=false` restores this path for a process), and one "
            "read of the span clock alone — %s. A timed write ends the interval it replaces: one "
            "clock read and a record of ten 8-byte stores; a span is two timed writes. Where the "
            "clock is `System.nanoTime()` (JDK 17; JDK 22+ without `--enable-native-access`) its "
            "two reads alone exceed 3× the untimed span: the JDK has no cheaper clock for Java "
            "code without JNI (docs/JAVA.md).\n\n" % "; ".join(clocks) + "\n".join(rows) + "\n")


def java_header(arguments, accesses, skipped):
    return ("## Context write costs, Java\n\n"
            "`bazel run -c opt //bench:java_context_bench -- %s` on each JDK. JMH is not "
            "available offline; `ContextBench` forks JVMs, warms up, measures in batches, feeds "
            "a blackhole and reports the median and the range of the per-fork medians of the "
            "measuring thread's **CPU time** per operation (on this shared machine wall time "
            "mostly measures descheduling), and the bytes it allocated per operation. Block "
            "access (docs/JAVA.md): %s — `sun.misc.Unsafe` up to JDK 21, `MemorySegment` from "
            "JDK 22 (the jar's multi-release classes; JDK 24+ warn on Unsafe memory access). "
            "The fast path is a `ThreadHandle` the caller keeps (no lookup of the thread's "
            "block) with pre-interned `AttributeValue`s (no value lookup); the span's fast path "
            "is the one-write `open`, which sets the trace and both attributes under one "
            "sequence bump. \"Through JNI\" is the same operation as a JNI call per write (the "
            "path of virtual threads), for comparison. Every row but those marked untimed is "
            "the default, timed write (below).\n\n"
            "Absolute nanoseconds differ from machine to machine (the same rows measured on "
            "another machine of this kind the same day came out 2–2.8× slower), so the targets "
            "are ratios taken **within each fork**: to the floors, two stores measured in the "
            "same JVM through the same access path as every write's field stores (`BlockMemory` "
            "into the context map): a plain 8-byte store of a changing value, and an ordered "
            "one (a release fence, then the store: how a write publishes its sequence). The "
            "stores rotate over the eight longs of a parked thread's block, so none is dead or "
            "loop-invariant, and the bench refuses a floor whose CPU time does not grow with "
            "the number of stores (the JIT removed them). \"Ordered-store floors\" is each "
            "row's median and range of the per-fork ratios, JDKs in the columns' order.\n%s\n"
            % (arguments, "; ".join(accesses), skipped))


def java_notes(columns):
    """What bounds the ContextSetter span's ratio, from the same forks' ratios."""
    handle_span = "span lifecycle (handle, AttributeValues)"
    setter_span = "span lifecycle (open trace + 2 attributes, close restores)"
    one_write = "span lifecycle (handle, one-write open)"
    four_writes, lookups = [], []
    for name, _, ratios in columns:
        four = java_ratio(ratios, FAST_PATH_RATIOS, "%s / %s" % (handle_span, one_write), name)
        found = java_ratio(ratios, FAST_PATH_RATIOS, "%s / %s" % (setter_span, handle_span), name)
        four_writes.append("%.2f× %s on %s" % (four[0], spread(four[1:], "%.2f"), name))
        lookups.append("%.2f× %s on %s" % (found[0], spread(found[1:], "%.2f"), name))
    return ("A span through `ContextSetter` — `open(trace)`, two `setAttribute(String)`, close "
            "— is four timed writes: four clock reads and three span-log records (the trace "
            "alone, then with each attribute added: an attribute change ends one interval and "
            "starts the next, `SpanLogTest`), where the one-write span is two writes, two clock "
            "reads and one record. The same four writes through a `ThreadHandle` with "
            "`AttributeValue`s, with nothing to look up, cost %s the one-write span in the "
            "same forks; the `ContextSetter` span costs %s those four writes (finding the "
            "thread's block and each value's id). So the span through `ContextSetter` meets "
            "2× only where four timed writes cost at most twice two: the clock reads are "
            "exactly 2:1, the records 3:1.\n\n" % (", ".join(four_writes), ", ".join(lookups)))


# ---------------------------------------------------------------------------------------------
# Signal handler cost distribution (bench/sampler/handler_cost_bench.cc)


WALKERS = {  # unwind= value printed by handler_cost_bench -> how the report names it
    "dwarf": "`unwind=dwarf` (default: unwind tables)",
    "libunwind": "`unwind=libunwind`",
    "fp": "`unwind=fp`",
}
CHAINS = {"nofp": "without", "fp": "with"}


def handler_section(options):
    log("handler cost distribution: //bench/sampler:handler_cost_bench")
    samples = 100 if options.quick else 3000
    output = run([options.handler_bench, str(samples)], timeout=1200)
    rows = ["| Walker | Frame pointers | Recursion | Frames | Samples | p50 | p90 | p99 | mean |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    p50 = {}  # (unwind, chain, "50" or "200") -> p50 in µs
    for line in output.splitlines():
        fields = line.split()
        if len(fields) != 9 or fields[0] not in WALKERS or fields[1] not in CHAINS:
            continue
        unwind, chain, recursion, frames, count, p50_ns, p90, p99, mean = fields
        rows.append("| %s | %s | %s | %.0f | %s | %.1f µs | %.1f µs | %.1f µs | %.1f µs |" % (
            WALKERS[unwind], CHAINS[chain], recursion, float(frames), count,
            float(p50_ns) / 1000, float(p90) / 1000, float(p99) / 1000, float(mean) / 1000))
        for depth, low, high in (("50", 40, 60), ("200", 180, 220)):
            if low <= float(frames) <= high:
                p50[(unwind, chain, depth)] = float(p50_ns) / 1000
    wanted = [("dwarf", "nofp", "50"), ("dwarf", "nofp", "200"), ("libunwind", "nofp", "50"),
              ("fp", "fp", "50")]
    missing = [key for key in wanted if key not in p50]
    if missing:
        raise ReportError("handler_cost_bench printed no rows for %s:\n%s" % (missing, output))
    dwarf_50, dwarf_200 = p50[("dwarf", "nofp", "50")], p50[("dwarf", "nofp", "200")]
    fp_50 = p50[("fp", "fp", "50")]
    return ("## Signal handler cost\n\n`bazel run -c opt //bench/sampler:handler_cost_bench -- "
            "%d`: the TSC at handler entry to the sample's publication, for a thread spinning "
            "at the bottom of a native recursion (four functions calling each other in turn), "
            "built with or without frame pointers, `cpu` engine at 1 ms, %d samples per row. "
            "Frames is what the walker found (the recursion plus ~5 frames of the chain's entry "
            "and the thread's start): the frame-pointer walker on code without them shows what "
            "it loses.\n\n" % (samples, samples) + "\n".join(rows) + "\n\n"
            "Targets, default walker on code without frame pointers: p50 ≤ 2 µs at 50 frames: "
            "%.1f µs — %s; p50 ≤ 6 µs at 200 frames: %.1f µs — %s. For comparison at 50 frames: "
            "libunwind %.1f µs, `unwind=fp` on code with frame pointers %.1f µs — %s. Java "
            "threads use AsyncGetCallTrace for their Java frames; the native walker walks only "
            "threads without Java frames (docs/JAVA.md).\n"
            % (dwarf_50, check("handler p50, 50 native frames without frame pointers, "
                               "`unwind=dwarf`", "≤ 2 µs", "%.1f µs" % dwarf_50, dwarf_50 <= 2),
               dwarf_200, check("handler p50, 200 native frames without frame pointers, "
                                "`unwind=dwarf`", "≤ 6 µs", "%.1f µs" % dwarf_200, dwarf_200 <= 6),
               p50[("libunwind", "nofp", "50")], fp_50,
               check("handler p50, 50 native frames with frame pointers, `unwind=fp`", "≤ 2 µs",
                     "%.1f µs" % fp_50, fp_50 <= 2)))


# ---------------------------------------------------------------------------------------------
# JFR writer throughput and size (bench/jfr/jfr_writer_bench.cc)


def writer_section(options):
    log("JFR writer: //bench/jfr:jfr_writer_bench")
    repetitions = 1 if options.quick else 5
    output = run([options.writer_bench, "--benchmark_format=json",
                  "--benchmark_repetitions=%d" % repetitions]
                 + (["--benchmark_filter=new_stack_percent:1/hot:1"] if options.quick else []),
                 timeout=900, env=dict(os.environ, TMPDIR=options.scratch))
    runs = {}  # (percent, hot) -> [(samples/s, bytes/sample)], one per repetition
    for benchmark in json.loads(output)["benchmarks"]:
        match = re.search(r"new_stack_percent:(\d+)/hot:(\d)", benchmark["name"])
        if not match or benchmark.get("run_type") == "aggregate":
            continue
        if benchmark.get("error_occurred"):
            raise ReportError("jfr_writer_bench %s: %s" % (benchmark["name"],
                                                          benchmark.get("error_message")))
        runs.setdefault((match.group(1), match.group(2)), []).append(
            (benchmark["items_per_second"] / 1e6, benchmark["bytes_per_sample"]))
    if not runs:
        raise ReportError("jfr_writer_bench printed no BM_WriterSteadyState result:\n" + output)
    rows = ["| New stacks | Repeats drawn from | Samples/s: median [min .. max] | Bytes/sample | "
            "≥ 1 M/s | ≤ 20 B |", "|---:|---|---:|---:|---|---|"]
    for (percent, hot), values in runs.items():
        rates, sizes = [rate for rate, _ in values], [size for _, size in values]
        rate, size = median(rates), median(sizes)
        case = "%s %% new stacks, repeats from %s" % (
            percent, "the 1,000 hottest" if hot == "1" else "all seen")
        rows.append("| %s %% | %s | %.2f M %s | %.1f | %s | %s |" % (
            percent, "1,000 hottest stacks" if hot == "1" else "uniform over all seen", rate,
            spread(rates, "%.2f"), size,
            check("JFR writer rate, " + case, "≥ 1 M samples/s",
                  "%.2f M/s %s" % (rate, spread(rates, "%.2f")), rate >= 1),
            check("JFR size, " + case, "≤ 20 B/sample", "%.1f B" % size, size <= 20)))
    return ("## JFR writer\n\n`bazel run -c opt //bench/jfr:jfr_writer_bench`: the background "
            "thread's encoding of samples into JFR chunks (32-frame stacks, 16 threads, contexts "
            "changing every ~20 samples, 2,000,000 samples a run), written to a file; rates in "
            "samples per CPU second of the writer thread, over %d run%s. At 10 %% new stacks about "
            "half of the bytes are stack-trace pool entries of never-seen stacks (JFR has no "
            "prefix sharing); a sample event with an unchanged stack and context is ~13 bytes. "
            "The bench writes a file= recording flushed every second; in file mode every flush "
            "ends a chunk (so that every reader reads the file while it grows, docs/JFR.md), "
            "and Close folds them into one chunk (its CPU per sample is the bench's "
            "close_ns_per_sample, not in the rate).\n\n" % (repetitions,
                                                           "" if repetitions == 1 else "s")
            + "\n".join(rows) + "\n")


def spans_section(options):
    log("span drain: //bench/jfr:span_drain_bench")
    output = run([options.span_drain_bench, "--benchmark_format=json"]
                 + (["--benchmark_min_time=0.05"] if options.quick else []),
                 timeout=900, env=dict(os.environ, TMPDIR=options.scratch))
    rows = ["| Spans | Threads with a span log | `contexts=` | Spans/s | Bytes/span | Written |",
            "|---|---:|---|---:|---:|---:|"]
    for benchmark in json.loads(output)["benchmarks"]:
        match = re.search(r"BM_DrainSpans(Windowed)?/threads:(\d+)/all:([01])", benchmark["name"])
        if match:
            rows.append("| %s | %s | %s | %.2f M | %.1f | %.0f %% |" % (
                "20 µs, settled 50 ms behind" if match.group(1) else "1 ms, settled at once",
                match.group(2), "all" if match.group(3) == "1" else "triggered, nothing recorded",
                benchmark["items_per_second"] / 1e6, benchmark["bytes_per_span"],
                100 * benchmark["written"]))
    if len(rows) == 2:
        raise ReportError("span_drain_bench printed no BM_DrainSpans result:\n" + output)
    return ("## Timed spans drained by the writer thread\n\n`bazel run -c opt "
            "//bench/jfr:span_drain_bench`: the writer thread's whole share of a closed span — "
            "`SpanDrain::Drain` reads every thread's log and maps its times, "
            "`SpanIntervals` keeps it, `SpanLatencies` counts it, and with `contexts=all` writes it "
            "as a `ctxprof.Context` event (trace, span, two attributes; flushed every second of "
            "span time); with `contexts=triggered` and nothing recorded no span is written, which "
            "is what every request costs at any sampling rate — 256 spans "
            "per log per drain; the spans themselves are written outside the timed region, as "
            "their threads would. Spans of 1 ms are settled at each drain; spans of 20 µs (a busy "
            "service's requests) only 50 ms behind it, as a recording's reorder window does, so "
            "every thread keeps ~2,500 pending spans. CPU time of the writer thread per span, as "
            "spans per second:\n\n"
            + "\n".join(rows) + "\n")


UNTIMED = ["-Dctxprof.spanTiming=false"]
SPAN_CONFIGS = [  # (label, agent options, agent library, JVM options)
    ("off", None, None, UNTIMED),
    ("off, spans timed (the library loaded, no profiling)", None, None, ()),
    ("`cpu` at 10 ms, untimed (`-Dctxprof.spanTiming=false`)", "event=cpu,interval=10ms", None,
     UNTIMED),
    ("`cpu` at 10 ms, spans timed (default)", "event=cpu,interval=10ms", None, ()),
    ("`cpu` at 10 ms, spans timed, `contexts=all`", "event=cpu,interval=10ms,contexts=all", None,
     ()),
]


def span_overhead_section(options):
    sections = []
    for jdk in options.jdks:
        runs, ratios, rounds = jvm_overhead(options, jdk, SPAN_CONFIGS)
        off = runs["off"]
        requests_per_second = median([r["requests"] / r["wall"] for r in off])
        rows = ["| Configuration | Median CPU | vs untimed, unprofiled: median [range] |",
                "|---|---:|---:|"]
        for label, *_ in SPAN_CONFIGS:
            percent = [(ratio - 1) * 100 for ratio in ratios[label]]
            rows.append("| %s | %.3f s | %s |" % (
                label, median([r["cpu"] for r in runs[label]]),
                "" if label == "off" else "%+.2f %% %s" % (median(percent),
                                                          spread(percent, "%+.2f"))))
        sections.append("On %s (%d round(s), %.0f requests/s, each one span):\n\n%s\n" % (
            options.jdk_names[jdk], rounds, requests_per_second, "\n".join(rows)))
    return ("## Timed spans on a serving workload\n\n"
            "`OverheadWorkload` (below: every request is a span opened through `ContextSetter`, "
            "its endpoint set inside, and closed: three timed writes) with span timing off and on, unprofiled and "
            "profiled, in interleaved rounds; CPU of the measured phase relative to the "
            "untimed, unprofiled run. Timing is on by default whether or not a profiler runs: "
            "with no reader the logs fill and drop (counted), the writes cost the same.\n\n"
            + "\n".join(sections))


# ---------------------------------------------------------------------------------------------
# Overhead: the platform floor, a native program and a CPU-bound JVM workload

FLOOR_LINE = re.compile(r"^(off|\d+ms)\s+([0-9.]+)\s+(\d+)\s+([0-9.]+)\s+([-+0-9.]+)%\s+([-0-9.]+) us$")
NATIVE_LINE = re.compile(r"^(\S+)\s+([0-9.]+)\s+(\d+)\s+([0-9.]+)\s+([-+0-9.]+)%\s+([-0-9.]+) us$")


def floor_measurement(options):
    log("signal floor: //bench/sampler:signal_floor_bench")
    rounds, seconds = ("1", "0.2") if options.quick else ("7", "1")
    output = run([options.floor_bench, rounds, seconds], timeout=600)
    floor = {}
    for line in output.splitlines():
        match = FLOOR_LINE.match(line.strip())
        if match and match.group(1) != "off":
            floor[match.group(1)] = (float(match.group(5)), float(match.group(6)))
    if set(floor) != {"10ms", "1ms"}:
        raise ReportError("signal_floor_bench printed:\n" + output)
    return floor, rounds


def native_overhead(options):
    log("native overhead: //bench/sampler:overhead_bench")
    rounds = "1" if options.quick else "5"
    output = run([options.native_overhead_bench, rounds], timeout=1200)
    rows = ["| Configuration | Median CPU | Samples | Overhead (median ratio) | Extra CPU per sample |",
            "|---|---:|---:|---:|---:|"]
    for line in output.splitlines():
        match = NATIVE_LINE.match(line.strip())
        if match:
            rows.append("| `%s` | %.3f s | %s | %+.2f %% | %s |" % (
                match.group(1), float(match.group(2)), match.group(3), float(match.group(5)),
                "%.1f µs" % float(match.group(6)) if match.group(1) != "off" else ""))
    if len(rows) < 4:
        raise ReportError("overhead_bench printed:\n" + output)
    return rows, rounds


JVM_CONFIGS = [
    # (label, agent options or None, interval in seconds)
    ("off", None, None),
    ("`cpu` at 10 ms", "event=cpu,interval=10ms", 0.010),
    ("`cpu` at 1 ms", "event=cpu,interval=1ms", 0.001),
]
MEASURED = re.compile(
    r"^measured cpu_ns=(\d+) wall_ns=(\d+) requests=(\d+) allocated_bytes=(\d+) status=(.*)$")
THREAD = re.compile(r"^thread cpu_ns=(\d+) name=(.*)$")


# Requests per thread of OverheadWorkload's measured phase, per work: (full, --quick).
REQUESTS = {"compute": ("60000", "1500"), "alloc": ("200000", "2000"),
            "lock": ("400000", "10000")}


def jvm_run(options, jdk, agent_options, recording, work="compute", agent=None, java_options=()):
    """One OverheadWorkload run, profiled by `agent` (default: ctxprof's library) with
    `agent_options` when given; `java_options` go to the JVM."""
    threads = str(os.cpu_count())
    warmup = "1" if options.quick else "3"
    requests = REQUESTS[work][1 if options.quick else 0]
    command = [jdk + "/bin/java"] + list(java_options)
    if agent_options:
        command.append("-agentpath:%s=start,%s,file=%s" % (agent or options.library,
                                                           agent_options, recording))
    command += ["-Dctxprof.library=" + options.library, "-cp",
                options.api_jar + ":" + options.bench_jar, "io.ctxprof.OverheadWorkload",
                threads, warmup, requests, work]
    output = run(command, timeout=600)
    result = {"threads": {}}
    for line in output.splitlines():
        thread = THREAD.match(line)
        if thread:
            result["threads"][thread.group(2)] = int(thread.group(1)) / 1e9
        measured = MEASURED.match(line)
        if measured:
            result["cpu"] = int(measured.group(1)) / 1e9
            result["wall"] = int(measured.group(2)) / 1e9
            result["requests"] = int(measured.group(3))
            result["allocated"] = int(measured.group(4))
            status = measured.group(5)
            samples = re.search(r"samples=(\d+)", status)
            drops = re.search(r"drops=(\d+)", status)
            result["samples"] = int(samples.group(1)) if samples else 0
            result["drops"] = int(drops.group(1)) if drops else 0
    if "cpu" not in result:
        raise ReportError("OverheadWorkload printed no measurement:\n" + output)
    # Only ctxprof's status line counts samples (another agent's recording is read by the caller).
    if agent_options and agent is None and result["samples"] == 0:
        raise ReportError("profiling with %s recorded nothing:\n%s" % (agent_options, output))
    return result


def jvm_overhead(options, jdk, configs, work="compute", examine=None, failures=None,
                 rounds=5):
    """Interleaved rounds of OverheadWorkload `work` under each (label, agent options),
    (label, agent options, agent library) or (label, agent options, agent library, JVM options)
    of `configs`, one of them labelled "off" (the default library, None, is ctxprof's); returns
    runs and per-round CPU ratios to "off".

    examine(label, recording), when given, runs after each profiled run and its result is the
    run's "recording" entry. With a `failures` dict, a failing run of an agent other than
    ctxprof's is logged with its output and recorded there as label -> error, that label is
    left out of the later rounds, and the other configurations go on; without it (and for
    ctxprof's own runs) a failure ends the report. `rounds` is 1 with --quick."""
    rounds = 1 if options.quick else rounds
    runs = {config[0]: [] for config in configs}
    ratios = {config[0]: [] for config in configs}
    recording = os.path.join(options.scratch, "overhead.jfr")
    for round_index in range(rounds):
        log("JVM overhead (%s) on %s: round %d of %d" % (work, options.jdk_names[jdk],
                                                         round_index + 1, rounds))
        this_round = {}
        for label, agent_options, *more in rotated(configs, round_index):
            agent = more[0] if more else None
            java_options = more[1] if len(more) > 1 else ()
            if failures is not None and label in failures:
                continue
            if os.path.exists(recording):
                os.unlink(recording)
            try:
                result = jvm_run(options, jdk, agent_options, recording, work, agent,
                                 java_options)
                if examine and agent_options:
                    result["recording"] = examine(label, recording)
            except ReportError as error:
                if failures is None or agent is None:
                    raise
                log("%s failed, left out of the later rounds: %s" % (label, error))
                failures[label] = str(error)
                continue
            this_round[label] = result
            runs[label].append(result)
        for label in this_round:
            ratios[label].append(this_round[label]["cpu"] / this_round["off"]["cpu"])
    return runs, ratios, rounds


def sign_test(lower, rounds):
    """One-sided exact sign test: the chance that at least `lower` of `rounds` paired rounds
    favour one side when each round is a fair coin flip."""
    return sum(math.comb(rounds, k) for k in range(lower, rounds + 1)) / 2.0 ** rounds


def worker_cpu(run_result):
    return sum(cpu for name, cpu in run_result["threads"].items() if name.startswith("worker-"))


def writer_cpu(run_result):
    return run_result["threads"].get("ctxprof-writer", 0.0)


def overhead_section(options):
    floor, floor_rounds = floor_measurement(options)
    native_rows, native_rounds = native_overhead(options)
    jdk = options.jdks[0]
    runs, ratios, rounds = jvm_overhead(options, jdk, [(l, o) for l, o, _ in JVM_CONFIGS])
    off_cpu = median([r["cpu"] for r in runs["off"]])
    off_workers = median([worker_cpu(r) for r in runs["off"]])
    rows = ["| Profiling | Median CPU (measured phase) | Overhead: median [min .. max] of per-round "
            "ratios | Extra CPU in the workers (handler + signal delivery) | CPU of the ctxprof "
            "writer thread | ≈ extra CPU per sample | Samples / drops per run |",
            "|---|---:|---:|---:|---:|---:|---|"]
    overhead_10ms = None
    for label, agent_options, interval in JVM_CONFIGS:
        cpu = median([r["cpu"] for r in runs[label]])
        percent = [(ratio - 1) * 100 for ratio in ratios[label]]
        if agent_options is None:
            rows.append("| off | %.3f s | | | | | |" % cpu)
            continue
        workers = median([worker_cpu(r) for r in runs[label]])
        writer = median([r["threads"].get("ctxprof-writer", 0.0) for r in runs[label]])
        samples_in_phase = workers / interval  # the cpu engine samples every interval of CPU
        per_sample = (cpu - off_cpu) / samples_in_phase * 1e6
        if interval == 0.010:
            overhead_10ms = median(percent)
        rows.append("| %s | %.3f s | %+.2f %% %s | %+.1f ms | %.1f ms | %.0f µs | %d / %d |" % (
            label, cpu, median(percent), spread(percent, "%+.2f"), (workers - off_workers) * 1e3,
            writer * 1e3, per_sample, median([r["samples"] for r in runs[label]]),
            median([r["drops"] for r in runs[label]])))
    threads = os.cpu_count()
    floor_rows = ["| Period | Overhead | CPU per signal |", "|---|---:|---:|"]
    for period in ("10ms", "1ms"):
        floor_rows.append("| %s | %+.2f %% | %.1f µs |" % (period.replace("ms", " ms"),
                                                          floor[period][0], floor[period][1]))
    return (
        "## Profiling overhead\n\n"
        "### A CPU-bound JVM workload\n\n"
        "`bench/java/io/ctxprof/OverheadWorkload.java` on %s: %d worker threads (one per CPU) "
        "serve requests, each under its own context written through the Java API (trace, span, "
        "endpoint), computing at the bottom of ~30 Java frames; almost no allocation. After %s "
        "of warm-up (JIT, profiler start-up) the workers serve a fixed number of requests; the "
        "CPU time of all the JVM's threads in that phase is read from `/proc/self/task/*/"
        "schedstat` (exact to the ns; the workers stay alive until it is read). Profiling is off "
        "(the library is loaded for the context writes, the agent is not) or on with "
        "`-agentpath:libctxprof.so=start,event=cpu,interval=…,file=…` (default `cstack=dwarf`: "
        "native frames up to the VM's code, then the Java frames through AsyncGetCallTrace, "
        "written to JFR). %d round(s); each round runs "
        "every configuration once in a rotated order, and the overhead is the median of the "
        "per-round ratios to the unprofiled run, with their range.\n\n"
        % (options.jdk_names[jdk], threads, "1 s" if options.quick else "3 s", rounds)
        + "\n".join(rows) + "\n\n"
        "Target ≤ 1 %% at 10 ms: %s (%+.2f %%).\n\n"
        "\"≈ extra CPU per sample\" divides the extra CPU by the samples the measured phase must "
        "have had (worker CPU ÷ interval). Part of it is the platform's: the next table is the "
        "floor any perf_event-based profiler pays on this machine.\n\n"
        "### The platform floor\n\n"
        "`bazel run -c opt //bench/sampler:signal_floor_bench -- %s`: one thread, a perf_event "
        "cpu-clock signal at every overflow (a continuous event with a ring buffer, as ctxprof's) "
        "to a handler that only empties the ring (timer interrupt, signal frame, signal return "
        "and, in a VM, the hypervisor's share; a one-shot event re-armed by an ioctl after every "
        "signal, as async-profiler's, costs more: the bench's 1ms-oneshot row). Medians of "
        "interleaved "
        "rounds. Per-signal figures at 10 ms rest on ~100 signals and a few ms of CPU "
        "difference, so they are noisy; the 1 ms rows are the reliable ones, here and below."
        "\n\n" % (check("JVM CPU overhead, `cpu` at 10 ms", "≤ 1 %",
                                "%+.2f %%" % overhead_10ms, overhead_10ms <= 1.0),
                          overhead_10ms, floor_rounds)
        + "\n".join(floor_rows) + "\n\n"
        "### A native program\n\n"
        "`bazel run -c opt //bench/sampler:overhead_bench -- %s`: two threads doing 3 and 1 "
        "units of native work through the C API; process CPU from start to stop, including "
        "start-up, the background thread and symbolization; medians of interleaved rounds.\n\n"
        % native_rounds + "\n".join(native_rows) + "\n")


# ---------------------------------------------------------------------------------------------
# Side by side with async-profiler (its agent library from $ASYNC_PROFILER)

PEER_CONFIGS = [
    # (config, ctxprof's agent options, async-profiler's, the JFR sample event, interval in s).
    # Both agents take `start,` before and `,file=….jfr` after these (jvm_run).
    ("cpu, 10 ms", "event=cpu,interval=10ms", "event=cpu,interval=10ms", "jdk.ExecutionSample",
     0.010),
    ("cpu, 1 ms", "event=cpu,interval=1ms", "event=cpu,interval=1ms", "jdk.ExecutionSample",
     0.001),
    ("wall, 5 ms", "event=wall,interval=5ms", "event=wall,interval=5ms",
     "profiler.WallClockSample", 0.005),
]
PEER = "async-profiler"
# More rounds than the other sections: the targets compare two overheads a fraction of a point
# apart, and a round's spread on this machine is several points.
PEER_ROUNDS = 9


def recording_span(path):
    """Seconds from the first chunk's start to the last chunk's end of a JFR file, from its chunk
    headers (start ns at offset 32 and duration ns at 40, big-endian; chunk size at 8)."""
    with open(path, "rb") as recording:
        data = recording.read()
    starts, ends, offset = [], [], 0
    while offset + 48 <= len(data) and data[offset:offset + 4] == b"FLR\0":
        size, = struct.unpack_from(">q", data, offset + 8)
        start, duration = struct.unpack_from(">qq", data, offset + 32)
        starts.append(start)
        ends.append(start + duration)
        if size <= 0:
            break
        offset += size
    if not starts or max(ends) <= min(starts):
        raise ReportError("%s has no finished JFR chunk" % path)
    return (max(ends) - min(starts)) / 1e9


def recorded_samples(jdk, recording, event_type):
    """Events of `event_type` in a JFR file, their summed weight (the `samples` field where the
    event has one, as profiler.WallClockSample does for idle threads recorded as one weighted
    event; 1 otherwise) and the threads they sampled, read with the JDK's `jfr` tool, and the
    recording's span."""
    output = run([jdk + "/bin/jfr", "print", "--json", "--stack-depth", "1", "--events",
                  event_type, recording], timeout=600)
    try:
        events = json.loads(output)["recording"]["events"]
    except (ValueError, KeyError) as error:
        raise ReportError("`jfr print --json` of %s: %s" % (recording, error))
    if not events:
        raise ReportError("the recording has no %s events" % event_type)
    # The JDK's sample events name the thread sampledThread; profiler.WallClockSample is
    # declared with sampledThread by async-profiler and with eventThread by ctxprof.
    threads = {(event["values"].get("sampledThread") or event["values"].get("eventThread")
                or {}).get("osThreadId") for event in events}
    # ctxprof.Context events, which async-profiler does not write: their bytes from `jfr summary`.
    summary = run([jdk + "/bin/jfr", "summary", recording], timeout=600)
    context = re.search(r"^\s*ctxprof\.Context\s+\d+\s+(\d+)", summary, re.M)
    size = os.path.getsize(recording)
    return {"events": len(events),
            "bytes_per_event": size / len(events),
            "bytes_per_event_without_contexts":
                (size - (int(context.group(1)) if context else 0)) / len(events),
            "weight": sum(event["values"].get("samples", 1) for event in events),
            "threads": len(threads - {None}),
            "span": recording_span(recording)}


def peer_library(options, jdk):
    """(path of async-profiler's agent library, its version), or (None, why not)."""
    library = os.environ.get("ASYNC_PROFILER")
    if not library:
        return None, "`ASYNC_PROFILER` is not set"
    if not os.path.isfile(library):
        return None, "`ASYNC_PROFILER` names no file (%s)" % library
    try:
        version = run([jdk + "/bin/java", "-agentpath:%s=version" % library, "-version"],
                      timeout=120).strip().splitlines()
    except ReportError as error:
        log("async-profiler at %s does not load: %s" % (library, error))
        return None, "the library `ASYNC_PROFILER` names does not load (%s)" % library
    return library, version[0] if version else "unknown version"


def peer_section(options):
    jdk = options.jdks[0]
    library, version = peer_library(options, jdk)
    heading = "## Side by side with async-profiler\n\n"
    if library is None:
        log("side by side with async-profiler: skipped, " + version)
        return (heading + "Not measured: %s. Set it to a built libasyncProfiler.so to compare; "
                "the targets \"cpu 1 ms overhead below async-profiler's\" and \"wall 5 ms "
                "overhead at or below async-profiler's\" were not checked."
                "\n" % version)
    configs, event_types = [("off", None)], {}
    for config, ours, theirs, event_type, _ in PEER_CONFIGS:
        configs.append(("ctxprof " + config, ours))
        configs.append((PEER + " " + config, theirs, library))
        event_types["ctxprof " + config] = event_types[PEER + " " + config] = event_type
    failures = {}
    runs, ratios, rounds = jvm_overhead(
        options, jdk, configs,
        examine=lambda label, recording: recorded_samples(jdk, recording, event_types[label]),
        failures=failures, rounds=PEER_ROUNDS)
    rows = ["| Config | Profiler | Agent options | Overhead: median [min .. max] of per-round "
            "ratios | Sample events per run | Summed weight per run | Weight × interval ÷ "
            "recording span | Threads sampled | Recording bytes per sample event: median [min .. "
            "max] (without ctxprof.Context events) |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    size = {}
    overhead, paired_rows = {}, []
    for config, ours, theirs, _, interval in PEER_CONFIGS:
        for profiler, agent_options in (("ctxprof", ours), (PEER, theirs)):
            label = profiler + " " + config
            if label in failures or not ratios[label]:
                # The error's last line: the agent's own message where it printed one.
                reason = failures.get(label, "no run").strip().splitlines()[-1][:200]
                rows.append("| %s | %s | `%s` | failed: %s | | | | | |" % (
                    config, profiler, agent_options, reason.replace("|", "\\|")))
                continue
            percent = [(ratio - 1) * 100 for ratio in ratios[label]]
            recorded = [r["recording"] for r in runs[label]]
            accounted = median([r["weight"] * interval / r["span"] for r in recorded])
            overhead[(config, profiler)] = median(percent)
            with_contexts = [r["bytes_per_event"] for r in recorded]
            without_contexts = [r["bytes_per_event_without_contexts"] for r in recorded]
            size[(config, profiler)] = (median(with_contexts), median(without_contexts))
            rows.append("| %s | %s | `%s` | %+.2f %% %s | %d | %d | %.2f | %d | %.1f %s (%.1f %s) |"
                        % (config, profiler, agent_options, median(percent),
                           spread(percent, "%+.2f"), median([r["events"] for r in recorded]),
                           median([r["weight"] for r in recorded]), accounted,
                           median([r["threads"] for r in recorded]), median(with_contexts),
                           spread(with_contexts, "%.1f"), median(without_contexts),
                           spread(without_contexts, "%.1f")))
        # Both profilers ran in the same rounds (a failing one is left out of the later rounds
        # only), so round i of one pairs with round i of the other: the machine's load, which
        # moves both, drops out of the difference.
        ours_ratios, theirs_ratios = ratios["ctxprof " + config], ratios[PEER + " " + config]
        differences = [(a - b) * 100 for a, b in zip(ours_ratios, theirs_ratios)]
        if differences:
            lower = sum(1 for d in differences if d < 0)
            paired_rows.append("| %s | %+.2f points %s | %d of %d | %.2f |" % (
                config, median(differences), spread(differences, "%+.2f"), lower,
                len(differences), sign_test(lower, len(differences))))
    targets = []
    for config, relation, symbol, meets in (
            ("cpu, 1 ms", "below", "<", lambda ours, theirs: ours < theirs),
            ("wall, 5 ms", "at or below", "≤", lambda ours, theirs: ours <= theirs)):
        ours, theirs = overhead.get((config, "ctxprof")), overhead.get((config, PEER))
        if ours is None or theirs is None:
            targets.append("Target, %s: overhead %s async-profiler's: not checked (a run "
                           "failed)." % (config, relation))
            continue
        verdict_text = check("JVM %s overhead %s async-profiler's (same run)" % (config, relation),
                             "%s async-profiler's %+.2f %%" % (symbol, theirs), "%+.2f %%" % ours,
                             meets(ours, theirs))
        targets.append("Target, %s: overhead %s async-profiler's: %s (ctxprof %+.2f %%, "
                       "async-profiler %+.2f %%)." % (config, relation, verdict_text, ours,
                                                       theirs))
    ours, theirs = size.get(("cpu, 1 ms", "ctxprof")), size.get(("cpu, 1 ms", PEER))
    if ours is None or theirs is None:
        targets.append("Target, cpu 1 ms: recording bytes per sample at or below async-profiler's: "
                       "not checked (a run failed).")
    else:
        targets.append("Target, cpu 1 ms: recording bytes per sample at or below async-profiler's: "
                       "%s (ctxprof %.1f B, %.1f B without its ctxprof.Context events, which "
                       "async-profiler does not write; async-profiler %.1f B)." % (
                           check("JFR recording bytes per sample, cpu 1 ms, at or below "
                                 "async-profiler's (same run)", "≤ %.1f B" % theirs[0],
                                 "%.1f B (%.1f B without contexts)" % ours, ours[0] <= theirs[0]),
                           ours[0], ours[1], theirs[0]))
    target = " ".join(targets)
    paired = ("\n\nThe same rounds paired: ctxprof's overhead minus async-profiler's in each "
              "round (both ran in it, so the load the machine had then moves both), in how "
              "many rounds ctxprof cost less, and the sign test's chance of at least that many "
              "if neither profiler were cheaper (each round a coin flip): below 0.05 the margin "
              "is more than this machine's noise.\n\n| Config | ctxprof − async-profiler per "
              "round: median [min .. max] | Rounds ctxprof lower | Sign test p |\n"
              "|---|---:|---:|---:|\n" +
              "\n".join(paired_rows) if paired_rows else "")
    return (
        heading +
        "`bench/java/io/ctxprof/OverheadWorkload.java` on %s, as in \"A CPU-bound JVM "
        "workload\" above, profiled by ctxprof or by async-profiler %s (`-agentpath:$"
        "ASYNC_PROFILER=start,<options>,file=….jfr`) in the same run: %d round(s), each runs "
        "the unprofiled \"off\" and every row once in a rotated order; the overhead is the "
        "median of the per-round ratios of the measured phase's CPU to \"off\", with their "
        "range. The recordings are read with the JDK's `jfr print`: sample events "
        "(`jdk.ExecutionSample` for cpu, `profiler.WallClockSample` for wall) over the whole "
        "run (warm-up included) and their summed weight (the `samples` field of a wall "
        "event, which stands for that many ticks of a thread; 1 per cpu event). Weight × "
        "interval ÷ the recording's span (its chunk headers) is, for cpu, the CPUs the JVM "
        "kept busy and, for wall, the threads whose wall time is accounted for: with every "
        "thread accounted for it is about the number of live threads. \"Threads sampled\" "
        "counts the distinct threads of the sample events. Recording bytes per sample event: the "
        "file's size over its sample events, and in parentheses without the ctxprof.Context "
        "events (from `jfr summary`), which async-profiler does not write.\n\n"
        % (options.jdk_names[jdk], version, rounds)
        + "\n".join(rows) + paired + "\n\n" + target + "\n")


# ---------------------------------------------------------------------------------------------
# Overhead of the runtime events: allocation sampling and lock events

EVENT_CONFIGS = [
    # (work of OverheadWorkload, label, ctxprof's agent options, async-profiler's, the JFR
    # event types async-profiler records them as)
    ("alloc", "`alloc=512k`", "event=alloc,alloc=512k", "alloc=512k",
     ("jdk.ObjectAllocationInNewTLAB", "jdk.ObjectAllocationOutsideTLAB")),
    ("lock", "`lock=10ms`", "event=lock,lock=10ms", "lock=10ms",
     ("jdk.JavaMonitorEnter", "jdk.ThreadPark")),
]
# The allocation overhead is small next to this workload's run-to-run noise on a busy machine, so
# the same rounds also run it at 32 times the sampling rate: the extra CPU per sample measured
# there, times the samples alloc=512k takes, is an estimate that noise disturbs far less.
# (label, ctxprof's agent options, async-profiler's, interval in bytes)
AMPLIFIED_ALLOC = ("`alloc=16k`", "event=alloc,alloc=16k,buffer=16384", "alloc=16k", 16384)
JFR_SUMMARY_LINE = re.compile(r"^\s*(\S+)\s+(\d+)\s+\d+\s*$")


def recorded_event_count(jdk, recording, event_types):
    """How many events of `event_types` a JFR file holds, from the JDK's `jfr summary`."""
    output = run([jdk + "/bin/jfr", "summary", recording], timeout=600)
    counts = {}
    for line in output.splitlines():
        match = JFR_SUMMARY_LINE.match(line)
        if match:
            counts[match.group(1)] = int(match.group(2))
    return sum(counts.get(event_type, 0) for event_type in event_types)


def events_section(options):
    jdk = options.jdks[0]
    library, version = peer_library(options, jdk)
    if library is None:
        log("events side by side with async-profiler: skipped, " + version)
    rows = ["| Workload | Profiling | Median CPU, off | Median CPU, on | Overhead: median [min .. "
            "max] of per-round ratios | CPU of the ctxprof writer thread | Workers allocated | "
            "Events recorded / drops per run | Target |",
            "|---|---|---:|---:|---:|---:|---:|---|---|"]
    estimates = []
    alloc_estimates = {}  # profiler -> its alloc=512k per-sample estimate, in %
    for work, label, agent_options, peer_options, peer_event_types in EVENT_CONFIGS:
        # (label, agent options[, library]) and, for the allocation rows, the sampling interval
        # of the amplified configuration the per-sample estimate comes from.
        profiled = [("ctxprof", label, (label, agent_options))]
        amplified = {}
        if work == "alloc":
            amplified["ctxprof"] = (AMPLIFIED_ALLOC[0], AMPLIFIED_ALLOC[1])
        if library is not None:
            profiled.append((PEER, PEER + " " + label, (PEER + " " + label, peer_options,
                                                         library)))
            if work == "alloc":
                amplified[PEER] = (PEER + " " + AMPLIFIED_ALLOC[0], AMPLIFIED_ALLOC[2], library)
        configs = [("off", None)] + [config for _, _, config in profiled] + list(
            amplified.values())
        peer_labels = {config[0] for config in configs if len(config) == 3}
        failures = {}
        runs, ratios, rounds = jvm_overhead(
            options, jdk, configs, work,
            examine=lambda run_label, recording: (
                recorded_event_count(jdk, recording, peer_event_types)
                if run_label in peer_labels else None),
            failures=failures)
        for profiler, row_label, _ in profiled:
            if row_label in failures or not ratios[row_label]:
                reason = failures.get(row_label, "no run").strip().splitlines()[-1][:200]
                rows.append("| %s | %s | | | failed: %s | | | | |" % (
                    work, row_label, reason.replace("|", "\\|")))
                continue
            percent = [(ratio - 1) * 100 for ratio in ratios[row_label]]
            overhead = median(percent)
            estimated = session = None
            if profiler in amplified and amplified[profiler][0] not in failures:
                amplified_label, interval = amplified[profiler][0], AMPLIFIED_ALLOC[3]
                off_cpu = median([r["cpu"] for r in runs["off"]])
                samples_512k = median([r["allocated"] for r in runs["off"]]) / (512 * 1024)
                # Per round: extra CPU over "off" per sample the amplified run took in the
                # measured phase (about one per `interval` bytes allocated).
                per_sample = median([(on["cpu"] - off["cpu"]) / (on["allocated"] / interval)
                                     for on, off in zip(runs[amplified_label], runs["off"])])
                estimated = per_sample * samples_512k / off_cpu * 100
                if profiler == PEER:
                    estimates.append(
                        "%s: at %s the same rounds cost %.2f µs of extra CPU per allocation "
                        "sample (median of the per-round differences to \"off\", divided by the "
                        "measured phase's samples); times the samples `alloc=512k` takes in this "
                        "workload, that is **%+.2f %%** of its CPU, the less noisy estimate of "
                        "the row above." % (profiler, AMPLIFIED_ALLOC[0], per_sample * 1e6,
                                             estimated))
                else:
                    # ctxprof's writer thread is measured apart: its share per sample, and what
                    # it spends at alloc=512k beyond that share, which the scaling above leaves
                    # out (work that does not follow the sampling rate: it drains the span of
                    # every request at any rate).
                    outside = median([(on["cpu"] - writer_cpu(on) - off["cpu"])
                                      / (on["allocated"] / interval)
                                      for on, off in zip(runs[amplified_label], runs["off"])])
                    writer_per_sample = median([writer_cpu(on) / (on["allocated"] / interval)
                                                for on in runs[amplified_label]])
                    writer_512k = median([writer_cpu(r) for r in runs[row_label]])
                    fixed = max(0.0, writer_512k - writer_per_sample * samples_512k)
                    session = estimated + fixed / off_cpu * 100
                    estimates.append(
                        "%s: at %s the same rounds cost %.2f µs of extra CPU per allocation "
                        "sample (median of the per-round differences to \"off\", divided by the "
                        "measured phase's samples): %.2f µs outside its writer thread, %.2f µs "
                        "in it. Times the samples `alloc=512k` takes in this workload, that is "
                        "**%+.2f %%** of its CPU, the less noisy estimate of the row above and "
                        "the one its verdict uses. The writer thread's CPU in the `alloc=512k` "
                        "runs (%.1f ms) exceeds its share of those samples by %.1f ms: work that "
                        "does not shrink with the sampling rate (it wakes every 20 ms, and "
                        "drains the span every request of this workload opens); with it the "
                        "session costs **%+.2f "
                        "%%**." % (profiler, AMPLIFIED_ALLOC[0], per_sample * 1e6,
                                   outside * 1e6, writer_per_sample * 1e6, estimated,
                                   writer_512k * 1e3, fixed * 1e3, session))
            if profiler == PEER:
                recorded = "%d / —" % median([r["recording"] for r in runs[row_label]])
                target = "— (for comparison)"
            else:
                recorded = "%d / %d" % (median([r["samples"] for r in runs[row_label]]),
                                        median([r["drops"] for r in runs[row_label]]))
                # The allocation row's own median moves by tens of points between runs on a
                # shared machine; its verdict rests on the per-sample estimate when there is one.
                judged = overhead if estimated is None else estimated
                target = "≤ 2 %% — %s" % check(
                    "JVM CPU overhead, %s on the %s workload%s" % (
                        label, work, "" if estimated is None else ", per-sample estimate"),
                    "≤ 2 %", "%+.2f %%" % judged, judged <= 2.0)
                if session is not None:
                    check("JVM CPU overhead, `alloc=512k` session on the alloc workload with the "
                          "writer's work that does not follow the sampling rate, estimate",
                          "≤ 2 %", "%+.2f %%" % session, session <= 2.0)
            if estimated is not None:
                alloc_estimates[profiler] = estimated
            allocated = median([r["allocated"] / worker_cpu(r) for r in runs["off"]]) / 1e9
            writer = "—" if profiler == PEER else "%.1f ms" % (1e3 * median(
                [writer_cpu(r) for r in runs[row_label]]))
            rows.append("| %s | %s | %.3f s | %.3f s | %+.2f %% %s | %s | %.2f GB per CPU-second "
                        "| %s | %s |" % (
                            work, row_label, median([r["cpu"] for r in runs["off"]]),
                            median([r["cpu"] for r in runs[row_label]]), overhead,
                            spread(percent, "%+.2f"), writer, allocated, recorded, target))
    if "ctxprof" in alloc_estimates and PEER in alloc_estimates:
        ours, theirs = alloc_estimates["ctxprof"], alloc_estimates[PEER]
        check("JVM CPU overhead, `alloc=512k` at or below async-profiler's (same run, "
              "per-sample estimates)", "≤ async-profiler's %+.2f %%" % theirs, "%+.2f %%" % ours,
              ours <= theirs)
    peer = ("" if library is None else
            " async-profiler %s runs the same rows in the same rounds (`-agentpath:$ASYNC_PROFILER"
            "=start,alloc=512k,file=….jfr` or `lock=10ms`; its allocation sampler is the same "
            "JVMTI SampledObjectAlloc, with a JVMTI GetStackTrace per sample); its events are "
            "counted in its recording with `jfr summary` (the whole run, warm-up included)."
            % version)
    return (
        "## Overhead of allocation and lock events\n\n"
        "`bench/java/io/ctxprof/OverheadWorkload.java` on %s with %d worker threads, as above, "
        "but each request either builds a map of 32 fields (strings and small arrays), renders "
        "and encodes it (~9 KB in ~130 objects, with the hashing and copying that goes with "
        "them: `alloc`), or runs 16 short critical sections on one shared monitor and one "
        "shared ReentrantLock that every worker contends for (`lock`). \"Workers allocated\" "
        "is the unprofiled workers' allocation rate per second of their CPU time: the "
        "allocation overhead grows with it (one sample per 512 KiB a thread allocates). "
        "Profiling is off, or only the runtime events are on (no CPU sampling): "
        "`-agentpath:libctxprof.so=start,event=alloc,alloc=512k,file=…` (JVMTI "
        "SampledObjectAlloc; per sample the VM's own walk from the thread's last-Java-frame "
        "anchor, JVMTI GetStackTrace where it declines) or `event=lock,lock=10ms` (JVMTI "
        "contended-monitor callbacks and the Unsafe.park hook on every blocking wait; waits "
        "shorter than 10 ms are noticed and dropped). CPU time of all the JVM's threads in the "
        "measured phase; %d round(s), each runs off and on in a rotated order; the overhead is "
        "the median of the per-round ratios, with their range. \"Events recorded\" counts the "
        "records the session drained (allocation samples, or waits of at least 10 ms). The "
        "ctxprof writer thread's CPU (in the measured phase) is part of the overhead: it writes "
        "the events and drains the spans every request of the workload opens (timed spans), "
        "the latter at any sampling rate.%s\n\n"
        % (options.jdk_names[jdk], os.cpu_count(), rounds, peer)
        + "\n".join(rows) + "".join("\n\n" + estimate for estimate in estimates) + "\n")


# ---------------------------------------------------------------------------------------------


DROPS = re.compile(r"^drops threads=(\d+) seconds=(\d+) consumed=(\d+) dropped=(\d+) "
                   r"buffer_slots=(\d+) slot_bytes=(\d+) threads_seen=(\d+) "
                   r"writer_cpu_ms=(-?\d+) writer_wait_ms=(-?\d+) cpu_weight_ms=(\d+) "
                   r"workers_cpu_ms=(\d+) wall_weight_ms=(\d+) workers_wall_ms=(\d+) "
                   r"wall_signals=(\d+) wall_throttled_ticks=(\d+) peak_drain=(\d+) options=(.*)$")


def drops_section(options):
    threads, seconds = ("20", "2") if options.quick else ("200", "10")
    rounds = 1 if options.quick else 5
    log("drops: %s busy threads for %s s, %d rounds" % (threads, seconds, rounds))
    load_before = os.getloadavg()[0]
    runs = []
    for _ in range(rounds):
        output = run([options.drops_bench, threads, seconds], timeout=600)
        measured = None
        for line in output.splitlines():
            measured = DROPS.match(line) or measured
        if measured is None:
            raise ReportError("drops_bench printed no measurement:\n" + output)
        runs.append(measured)
    load_after = os.getloadavg()[0]
    rows = []
    shares = []
    for measured in runs:
        value = [None] + [int(measured.group(i)) for i in range(1, 17)]
        consumed, dropped, slots, slot_bytes, seen = value[3:8]
        writer_cpu_ms, writer_wait_ms = value[8], value[9]
        cpu_weight_ms, workers_cpu_ms, wall_weight_ms, workers_wall_ms = value[10:14]
        wall_signals, throttled_ticks, peak_drain = value[14], value[15], value[16]
        share = 100.0 * dropped / max(1, consumed + dropped)
        shares.append(share)
        rows.append("| %d | %d | %d | %.2f %% | %d of %d | %.1f of %.1f s | %.0f of %.0f s "
                    "| %d ms, waited %.1f s | %d of ~%d |" % (
                        seen, consumed, dropped, share, peak_drain, slots, cpu_weight_ms / 1000.0,
                        workers_cpu_ms / 1000.0, wall_weight_ms / 1000.0,
                        workers_wall_ms / 1000.0, writer_cpu_ms, writer_wait_ms / 1000.0,
                        throttled_ticks, int(seconds) * 1000 // 5))
    bound_mib = slots * slot_bytes / float(1 << 20)
    share = median(shares)
    return ("## Drops under load\n\n"
            "`bazel run -c opt //bench/sampler:drops_bench -- %s %s`, %d rounds: %s threads "
            "spinning (each writing its context per request) for %s s, `%s`, load average %.0f "
            "before and %.0f after. The sample buffer holds what the handlers published until "
            "the background thread drains it (every 20 ms, at once when the buffer is half full, "
            "and between every 128 records it writes: a drain only copies records into the "
            "recording's reorderer); a sample that finds it full is dropped and counted, and its "
            "weight goes to its "
            "thread's next sample of its kind. Wall sampling signals fewer threads per tick while "
            "records wait in the buffer (backpressure; their intervals go to their next sample). "
            "docs/SAMPLER.md, \"Drops\", says why the background thread falls behind: among %s "
            "runnable threads it gets a fair share of a CPU, about 1 %%.\n\n"
            "| Armed by the session | Samples consumed | Dropped | Dropped share | Most in one "
            "drain, of the slots | CPU weight of CPU used | Wall weight of thread lifetimes | "
            "Background thread CPU | Wall ticks throttled |\n"
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n%s\n\n"
            "Median dropped share %.2f %% [%.2f .. %.2f]. Buffer (the bound on sampling's memory "
            "between drains): %d slots × %d B = %.1f MiB; while it runs, the recording holds fewer "
            "than twice as many records not yet written (each its header and its frames; session.h, "
            "\"Draining\"). Weights: CPU weight × interval against "
            "the CPU the busy threads used; wall weight × interval against their lifetimes (not "
            "sampled: time before a thread is armed and since its last signal when it exits).\n\n"
            "Target ≤ 1 %% dropped: %s.\n\n"
            % (threads, seconds, rounds, threads, seconds,
               runs[0].group(17).split(",file=")[0], load_before, load_after, threads,
               "\n".join(rows), share, min(shares), max(shares), slots, slot_bytes, bound_mib,
               check("Samples dropped, cpu 1 ms + wall 5 ms, %s busy threads (median of %d)"
                     % (threads, rounds), "≤ 1 %", "%.2f %%" % share, share <= 1.0)))


# ---------------------------------------------------------------------------------------------
# The shop (examples/shop, the demo's service) under each feature of this round

# The demo's options (tools/demo.sh) as agent options: CPU every 10 ms, wall every 20 ms on
# threads in a request, allocations and lock waits, more of both in requests.
SHOP_PLAIN = ("event=cpu,interval=10ms,wall=20ms,filter=context,alloc=4m,lock=1s,"
              "select=if-context")
# (label, agent options or None, what is recorded: "file", "repository" or "jdk", JVM options).
# "{sink}" in the options is the local receiver's URL. upload= needs one interval for CPU and
# wall (Pyroscope reads one sample rate per upload), so its row samples wall at 10 ms.
SHOP_CONFIGS = [
    ("off (the library loaded, spans timed)", None, None, ()),
    ("ctxprof, the demo's options", SHOP_PLAIN, "file", ()),
    ("ctxprof, spans untimed (`-Dctxprof.spanTiming=false`)", SHOP_PLAIN, "file",
     ("-Dctxprof.spanTiming=false",)),
    ("ctxprof + `otelcontext=true`", SHOP_PLAIN + ",otelcontext=true", "file", ()),
    ("ctxprof + `jfrsync=default`", SHOP_PLAIN + ",jfrsync=default", "file", ()),
    ("the JDK's recorder alone (`-XX:StartFlightRecording`, `settings=default`)", None, "jdk",
     ()),
    ("ctxprof + `otlp=` push", SHOP_PLAIN + ",otlp={sink}", "repository", ()),
    ("ctxprof + `upload=` (wall at 10 ms)", SHOP_PLAIN.replace("wall=20ms", "wall=10ms")
     + ",upload={sink}", "repository", ()),
]
SHOP_OFF = SHOP_CONFIGS[0][0]
SHOP_PLAIN_LABEL = SHOP_CONFIGS[1][0]
# The rows that add one feature to the demo's options: also compared with that row.
SHOP_FEATURES = [config[0] for config in SHOP_CONFIGS[2:] if config[1]]
SHOP_ROUNDS = 5
# Warm-up as CPU the service spends from the load's start (seconds), and at least a few seconds
# of wall time (the load generator's own JVM starts meanwhile): on a loaded machine a fixed wall
# warm-up leaves the JIT's compilations inside the measured window of some runs.
SHOP_WARMUP_CPU = 6.0
SHOP_WARMUP_WALL = 4.0
SHOP_WINDOW = 8.0


class ShopSink:
    """A local receiver on 127.0.0.1 for otlp= and upload=: answers every POST with 200 and an
    empty body (an empty ExportProfilesServiceResponse for OTLP; Pyroscope's ingest answers 200)
    and counts the requests and body bytes it got, as sent (compressed or not)."""

    def __init__(self):
        import http.server
        import threading
        sink = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with sink.lock:
                    sink.requests += 1
                    sink.bytes += len(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.lock = threading.Lock()
        self.requests = self.bytes = 0
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def counts(self):
        with self.lock:
            return self.requests, self.bytes

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def process_cpu_seconds(pid):
    """User + system CPU of process `pid` so far, all its threads (also the ones that ended),
    from /proc/PID/stat (clock ticks)."""
    with open("/proc/%d/stat" % pid) as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# The threads of a profiler, by the prefix of their OS names (/proc/PID/task/TID/comm, at most
# 15 characters): ctxprof's own (writer, wall, upload, otlp, jfrsync) and the JDK recorder's
# ("JFR Recorder Thread", "JFR Periodic Tasks", ...).
SHOP_THREAD_GROUPS = [("ctxprof", "ctxprof-"), ("the JDK's recorder", "JFR ")]


def thread_cpu_seconds(pid):
    """User + system CPU so far of each of SHOP_THREAD_GROUPS' live threads in process `pid`,
    summed per group. A thread that ended is not counted: the profilers' threads live as long
    as the recording."""
    ticks = os.sysconf("SC_CLK_TCK")
    totals = {group: 0.0 for group, _ in SHOP_THREAD_GROUPS}
    task_dir = "/proc/%d/task" % pid
    for tid in os.listdir(task_dir):
        try:
            with open(os.path.join(task_dir, tid, "comm")) as comm:
                name = comm.read().rstrip("\n")
            with open(os.path.join(task_dir, tid, "stat")) as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        for group, prefix in SHOP_THREAD_GROUPS:
            if name.startswith(prefix):
                totals[group] += (int(fields[11]) + int(fields[12])) / ticks
    return totals


def wait_for_file(path, process, seconds, what):
    deadline = time.monotonic() + seconds
    while not (os.path.exists(path) and os.path.getsize(path) > 0):
        if process.poll() is not None or time.monotonic() > deadline:
            raise ReportError("%s did not start (exit %s)" % (what, process.poll()))
        time.sleep(0.1)


def shop_run(options, jdk, config, sink, scratch):
    """One run of the shop under `config`: the service (with the agent from its start), the load
    generator's 8 clients, warm-up, then a counted window whose service CPU and requests are
    measured; SIGTERM stops the service, whose agent finishes the recording. Returns the
    window's CPU seconds, requests and seconds, the warm-up's seconds, and the recording's bytes
    and span."""
    label, agent_options, recorded, java_options = config
    warmup_cpu, warmup_wall, window = ((0.5, 2.0, 2.0) if options.quick else
                                       (SHOP_WARMUP_CPU, SHOP_WARMUP_WALL, SHOP_WINDOW))
    for name in os.listdir(scratch):
        path = os.path.join(scratch, name)
        if os.path.isdir(path):
            for chunk in os.listdir(path):
                os.unlink(os.path.join(path, chunk))
            os.rmdir(path)
        else:
            os.unlink(path)
    recording = os.path.join(scratch, "shop.jfr")
    repository = os.path.join(scratch, "repo")
    command = [jdk + "/bin/java"] + list(java_options)
    if agent_options:
        destination = ("repository=" + repository if recorded == "repository"
                       else "file=" + recording)
        if recorded == "repository":
            os.mkdir(repository)
        command.append("-agentpath:%s=start,%s,%s" % (
            options.library, agent_options.replace("{sink}", sink.url), destination))
    elif recorded == "jdk":
        command.append("-XX:StartFlightRecording=settings=default,dumponexit=true,filename="
                       + recording)
    port_file = os.path.join(scratch, "port")
    counting = os.path.join(scratch, "counting")
    summary = os.path.join(scratch, "load.tsv")
    counted_file = os.path.join(scratch, "counted")
    load_log = os.path.join(scratch, "load.log")
    classpath = options.api_jar + ":" + options.shop_jar
    service_log = open(os.path.join(scratch, "service.log"), "w")
    service = subprocess.Popen(
        command + ["-Dctxprof.library=" + options.library, "-cp", classpath,
                   "io.ctxprof.example.ShopService", "--port-file", port_file],
        stdout=service_log, stderr=subprocess.STDOUT, env=dict(os.environ, OTEL_SERVICE_NAME="shop"))
    load = None
    try:
        wait_for_file(port_file, service, 60, "the shop (%s)" % label)
        with open(port_file) as port:
            port_number = port.read().strip()
        load = subprocess.Popen(
            [jdk + "/bin/java", "-cp", classpath, "io.ctxprof.example.LoadGenerator", "--port",
             port_number, "--clients", "8", "--count-while", counting, "--summary", summary,
             "--counted", counted_file],
            stdout=open(load_log, "w"), stderr=subprocess.PIPE, text=True)
        load_started, cpu_at_load = time.monotonic(), process_cpu_seconds(service.pid)
        while (process_cpu_seconds(service.pid) - cpu_at_load < warmup_cpu
               or time.monotonic() - load_started < warmup_wall):
            if time.monotonic() - load_started > 300 or load.poll() is not None:
                raise ReportError("the shop (%s) did not spend %.1f s of CPU on its warm-up "
                                  "within 300 s (load generator: exit %s)" % (
                                      label, warmup_cpu, load.poll()))
            time.sleep(0.1)
        cpu_before, started = process_cpu_seconds(service.pid), time.monotonic()
        threads_before = thread_cpu_seconds(service.pid)
        warmup = started - load_started
        open(counting, "w").close()
        time.sleep(window)
        # Open until a request is counted: on a loaded machine a cold service's answers can
        # take longer than a quick run's window, which then has nothing to count.
        while not os.path.exists(counted_file):
            if time.monotonic() - started > 300 or load.poll() is not None:
                raise ReportError("the shop (%s) answered no request in 300 s of its window "
                                  "(load generator: exit %s)" % (label, load.poll()))
            time.sleep(0.1)
        os.unlink(counting)
        cpu_after, ended = process_cpu_seconds(service.pid), time.monotonic()
        threads_after = thread_cpu_seconds(service.pid)
        _, load_errors = load.communicate(timeout=120)
        if load.returncode != 0:
            raise ReportError("the load generator (%s) exited %d: %s" % (
                label, load.returncode, load_errors.strip()[-2000:]))
        service.terminate()
        status = service.wait(timeout=120)
        if status not in (0, 143):
            raise ReportError("the shop (%s) exited %d" % (label, status))
    finally:
        for process in (load, service):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
        service_log.close()
    with open(summary) as table:
        requests = sum(int(row.split("\t")[1]) for row in list(table)[1:])
    if requests == 0:
        with open(load_log) as log_file:
            load_output = log_file.read().strip()
        raise ReportError("the shop (%s) served no request in the %.1f s window; the load "
                          "generator said:\n%s" % (label, ended - started, load_output))
    result = {"cpu": cpu_after - cpu_before, "requests": requests, "seconds": ended - started,
              "warmup": warmup, "bytes": 0, "span": 0.0,
              "threads": {group: threads_after[group] - threads_before[group]
                          for group in threads_after}}
    if recorded == "repository":
        chunks = sorted(os.path.join(repository, name) for name in os.listdir(repository)
                        if name.endswith(".jfr"))
        spans = []
        for chunk in chunks:
            result["bytes"] += os.path.getsize(chunk)
            spans.append(recording_span(chunk))
        # Consecutive chunk files of one session: their spans add up.
        result["span"] = sum(spans)
    elif recorded:
        result["bytes"] = os.path.getsize(recording)
        result["span"] = recording_span(recording)
    return result


def shop_section(options):
    jdk = options.jdks[0]
    rounds = 1 if options.quick else SHOP_ROUNDS
    sink = ShopSink()
    runs = {config[0]: [] for config in SHOP_CONFIGS}
    ratios = {config[0]: [] for config in SHOP_CONFIGS}
    feature_ratios = {label: [] for label in SHOP_FEATURES}
    scratch = os.path.join(options.scratch, "shop")
    os.makedirs(scratch, exist_ok=True)
    load_before = os.getloadavg()[0]
    try:
        for round_index in range(rounds):
            log("the shop on %s: round %d of %d" % (options.jdk_names[jdk], round_index + 1,
                                                   rounds))
            this_round = {}
            for config in rotated(SHOP_CONFIGS, round_index):
                received_before = sink.counts()
                result = shop_run(options, jdk, config, sink, scratch)
                received_after = sink.counts()
                result["received"] = received_after[1] - received_before[1]
                result["pushes"] = received_after[0] - received_before[0]
                if config[1] and "{sink}" in config[1] and result["pushes"] == 0:
                    raise ReportError("%s: the receiver got nothing" % config[0])
                this_round[config[0]] = result
                runs[config[0]].append(result)
            def cpu_per_request(label):
                return this_round[label]["cpu"] / this_round[label]["requests"]
            for label in this_round:
                ratios[label].append(cpu_per_request(label) / cpu_per_request(SHOP_OFF))
            for label in SHOP_FEATURES:
                feature_ratios[label].append(cpu_per_request(label) / cpu_per_request(SHOP_PLAIN_LABEL))
    finally:
        sink.close()
    load_after = os.getloadavg()[0]
    rows = ["| Configuration | Requests/s | Service CPU per request | CPU overhead vs off: median "
            "[min .. max] of per-round ratios | vs the demo's options | Recorded, per minute | "
            "Received by the local receiver, per minute | Profilers' threads: CPU share of the "
            "service's, ctxprof's / the JDK recorder's |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for label, agent_options, recorded, _ in SHOP_CONFIGS:
        measured = runs[label]
        rate = median([r["requests"] / r["seconds"] for r in measured])
        per_request = median([r["cpu"] / r["requests"] for r in measured]) * 1e3
        percent = [(ratio - 1) * 100 for ratio in ratios[label]]
        overhead = "" if label == SHOP_OFF else "%+.1f %% %s" % (median(percent),
                                                                spread(percent, "%+.1f"))
        feature = [(ratio - 1) * 100 for ratio in feature_ratios.get(label, [])]
        beside_plain = "%+.1f %% %s" % (median(feature), spread(feature, "%+.1f")) if feature \
            else ""
        if recorded:
            per_minute = [r["bytes"] / r["span"] * 60 / 1e6 for r in measured]
            written = "%.2f MB %s" % (median(per_minute), spread(per_minute, "%.2f"))
        else:
            written = ""
        if agent_options and "{sink}" in agent_options:
            received_per_minute = [r["received"] / r["span"] * 60 / 1e6 for r in measured]
            received = "%.2f MB %s in %d requests" % (
                median(received_per_minute), spread(received_per_minute, "%.2f"),
                median([r["pushes"] for r in measured]))
        else:
            received = ""
        shares = []
        for group, _ in SHOP_THREAD_GROUPS:
            percent = [r["threads"][group] / r["cpu"] * 100 for r in measured]
            shares.append("%.2f %% %s" % (median(percent), spread(percent, "%.2f")))
        rows.append("| %s | %.0f | %.2f ms | %s | %s | %s | %s | %s |" % (
            label, rate, per_request, overhead, beside_plain, written, received,
            " / ".join(shares)))
    warmup_cpu, warmup_wall, window = ((0.5, 2.0, 2.0) if options.quick else
                                       (SHOP_WARMUP_CPU, SHOP_WARMUP_WALL, SHOP_WINDOW))
    warmups = [r["warmup"] for measured in runs.values() for r in measured]
    return (
        "## The shop: this round's features at its request rate\n\n"
        "`bazel run -c opt //bench:report -- --sections shop --output FILE`: the demo's service "
        "(examples/shop, 8 workers; /checkout hashes, /catalog allocates, /inventory queues for "
        "a monitor, /shipping waits on a socket) on %s with the agent from its start "
        "(`-agentpath:…=start,OPTIONS,file=…`; `repository=` for the "
        "pushes), driven by the demo's load generator (8 clients, each waiting for its answer: "
        "the request rate is what the service manages on this machine). After a warm-up of "
        "%.1f s of the service's CPU from the load's start, and at least %.0f s (%.0f s of wall time in the median "
        "run, %.0f .. %.0f), the service's CPU (all its threads, /proc/PID/stat) and the "
        "requests answered are counted for %.0f s (longer if none was answered by then); SIGTERM then stops it and the agent finishes the recording. %d "
        "round(s), each running every configuration once in a rotated order; the overhead is "
        "the median of the per-round ratios of CPU per request to the unprofiled run's, with "
        "their range; the rows that add one feature to the demo's options are also compared "
        "with that row the same way (\"vs the demo's options\"). Load average %.1f before, "
        "%.1f after.\n\n"
        "The demo's options: `%s`. Spans are timed by default (every request is one span "
        "opened through `ContextSetter`); `jfrsync=default` with `select=if-context` has the "
        "JDK's recorder record every duration event and keeps, of the short ones, those inside "
        "requests. \"Recorded\": the file's (or the repository's chunk files') bytes over the "
        "recording's span from its chunk headers, so warm-up and stop included; for the JDK's "
        "recorder its own file (`dumponexit`). \"Received\": the bytes of the request bodies the "
        "local receiver (127.0.0.1, answering 200) got over the same span: gzip OTLP profiles "
        "for `otlp=`, Pyroscope's ingest format for `upload=`; each finished chunk (`chunktime`, "
        "default 10 s, and the last at the stop) is one push per exporter. \"Profilers' "
        "threads\": the CPU the profilers' own threads spent in the window (per thread, "
        "/proc/PID/task/TID/stat, by OS name: `ctxprof-*`, the JDK's `JFR *`) over the service's; "
        "a thread's CPU time is its own, so unlike the overhead columns it does not move with "
        "the machine's load. It leaves out what the features cost on the service's threads "
        "(the signal handler, the context writes: sections above).\n\n"
        % (options.jdk_names[jdk], warmup_cpu, warmup_wall, median(warmups), min(warmups), max(warmups),
           window, rounds, load_before, load_after,
           SHOP_PLAIN)
        + "\n".join(rows) + "\n")


INPUTS = {  # attribute: path in the runfiles
    "context_bench": "bench/context_bench",
    "handler_bench": "bench/sampler/handler_cost_bench",
    "writer_bench": "bench/jfr/jfr_writer_bench",
    "span_drain_bench": "bench/jfr/span_drain_bench",
    "floor_bench": "bench/sampler/signal_floor_bench",
    "native_overhead_bench": "bench/sampler/overhead_bench",
    "drops_bench": "bench/sampler/drops_bench",
    "api_jar": "java/ctxprof.jar",
    "bench_jar": "bench/java_context_bench_jar.jar",
    "library": "jni/libctxprof.so",
    "shop_jar": "examples/shop.jar",
    "jdks_script": "tests/jdks.sh",
}


# The report's sections, in order: name -> function(options) returning its Markdown.
SECTIONS = {
    "context": context_section,
    "java": java_section,
    "handler": handler_section,
    "writer": writer_section,
    "spans": spans_section,
    "span_overhead": span_overhead_section,
    "overhead": overhead_section,
    "peer": peer_section,
    "events": events_section,
    "drops": drops_section,
    "shop": shop_section,
}


def section_list(value):
    """--sections: names of SECTIONS, comma-separated, run in the report's order."""
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in SECTIONS]
    if unknown or not names:
        raise argparse.ArgumentTypeError("unknown section(s) %s; the sections are: %s" % (
            ", ".join(unknown) or "(none given)", ", ".join(SECTIONS)))
    return [name for name in SECTIONS if name in names]


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", help="where to write (default: docs/PERFORMANCE.md of the "
                        "workspace `bazel run` was started in)")
    parser.add_argument("--sections", type=section_list, default=list(SECTIONS),
                        help="only these sections, comma-separated, of: %s (default: all; a "
                        "subset needs --output)" % ", ".join(SECTIONS))
    parser.add_argument("--quick", action="store_true", help="a fast smoke run: minimal "
                        "repetitions, numbers not meaningful; needs --output")
    options = parser.parse_args()
    # The benchmarks are this binary's runfiles (bench/BUILD.bazel): bench/report.py sits in
    # <runfiles>/ctxprof/bench/, under `bazel run` and as another target's data alike.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for name, path in INPUTS.items():
        located = os.path.join(root, path)
        if not os.path.exists(located):
            parser.error("%s is missing: run the report through Bazel (`bazel run -c opt "
                         "//bench:report`), which builds it" % located)
        setattr(options, name, os.path.realpath(located))
    if options.output is None:
        if options.sections != list(SECTIONS):
            parser.error("--sections makes a partial report: give --output FILE (docs/"
                         "PERFORMANCE.md is only rewritten by a full run)")
        if options.quick:
            parser.error("--quick numbers are not meaningful: give --output FILE (docs/"
                         "PERFORMANCE.md is only rewritten by a full run)")
        workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
        if not workspace:
            parser.error("no --output and not started by `bazel run`: use "
                         "`bazel run -c opt //bench:report` or give --output FILE")
        options.output = os.path.join(workspace, "docs", "PERFORMANCE.md")
    if not options.quick and "/k8-opt/" not in options.context_bench:
        parser.error("the benchmarks were not built with -c opt (%s): run "
                     "`bazel run -c opt //bench:report`" % options.context_bench)
    return options


def find_jdks(jdks_script):
    """JDK 17 (required) and JDK 25 (when installed), as tests/jdks.sh finds them."""
    script = 'source "$1"; ctxprof_jdk17 && { ctxprof_jdk25 || true; }'
    result = subprocess.run(["bash", "-c", script, "find_jdks", jdks_script],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    jdks = result.stdout.split()
    if result.returncode != 0 or not jdks:
        raise ReportError(result.stderr.strip() or "no JDK found")
    return jdks


def main():
    options = parse_arguments()
    started = time.monotonic()
    load_before = os.getloadavg()
    try:
        options.jdks = find_jdks(options.jdks_script)
        descriptions = {jdk: describe_jdk(jdk) for jdk in options.jdks}
        options.jdk_names = {jdk: name for jdk, (name, _) in descriptions.items()}
        options.jdk_builds = {jdk: build for jdk, (_, build) in descriptions.items()}
        with tempfile.TemporaryDirectory(prefix="ctxprof-report-") as scratch:
            options.scratch = scratch
            sections = [SECTIONS[name](options) for name in options.sections]
    except ReportError as error:
        print("report: failed: %s" % error, file=sys.stderr)
        return 1
    load_after = os.getloadavg()
    minutes = (time.monotonic() - started) / 60
    machine = [
        "- CPU: %s" % cpu_description(),
        "- Memory: %.0f GiB; OS: %s; kernel %s" % (memory_gib(), os_name(), platform.release()),
        "- Compiler: %s, Bazel `-c %s`" % (first_line(["gcc", "--version"]),
                                            "opt" if "/k8-opt/" in options.context_bench
                                            else "fastbuild (NOT representative)"),
    ] + ["- %s: %s" % (options.jdk_names[jdk], options.jdk_builds[jdk])
         for jdk in options.jdks] + [
        "- Load average (1 min) %.2f before, %.2f after; the whole report took %.1f minutes"
        % (load_before[0], load_after[0], minutes),
    ]
    header = (
        "# ctxprof performance\n\n"
        "<!-- Generated by `bazel run -c opt //bench:report` (bench/report.py); edit that "
        "script, not this file. -->\n\n"
        "Every number below comes from one run of `bazel run -c opt //bench:report` on %s%s. "
        "Machines are shared and noisy: compare within this file, read medians, and rerun the "
        "report rather than mixing numbers from different runs.\n\n"
        "## Machine\n\n" % (datetime.date.today().isoformat(),
                            " (QUICK SMOKE RUN: numbers not meaningful)" if options.quick else "")
        + "\n".join(machine) + "\n")
    summary = ["## Targets\n", "| What | Target | Measured | |", "|---|---|---:|---|"] + [
        "| %s | %s | %s | %s |" % (what, target, measured, verdict(ok))
        for what, target, measured, ok in TARGETS]
    text = "\n".join([header, "\n".join(summary) + "\n"] + sections)
    os.makedirs(os.path.dirname(os.path.abspath(options.output)), exist_ok=True)
    with open(options.output, "w") as output:
        output.write(text)
    log("wrote %s (%.1f minutes)" % (options.output, minutes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
