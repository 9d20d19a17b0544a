#!/usr/bin/env python3
"""Checks a profile of sk_leafmix against the CPU shares the workload
measured itself (its stdout), reading the profile with `go tool pprof -raw`.

  sk_leafmix_check.py PROFILE WORKLOAD_STDOUT [--tolerance POINTS]

Fails (exit 1) unless:
- each of func_a/b/c is on the stack (cumulative) of a share of all samples
  within POINTS (default 2) of the share of the worker's CPU the workload
  measured for it, or within 4.5 binomial sigma over the samples if that is
  wider (pprof_check.stat_bound; ~750 samples put a 50% share's 4.5 sigma
  at 8 points: the binomial bound is an upper one, a CPU timer's samples in
  a segment of known length vary by about one, not by their square root);
- `leaf` is the leaf of at least 80% of the samples (else the workload did
  not test what it is meant to);
- at least 98% of the samples in `leaf` have func_a, func_b or func_c as the
  caller, and `worker` as the caller's caller.
Prints one line per figure, "ok" or "FAIL".
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pprof_check  # noqa: E402

FUNCS = ["func_a", "func_b", "func_c"]


def stacks(profile):
    """[(count, [function, ...] leaf first)] from go tool pprof -raw."""
    return [(n, fns) for n, fns, _, _ in pprof_check.sample_stacks(profile)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile")
    ap.add_argument("stdout")
    ap.add_argument("--tolerance", type=float, default=2.0)
    a = ap.parse_args()
    measured = {}
    with open(a.stdout) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            if k.startswith("share_"):
                measured[k[len("share_"):]] = float(v)
    if sorted(measured) != FUNCS:
        raise SystemExit("sk_leafmix_check: no share_func_a/b/c lines in %s" % a.stdout)

    c = pprof_check.Checker()
    st = stacks(a.profile)
    total = sum(n for n, _ in st)
    c.check(total >= 200, "%d samples (>= 200)" % total)
    total = max(total, 1)
    for fn in FUNCS:
        cum = sum(n for n, fns in st if fn in fns)
        got = 100.0 * cum / total
        c.check(*pprof_check.stat_bound(
            got, measured[fn], a.tolerance, n=total, share=True,
            what="%s on the stack of %d samples: %.2f%%, of the worker's measured CPU" % (
                fn, cum, got)))
    in_leaf = [(n, fns) for n, fns in st if fns and fns[0] == "leaf"]
    n_leaf = sum(n for n, _ in in_leaf)
    c.check(n_leaf >= 0.8 * total, "leaf is the leaf of %.1f%% of the samples (>= 80%%)"
            % (100.0 * n_leaf / total))
    callers, good_caller, good_chain = {}, 0, 0
    for n, fns in in_leaf:
        caller = fns[1] if len(fns) > 1 else "<none>"
        callers[caller] = callers.get(caller, 0) + n
        if caller in FUNCS:
            good_caller += n
            if len(fns) > 2 and fns[2] == "worker":
                good_chain += n
    top = ", ".join("%s %d" % kv for kv in sorted(callers.items(), key=lambda kv: -kv[1])[:5])
    n_leaf = max(n_leaf, 1)
    c.check(good_caller >= 0.98 * n_leaf,
            "leaf's caller is func_a/b/c in %.1f%% of its samples (>= 98%%; callers: %s)"
            % (100.0 * good_caller / n_leaf, top))
    c.check(good_chain >= 0.98 * n_leaf,
            "leaf <- func_a/b/c <- worker in %.1f%% of leaf's samples (>= 98%%)"
            % (100.0 * good_chain / n_leaf))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
