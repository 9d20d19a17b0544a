#!/usr/bin/env python3
"""Reads a pprof profile through `go tool pprof -raw` (an independent parser)
and reports it as JSON; optionally checks expectations and exits 1 if one
fails. Reused by every integration test that produces a profile.

  pprof_check.py PROFILE [--binary BIN] [--symbolize MODE] [checks...]

Output (stdout, one JSON object):
  sample_types  ["samples/count", "cpu/nanoseconds"]
  period_type, period, comments, duration_ns
  samples       number of sample records
  total         {"samples/count": N, "cpu/nanoseconds": X}  (sum of each value)
  self          {function: value}  the leaf (innermost) function of each sample
  unnamed_self  value of the samples whose leaf frame has no function name
  cum           {function: value}  every function on the stack, once per sample
  labels        {key: {value: total}}  string and numeric labels
  functions     sorted list of every function name in the locations
  mappings      [{"file":..., "build_id":..., "flags": "[FN]..."}]
Values are those of --value (default: the first sample type).

Statistical checks everywhere in tests/ go through stat_bound() (importable:
lib.sh puts this folder on PYTHONPATH; shell scripts call `bound` in lib.sh):
the truth comes from the same run, the tolerance is the stated one or 4.5
sigma of the sampling error, whichever is wider, and the line printed says
which sigma was used.

Checks (each prints "ok ..." or "FAIL ..." on stderr):
  --min-samples N            total >= N
  --expect-total N:PCT       total within PCT percent of N, or within 4.5
                             sigma of its sampling error if that is wider
                             (see stat_bound: a count unless --rate)
  --side low|high            --expect-total and --expect-attributed check one
                             side only (low: at least N less the bound)
  --rate R                   the --value is a sum estimated by sampling one
                             event per R of its units on average (a CPU
                             period in ns, a heap or wait sampling rate)
  --shares F1,F2,...         the functions whose shares --expect-share uses
                             (commas inside (), <>, [] belong to the name)
                             (share = value / sum over these functions, by --by)
  --expect-share F=P:TOL     share of F is P +- TOL percentage points, or
                             +- 4.5 binomial sigma over the samples the
                             --shares functions hold, if that is wider
  --share-samples N          the number of samples the shares are drawn from
                             (default: the --shares functions' total in the
                             profile's first sample type when it is a count)
  --min-attributed FRAC      the --shares functions hold >= FRAC of the total
  --min-attributed-value N   the --shares functions hold >= N (in --value units)
  --expect-attributed N:PCT  the --shares functions hold N, as --expect-total
  --expect-function REGEX    some function name matches (re.search)
  --forbid-function REGEX    no function name matches
  --expect-system-name REGEX some function's system_name (shown by pprof
                             when it differs from name) matches
  --by self|cum              how functions are counted for shares (default cum)

By default -symbolize=none: our profiles carry their own function names and
pprof must not fill in (or demangle) names we failed to write. Use
--symbolize local with --binary for profiles without names (gperftools).
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys

LOC_RE = re.compile(r"^\s*(\d+): (0x[0-9a-f]+) (?:M=(\d+) )?(?:\[F\] )?(.*)$")
LINE_RE = re.compile(r"^(.*) (\S*):(-?\d+) s=(-?\d+)(?:\((.*)\))?$")
SAMPLE_RE = re.compile(r"^((?:\s+-?\d+)+): ((?:\d+ )*)\s*$")
LABEL_RE = re.compile(r"(\S+?):\[([^\]]*)\]")
MAP_RE = re.compile(r"^(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) (\S*) (\S*) ?(.*)$")


def split_names(spec):
    """Splits F1,F2,... on the commas outside (), <> and [] (C++ names such
    as ns::f(int, char) hold commas)."""
    names, depth, cur = [], 0, ""
    for ch in spec:
        if ch in "(<[":
            depth += 1
        elif ch in ")>]" and depth > 0:
            depth -= 1
        if ch == "," and depth == 0:
            names.append(cur)
            cur = ""
        else:
            cur += ch
    names.append(cur)
    return [n for n in names if n]


def run_pprof(profile, binary=None, symbolize="none"):
    env = dict(os.environ)
    env.setdefault("HOME", "/root")
    env.setdefault("GOCACHE", "/tmp/pushprof-gocache")
    cmd = ["go", "tool", "pprof", "-raw", "-symbolize=" + symbolize]
    if binary:
        cmd.append(binary)
    cmd.append(profile)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    if p.returncode != 0:
        raise SystemExit("pprof_check: go tool pprof -raw %s failed (%d): %s"
                         % (profile, p.returncode, p.stderr.strip()))
    return p.stdout


def parse_raw(text):
    """Parses the text of `go tool pprof -raw` into a dict."""
    prof = {"comments": [], "period_type": None, "period": None, "duration": None,
            "sample_types": [], "samples": [], "locations": {}, "mappings": []}
    section = "header"
    last_loc = None
    for line in text.splitlines():
        if section == "header":
            if line.startswith("Comment: "):
                prof["comments"].append(line[len("Comment: "):])
            elif line.startswith("PeriodType: "):
                prof["period_type"] = line[len("PeriodType: "):]
            elif line.startswith("Period: "):
                prof["period"] = int(line[len("Period: "):])
            elif line.startswith("Duration: "):
                prof["duration"] = line[len("Duration: "):]
            elif line == "Samples:":
                section = "types"
            continue
        if section == "types":
            prof["sample_types"] = [t.replace("[dflt]", "") for t in line.split()]
            section = "samples"
            continue
        if line == "Locations":
            section = "locations"
            continue
        if line == "Mappings":
            section = "mappings"
            continue
        if section == "samples":
            m = SAMPLE_RE.match(line)
            if m:
                values = [int(v) for v in m.group(1).split()]
                locs = [int(x) for x in m.group(2).split()]
                prof["samples"].append({"values": values, "locs": locs, "labels": {}})
            elif line.strip() and prof["samples"]:
                for k, v in LABEL_RE.findall(line):
                    prof["samples"][-1]["labels"].setdefault(k, []).append(v)
            continue
        if section == "locations":
            m = LOC_RE.match(line)
            if m and not line.startswith("             " + " "):
                lid = int(m.group(1))
                last_loc = {"address": int(m.group(2), 16), "mapping": int(m.group(3) or 0),
                            "lines": []}
                prof["locations"][lid] = last_loc
                rest = m.group(4)
            else:
                rest = line.strip()  # an inlined frame of the previous location
            if last_loc is not None and rest:
                lm = LINE_RE.match(rest)
                if lm:
                    last_loc["lines"].append({"function": lm.group(1), "file": lm.group(2),
                                              "line": int(lm.group(3)),
                                              "system_name": lm.group(5)})
                elif rest == "??":
                    last_loc["lines"].append({"function": "??", "file": "", "line": 0,
                                              "system_name": None})
            continue
        if section == "mappings":
            m = MAP_RE.match(line)
            if m:
                prof["mappings"].append({"id": int(m.group(1)), "file": m.group(5),
                                         "build_id": m.group(6), "flags": m.group(7).strip(),
                                         "start": int(m.group(2), 16), "limit": int(m.group(3), 16),
                                         "offset": int(m.group(4), 16)})
    return prof


def loc_functions(loc):
    """Function names of a location, innermost first; unnamed -> address."""
    if not loc or not loc["lines"]:
        return ["0x%x" % (loc["address"] if loc else 0)]
    return [ln["function"] or ("0x%x" % loc["address"]) for ln in loc["lines"]]


def sample_stacks(profile, value="samples/count"):
    """[(value, [function, ...] leaf first, {label: [values]}, number of
    locations)], one per sample of profile (read with go tool pprof -raw)."""
    prof = parse_raw(run_pprof(profile))
    if value not in prof["sample_types"]:
        raise SystemExit("pprof_check: no sample type %s in %s" % (value, prof["sample_types"]))
    vi = prof["sample_types"].index(value)
    out = []
    for s in prof["samples"]:
        fns = []
        for lid in s["locs"]:
            fns.extend(loc_functions(prof["locations"].get(lid)))
        out.append((s["values"][vi], fns, s["labels"], len(s["locs"])))
    return out


def summarize(prof, value_index=0):
    total = [0] * len(prof["sample_types"])
    self_, cum, labels = {}, {}, {}
    unnamed = 0  # value of the samples whose leaf frame has no function name
    for s in prof["samples"]:
        for i, v in enumerate(s["values"]):
            if i < len(total):
                total[i] += v
        v = s["values"][value_index] if value_index < len(s["values"]) else 0
        stack = []
        for lid in s["locs"]:
            stack.extend(loc_functions(prof["locations"].get(lid)))
        leaf = stack[0] if stack else "<empty stack>"
        self_[leaf] = self_.get(leaf, 0) + v
        leaf_loc = prof["locations"].get(s["locs"][0]) if s["locs"] else None
        if leaf_loc is None or not leaf_loc["lines"] or not leaf_loc["lines"][0]["function"]:
            unnamed += v
        for fn in set(stack):
            cum[fn] = cum.get(fn, 0) + v
        for k, vals in s["labels"].items():
            for lv in vals:
                labels.setdefault(k, {})
                labels[k][lv] = labels[k].get(lv, 0) + v
    functions = sorted({ln["function"] for loc in prof["locations"].values()
                        for ln in loc["lines"]})
    system_names = {ln["function"]: ln["system_name"] for loc in prof["locations"].values()
                    for ln in loc["lines"] if ln["system_name"]}
    return {
        "sample_types": prof["sample_types"],
        "period_type": prof["period_type"],
        "period": prof["period"],
        "duration": prof["duration"],
        "comments": prof["comments"],
        "samples": len(prof["samples"]),
        "total": dict(zip(prof["sample_types"], total)),
        "value": prof["sample_types"][value_index] if prof["sample_types"] else None,
        "self": dict(sorted(self_.items(), key=lambda kv: -kv[1])),
        "unnamed_self": unnamed,
        "cum": dict(sorted(cum.items(), key=lambda kv: -kv[1])),
        "labels": labels,
        "functions": functions,
        "system_names": system_names,
        "mappings": [{k: m[k] for k in ("file", "build_id", "flags")} for m in prof["mappings"]],
    }


SIGMAS = 4.5


def stat_sigma(want, n=None, rate=None, share=False):
    """The standard deviation of a sampled figure whose truth is want.
    share:  want is a percentage of n samples (binomial), in points.
    rate:   want is a sum estimated by sampling one event per rate of its
            units on average, each kept event weighted to stand for rate
            (CPU time at a timer period, bytes at a heap rate, wait time at
            an off-CPU rate): variance <= rate * want.
    else:   want is a count of independent events (Poisson): sqrt(want);
            with n, an estimate made of n samples: want / sqrt(n)."""
    if share:
        if not n or n <= 0:
            return 100.0
        p = min(max(want / 100.0, 0.0), 1.0)
        return 100.0 * math.sqrt(p * (1.0 - p) / n)
    if rate:
        return math.sqrt(max(rate * want, 0.0))
    if n is not None:
        return abs(want) / math.sqrt(n) if n > 0 else abs(want)
    return math.sqrt(max(want, 0.0))


def stat_bound(got, want, tol, n=None, rate=None, share=False, what="value", unit="",
               side="both"):
    """Checks a sampled figure against the truth measured in the same run.
    tol is the stated tolerance: percentage points for a share, a fraction
    of want otherwise. Passes within max(tol, 4.5 sigma) (stat_sigma says
    which sigma) on both sides, or only below (side="low": got may exceed
    want freely) or only above (side="high"); returns (ok, line), the line
    naming both bounds so a wide sigma, which asks for more samples, is
    visible in the log."""
    sigma = stat_sigma(want, n=n, rate=rate, share=share)
    stated = tol if share else tol * abs(want)
    allowed = max(stated, SIGMAS * sigma)
    dev = got - want
    if side == "low":
        ok = dev >= -allowed
    elif side == "high":
        ok = dev <= allowed
    else:
        ok = abs(dev) <= allowed
    if share:
        line = "%s %.2f%% is %.2f +- %.2f points (stated %g, 4.5 sigma %.2f over %s samples)" % (
            what, got, want, allowed, tol, SIGMAS * sigma, n)
    else:
        rel = 100.0 * (got - want) / want if want else 0.0
        src = ("sampled at rate %g" % rate) if rate else (
            ("%g samples" % n) if n is not None else "Poisson")
        line = "%s %.6g%s, truth %.6g%s (%+.1f%%), allowed +-%.1f%% (stated %g%%, 4.5 sigma %.1f%%, %s)" % (
            what, got, unit, want, unit, rel, 100.0 * allowed / abs(want) if want else 0.0,
            100.0 * tol, 100.0 * SIGMAS * sigma / abs(want) if want else 0.0, src)
    if side != "both":
        line += " (a %s bound)" % ("lower" if side == "low" else "upper")
    if SIGMAS * sigma > stated:
        line += " [4.5 sigma is wider than the stated tolerance: sample more]"
    return ok, line


def bound_main(argv):
    """`pprof_check.py bound GOT WANT TOL [--n N] [--rate R] [--share]
    [--side low|high] [--what NAME]`: stat_bound from a shell script; exit 1
    if it fails."""
    ap = argparse.ArgumentParser(prog="pprof_check.py bound")
    ap.add_argument("got", type=float)
    ap.add_argument("want", type=float)
    ap.add_argument("tol", type=float)
    ap.add_argument("--n", type=float)
    ap.add_argument("--rate", type=float)
    ap.add_argument("--share", action="store_true")
    ap.add_argument("--side", choices=["both", "low", "high"], default="both")
    ap.add_argument("--what", default="value")
    a = ap.parse_args(argv)
    ok, line = stat_bound(a.got, a.want, a.tol, n=a.n, rate=a.rate, share=a.share, what=a.what,
                          side=a.side)
    print(("ok   " if ok else "FAIL ") + line)
    return 0 if ok else 1


class Checker:
    def __init__(self):
        self.failed = 0

    def check(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what, file=sys.stderr)
        if not ok:
            self.failed += 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profile")
    ap.add_argument("--binary")
    ap.add_argument("--symbolize", default="none")
    ap.add_argument("--value", help="sample type to count, e.g. samples/count")
    ap.add_argument("--by", choices=["self", "cum"], default="cum")
    ap.add_argument("--min-samples", type=float)
    ap.add_argument("--expect-total")
    ap.add_argument("--rate", type=float)
    ap.add_argument("--side", choices=["both", "low", "high"], default="both")
    ap.add_argument("--expect-attributed")
    ap.add_argument("--share-samples", type=float)
    ap.add_argument("--shares")
    ap.add_argument("--expect-share", action="append", default=[])
    ap.add_argument("--min-attributed", type=float)
    ap.add_argument("--min-attributed-value", type=float)
    ap.add_argument("--expect-function", action="append", default=[])
    ap.add_argument("--forbid-function", action="append", default=[])
    ap.add_argument("--expect-system-name", action="append", default=[])
    ap.add_argument("--quiet", action="store_true", help="no JSON on stdout")
    a = ap.parse_args(argv)

    prof = parse_raw(run_pprof(a.profile, a.binary, a.symbolize))
    vi = 0
    if a.value:
        if a.value not in prof["sample_types"]:
            raise SystemExit("pprof_check: no sample type %s in %s" % (a.value, prof["sample_types"]))
        vi = prof["sample_types"].index(a.value)
    rep = summarize(prof, vi)
    total = sum(s["values"][vi] for s in prof["samples"] if vi < len(s["values"]))

    c = Checker()
    if a.min_samples is not None:
        c.check(total >= a.min_samples, "total %d >= %g" % (total, a.min_samples))
    if a.expect_total:
        n, pct = (float(x) for x in a.expect_total.split(":"))
        c.check(*stat_bound(total, n, pct / 100.0, rate=a.rate, what="total", side=a.side))
    counts = rep[a.by]
    if a.shares:
        names = split_names(a.shares)
        denom = sum(counts.get(f, 0) for f in names)
        rep["shares"] = {f: (100.0 * counts.get(f, 0) / denom if denom else 0.0) for f in names}
        if a.min_attributed is not None:
            frac = denom / total if total else 0.0
            c.check(frac >= a.min_attributed,
                    "%s hold %.3f of all samples (>= %g)" % (a.shares, frac, a.min_attributed))
        if a.expect_attributed:
            n, pct = (float(x) for x in a.expect_attributed.split(":"))
            c.check(*stat_bound(denom, n, pct / 100.0, rate=a.rate, side=a.side,
                                what="%s hold" % a.shares))
        if a.min_attributed_value is not None:
            c.check(denom >= a.min_attributed_value,
                    "%s hold %d (>= %g)" % (a.shares, denom, a.min_attributed_value))
        nshare = a.share_samples
        if nshare is None and a.expect_share:
            if not prof["sample_types"][0].endswith("/count"):
                raise SystemExit("pprof_check: --expect-share on %s needs --share-samples"
                                 % prof["sample_types"][0])
            nshare = sum(summarize(prof, 0)[a.by].get(f, 0) for f in names)
        for spec in a.expect_share:
            fn, rest = spec.rsplit("=", 1)
            p, tol = (float(x) for x in rest.split(":"))
            got = rep["shares"].get(fn, 0.0)
            c.check(*stat_bound(got, p, tol, n=nshare, share=True,
                                what="share of %s (%d of %d by %s)" % (fn, counts.get(fn, 0),
                                                                      denom, a.by)))
    elif (a.expect_share or a.min_attributed is not None or a.min_attributed_value is not None
          or a.expect_attributed):
        raise SystemExit("pprof_check: --expect-share/--expect-attributed/--min-attributed(-value)"
                         " need --shares")
    for rx in a.expect_function:
        hit = [f for f in rep["functions"] if re.search(rx, f)]
        c.check(bool(hit), "a function matches /%s/ (%s)" % (rx, ", ".join(hit[:3]) or "none"))
    for rx in a.forbid_function:
        hit = [f for f in rep["functions"] if re.search(rx, f)]
        c.check(not hit, "no function matches /%s/ (%s)" % (rx, ", ".join(hit[:3]) or "none"))
    for rx in a.expect_system_name:
        hit = [v for v in rep["system_names"].values() if re.search(rx, v)]
        c.check(bool(hit), "a system_name matches /%s/ (%s)" % (rx, ", ".join(hit[:3]) or "none"))
    if not a.quiet:
        json.dump(rep, sys.stdout, indent=1)
        sys.stdout.write("\n")
    return 1 if c.failed else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["bound"]:
        sys.exit(bound_main(sys.argv[2:]))
    sys.exit(main())
