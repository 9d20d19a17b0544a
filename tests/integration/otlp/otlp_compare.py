#!/usr/bin/env python3
"""Round trip check: what the OTLP receiver decoded (its requests.jsonl)
against what was pushed, read by `go tool pprof -raw` (pprof_check.py).
For every sample type of the pushed profile(s), the receiver must hold one
Profile of that type for SERVICE whose per-stack totals (functions leaf
first, string labels) equal pprof's exactly, and the same build ids.

  otlp_compare.py REQUESTS.jsonl SERVICE PPROF... [--links N] [--min-types N]
Prints one line per sample type; exits 1 on any difference."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pprof_check  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("requests")
    ap.add_argument("service")
    ap.add_argument("pprof", nargs="+")
    ap.add_argument("--links", type=int, default=-1, help="samples with links, per profile (-1: any)")
    ap.add_argument("--min-links", type=int, default=0)
    args = ap.parse_args()
    recs = []
    for line in open(args.requests):
        r = json.loads(line)
        if r.get("status") == 200:
            recs.extend(p for p in r.get("profiles", [])
                        if p["resource"].get("service.name") == args.service)
    if not recs:
        sys.exit("FAIL: the receiver holds no profile of service %s" % args.service)
    numeric = set()
    for p in recs:
        numeric.update(p["numeric_label_keys"])
    raw = pprof_check.parse_raw(pprof_check.run_pprof(args.pprof[0]))
    types = raw["sample_types"]
    got_types = sorted({p["type"] for p in recs})
    if sorted(types) != got_types:
        sys.exit("FAIL: sample types pushed %s, received %s" % (types, got_types))
    bad = 0
    for t in types:
        want = {}
        for f in args.pprof:
            for v, fns, labels, _ in pprof_check.sample_stacks(f, t):
                lab = ",".join("%s=%s" % (k, vs[0]) for k, vs in sorted(labels.items())
                               if k not in numeric)
                key = ";".join(fns) + "|" + lab
                want[key] = want.get(key, 0) + v
        want = {k: v for k, v in want.items() if v}
        got = {}
        links = 0
        for p in recs:
            if p["type"] != t:
                continue
            links += p["links"]
            for k, v in p["stacks"].items():
                got[k] = got.get(k, 0) + v
        got = {k: v for k, v in got.items() if v}
        if want != got:
            bad += 1
            missing = [k for k in want if got.get(k) != want[k]][:5]
            extra = [k for k in got if k not in want][:5]
            print("FAIL %s: %d stacks pushed (total %d), %d received (total %d); differing: %s; "
                  "extra: %s" % (t, len(want), sum(want.values()), len(got), sum(got.values()),
                                 [(k, want[k], got.get(k)) for k in missing], extra))
            continue
        if args.links >= 0 and links != args.links:
            bad += 1
            print("FAIL %s: %d samples with links, want %d" % (t, links, args.links))
            continue
        if links < args.min_links:
            bad += 1
            print("FAIL %s: %d samples with links, want at least %d" % (t, links, args.min_links))
            continue
        print("ok %s: %d stacks, total %d, %d linked samples" % (t, len(got), sum(got.values()), links))
    want_ids = sorted({m["build_id"] for m in raw["mappings"] if m["build_id"]})
    got_ids = sorted({b for p in recs for b in p["build_ids"]})
    if not set(want_ids) <= set(got_ids):
        bad += 1
        print("FAIL build ids pushed %s, received %s" % (want_ids, got_ids))
    else:
        print("ok build ids %s" % want_ids)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
