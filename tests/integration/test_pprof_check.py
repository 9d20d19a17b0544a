#!/usr/bin/env python3
"""Checks pprof_check.py itself: writes a small pprof by hand (protobuf wire
format, independent of the project's encoder) with inlined frames, a C++
name with spaces and a system_name, an address-only location, string and
numeric labels and comments; runs pprof_check on it through the real
`go tool pprof -raw`; compares every figure with what was written. Then
checks that its expectations fail when they should."""
import gzip
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = [sys.executable, os.path.join(HERE, "pprof_check.py")]


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num, v):
    return varint(num << 3) + varint(v)


def field_bytes(num, b):
    return varint(num << 3 | 2) + varint(len(b)) + b


def packed(num, vals):
    return field_bytes(num, b"".join(varint(v) for v in vals))


class Strings:
    def __init__(self):
        self.table = [""]

    def __call__(self, s):
        if s not in self.table:
            self.table.append(s)
        return self.table.index(s)


def build_profile():
    s = Strings()
    p = b""
    for t, u in (("samples", "count"), ("cpu", "nanoseconds")):
        p += field_bytes(1, field_varint(1, s(t)) + field_varint(2, s(u)))
    label = lambda k, v: field_varint(1, s(k)) + field_varint(2, s(v))  # noqa: E731
    numlabel = lambda k, n, unit: (field_varint(1, s(k)) + field_varint(3, n)  # noqa: E731
                                   + field_varint(4, s(unit)))
    samples = [
        ([1, 2, 3], [5, 50000000], [label("trace_id", "abc")]),
        ([2, 3], [3, 30000000], [label("trace_id", "def"), numlabel("bytes", 10, "bytes")]),
        ([4, 3], [2, 20000000], []),
    ]
    for locs, vals, labels in samples:
        body = packed(1, locs) + packed(2, vals)
        for lb in labels:
            body += field_bytes(3, lb)
        p += field_bytes(2, body)
    p += field_bytes(3, field_varint(1, 1) + field_varint(2, 0x400000) + field_varint(3, 0x500000)
                     + field_varint(4, 0) + field_varint(5, s("/usr/bin/app"))
                     + field_varint(6, s("abcdef0123")) + field_varint(7, 1))
    # location 1 inlines helper_inlined into leaf_fn (innermost first)
    locations = [(1, 0x401000, [(4, 12), (1, 30)]), (2, 0x402000, [(2, 7)]),
                 (3, 0x403000, [(3, 1)]), (4, 0x404000, [])]
    for lid, addr, lines in locations:
        body = field_varint(1, lid) + field_varint(2, 1) + field_varint(3, addr)
        for fid, ln in lines:
            body += field_bytes(4, field_varint(1, fid) + field_varint(2, ln))
        p += field_bytes(4, body)
    functions = [(1, "leaf_fn", "leaf_fn"), (2, "ns::caller(int, char)", "_ZN2ns6callerEic"),
                 (3, "main", "main"), (4, "helper_inlined", "helper_inlined")]
    for fid, name, sysname in functions:
        p += field_bytes(5, field_varint(1, fid) + field_varint(2, s(name))
                         + field_varint(3, s(sysname)) + field_varint(4, s("app.c")))
    tail = (field_varint(9, 1700000000000000000) + field_varint(10, 1000000000)
            + field_bytes(11, field_varint(1, s("cpu")) + field_varint(2, s("nanoseconds")))
            + field_varint(12, 10000000) + field_varint(13, s("pushprof: a comment")))
    return p, tail, s


def check_stat_bound():
    """stat_bound's arithmetic, and the shell entry lib.sh's `bound` uses."""
    sys.path.insert(0, HERE)
    from pprof_check import stat_bound, stat_sigma
    failed = 0
    cases = [
        # (args, kwargs, ok)
        ((846, 1200, 0.2), {}, False),                  # the on-demand window's old truth
        ((846, 846 * 1.05, 0.1), {}, True),
        ((100, 130, 0.1), {}, True),                    # 4.5 sigma of 130 is 51.3
        ((100, 160, 0.1), {}, False),
        ((46, 50, 2), {"n": 1200, "share": True}, True),  # 4.5 sigma 6.50 points
        ((43, 50, 2), {"n": 1200, "share": True}, False),
        ((48.5, 50, 2), {"n": 10 ** 6, "share": True}, True),
        ((47.5, 50, 2), {"n": 10 ** 6, "share": True}, False),
        ((0.36e9, 0.264e9, 0.35), {"rate": 1e7}, True),   # 26 waits sampled at 10 ms
        ((0.36e9, 0.264e9, 0.35), {"rate": 1e5}, False),
        ((80, 100, 0.1), {"n": 10 ** 6, "side": "low"}, False),
        ((80, 100, 0.1), {"n": 100, "side": "low"}, True),   # 4.5 sigma of 100 samples: 45%
        ((200, 100, 0.1), {"side": "low"}, True),
        ((200, 100, 0.1), {"side": "high"}, False),
    ]
    for args, kw, want in cases:
        ok, line = stat_bound(*args, **kw)
        good = ok == want
        print(("ok   " if good else "FAIL ") + "stat_bound%s %s -> %s: %s" % (args, kw, ok, line))
        failed += not good
    for got, want in ((stat_sigma(100), 10.0), (stat_sigma(50, n=100, share=True), 5.0),
                      (stat_sigma(4e8, rate=1e6), 2e7)):
        good = abs(got - want) < 1e-9 * want
        print(("ok   " if good else "FAIL ") + "stat_sigma %g (want %g)" % (got, want))
        failed += not good
    for argv, status in ((["bound", "846", "1200", "0.2"], 1), (["bound", "1150", "1200", "0.1"], 0)):
        got = subprocess.run(CHECK + argv, stdout=subprocess.DEVNULL).returncode
        good = got == status
        print(("ok   " if good else "FAIL ") + "%s -> exit %d (want %d)" % (" ".join(argv), got, status))
        failed += not good
    return failed


def main():
    body, tail, s = build_profile()
    data = body + b"".join(field_bytes(6, x.encode()) for x in s.table) + tail
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "hand.pb.gz")
        with open(path, "wb") as f:
            f.write(gzip.compress(data))
        r = subprocess.run(CHECK + [path], stdout=subprocess.PIPE, text=True, check=True)
        rep = json.loads(r.stdout)
        want = {
            "sample_types": ["samples/count", "cpu/nanoseconds"],
            "period": 10000000,
            "comments": ["pushprof: a comment"],
            "samples": 3,
            "total": {"samples/count": 10, "cpu/nanoseconds": 100000000},
            "self": {"helper_inlined": 5, "ns::caller(int, char)": 3, "0x404000": 2},
            "cum": {"main": 10, "ns::caller(int, char)": 8, "leaf_fn": 5, "helper_inlined": 5,
                    "0x404000": 2},
            "labels": {"trace_id": {"abc": 5, "def": 3}, "bytes": {"10 bytes": 3}},
            "functions": ["helper_inlined", "leaf_fn", "main", "ns::caller(int, char)"],
            "system_names": {"ns::caller(int, char)": "_ZN2ns6callerEic"},
        }
        for k, v in want.items():
            ok = rep.get(k) == v
            print(("ok   " if ok else "FAIL ") + "%s: %s" % (k, json.dumps(rep.get(k))))
            if not ok:
                print("     wanted %s" % json.dumps(v))
                failed += 1
        m = rep["mappings"][0] if rep["mappings"] else {}
        ok = m.get("file") == "/usr/bin/app" and m.get("build_id") == "abcdef0123"
        print(("ok   " if ok else "FAIL ") + "mapping %s" % json.dumps(m))
        failed += not ok

        # Expectations pass and fail when they should (exit status 0 / 1).
        cases = [
            (["--expect-total", "10:1"], 0), (["--expect-total", "100:10"], 1),
            # 20 +- 10% is 18..22, but 4.5 Poisson sigma of 20 samples is 20.1
            (["--expect-total", "20:10"], 0),
            # 100 ms against 80 ms +- 10%, sampled at 1 ms: within 4.5 sigma (50.3%)
            (["--value", "cpu/nanoseconds", "--expect-total", "80000000:10", "--rate", "1000000"], 0),
            (["--value", "cpu/nanoseconds", "--expect-total", "80000000:10", "--rate", "1"], 1),
            (["--min-samples", "10"], 0), (["--min-samples", "11"], 1),
            (["--expect-total", "2:10", "--side", "low"], 0),
            (["--expect-total", "2:10", "--side", "high"], 1),
            (["--shares", "main", "--expect-attributed", "40:10", "--side", "low"], 1),
            (["--shares", "main", "--expect-attributed", "20:10", "--side", "low"], 0),
            (["--shares", "helper_inlined,ns::caller(int, char)", "--by", "self",
              "--expect-share", "helper_inlined=62.5:0.1"], 0),
            (["--shares", "helper_inlined,ns::caller(int, char)", "--by", "self",
              "--share-samples", "100000", "--expect-share", "helper_inlined=50:2"], 1),
            # 8 samples: 4.5 binomial sigma around 50% is 79.5 points
            (["--shares", "helper_inlined,ns::caller(int, char)", "--by", "self",
              "--expect-share", "helper_inlined=50:2"], 0),
            # shares of nanoseconds still count the samples of the first type (8)
            (["--value", "cpu/nanoseconds", "--shares", "helper_inlined,ns::caller(int, char)",
              "--by", "self", "--expect-share", "helper_inlined=50:2"], 0),
            (["--shares", "main", "--min-attributed", "1.0"], 0),
            (["--shares", "leaf_fn", "--min-attributed", "0.6"], 1),
            (["--shares", "leaf_fn,helper_inlined", "--by", "self",
              "--min-attributed-value", "5"], 0),
            (["--shares", "leaf_fn,0x404000", "--by", "self",
              "--min-attributed-value", "3"], 1),
            (["--expect-function", "^ns::caller"], 0), (["--expect-function", "^absent$"], 1),
            (["--forbid-function", "^_Z"], 0), (["--forbid-function", "^main$"], 1),
            (["--expect-system-name", "^_ZN2ns6callerEic$"], 0),
            (["--expect-system-name", "^_ZN9absent"], 1),
        ]
        for args, status in cases:
            got = subprocess.run(CHECK + [path, "--quiet"] + args, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL).returncode
            ok = got == status
            print(("ok   " if ok else "FAIL ") + "%s -> exit %d (want %d)" % (" ".join(args), got, status))
            failed += not ok
    failed += check_stat_bound()
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
