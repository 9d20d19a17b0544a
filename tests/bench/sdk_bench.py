#!/usr/bin/env python3
"""SDK benchmarks: CPU overhead and accuracy of pushprof next to gperftools.

Runs bench_sdk_split (2 threads, fixed work split 50/30/20) with no
profiler, with LD_PRELOAD=libpushprof_preload.so (PUSHPROF_HZ) and with
LD_PRELOAD=libprofiler.so (CPUPROFILE_FREQUENCY), interleaved (the order
rotates every run), several runs; prints medians. A benchmark, not a test:
it prints figures and never fails on time.

  sdk_bench.py --build DIR [--runs N] [--hz HZ] [--units U] [--rows FILE]

Overhead: the child's CPU time (user+sys from wait4, so it includes the
profiler's own thread and its exit-time write) divided by the same run's
no-profiler CPU time; median over runs. Wall time likewise.
Accuracy: each function's share of the profile's samples minus its true
share (measured by the workload on its thread CPU clocks), in percentage
points; median of the absolute error over runs. Capture: samples in the
profile / (CPU seconds x hz).
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
import pprof_check  # noqa: E402
import benchrows  # noqa: E402

FUNCS = ["bench_fifty", "bench_thirty", "bench_twenty"]
GPERF_CANDIDATES = ["/usr/lib/x86_64-linux-gnu/libprofiler.so",
                    "/usr/lib/x86_64-linux-gnu/libprofiler.so.0",
                    "/usr/lib/libprofiler.so"]


def clean_env():
    return benchrows.clean_env(("CPUPROFILE",))


def variant_env(base, variant, prof, hz, preload, gperf):
    """The environment of one run: no profiler, pushprof or gperftools,
    each writing its profile to prof."""
    env = dict(base)
    if variant == "pushprof":
        env.update(LD_PRELOAD=preload, PUSHPROF_OUTPUT=prof, PUSHPROF_HZ=str(hz))
    elif variant == "gperftools":
        env.update(LD_PRELOAD=gperf, CPUPROFILE=prof, CPUPROFILE_FREQUENCY=str(hz))
    return env


def shares_from(profile, binary, symbolize):
    prof = pprof_check.parse_raw(pprof_check.run_pprof(profile, binary, symbolize))
    rep = pprof_check.summarize(prof, 0)
    total = rep["total"].get("samples/count", 0)
    counts = {f: rep["cum"].get(f, 0) for f in FUNCS}
    denom = sum(counts.values())
    shares = {f: 100.0 * counts[f] / denom if denom else 0.0 for f in FUNCS}
    return shares, total, denom


def write_rows(a, res, variants):
    add = benchrows.add
    hz = "%d Hz" % a.hz
    add(a.rows, "sdk_cpu_ratio_pushprof", "SDK CPU, pushprof at %s / no profiler (ratio)" % hz,
        "<= 1.01", res["pushprof"]["ratio"], 3)
    if "gperftools" in variants:
        add(a.rows, "sdk_cpu_ratio_gperftools", "SDK CPU, gperftools at %s / no profiler (ratio)" % hz,
            "", res["gperftools"]["ratio"], 3)
        add(a.rows, "sdk_cpu_ratio_vs_gperftools", "SDK CPU, pushprof / gperftools, same run (ratio)",
            "<= 1.00", [p / g for p, g in zip(res["pushprof"]["cpu"], res["gperftools"]["cpu"])], 3)
    add(a.rows, "sdk_cpu_ratio_control", "Noise floor: no profiler again / no profiler (ratio)", "",
        res["control"]["ratio"], 3)
    for v in ("pushprof", "gperftools"):
        if v in variants:
            worst = [max(res[v]["err"][f][r] for f in FUNCS) for r in range(len(res[v]["capture"]))]
            add(a.rows, "sdk_share_err_" + v,
                "Share error, worst of the 50/30/20 functions, %s at %s (points)" % (v, hz), "", worst, 2)


def main():
    ap = benchrows.arg_parser(7)
    ap.add_argument("--hz", type=int, default=100)
    ap.add_argument("--units", type=int, default=60)
    a = ap.parse_args()

    build = os.path.abspath(a.build)
    preload = os.path.join(build, "sdk", "libpushprof_preload.so")
    benchrows.need(preload)
    gperf = next((g for g in GPERF_CANDIDATES if os.path.exists(g)), None)
    tmp = tempfile.mkdtemp(prefix="pushprof-bench.")
    try:
        binary = os.path.join(tmp, "bench_sdk_split")
        subprocess.run(["cc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread",
                        os.path.join(HERE, "bench_sdk_split.c"), "-o", binary], check=True)
        base = clean_env()
        # "control" runs with no profiler again: its ratio is the noise floor.
        variants = ["none", "control", "pushprof"] + (["gperftools"] if gperf else [])
        res = {v: {"cpu": [], "wall": [], "ratio": [], "wall_ratio": [], "err": {f: [] for f in FUNCS},
                   "capture": []} for v in variants}
        for r in range(a.runs):
            got = {}
            for v in benchrows.rotated(variants, r):
                prof = os.path.join(tmp, "%s-%d.prof" % (v, r))
                env = variant_env(base, v, prof, a.hz, preload, gperf)
                cpu, wall, _, vals, err, _ = benchrows.run_child([binary, str(a.units)], env)
                got[v] = (cpu, wall, vals, prof, err)
            for v in variants:
                cpu, wall, vals, prof, err = got[v]
                res[v]["cpu"].append(cpu)
                res[v]["wall"].append(wall)
                res[v]["ratio"].append(cpu / got["none"][0])
                res[v]["wall_ratio"].append(wall / got["none"][1])
                if v in ("none", "control"):
                    continue
                true_total = sum(vals["true_" + f] for f in FUNCS)
                shares, total, _ = shares_from(prof, binary if v == "gperftools" else None,
                                               "local" if v == "gperftools" else "none")
                for f in FUNCS:
                    res[v]["err"][f].append(abs(shares[f] - 100.0 * vals["true_" + f] / true_total))
                res[v]["capture"].append(total / (vals["cpu_seconds"] * a.hz))
            print("run %d/%d: %s" % (r + 1, a.runs, "  ".join(
                "%s %.3fs cpu" % (v, got[v][0]) for v in variants)), file=sys.stderr)

        med = statistics.median
        print("SDK benchmark: bench_sdk_split, 2 threads, %d units/thread, %d Hz, %d interleaved runs, medians"
              % (a.units, a.hz, a.runs))
        print("  (machine: %d CPUs, load average at the end %.1f)" % (os.cpu_count(), os.getloadavg()[0]))
        print("%-11s %7s %10s %17s %10s %8s %9s %9s %9s" % (
            "profiler", "CPU s", "CPU ratio", "(min..max)", "wall ratio", "capture", "err 50%",
            "err 30%", "err 20%"))
        for v in variants:
            rv = res[v]
            rng = "(%.3f..%.3f)" % (min(rv["ratio"]), max(rv["ratio"]))
            if v in ("none", "control"):
                print("%-11s %7.3f %10.4f %17s %10.4f %8s %9s %9s %9s" % (
                    v, med(rv["cpu"]), med(rv["ratio"]), rng if v == "control" else "",
                    med(rv["wall_ratio"]), "-", "-", "-", "-"))
                continue
            print("%-11s %7.3f %10.4f %17s %10.4f %8.3f %8.2fpt %8.2fpt %8.2fpt" % (
                v, med(rv["cpu"]), med(rv["ratio"]), rng, med(rv["wall_ratio"]), med(rv["capture"]),
                med(rv["err"]["bench_fifty"]), med(rv["err"]["bench_thirty"]),
                med(rv["err"]["bench_twenty"])))
        print("CPU ratio = profiled CPU / no-profiler CPU of the same run (user+sys incl. exit write);")
        print("control = no profiler again: its spread is the noise floor of the CPU ratio;")
        print("err = |share in profile - true share| in points; capture = samples / (CPU s x hz).")
        if not gperf:
            print("(gperftools' libprofiler.so not found: install libgoogle-perftools-dev)")
        if a.rows:
            write_rows(a, res, variants)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
