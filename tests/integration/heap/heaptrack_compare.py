"""Compares where a pushprof heap profile and heaptrack (which records every
allocation: the exact reference) say one run of a program allocated, by
allocating function: the first frame from the allocator up that both tools
name (frames only one of them can name, e.g. static functions of a stripped
library, are skipped in both, so each is judged on the same names).

  heaptrack_compare.py PUSHPROF_HEAP.pb.gz HEAPTRACK.zst [--top N] [--tol PTS]
                       [--frames K]

Both files come from the same process: heaptrack's interposers first, then
pushprof's (LD_PRELOAD=heaptrack's:pushprof's), so pushprof's stacks start
in heaptrack's malloc/realloc/..., which are dropped here.

Passes when pushprof's top function is heaptrack's too (or within the bound
below of it in heaptrack's count), and each of heaptrack's top N functions
holding at least 3% of allocations gets a share from pushprof within --tol
percentage points or 4.5 binomial sigma, whichever is wider
(pprof_check.stat_bound). Shares are of allocation counts, alloc_objects for
pushprof: each kept sample stands for about rate/size allocations, so the
samples weigh unequally, and the binomial n is their effective number
(sum w)^2 / sum w^2 over the samples (Kish), each record of the profile
counted as alloc_space / rate samples of equal weight. Prints both tables and every bound."""
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


# heaptrack's interposers, ahead of pushprof's in the same process: the
# first frames of pushprof's stacks, not callers of the allocator.
ALLOCATORS = {"malloc", "calloc", "realloc", "free", "reallocarray", "posix_memalign",
              "aligned_alloc", "memalign", "valloc", "pvalloc"}


def pushprof_stacks(path):
    """[(alloc_objects, [function, ...] leaf first)] and the effective
    number of samples behind the objects' shares."""
    prof = pprof_check.parse_raw(pprof_check.run_pprof(path))
    oi = prof["sample_types"].index("alloc_objects/count")
    si = prof["sample_types"].index("alloc_space/bytes")
    rate = float(prof["period"]) or 1.0
    out, w1, w2 = [], 0.0, 0.0
    for s in prof["samples"]:
        fns = []
        for lid in s["locs"]:
            fns.extend(pprof_check.loc_functions(prof["locations"].get(lid)))
        fns = [norm(f) for f in fns]
        while fns and fns[0] in ALLOCATORS:
            fns.pop(0)
        objs, space = s["values"][oi], s["values"][si]
        out.append((objs, fns))
        # A record sums the samples of one stack: a kept block of size s <
        # rate stands for rate bytes and rate/s objects, so the record holds
        # about space/rate samples of objs/k objects each (Kish's effective
        # sample size: (sum w)^2 / sum w^2 over the samples).
        k = max(space / rate, 1.0)
        w1 += objs
        w2 += objs * objs / k
    return out, (w1 * w1 / w2 if w2 else 0.0)


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
    (ps, n), hs = pushprof_stacks(a.pushprof), heaptrack_stacks(a.heaptrack)
    pnames = {f for _, fr in ps for f in fr if not ADDR.match(f)}
    hnames = {f for _, fr in hs for f in fr if not ADDR.match(f)}
    known = pnames & hnames
    p, h = shares(ps, known, a.frames), shares(hs, known, a.frames)
    top = sorted(h, key=lambda k: -h[k])[:a.top]
    print("pushprof: %d sample records, %.0f effective samples" % (len(ps), n))
    ok = True
    print("%-60s %9s %9s" % ("allocating function", "heaptrack", "pushprof"))
    for k in top:
        print("%-60s %8.1f%% %8.1f%%" % (k[:60], h[k], p.get(k, 0.0)))
    if not top or top[0] == "(no common name)":
        print("FAIL heaptrack's allocations have no function both tools name")
        return 1
    ptop = max(p, key=lambda k: p[k])
    if ptop != top[0]:  # ties within the bound are ties
        tie, line = pprof_check.stat_bound(h.get(ptop, 0.0), h[top[0]], a.tol, n=n, share=True,
                                           side="low", what="heaptrack's share of %s" % ptop)
        print(("ok   " if tie else "FAIL ") + "top function: heaptrack %s, pushprof %s: %s"
              % (top[0], ptop, line))
        ok = ok and tie
    for k in top:
        if h[k] >= 3:
            good, line = pprof_check.stat_bound(p.get(k, 0.0), h[k], a.tol, n=n, share=True,
                                                what=k)
            print(("ok   " if good else "FAIL ") + line)
            ok = ok and good
    print("pass" if ok else "fail")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
