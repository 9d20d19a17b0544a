#!/usr/bin/env python3
"""Machine-readable benchmark rows, and the one table tests/bench/run prints.

A row is one TSV line: key, label, target, median, range, met.
  key     stable identifier (tests/bench/run lists the keys it expects)
  label   what the figure is, with its unit: "Ack latency p99, 1 MiB (ms)"
  target  "" or an operator and a number: "<= 10", ">= 200", "< 2000"
  median  the median over runs ("n/a" when no run produced a number)
  range   "min..max" over runs ("-" for a figure measured once)
  met     "yes" / "no" when there is a target, else ""

As a module (the Python benches): add(path, key, label, target, values, digits),
and what every bench does around its rows: need (built files), clean_env,
rotated (run order) and run_child (one measured run).
As a command (the shell benches):
  benchrows.py add FILE KEY LABEL TARGET DIGITS VALUE...
  benchrows.py table FILE [--expect KEY]... [--check]
'table' prints the rows as one markdown table in the order of --expect
(rows not expected follow, in file order); an expected key without a row,
or a row without a numeric median, is listed as missing, and --check then
makes the command exit 1 (the smoke test uses that). C benches write the
same format through tests/bench/bench_rows.h.
"""
import argparse
import collections
import math
import os
import statistics
import subprocess
import sys
import threading
import time


def _num(v):
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) or math.isinf(x) else x


def _fmt(x, digits):
    return "%.*f" % (digits, x)


def met(median, target):
    """'yes'/'no' for a median against a target such as '<= 10', else ''."""
    m = _num(median)
    parts = target.split()
    if m is None or len(parts) != 2 or _num(parts[1]) is None:
        return ""
    t = float(parts[1])
    ok = {"<=": m <= t, "<": m < t, ">=": m >= t, ">": m > t}.get(parts[0])
    if ok is None:
        return ""
    return "yes" if ok else "no"


def add(path, key, label, target, values, digits=1):
    """Appends one row: the median and range of values (None/nan skipped)."""
    nums = [x for x in (_num(v) for v in values) if x is not None]
    if nums:
        median = _fmt(statistics.median(nums), digits)
        rng = "%s..%s" % (_fmt(min(nums), digits), _fmt(max(nums), digits)) if len(nums) > 1 else "-"
    else:
        median, rng = "n/a", "-"
    for field in (key, label, target):
        if "\t" in field or "\n" in field:
            raise ValueError("benchrows: tab or newline in %r" % field)
    with open(path, "a") as f:
        f.write("\t".join([key, label, target, median, rng, met(median, target)]) + "\n")


def read(path):
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 6:
                rows.append(parts)
            elif line.strip():
                print("benchrows: ignoring a malformed row: %r" % line, file=sys.stderr)
    return rows


def table(path, expect, check):
    rows = read(path)
    by_key = {}
    for r in rows:
        by_key.setdefault(r[0], r)  # the first row of a key wins
    order = list(expect) + [r[0] for r in rows if r[0] not in expect]
    seen, missing = set(), []
    print("| Figure | Target | Median | Range over runs | Met |")
    print("|---|---|---|---|---|")
    for key in order:
        if key in seen:
            continue
        seen.add(key)
        r = by_key.get(key)
        if r is None or _num(r[3]) is None:
            missing.append(key)
            label = r[1] if r else "`%s`" % key
            print("| %s | %s | missing | - | %s |" % (label, r[2] if r else "", "no" if r and r[2] else ""))
            continue
        print("| %s | %s | %s | %s | %s |" % (r[1], r[2], r[3], r[4], r[5]))
    if missing:
        print("\nmissing figures (the bench failed or did not run; see its log): %s" % ", ".join(missing))
    return 1 if check and missing else 0


def arg_parser(runs=None, runs_help=None):
    """The options every Python bench takes: --build DIR, --rows FILE and,
    given a default, --runs N."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    if runs is not None:
        ap.add_argument("--runs", type=int, default=runs, help=runs_help)
    ap.add_argument("--rows", help="append machine-readable rows (TSV) to this file")
    return ap


def _me():
    return os.path.splitext(os.path.basename(sys.argv[0]))[0]


def need(*paths):
    """Ends the bench, naming the first of paths that does not exist."""
    for p in paths:
        if not os.path.exists(p):
            raise SystemExit("%s: %s missing; build first" % (_me(), p))


def clean_env(drop=()):
    """The environment without what would steer a profiler: PUSHPROF_*,
    LD_PRELOAD, and the names in drop."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("PUSHPROF_") and k != "LD_PRELOAD" and k not in drop}


def rotated(variants, r):
    """Round r's order: the variants rotated by r, so none is always first."""
    return variants[r % len(variants):] + variants[:r % len(variants)]


# cpu: user+sys seconds of the child (and of the orphans it left, with
# reap_orphans); wall: seconds; maxrss_kib: its peak RSS; vals: its stdout's
# key=value lines as floats; err: its stderr; pid: its process id.
ChildRun = collections.namedtuple("ChildRun", "cpu wall maxrss_kib vals err pid")


def run_child(cmd, env, cwd=None, stdout=True, reap_orphans=False, preexec_fn=None):
    """Runs cmd to its end and returns its ChildRun. A child that fails ends
    the bench with its command and the tail of its stderr. reap_orphans
    assumes the caller is a subreaper with no other children."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE if stdout else subprocess.DEVNULL,
                         stderr=subprocess.PIPE, preexec_fn=preexec_fn)
    err = []  # read beside stdout: a child that fills one pipe must not block on the other
    reader = threading.Thread(target=lambda: err.append(p.stderr.read()))
    reader.start()
    out = p.stdout.read() if stdout else b""
    reader.join()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    cpu, maxrss = ru.ru_utime + ru.ru_stime, float(ru.ru_maxrss)
    while reap_orphans:
        try:
            _, _, ru = os.wait4(-1, 0)
        except ChildProcessError:
            break
        cpu += ru.ru_utime + ru.ru_stime
    wall = time.monotonic() - t0
    err = err[0].decode(errors="replace")
    if p.returncode != 0:
        raise SystemExit("%s: %s exited %d: %s" % (_me(), " ".join(cmd), p.returncode, err[-2000:]))
    vals = {}
    for line in out.decode().splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            vals[k] = float(v)
    return ChildRun(cpu, wall, maxrss, vals, err, p.pid)


def main(argv):
    if len(argv) >= 7 and argv[1] == "add":
        add(argv[2], argv[3], argv[4], argv[5], argv[7:], int(argv[6]))
        return 0
    if len(argv) >= 3 and argv[1] == "table":
        expect, check, i = [], False, 3
        while i < len(argv):
            if argv[i] == "--expect" and i + 1 < len(argv):
                expect.append(argv[i + 1])
                i += 2
            elif argv[i] == "--check":
                check, i = True, i + 1
            else:
                print("benchrows: unknown argument %r" % argv[i], file=sys.stderr)
                return 2
        return table(argv[2], expect, check)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
