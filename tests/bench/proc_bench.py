#!/usr/bin/env python3
"""Per-process cost of the SDK: wall time added to short
commands by LD_PRELOAD=libpushprof_preload.so pushing to a real sidecar at
exit, beside gperftools' libprofiler.so writing its file (CPUPROFILE), in
pairs: each round runs the command plain, under pushprof and under
gperftools, in a rotating order, and the added time is the profiled run
minus the plain run of the same round. Prints p50 and p95 per command.
A benchmark, not a test: it prints figures and never fails on time.

  proc_bench.py --build DIR [--pairs N] [--rows FILE]

Commands: /bin/true (a process that is never sampled), `ls -l /usr/lib`
(sampled now and then at the default 100 Hz), and `ls -l` of the largest
library directory at 1000 Hz (ls_sampled: ~10 ms, sampled nearly always),
the cost of a short process that did take samples (both profilers at
1000 Hz there). How many runs of each command took a sample is printed.
The sidecar is the real pushprof-sidecar (file exporter) on a private
socket; every pushprof run must reach it, as an acknowledged profile or as
an empty push (a run that took no sample), else the bench fails.
--rows FILE appends the figures as rows for tests/bench/run (benchrows.py).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchrows  # noqa: E402
from sdk_bench import GPERF_CANDIDATES, clean_env  # noqa: E402

BIG_DIR = next((d for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                             "/usr/lib64", "/usr/lib") if os.path.isdir(d)), "/usr/lib")
# name: (command, sampling rate for both profilers; None: their defaults)
COMMANDS = {"true": (["/bin/true"], None), "ls": (["ls", "-l", "/usr/lib"], None),
            "ls_sampled": (["ls", "-l", BIG_DIR], 1000)}


def wall_of(cmd, env):
    """Wall time of one run (ms) and its pid."""
    c = benchrows.run_child(cmd, env, stdout=False)
    return c.wall * 1000.0, c.pid


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def main():
    ap = benchrows.arg_parser()
    ap.add_argument("--pairs", type=int, default=60)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    preload = os.path.join(build, "sdk", "libpushprof_preload.so")
    sidecar = os.path.join(build, "sidecar", "pushprof-sidecar")
    benchrows.need(preload, sidecar)
    gperf = next((g for g in GPERF_CANDIDATES if os.path.exists(g)), None)
    tmp = tempfile.mkdtemp(prefix="pushprof-proc-bench.")
    sock = os.path.join(tmp, "pp.sock")
    log = open(os.path.join(tmp, "sidecar.log"), "w")
    sc = subprocess.Popen([sidecar, "--socket", sock, "--spool", os.path.join(tmp, "spool"),
                           "--export", "file://" + os.path.join(tmp, "out"), "--batch-window", "5",
                           "--log-level", "debug"],
                          stdout=log, stderr=log)
    try:
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        else:
            raise SystemExit("proc_bench: the sidecar did not start (see %s)" % log.name)
        base = clean_env()
        variants = ["plain", "pushprof"] + (["gperftools"] if gperf else [])
        added = {(c, v): [] for c in COMMANDS for v in variants if v != "plain"}
        pushes = 0
        pids = {name: set() for name in COMMANDS}  # of the pushprof runs
        for name, (cmd, hz) in COMMANDS.items():
            for r in range(a.pairs):
                got = {}
                for v in benchrows.rotated(variants, r):
                    env = dict(base)
                    if v == "pushprof":
                        env.update(LD_PRELOAD=preload, PUSHPROF_SOCKET=sock)
                        if hz:
                            env["PUSHPROF_HZ"] = str(hz)
                        pushes += 1
                    elif v == "gperftools":
                        env.update(LD_PRELOAD=gperf, CPUPROFILE=os.path.join(tmp, "g.prof"))
                        if hz:
                            env["CPUPROFILE_FREQUENCY"] = str(hz)
                    got[v], pid = wall_of(cmd, env)
                    if v == "pushprof":
                        pids[name].add(pid)
                for v in variants[1:]:
                    added[(name, v)].append(got[v] - got["plain"])
        time.sleep(1)
        log.flush()
        with open(log.name) as f:
            lines = f.readlines()
        accepted = sum(1 for line in lines if 'msg="push accepted"' in line)
        empty = sum(1 for line in lines if 'msg="empty push"' in line)
        acked_pids = set()
        for line in lines:
            if 'msg="push accepted"' in line:
                for field in line.split():
                    if field.startswith("pid="):
                        acked_pids.add(int(field[4:]))
    finally:
        sc.terminate()
        sc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print("Per-process cost: wall time added per command run, %d pairs each, ms" % a.pairs)
    print("%-10s %-11s %8s %8s  %s" % ("command", "profiler", "p50", "p95", "pushprof runs sampled"))
    for (name, v), xs in added.items():
        p50, p95 = pct(xs, 0.5), pct(xs, 0.95)
        cmd, hz = COMMANDS[name]
        what = " ".join(cmd) + (" at %d Hz" % hz if hz else "")
        sampled = len(pids[name] & acked_pids)
        print("%-10s %-11s %8.2f %8.2f  %s" % (name, v, p50, p95,
                                               "%d of %d" % (sampled, len(pids[name]))
                                               if v == "pushprof" else ""))
        if a.rows:
            target = "<= 2" if v == "pushprof" and not hz else ""
            benchrows.add(a.rows, "proc_%s_%s_ms" % (name, v),
                          "Wall time added per process, %s, %s, p50 of %d pairs (ms)"
                          % (what, v, a.pairs), target, xs, 2)
            benchrows.add(a.rows, "proc_%s_%s_p95_ms" % (name, v),
                          "Wall time added per process, %s, %s, p95 (ms)"
                          % (what, v), "<= 4" if v == "pushprof" and not hz else "",
                          [p95], 2)
    print("pushes seen by the sidecar: %d profiles acked + %d empty (no sample taken) of %d runs"
          % (accepted, empty, pushes))
    if accepted + empty != pushes:
        raise SystemExit("proc_bench: %d runs under pushprof, but the sidecar saw %d pushes"
                         % (pushes, accepted + empty))


if __name__ == "__main__":
    main()
