#!/usr/bin/env python3
"""Heap profiling: what a malloc/free pair pays, and the profiler's memory.

Runs bench_heap_micro in one process per variant, interleaved (the order
rotates every round), several rounds; prints medians:

  none           no profiler
  cpu            LD_PRELOAD=libpushprof_preload.so PUSHPROF_PROFILES=cpu: CPU
                 profiling only, no allocation interposers (what a process
                 that does not profile its heap runs)
  heap-off       the same with libpushprof_heap.so preloaded too: the
                 interposers are there, heap profiling is off
  heap           both libraries, PUSHPROF_PROFILES=cpu,heap, default rate
  heap-unsampled the same at PUSHPROF_HEAP_RATE=1099511627776 (the maximum):
                 heap profiling on, nothing sampled (pairs only)

Pairs: malloc(32) then free in a tight loop on one thread; the program
prints the median over batches of its thread CPU time per pair; added
nanoseconds = the variant's minus the no-profiler run's of the same round.
With heap profiling on, one pair in 16,384 is sampled on average (32 bytes
of 512 KiB), so the heap row holds that share of the sampled path too.

Live: 1 GiB in blocks of 16-512 bytes allocated and kept; after a settling
pause the program reads its VmRSS; peak = the child's ru_maxrss (the heap
profile's write at exit included). The heap profiler's memory is the heap
run's minus the heap-off run's of the same round; the heap profile's
comment gives the sampled blocks live. A benchmark, not a test: it prints
figures and never fails on time.

  heap_micro_bench.py --build DIR [--runs N] [--batches B] [--pairs P]
                      [--live-runs N] [--mib M] [--rows FILE]
"""
import gzip
import os
import re
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchrows  # noqa: E402


def heap_lib_of(preload):
    return os.path.join(os.path.dirname(preload), "libpushprof_heap.so")


def variant_env(base, v, preload, out):
    env = dict(base)
    if v != "none":
        libs = preload if v == "cpu" else preload + ":" + heap_lib_of(preload)
        env.update(LD_PRELOAD=libs, PUSHPROF_OUTPUT=out + "-%t.pb.gz",
                   PUSHPROF_PROFILES="cpu" if v in ("cpu", "heap-off") else "cpu,heap")
    if v == "heap-unsampled":
        env["PUSHPROF_HEAP_RATE"] = "1099511627776"
    return env


def run_child(cmd, env):
    """The child's key=value lines, plus maxrss_kib: its peak RSS."""
    c = benchrows.run_child(cmd, env)
    return dict(c.vals, maxrss_kib=c.maxrss_kib)


def live_blocks(path):
    with gzip.open(path, "rb") as f:
        m = re.search(rb"(\d+) sampled blocks live", f.read())
    return int(m.group(1)) if m else None


def main():
    ap = benchrows.arg_parser(9, runs_help="rounds of the pairs")
    ap.add_argument("--batches", type=int, default=15)
    ap.add_argument("--pairs", type=int, default=1000000, help="pairs per batch")
    ap.add_argument("--live-runs", type=int, default=3)
    ap.add_argument("--mib", type=int, default=1024, help="live heap of the memory runs")
    a = ap.parse_args()
    if min(a.runs, a.batches, a.pairs, a.live_runs, a.mib) < 1:
        raise SystemExit("heap_micro_bench: every count must be positive")
    build = os.path.abspath(a.build)
    binary = os.path.join(build, "tests", "bench_heap_micro")
    preload = os.path.join(build, "sdk", "libpushprof_preload.so")
    benchrows.need(binary, preload, heap_lib_of(preload))
    base = benchrows.clean_env(("MALLOC_CONF", "HEAPPROFILE", "CPUPROFILE"))
    tmp = tempfile.mkdtemp(prefix="pushprof-heap-micro.")
    med = statistics.median
    try:
        pv = ["none", "cpu", "heap-off", "heap", "heap-unsampled"]
        ns = {v: [] for v in pv}
        for r in range(a.runs):
            got = {}
            for v in benchrows.rotated(pv, r):
                env = variant_env(base, v, preload, os.path.join(tmp, "pairs"))
                got[v] = run_child([binary, "pairs", str(a.batches), str(a.pairs)], env)["ns_per_pair"]
            for v in pv:
                ns[v].append(got[v])
            print("pairs round %d/%d: %s" % (r + 1, a.runs, "  ".join(
                "%s %.2f ns" % (v, got[v]) for v in pv)), file=sys.stderr)
        added = {v: [x - n for x, n in zip(ns[v], ns["none"])] for v in pv}

        lv = ["none", "cpu", "heap-off", "heap"]
        mem = {v: {"rss": [], "peak": []} for v in lv}
        blocks = []
        for r in range(a.live_runs):
            got = {}
            for v in benchrows.rotated(lv, r):
                out = os.path.join(tmp, "live-%s-%d" % (v, r))
                env = variant_env(base, v, preload, out)
                got[v] = run_child([binary, "live", str(a.mib)], env)
                if v == "heap":
                    prof = out + "-heap.pb.gz"
                    b = live_blocks(prof) if os.path.exists(prof) else None
                    if b is None:
                        raise SystemExit("heap_micro_bench: no pushprof heap profile at %s" % prof)
                    blocks.append(b)
            for v in lv:
                mem[v]["rss"].append(got[v]["rss_kib"])
                mem[v]["peak"].append(got[v]["maxrss_kib"])
            print("live round %d/%d: %s" % (r + 1, a.live_runs, "  ".join(
                "%s RSS %.0f KiB peak %.0f KiB" % (v, got[v]["rss_kib"], got[v]["maxrss_kib"]) for v in lv)),
                file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def diff(kind, x, y):
        return [p - q for p, q in zip(mem[x][kind], mem[y][kind])]

    live_mib = "with %d MiB live" % a.mib
    rows = [
        ("heap_pair_ns_none", "malloc(32)+free, no profiler (ns per pair)", ns["none"], 2),
        ("heap_pair_added_ns_cpu", "malloc(32)+free added, preloaded, CPU only, no interposers (ns per pair)",
         added["cpu"], 2),
        ("heap_pair_added_ns_off",
         "malloc(32)+free added, interposers loaded, heap profiling off (ns per pair)", added["heap-off"], 2),
        ("heap_pair_added_ns_on", "malloc(32)+free added, heap profiling on, default rate (ns per pair)",
         added["heap"], 2),
        ("heap_pair_added_ns_unsampled",
         "malloc(32)+free added, heap profiling on, nothing sampled (ns per pair)", added["heap-unsampled"], 2),
        ("heap_live_rss_kib", "Heap profiler memory %s: RSS, heap on minus heap off (KiB)" % live_mib,
         diff("rss", "heap", "heap-off"), 0),
        ("heap_live_peak_kib",
         "Heap profiler memory %s: peak RSS with the exit write, on minus off (KiB)" % live_mib,
         diff("peak", "heap", "heap-off"), 0),
        ("heap_live_preload_kib",
         "Preload library memory %s, CPU only: RSS minus no profiler (KiB)" % live_mib,
         diff("rss", "cpu", "none"), 0),
        ("heap_live_blocks", "Sampled blocks live %s (blocks)" % live_mib, blocks, 0),
    ]
    print("Heap micro: malloc(32)+free, %d batches of %d pairs, %d interleaved rounds; %d MiB live, %d rounds; "
          "medians" % (a.batches, a.pairs, a.runs, a.mib, a.live_runs))
    print("  (machine: %d CPUs, load average at the end %.1f)" % (os.cpu_count(), os.getloadavg()[0]))
    for v in pv:
        print("  pairs %-15s %7.2f ns per pair" % (v, med(ns[v])))
    for v in lv:
        print("  live  %-15s RSS %8.0f KiB   peak %8.0f KiB" % (v, med(mem[v]["rss"]), med(mem[v]["peak"])))
    for key, label, vals, digits in rows:
        print("%-96s %.*f  (%.*f..%.*f)" % (label, digits, med(vals), digits, min(vals), digits, max(vals)))
    if a.rows:
        for key, label, vals, digits in rows:
            benchrows.add(a.rows, key, label, "", vals, digits)


if __name__ == "__main__":
    main()
