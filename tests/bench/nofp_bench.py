#!/usr/bin/env python3
"""CPU overhead of profiling Debian's xz (built without frame pointers) at
100 Hz: no profiler, pushprof (LD_PRELOAD) and gperftools'
libprofiler.so (LD_PRELOAD, CPUPROFILE), interleaved (the order rotates every
run), several runs; prints medians. A benchmark, not a test: it prints
figures and never fails on time.

  nofp_bench.py --build DIR [--runs N] [--hz HZ] [--mb MB] [--rows FILE]

Workload: `xz -9 -T1 -k -f` on MB megabytes of generated log lines
(tests/integration/stacks/sk_gen_log.py). Overhead: the child's CPU time
(user+sys from wait4: the profiler's own threads and its exit-time write
included) divided by the same run's no-profiler CPU time; median over runs.
"control" is the no-profiler run again: its spread is the noise floor.
Depth: mean frames per sample in each profile (go tool pprof -raw), what
DWARF unwinding buys over one-frame stacks.
--rows FILE appends the figures as rows for tests/bench/run (benchrows.py).
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import benchrows  # noqa: E402
import pprof_check  # noqa: E402
from sdk_bench import GPERF_CANDIDATES, clean_env, variant_env  # noqa: E402

GEN = os.path.join(HERE, "..", "integration", "stacks", "sk_gen_log.py")


def mean_depth(profile):
    prof = pprof_check.parse_raw(pprof_check.run_pprof(profile))
    n = sum(s["values"][0] for s in prof["samples"])
    return sum(s["values"][0] * len(s["locs"]) for s in prof["samples"]) / n if n else float("nan")


def main():
    ap = benchrows.arg_parser(7)
    ap.add_argument("--hz", type=int, default=100)
    ap.add_argument("--mb", type=float, default=2.2)
    a = ap.parse_args()

    preload = os.path.join(os.path.abspath(a.build), "sdk", "libpushprof_preload.so")
    benchrows.need(preload)
    xz = shutil.which("xz")
    if not xz:
        raise SystemExit("nofp_bench: xz not installed (xz-utils)")
    gperf = next((g for g in GPERF_CANDIDATES if os.path.exists(g)), None)
    tmp = tempfile.mkdtemp(prefix="pushprof-nofp-bench.")
    try:
        data = os.path.join(tmp, "log.txt")
        subprocess.run([sys.executable, GEN, data, str(int(a.mb * 1e6))], check=True)
        base = clean_env()
        variants = ["none", "control", "pushprof"] + (["gperftools"] if gperf else [])
        res = {v: {"cpu": [], "ratio": [], "depth": []} for v in variants}
        for r in range(a.runs):
            got = {}
            for v in benchrows.rotated(variants, r):
                prof = os.path.join(tmp, "%s-%d.prof" % (v, r))
                env = variant_env(base, v, prof, a.hz, preload, gperf)
                cpu = benchrows.run_child([xz, "-9", "-T1", "-k", "-f", data], env, stdout=False).cpu
                got[v] = (cpu, prof)
            for v in variants:
                cpu, prof = got[v]
                res[v]["cpu"].append(cpu)
                res[v]["ratio"].append(cpu / got["none"][0])
                if v not in ("none", "control"):
                    res[v]["depth"].append(mean_depth(prof))
            print("run %d/%d: %s" % (r + 1, a.runs, "  ".join(
                "%s %.3fs cpu" % (v, got[v][0]) for v in variants)), file=sys.stderr)

        med = statistics.median
        print("No-frame-pointer benchmark: Debian's xz -9 -T1 on %.1f MB, %d Hz, %d interleaved runs,"
              " medians" % (a.mb, a.hz, a.runs))
        print("  (machine: %d CPUs, load average at the end %.1f)" % (os.cpu_count(), os.getloadavg()[0]))
        print("%-11s %7s %10s %17s %11s" % ("profiler", "CPU s", "CPU ratio", "(min..max)", "mean depth"))
        for v in variants:
            rv = res[v]
            rng = "(%.3f..%.3f)" % (min(rv["ratio"]), max(rv["ratio"])) if v != "none" else ""
            depth = "%.2f" % med(rv["depth"]) if rv["depth"] else "-"
            print("%-11s %7.3f %10.4f %17s %11s" % (v, med(rv["cpu"]), med(rv["ratio"]), rng, depth))
        if gperf:
            vs = [p / g for p, g in zip(res["pushprof"]["cpu"], res["gperftools"]["cpu"])]
            print("pushprof / gperftools, same run: %.4f (%.3f..%.3f)" % (med(vs), min(vs), max(vs)))
        print("CPU ratio = profiled CPU / no-profiler CPU of the same run (user+sys incl. exit write);")
        print("control = no profiler again: its spread is the noise floor of the CPU ratio.")
        if not gperf:
            print("(gperftools' libprofiler.so not found: install libgoogle-perftools-dev)")
        if a.rows:
            add, hz = benchrows.add, "%d Hz" % a.hz
            add(a.rows, "nofp_xz_cpu_ratio_pushprof",
                "xz (no frame pointers) CPU, pushprof at %s / no profiler (ratio)" % hz, "<= 1.02",
                res["pushprof"]["ratio"], 3)
            if gperf:
                add(a.rows, "nofp_xz_cpu_ratio_gperftools",
                    "xz (no frame pointers) CPU, gperftools at %s / no profiler (ratio)" % hz, "",
                    res["gperftools"]["ratio"], 3)
                add(a.rows, "nofp_xz_cpu_ratio_vs_gperftools",
                    "xz (no frame pointers) CPU, pushprof / gperftools, same run (ratio)", "<= 1.00",
                    vs, 3)
            add(a.rows, "nofp_xz_cpu_ratio_control",
                "xz noise floor: no profiler again / no profiler (ratio)", "", res["control"]["ratio"], 3)
            add(a.rows, "nofp_xz_depth_pushprof", "xz mean stack depth, pushprof (frames)", "",
                res["pushprof"]["depth"], 1)
            if gperf:
                add(a.rows, "nofp_xz_depth_gperftools", "xz mean stack depth, gperftools (frames)", "",
                    res["gperftools"]["depth"], 1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
