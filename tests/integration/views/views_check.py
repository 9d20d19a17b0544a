#!/usr/bin/env python3
"""Compares pushprof's views with go tool pprof's on the same files.

  views_check.py top OURS.txt PPROF.txt       `pushprof top` vs `pprof -top`:
      every function pprof lists has the same flat% and cum% (to 0.01 points)
  views_check.py folded OURS.txt TRACES.txt   `pushprof folded` vs
      `pprof -traces -sample_index=samples`: the same stacks with the same
      counts (pprof's traces merged by stack, leaf last)
  views_check.py svg FILE.svg TOTAL [NAME=COUNT...]  the SVG parses as XML,
      the root frame holds TOTAL samples, each NAME's widest frame COUNT
Exits 1 with the differences on a mismatch."""
import re
import sys
import xml.etree.ElementTree as ET


def pct(s):
    return float(s.rstrip("%"))


def parse_top(path):
    """{name: (flat%, cum%)} from the table of pushprof top or pprof -top
    (pprof's " (inline)" marks dropped)."""
    rows = {}
    started = False
    for line in open(path, encoding="utf-8"):
        if line.split()[:1] == ["flat"]:
            started = True
            continue
        if not started or not line.strip():
            continue
        f = line.split(None, 5)
        name = re.sub(r" \(inline\)$", "", f[5].rstrip("\n"))
        rows[name] = (pct(f[1]), pct(f[4]))
    return rows


def check_top(ours_path, pprof_path):
    ours, theirs = parse_top(ours_path), parse_top(pprof_path)
    bad = []
    if not theirs:
        bad.append("pprof listed no function")
    for name, (flat, cum) in theirs.items():
        if name not in ours:
            bad.append(f"{name}: missing from pushprof top")
            continue
        of, oc = ours[name]
        # pprof prints any share in 99.95..100.05 as "100%" (its Percentage).
        of, flat, oc, cum = (100.0 if 99.95 <= v <= 100.05 else v for v in (of, flat, oc, cum))
        if abs(of - flat) > 0.011 or abs(oc - cum) > 0.011:
            bad.append(f"{name}: flat% {of} vs {flat}, cum% {oc} vs {cum}")
    print(f"top: {len(theirs)} functions compared with pprof")
    return bad


def parse_traces(path):
    stacks = {}
    frames, count = None, None

    def flush():
        if count is not None:
            key = ";".join(reversed(frames))
            stacks[key] = stacks.get(key, 0) + count

    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("-----------+"):
            flush()
            frames, count = [], None
            continue
        if frames is None:
            continue
        m = re.match(r"^\s*(\d+)\s{3}(.*)$", line)
        if count is None and m:
            count = int(m.group(1))
            frames.append(re.sub(r" \(inline\)$", "", m.group(2).strip()))
        elif count is not None and line.strip():
            frames.append(re.sub(r" \(inline\)$", "", line.strip()))
    flush()
    return stacks


def check_folded(ours_path, traces_path):
    ours = {}
    for line in open(ours_path, encoding="utf-8"):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        ours[stack] = ours.get(stack, 0) + int(n)
    theirs = parse_traces(traces_path)
    bad = []
    for k in sorted(set(ours) | set(theirs)):
        if ours.get(k, 0) != theirs.get(k, 0):
            bad.append(f"{k}: pushprof {ours.get(k, 0)} vs pprof {theirs.get(k, 0)}")
    if not theirs:
        bad.append("pprof printed no trace")
    print(f"folded: {len(theirs)} stacks, {sum(theirs.values())} samples compared with pprof")
    return bad


def check_svg(path, total, wants):
    ns = "{http://www.w3.org/2000/svg}"
    root = ET.parse(path).getroot()
    bad = []
    widest = {}
    for g in root.iter(ns + "g"):
        if g.get("class") != "f":
            continue
        title = g.find(ns + "title").text
        m = re.match(r"^(.*) \(([\d,]+) samples?, ([\d.]+)%(; [+-][\d.]+ pt)?\)$", title, re.S)
        if not m:
            bad.append(f"title not NAME (N samples, P%): {title[:200]!r}")
            continue
        n = int(m.group(2).replace(",", ""))
        widest[m.group(1)] = max(widest.get(m.group(1), 0), n)
    if widest.get("all") != total:
        bad.append(f"root frame: {widest.get('all')} samples, want {total}")
    for w in wants:
        name, _, n = w.rpartition("=")
        if widest.get(name) != int(n):
            bad.append(f"{name}: widest frame {widest.get(name)} samples, want {n}")
    if root.find(ns + "script") is None:
        bad.append("no script")
    print(f"svg: {len(widest)} names, well-formed XML")
    return bad


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    mode = sys.argv[1]
    if mode == "top":
        bad = check_top(sys.argv[2], sys.argv[3])
    elif mode == "folded":
        bad = check_folded(sys.argv[2], sys.argv[3])
    elif mode == "svg":
        bad = check_svg(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
    else:
        print(__doc__)
        return 2
    for b in bad[:40]:
        print("MISMATCH", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
