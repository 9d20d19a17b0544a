#!/usr/bin/env python3
"""Off-CPU and lock profiles: what they cost a program that waits a lot.

Runs bench_wait in one process per variant, interleaved (the order
rotates every round), several rounds; prints medians:

  none      no profiler
  cpu       LD_PRELOAD=libpushprof_preload.so PUSHPROF_PROFILES=cpu
  wait-off  the same with libpushprof_wait.so preloaded too: the
            interposers are there, both profiles off
  wait      both libraries, PUSHPROF_PROFILES=cpu,offcpu,lock (default
            rates)

pingpong: a server-like loop (two threads pass a token through two pipes,
every hop a blocking read, a write and four uncontended mutex lock/unlock
pairs), pinned to one CPU; CPU is user+sys of the whole process, a ratio
divides two runs of the same round. calls: one thread's CPU time per call, the median batch:
an uncontended lock+unlock pair and a read of an empty non-blocking pipe
(a system call that returns at once); added nanoseconds are the variant's
minus the no-profiler run's of the same round. A benchmark, not a test: it
prints figures and never fails on time; it fails when the off-CPU profile
is missing.

  wait_bench.py --build DIR [--runs N] [--rounds R] [--rows FILE]
"""
import os
import statistics
import sys
import tempfile
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchrows  # noqa: E402

VARIANTS = ["none", "cpu", "wait-off", "wait"]


def pin_to_one_cpu():
    """The ping-pong's two threads on one CPU: each hop is then one switch
    on that CPU, not a wake-up across CPUs whose cost depends on where the
    scheduler put the threads (the spread of the ratios drops)."""
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def main():
    ap = benchrows.arg_parser(15)
    ap.add_argument("--rounds", type=int, default=200000, help="pingpong round trips per run")
    ap.add_argument("--batches", type=int, default=15)
    ap.add_argument("--calls", type=int, default=1000000)
    a = ap.parse_args()
    if min(a.runs, a.rounds, a.batches, a.calls) < 1:
        raise SystemExit("wait_bench: every count must be positive")
    build = os.path.abspath(a.build)
    binary = os.path.join(build, "tests", "bench_wait")
    preload = os.path.join(build, "sdk", "libpushprof_preload.so")
    wait_lib = os.path.join(build, "sdk", "libpushprof_wait.so")
    benchrows.need(binary, preload, wait_lib)
    base = benchrows.clean_env()
    tmp = tempfile.mkdtemp(prefix="pushprof-wait-bench.")

    def env_of(v, out):
        env = dict(base)
        if v != "none":
            env.update(LD_PRELOAD=preload if v == "cpu" else preload + ":" + wait_lib,
                       PUSHPROF_OUTPUT=out + "-%t.pb.gz",
                       PUSHPROF_PROFILES="cpu,offcpu,lock" if v == "wait" else "cpu")
        return env

    cpu = {v: [] for v in VARIANTS}
    lock_ns = {v: [] for v in VARIANTS}
    read_ns = {v: [] for v in VARIANTS}
    try:
        for r in range(a.runs):
            for v in benchrows.rotated(VARIANTS, r):
                out = os.path.join(tmp, "%s-%d" % (v, r))
                cpu[v].append(benchrows.run_child([binary, "pingpong", str(a.rounds)], env_of(v, out), stdout=False,
                                                  preexec_fn=pin_to_one_cpu).cpu)
                if v == "wait" and not os.path.exists(out + "-offcpu.pb.gz"):
                    raise SystemExit("wait_bench: no off-CPU profile at %s-offcpu.pb.gz" % out)
                c = benchrows.run_child([binary, "calls", str(a.batches), str(a.calls)], env_of(v, out + "c")).vals
                lock_ns[v].append(c["lock_ns"])
                read_ns[v].append(c["read_ns"])
            print("round %d/%d: %s" % (r + 1, a.runs, "  ".join(
                "%s %.3fs %.1f/%.1f ns" % (v, cpu[v][-1], lock_ns[v][-1], read_ns[v][-1]) for v in VARIANTS)),
                file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def ratio(x, y):
        return [p / q for p, q in zip(cpu[x], cpu[y])]

    def added(d, v):
        return [p - q for p, q in zip(d[v], d["none"])]

    rows = [
        ("wait_cpu_ratio_wait", "Waits, pushprof cpu,offcpu,lock / cpu only, ping-pong (ratio)", "<= 1.03",
         ratio("wait", "cpu"), 3),
        ("wait_cpu_ratio_wait_none", "Waits, pushprof cpu,offcpu,lock / no profiler, ping-pong (ratio)", "",
         ratio("wait", "none"), 3),
        ("wait_cpu_ratio_off", "Waits, interposers loaded, profiles off / cpu only, ping-pong (ratio)", "",
         ratio("wait-off", "cpu"), 3),
        ("wait_lock_added_ns_off", "Uncontended lock+unlock added, interposers loaded, off (ns)", "",
         added(lock_ns, "wait-off"), 2),
        ("wait_lock_added_ns_on", "Uncontended lock+unlock added, offcpu,lock on (ns)", "",
         added(lock_ns, "wait"), 2),
        ("wait_read_added_ns_on", "Non-blocking read added, offcpu on (ns)", "", added(read_ns, "wait"), 1),
    ]
    med = statistics.median
    print("Wait overhead: bench_wait pingpong %d round trips, calls %d x %d, %d interleaved rounds; medians"
          % (a.rounds, a.batches, a.calls, a.runs))
    print("  (machine: %d CPUs, load average at the end %.1f)" % (os.cpu_count(), os.getloadavg()[0]))
    for v in VARIANTS:
        print("  %-9s pingpong %.3f s CPU   lock+unlock %.2f ns   read %.1f ns" % (
            v, med(cpu[v]), med(lock_ns[v]), med(read_ns[v])))
    for key, label, target, vals, digits in rows:
        print("%-80s %.*f  (%.*f..%.*f)%s" % (label, digits, med(vals), digits, min(vals), digits, max(vals),
                                            "  target " + target if target else ""))
    if a.rows:
        for key, label, target, vals, digits in rows:
            benchrows.add(a.rows, key, label, target, vals, digits)


if __name__ == "__main__":
    main()
