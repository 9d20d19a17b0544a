#!/usr/bin/env python3
"""Compares pushprof's stacks of a program with perf's DWARF stacks of the
same workload: Debian binaries built without frame pointers.

  sk_vs_perf.py --pushprof PROFILE --perf-script FILE [--name NAME]
                [--min-depth-ratio 0.9] [--hot 0.05]

PROFILE is read with `go tool pprof -raw`; FILE is the output of
`perf script -F comm,tid,ip,sym,dso --no-inline` over a
`perf record -e cpu-clock -c PERIOD --call-graph dwarf,65528` of the same
command. What legitimately differs, and how it is handled:
- perf's kernel-mode samples start with kernel frames; pushprof's signal
  arrives on the way back to user space, at the same user PC. Kernel frames
  are dropped, so both see the user stack at the syscall or fault.
- Names differ (perf reads .symtab and versioned names such as
  __libc_start_main@@GLIBC_2.34, pushprof the symbols it found, and most
  of these binaries are stripped to .dynsym). Frames are therefore compared
  by function, a function being its FDE in the object's own .eh_frame
  (`readelf --debug-dump=frames`): object base name + FDE start. The leaf is
  looked up at its PC, callers at return address - 1 (a call may be the last
  instruction of a function). Names are only for the printout.
- Addresses: pushprof's are runtime addresses, turned into the object's
  virtual addresses through the pprof mapping (file offset) and the object's
  PT_LOAD headers; perf script prints object-relative addresses.
- perf copies at most 65528 bytes of stack per sample: samples whose stack it
  could not unwind to the bottom are still counted (the depth figure is a
  mean over all samples on both sides).
Checks: pushprof's mean depth >= MIN_DEPTH_RATIO x perf's; for every leaf
function holding >= HOT of perf's samples (perf is the reference), the
callers agree: each side's most frequent caller of that leaf is one the other
side gives >= 20% of the leaf's samples, or a share that sampling noise
explains: Fisher's exact test (one-sided) gives its two counts a chance of
at least MIN_P under one share for both. A leaf at 5% of ~280 samples has
~14 on each side, and when two callers split it about evenly, 2 of 11 on
one side against 8 of 15 is chance (0.08); none of 11 against 8 of 15 is
not (0.004). A leaf with
fewer than 5 samples on either side is noted, not compared; at least one hot
leaf must be. Leaf shares are printed, not checked: the leaf is the sampled PC,
which no unwinder changes, and two runs of ~400 samples differ by a few
points; a leaf hot in pushprof only is printed as a note.
"""
import argparse
import bisect
import math
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pprof_check  # noqa: E402

FDE_RE = re.compile(r"\bFDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+)")
LOAD_RE = re.compile(r"^\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)")
PERF_FRAME_RE = re.compile(r"^\s+([0-9a-f]+) (.*) \((.*)\)$")
KERNEL_MIN = 0xFFFF800000000000
MIN_LEAF_SAMPLES = 20  # a leaf's callers are compared when each side has this many
MIN_P = 6.8e-6  # two-sided 4.5 sigma: two counts less likely under one share differ


class Elf:
    """One object's PT_LOAD segments and FDE ranges (from readelf)."""

    def __init__(self, path):
        self.path = path
        self.loads, starts = [], []
        self.ok = os.path.isfile(path)
        if not self.ok:
            return
        out = subprocess.run(["readelf", "-lW", path], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
        for line in out.splitlines():
            m = LOAD_RE.match(line)
            if m:
                self.loads.append(tuple(int(x, 16) for x in m.groups()))  # offset, vaddr, filesz
        out = subprocess.run(["readelf", "--debug-dump=frames", path], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
        for m in FDE_RE.finditer(out):
            starts.append((int(m.group(1), 16), int(m.group(2), 16)))
        starts.sort()
        self.fde_lo = [s for s, _ in starts]
        self.fde = starts

    def vaddr(self, file_offset):
        for off, va, size in self.loads:
            if off <= file_offset < off + size:
                return file_offset - off + va
        return None

    def function(self, vaddr):
        """Start of the FDE covering vaddr, or None."""
        i = bisect.bisect_right(self.fde_lo, vaddr) - 1
        for j in range(i, max(i - 3, -1), -1):  # .eh_frame and .debug_frame may both cover it
            lo, hi = self.fde[j]
            if lo <= vaddr < hi:
                return lo
        return None


ELVES = {}


def elf(path):
    if path not in ELVES:
        ELVES[path] = Elf(path)
    return ELVES[path]


def frame_key(path, vaddr, is_leaf):
    """A function's identity: (object base name, FDE start or '?addr')."""
    base = os.path.basename(path)
    if vaddr is None:
        return (base, "?")
    e = elf(path)
    look = vaddr if is_leaf else vaddr - 1
    start = e.function(look) if e.ok else None
    return (base, start if start is not None else "?%x" % look)


def pushprof_stacks(profile, names):
    prof = pprof_check.parse_raw(pprof_check.run_pprof(profile))
    vi = prof["sample_types"].index("samples/count")
    maps = {m["id"]: m for m in prof["mappings"]}
    out = []
    for s in prof["samples"]:
        keys = []
        for i, lid in enumerate(s["locs"]):
            loc = prof["locations"].get(lid) or {"address": 0, "mapping": 0, "lines": []}
            m = maps.get(loc["mapping"])
            if m is None or not m["file"].startswith("/"):
                key = ((m or {}).get("file") or "?", "?")
            else:
                va = elf(m["file"]).vaddr(loc["address"] - m["start"] + m["offset"])
                key = frame_key(m["file"], va, i == 0)
            if loc["lines"] and loc["lines"][0]["function"]:
                names.setdefault(key, loc["lines"][-1]["function"])
            keys.append(key)
        out.append((s["values"][vi], keys))
    return out


def perf_stacks(path, names):
    out, cur = [], None
    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                if cur is not None:
                    out.append((1, cur))
                cur = None
                continue
            m = PERF_FRAME_RE.match(line)
            if m is None or not line[0].isspace():
                if cur is not None:
                    out.append((1, cur))
                cur = []  # a sample's header line
                continue
            if cur is None:
                continue
            addr, sym, dso = int(m.group(1), 16), m.group(2), m.group(3)
            if addr >= KERNEL_MIN or dso.startswith("[kernel"):
                continue
            if dso.startswith("/"):
                key = frame_key(dso, addr, not cur)
            else:
                key = (dso, "?")
            if sym != "[unknown]":
                names.setdefault(key, re.sub(r"@@?\S+$", "", re.sub(r"\+0x[0-9a-f]+$", "", sym)))
            cur.append(key)
    if cur is not None:
        out.append((1, cur))
    return [(n, k) for n, k in out if k]


def show(key, names):
    if key is None:
        return "<no caller>"
    if key in names:
        return "%s (%s)" % (names[key], key[0])
    return "%s+%s" % (key[0], ("0x%x" % key[1]) if isinstance(key[1], int) else key[1])


def leaf_callers(stacks):
    leaves, callers = {}, {}
    for n, keys in stacks:
        leaf = keys[0]
        leaves[leaf] = leaves.get(leaf, 0) + n
        c = callers.setdefault(leaf, {})
        caller = keys[1] if len(keys) > 1 else None
        c[caller] = c.get(caller, 0) + n
    return leaves, callers


def split_p(a, ta, b, tb):
    """Fisher's exact test, one-sided: the chance that the side with the
    smaller share of a caller (a of ta, b of tb) gets that few of the a + b
    samples, or fewer, if both sides shared them alike (hypergeometric)."""
    if a * tb > b * ta:
        a, ta, b, tb = b, tb, a, ta
    k, n = a + b, ta + tb
    return sum(math.comb(k, x) * math.comb(n - k, ta - x) for x in range(a + 1)) / math.comb(n, ta)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pushprof", required=True)
    ap.add_argument("--perf-script", required=True)
    ap.add_argument("--name", default="workload")
    ap.add_argument("--min-depth-ratio", type=float, default=0.9)
    ap.add_argument("--hot", type=float, default=0.05)
    a = ap.parse_args()

    names = {}
    pp = pushprof_stacks(a.pushprof, names)
    pf = perf_stacks(a.perf_script, names)
    c = pprof_check.Checker()
    n_pp, n_pf = sum(n for n, _ in pp), sum(n for n, _ in pf)
    c.check(n_pp >= 100 and n_pf >= 100,
            "%s: %d pushprof samples, %d perf samples (>= 100 each)" % (a.name, n_pp, n_pf))
    if not n_pp or not n_pf:
        return 1
    d_pp = sum(n * len(k) for n, k in pp) / n_pp
    d_pf = sum(n * len(k) for n, k in pf) / n_pf
    c.check(d_pp >= a.min_depth_ratio * d_pf,
            "%s: mean stack depth pushprof %.2f, perf %.2f (ratio %.2f >= %g)"
            % (a.name, d_pp, d_pf, d_pp / d_pf, a.min_depth_ratio))

    leaves_pp, callers_pp = leaf_callers(pp)
    leaves_pf, callers_pf = leaf_callers(pf)
    hot = sorted((k for k, v in leaves_pf.items() if v >= a.hot * n_pf),
                 key=lambda k: -leaves_pf[k])
    c.check(bool(hot), "%s: %d hot leaves (>= %g%% of perf's samples)"
            % (a.name, len(hot), 100 * a.hot))
    for leaf in sorted(leaves_pp, key=lambda k: -leaves_pp[k]):
        if leaves_pp[leaf] >= a.hot * n_pp and leaf not in hot:
            print("note %s: leaf %s holds %.1f%% of pushprof's samples, %.1f%% of perf's"
                  " (not compared)"
                  % (a.name, show(leaf, names), 100.0 * leaves_pp[leaf] / n_pp,
                     100.0 * leaves_pf.get(leaf, 0) / n_pf), file=sys.stderr)
    compared = 0
    for leaf in hot:
        cp, cf = callers_pp.get(leaf, {}), callers_pf.get(leaf, {})
        tp, tf = sum(cp.values()), sum(cf.values())
        what = "%s: leaf %s (%.1f%% of pushprof's samples, %.1f%% of perf's)" % (
            a.name, show(leaf, names), 100.0 * tp / n_pp, 100.0 * tf / n_pf)
        if tp < MIN_LEAF_SAMPLES or tf < MIN_LEAF_SAMPLES:
            # Sampling noise around the hot threshold (a leaf at 5% of perf's
            # ~400 samples may get 4 of pushprof's): the leaf is the sampled
            # PC, which no unwinder changes, so this is a note, not a failure.
            print("note %s: fewer than %d samples on one side, callers not compared"
                  % (what, MIN_LEAF_SAMPLES), file=sys.stderr)
            continue
        compared += 1
        top_pp = max(cp, key=lambda k: cp[k])
        top_pf = max(cf, key=lambda k: cf[k])
        p_pp = split_p(cp[top_pp], tp, cf.get(top_pp, 0), tf)
        p_pf = split_p(cp.get(top_pf, 0), tp, cf[top_pf], tf)
        ok = ((cf.get(top_pp, 0) >= 0.2 * tf or p_pp >= MIN_P) and
              (cp.get(top_pf, 0) >= 0.2 * tp or p_pf >= MIN_P))
        c.check(ok, "%s: caller pushprof %s (%.0f%%), perf %s (%.0f%%); each in >= 20%% on the"
                " other side or as likely as %g under one share (pushprof gives perf's %.0f%%,"
                " perf gives pushprof's %.0f%%; Fisher p %.3g, %.3g)"
                % (what, show(top_pp, names), 100.0 * cp[top_pp] / tp, show(top_pf, names),
                   100.0 * cf[top_pf] / tf, MIN_P, 100.0 * cp.get(top_pf, 0) / tp,
                   100.0 * cf.get(top_pp, 0) / tf, p_pp, p_pf))
    c.check(compared > 0, "%s: %d of %d hot leaves had enough samples on both sides to compare"
            " their callers (>= 1)" % (a.name, compared, len(hot)))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
