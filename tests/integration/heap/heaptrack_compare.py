"""Compares where a pushprof heap profile and heaptrack (which records every
allocation: the exact reference) say a program allocated, by allocating
function: the first frame from the allocator up that both tools name
(frames only one of them can name, e.g. static functions of a stripped
library, are skipped in both, so each is judged on the same names).

  heaptrack_compare.py PUSHPROF_HEAP.pb.gz HEAPTRACK.zst [--top N] [--tol PTS]
                       [--frames K]

Passes when pushprof's top function is heaptrack's too (or within --tol of
it in heaptrack's count), and each of
heaptrack's top N functions holding at least 3% of allocations gets a share
from pushprof within --tol percentage points (allocation counts,
alloc_objects for pushprof). Prints both tables."""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pprof_check  # noqa: E402

ADDR = re.compile(r"^(0x[0-9a-f]+|\?\?|)$")
SUFFIX = re.compile(r" \([^()]*\)$")  # heaptrack's " (file.c)"


def norm(name):
    return SUFFIX.sub("", name.strip())


def heaptrack_stacks(path):
    """[(count, [function, ...] leaf first)] from heaptrack_print's
    flame-graph stacks (root first, ';'-separated)."""
    with tempfile.TemporaryDirectory() as d:
        fg = os.path.join(d, "fg.txt")
        subprocess.run(["heaptrack_print", "-f", path, "-F", fg, "--flamegraph-cost-type",
                        "allocations", "-p", "0", "-a", "0", "-T", "0"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out = []
        for line in open(fg):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            stack, n = line.rsplit(" ", 1)
            frames = [norm(f) for f in stack.strip(";").split(";")]
            out.append((int(n), list(reversed(frames))))
        return out


def pushprof_stacks(path):
    return [(v, [norm(f) for f in fns]) for v, fns, _, _ in
            pprof_check.sample_stacks(path, "alloc_objects/count")]


def shares(stacks, known, depth):
    c = collections.Counter()
    for n, frames in stacks:
        names = [f for f in frames if f in known][:depth]
        site = " < ".join(names) if names else "(no common name)"
        c[site] += n
    total = sum(c.values()) or 1
    return {k: 100.0 * v / total for k, v in c.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pushprof")
    ap.add_argument("heaptrack")
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--tol", type=float, default=5.0)
    ap.add_argument("--frames", type=int, default=1,
                    help="key by the first N commonly named frames (allocator's caller first)")
    a = ap.parse_args()
    ps, hs = pushprof_stacks(a.pushprof), heaptrack_stacks(a.heaptrack)
    pnames = {f for _, fr in ps for f in fr if not ADDR.match(f)}
    hnames = {f for _, fr in hs for f in fr if not ADDR.match(f)}
    known = pnames & hnames
    p, h = shares(ps, known, a.frames), shares(hs, known, a.frames)
    top = sorted(h, key=lambda k: -h[k])[:a.top]
    ok = True
    print("%-60s %9s %9s" % ("allocating function", "heaptrack", "pushprof"))
    for k in top:
        print("%-60s %8.1f%% %8.1f%%" % (k[:60], h[k], p.get(k, 0.0)))
    if not top or top[0] == "(no common name)":
        print("FAIL heaptrack's allocations have no function both tools name")
        return 1
    ptop = max(p, key=lambda k: p[k])
    if h.get(ptop, 0.0) < h[top[0]] - a.tol:  # ties within the tolerance are ties
        print("FAIL top function: heaptrack %s, pushprof %s" % (top[0], ptop))
        ok = False
    for k in top:
        if h[k] >= 3 and abs(h[k] - p.get(k, 0.0)) > a.tol:
            print("FAIL %s: %.1f%% vs %.1f%% (tolerance %.1f points)" % (k, h[k], p.get(k, 0.0),
                                                                          a.tol))
            ok = False
    print("pass" if ok else "fail")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
