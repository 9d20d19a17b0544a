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

Checks (each prints "ok ..." or "FAIL ..." on stderr):
  --min-samples N            total >= N
  --expect-total N:PCT       total within PCT percent of N
  --shares F1,F2,...         the functions whose shares --expect-share uses
                             (commas inside (), <>, [] belong to the name)
                             (share = value / sum over these functions, by --by)
  --expect-share F=P:TOL     share of F is P +- TOL percentage points
  --min-attributed FRAC      the --shares functions hold >= FRAC of the total
  --min-attributed-value N   the --shares functions hold >= N (in --value units)
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
        c.check(abs(total - n) <= n * pct / 100.0,
                "total %d within %g%% of %.1f (%+.1f%%)" % (total, pct, n,
                                                            100.0 * (total - n) / n if n else 0))
    counts = rep[a.by]
    if a.shares:
        names = split_names(a.shares)
        denom = sum(counts.get(f, 0) for f in names)
        rep["shares"] = {f: (100.0 * counts.get(f, 0) / denom if denom else 0.0) for f in names}
        if a.min_attributed is not None:
            frac = denom / total if total else 0.0
            c.check(frac >= a.min_attributed,
                    "%s hold %.3f of all samples (>= %g)" % (a.shares, frac, a.min_attributed))
        if a.min_attributed_value is not None:
            c.check(denom >= a.min_attributed_value,
                    "%s hold %d (>= %g)" % (a.shares, denom, a.min_attributed_value))
        for spec in a.expect_share:
            fn, rest = spec.rsplit("=", 1)
            p, tol = (float(x) for x in rest.split(":"))
            got = rep["shares"].get(fn, 0.0)
            c.check(abs(got - p) <= tol,
                    "share of %s %.2f%% is %g +- %g (%d of %d by %s)"
                    % (fn, got, p, tol, counts.get(fn, 0), denom, a.by))
    elif a.expect_share or a.min_attributed is not None or a.min_attributed_value is not None:
        raise SystemExit("pprof_check: --expect-share/--min-attributed(-value) need --shares")
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
    sys.exit(main())
