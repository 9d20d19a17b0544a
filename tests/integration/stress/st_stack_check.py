#!/usr/bin/env python3
"""Checks the stacks of chosen leaves in a stress workload's profile, read
with `go tool pprof -raw` (pprof_check.py's parser).

  st_stack_check.py PROFILE --leaf RX PROPERTY MIN_SAMPLES MIN_FRACTION ...

For each --leaf: the samples whose leaf (innermost function) matches RX
must number at least MIN_SAMPLES (samples/count), and at least
MIN_FRACTION of them must have PROPERTY, one of
  caller=RX       the function right above the leaf matches
  ancestor=RX     some function above the leaf matches
  label=KEY:VALUE the sample carries that string label
  nolabel=KEY     the sample carries no label KEY
  depth=N         the sample has exactly N locations
  any             (always true: only MIN_SAMPLES is checked)
Prints one line per rule, "ok" or "FAIL", and exits 1 if any failed.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pprof_check  # noqa: E402


def has_property(prop, fns, labels, nlocs):
    kind, _, arg = prop.partition("=")
    if kind == "any":
        return True
    if kind == "caller":
        return len(fns) > 1 and re.search(arg, fns[1]) is not None
    if kind == "ancestor":
        return any(re.search(arg, f) for f in fns[1:])
    if kind == "label":
        key, _, value = arg.partition(":")
        return value in labels.get(key, [])
    if kind == "nolabel":
        return arg not in labels
    if kind == "depth":
        return nlocs == int(arg)
    raise SystemExit("st_stack_check: unknown property %r" % prop)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profile")
    ap.add_argument("--leaf", nargs=4, action="append", default=[],
                    metavar=("RX", "PROPERTY", "MIN_SAMPLES", "MIN_FRACTION"))
    a = ap.parse_args()
    st = pprof_check.sample_stacks(a.profile)
    c = pprof_check.Checker()
    for rx, prop, min_n, min_frac in a.leaf:
        mine = [s for s in st if s[1] and re.search(rx, s[1][0])]
        n = sum(s[0] for s in mine)
        good = sum(s[0] for s in mine if has_property(prop, s[1], s[2], s[3]))
        c.check(n >= int(min_n), "leaf /%s/: %d samples (>= %s)" % (rx, n, min_n))
        frac = good / n if n else 0.0
        # The most frequent stacks that miss, to see what went wrong.
        bad = {}
        for s in mine:
            if not has_property(prop, s[1], s[2], s[3]):
                key = " <- ".join(s[1][:6]) + (" ..." if len(s[1]) > 6 else "")
                bad[key] = bad.get(key, 0) + s[0]
        worst = "; ".join("%d x %s" % (v, k) for k, v in
                          sorted(bad.items(), key=lambda kv: -kv[1])[:3])
        c.check(n > 0 and frac >= float(min_frac),
                "leaf /%s/: %s in %.3f of its samples (>= %s)%s"
                % (rx, prop, frac, min_frac, "; missing in: " + worst if worst else ""))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
