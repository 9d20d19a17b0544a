#!/usr/bin/env python3
"""Heap profiling CPU overhead: pushprof next to jemalloc, heaptrack, gperftools.

Runs bench_heap_overhead (4 threads of small mallocs and frees of 16-512
bytes) in one process per variant, interleaved (the order rotates every
round), several rounds; prints medians. --work sets the arithmetic per
operation, so the allocator's share of the CPU: the default, 100, gives
glibc's allocator about a fifth of it (the issue's reference workload,
where heaptrack costs about 6-8x); --work 0 about 40% (heaptrack 14-18x),
whose rows are keyed and labelled "allocator 40%". The targets are the
reference workload's. Variants:

  none           no profiler (glibc malloc)
  control        no profiler again: its ratio is the noise floor
  cpu            LD_PRELOAD=libpushprof_preload.so PUSHPROF_PROFILES=cpu
  heap           LD_PRELOAD="libpushprof_preload.so libpushprof_heap.so"
                 PUSHPROF_PROFILES=cpu,heap (default rate)
  jemalloc       LD_PRELOAD=libjemalloc.so.2 (the baseline of the next)
  jemalloc-prof  the same with MALLOC_CONF=prof:true,lg_prof_sample:19
                 (plus prof_final, so it writes its profile at exit too)
  tcmalloc       LD_PRELOAD=libtcmalloc.so (the baseline of the next)
  gperftools     the same with HEAPPROFILE (gperftools' heap profiler)
  heaptrack      heaptrack ./bench_heap_overhead (every allocation traced)

The last three record every allocation, gperftools at ~9 us each (20 s or
more a run): they join only the first --record-runs rounds (default 5), at
--record-kops (default 1000) operations, heaptrack beside a no-profiler run
of that length (none-rec).

CPU is user+sys of the child and every descendant (heaptrack's interpreter
and compressor too: the bench is their subreaper), so a profiler's own
threads and its write at exit count. A ratio divides two runs of the same
round; "heap - cpu" is (heap - cpu) / none of a round. A variant whose tool
is not installed is skipped (its rows say n/a). A benchmark, not a test: it
prints figures and never fails on time; it fails when pushprof's heap
profile is missing.

The ratios are steady-state figures: a run is --kops thousand operations
per thread (default 4000: 16 M allocations on 4 threads, a few seconds of
CPU). What a process pays once, whatever it runs (the preload library's
start, every unwind table built at start when heap profiling is on, the
profiles symbolized and written at exit), is measured apart: --startup-runs rounds of none, cpu and heap at 1 k
operations per thread, their CPU minus none's, in milliseconds.

  heap_overhead_bench.py --build DIR [--runs N] [--record-runs N] [--kops K]
                         [--threads T] [--work W] [--startup-runs N]
                         [--no-heaptrack] [--rows FILE]
"""
import ctypes
import glob
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

LIBDIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"]
PR_SET_CHILD_SUBREAPER = 36
REF_WORK = 100


def find_lib(name):
    return next((os.path.join(d, name) for d in LIBDIRS if os.path.exists(os.path.join(d, name))), None)


def become_subreaper():
    """Orphaned descendants (a profiler's helper processes) become our
    children, so their CPU is counted when we reap them."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("heap_overhead_bench: prctl(PR_SET_CHILD_SUBREAPER) failed; helper processes "
              "that outlive their parent are not counted", file=sys.stderr)


def run_child(cmd, env, cwd):
    """CPU (user+sys) and wall seconds of cmd and all its descendants."""
    c = benchrows.run_child(cmd, env, cwd=cwd, stdout=False, reap_orphans=True)
    return c.cpu, c.wall


def heap_comment(path):
    """pushprof's heap profile comment: (samples since the start,), or None."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    m = re.search(rb"since the start (\d+) samples", raw)
    return (int(m.group(1)),) if m else None


def main():
    ap = benchrows.arg_parser(31)
    ap.add_argument("--record-runs", type=int, default=5, help="rounds with tcmalloc, gperftools, heaptrack")
    ap.add_argument("--kops", type=int, default=4000, help="thousands of operations per thread")
    ap.add_argument("--record-kops", type=int, default=1000,
                    help="thousands of operations per thread for tcmalloc, gperftools and heaptrack")
    ap.add_argument("--startup-runs", type=int, default=11, help="rounds of the fixed cost per process")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--work", type=int, default=REF_WORK,
                    help="arithmetic rounds per operation (default %d: the allocator a fifth of the CPU; "
                         "0: about 40%%)" % REF_WORK)
    ap.add_argument("--no-heaptrack", action="store_true", help="skip heaptrack (the slowest)")
    a = ap.parse_args()
    a.record_runs = min(a.record_runs, a.runs)
    if a.work < 0 or min(a.runs, a.record_runs, a.kops, a.record_kops, a.threads, a.startup_runs) < 1:
        raise SystemExit("heap_overhead_bench: --runs, --record-runs, --kops, --threads and --startup-runs "
                         "must be positive, --work not negative")

    build = os.path.abspath(a.build)
    binary = os.path.join(build, "tests", "bench_heap_overhead")
    preload = os.path.join(build, "sdk", "libpushprof_preload.so")
    heap_lib = os.path.join(build, "sdk", "libpushprof_heap.so")
    benchrows.need(binary, preload, heap_lib)
    jemalloc = find_lib("libjemalloc.so.2")
    tcmalloc = find_lib("libtcmalloc.so") or find_lib("libtcmalloc.so.4")
    heaptrack = None if a.no_heaptrack else shutil.which("heaptrack")

    variants = ["none", "control", "cpu", "heap"]
    if jemalloc:
        variants += ["jemalloc", "jemalloc-prof"]
    record = (["tcmalloc", "gperftools"] if tcmalloc else []) + (["none-rec", "heaptrack"] if heaptrack else [])

    def pushprof_env(env, v, out):
        env.update(LD_PRELOAD=preload if v == "cpu" else preload + ":" + heap_lib,
                   PUSHPROF_OUTPUT=out + "-%t.pb.gz", PUSHPROF_PROFILES="cpu" if v == "cpu" else "cpu,heap")

    become_subreaper()
    tmp = tempfile.mkdtemp(prefix="pushprof-heap-bench.")
    base = benchrows.clean_env(("MALLOC_CONF", "HEAPPROFILE", "CPUPROFILE", "HEAPCHECK"))
    cpu = {v: [] for v in variants + record}
    wall = {v: [] for v in variants + record}
    samples = []
    try:
        for r in range(a.runs):
            now = variants + (record if r < a.record_runs else [])
            got = {}
            for v in benchrows.rotated(now, r):
                kops = a.record_kops if v in record else a.kops
                env, cmd = dict(base), [binary, str(kops), str(a.threads), str(a.work)]
                out = os.path.join(tmp, "%s-%d" % (v, r))
                if v in ("cpu", "heap"):
                    pushprof_env(env, v, out)
                elif v in ("jemalloc", "jemalloc-prof"):
                    env["LD_PRELOAD"] = jemalloc
                    if v == "jemalloc-prof":
                        env["MALLOC_CONF"] = "prof:true,lg_prof_sample:19,prof_final:true,prof_prefix:" + out
                elif v in ("tcmalloc", "gperftools"):
                    env["LD_PRELOAD"] = tcmalloc
                    if v == "gperftools":
                        env["HEAPPROFILE"] = out
                elif v == "heaptrack":
                    cmd = [heaptrack, "-o", out] + cmd
                got[v] = run_child(cmd, env, tmp)
                if v == "heap":
                    prof = out + "-heap.pb.gz"
                    c = heap_comment(prof) if os.path.exists(prof) else None
                    if c is None:
                        raise SystemExit("heap_overhead_bench: no pushprof heap profile at %s" % prof)
                    samples.append(c[0])
                elif v in ("jemalloc-prof", "gperftools", "heaptrack") and not glob.glob(out + "*"):
                    print("heap_overhead_bench: warning: %s wrote no profile at %s*" % (v, out),
                          file=sys.stderr)
                for f in glob.glob(out + "*"):
                    os.remove(f)
            for v in now:
                cpu[v].append(got[v][0])
                wall[v].append(got[v][1])
            print("round %d/%d: %s" % (r + 1, a.runs, "  ".join(
                "%s %.3fs" % (v, got[v][0]) for v in now)), file=sys.stderr)
        sv = ["none", "cpu", "heap"]
        start = {v: [] for v in sv}
        for r in range(a.startup_runs):
            for v in benchrows.rotated(sv, r):
                env = dict(base)
                out = os.path.join(tmp, "start-%s-%d" % (v, r))
                if v != "none":
                    pushprof_env(env, v, out)
                start[v].append(run_child([binary, "1", str(a.threads), str(a.work)], env, tmp)[0])
                for f in glob.glob(out + "*"):
                    os.remove(f)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def ratios(num, den):  # zip: a record variant's rounds are the first ones
        if num not in cpu or den not in cpu:
            return []
        return [x / y for x, y in zip(cpu[num], cpu[den])]

    heap_minus_cpu = [(h - c) / n for h, c, n in zip(cpu["heap"], cpu["cpu"], cpu["none"])]
    rows = [
        ("heap_cpu_ratio_heap", "Heap, pushprof cpu,heap / no profiler (ratio)", "<= 1.03",
         ratios("heap", "none"), 3),
        ("heap_cpu_ratio_heap_minus_cpu", "Heap, pushprof cpu,heap minus cpu only, over no profiler (ratio)",
         "<= 0.025", heap_minus_cpu, 3),
        ("heap_cpu_ratio_cpu", "Heap workload, pushprof cpu only / no profiler (ratio)", "",
         ratios("cpu", "none"), 3),
        ("heap_cpu_ratio_control", "Heap workload noise floor: no profiler again / no profiler (ratio)", "",
         ratios("control", "none"), 3),
        ("heap_cpu_ratio_jemalloc_prof", "Heap, jemalloc prof lg_prof_sample:19 / jemalloc (ratio)", "",
         ratios("jemalloc-prof", "jemalloc"), 3),
        ("heap_cpu_ratio_gperftools", "Heap, gperftools HEAPPROFILE / tcmalloc (ratio)", "",
         ratios("gperftools", "tcmalloc"), 0),
        ("heap_cpu_ratio_heaptrack", "Heap, heaptrack / no profiler (ratio)", "",
         ratios("heaptrack", "none-rec"), 1),
        ("heap_samples", "Heap samples per run, pushprof at the default rate (samples)", "", samples, 0),
        ("heap_start_ms_cpu", "Fixed cost per process, pushprof cpu only (ms of CPU)", "",
         [(c - n) * 1e3 for c, n in zip(start["cpu"], start["none"])], 1),
        ("heap_start_ms_heap", "Fixed cost per process, pushprof cpu,heap (ms of CPU)", "",
         [(h - n) * 1e3 for h, n in zip(start["heap"], start["none"])], 1),
    ]
    if a.no_heaptrack:  # asked not to: no row, rather than one marked missing
        rows = [r for r in rows if r[0] != "heap_cpu_ratio_heaptrack"]
    if a.work != REF_WORK:  # another workload: its own keys, no targets
        tag = "heavy" if a.work == 0 else "work%d" % a.work
        what = " [allocator ~40% of CPU, --work 0]" if a.work == 0 else " [--work %d]" % a.work
        rows = [(key + "_" + tag, label + what, "", vals, digits) for key, label, _, vals, digits in rows]
    med = statistics.median
    print("Heap overhead: bench_heap_overhead, %d threads x %d k operations, work %d, %d interleaved rounds "
          "(tcmalloc, gperftools, heaptrack: the first %d), medians"
          % (a.threads, a.kops, a.work, a.runs, a.record_runs))
    print("  (machine: %d CPUs, load average at the end %.1f)" % (os.cpu_count(), os.getloadavg()[0]))
    print("%-14s %8s %9s %10s" % ("variant", "CPU s", "ns/op", "wall s"))
    for v in variants + record:
        ops = (a.record_kops if v in record else a.kops) * 1000 * a.threads
        print("%-14s %8.3f %9.1f %10.3f" % (v, med(cpu[v]), med(cpu[v]) * 1e9 / ops, med(wall[v])))
    for key, label, target, vals, digits in rows:
        if vals:
            print("%-80s %.*f  (%.*f..%.*f)%s" % (label, digits, med(vals), digits, min(vals), digits, max(vals),
                                                "  target " + target if target else ""))
    print("ratios divide CPU (user+sys, descendants included) of runs of the same round;")
    print("control = no profiler again: its spread is the noise floor of the ratios.")
    for v, what in (("jemalloc", "libjemalloc2"), ("tcmalloc", "libgoogle-perftools-dev"),
                    ("heaptrack", "heaptrack")):
        if v not in variants + record and not (v == "heaptrack" and a.no_heaptrack):
            print("(%s not found: install %s)" % (v, what))
    if a.rows:
        for key, label, target, vals, digits in rows:
            benchrows.add(a.rows, key, label, target, vals, digits)


if __name__ == "__main__":
    main()
