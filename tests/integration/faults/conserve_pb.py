"""Just enough protobuf wire-format reading for the conservation check: the
fields of pushprof.v1.PushRequest / PushReply it needs (pushprof.proto) and
the per-label sample totals of a pprof (profile.proto). The exported side is
read by `go tool pprof`, an independent parser; this reads what was pushed."""
import gzip
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pbwire import fields, varint  # noqa: E402


def push_request(payload):
    r = {"pid": 0, "sequence": 0, "process_start": 0, "pprof": b"", "labels": {},
         "no_samples": False}
    for num, _, v in fields(payload):
        if num == 3:
            r["pid"] = v
        elif num == 7:
            r["sequence"] = v
        elif num == 9:
            r["process_start"] = v
        elif num == 11:
            r["no_samples"] = bool(v)
        elif num == 8:
            r["pprof"] = v
        elif num == 2:
            kv = {n: x.decode() for n, _, x in fields(v)}
            r["labels"][kv.get(1, "")] = kv.get(2, "")
    return r


def push_reply_code(payload):
    for num, _, v in fields(payload):
        if num == 1:
            return v
    return 0  # proto3: OK is the default and not sent


def _packed(wt, v):
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def label_totals(pprof, key):
    """{value of label key (None if absent): sum of the first sample value}."""
    if pprof[:2] == b"\x1f\x8b":
        pprof = gzip.decompress(pprof)
    strings, samples = [], []
    for num, wt, v in fields(pprof):
        if num == 6:
            strings.append(v.decode())
        elif num == 2:
            samples.append(v)
    out = {}
    for s in samples:
        vals, labs = [], []
        for num, wt, v in fields(s):
            if num == 2:
                vals += _packed(wt, v)
            elif num == 3:
                labs.append({n: x for n, _, x in fields(v)})
        lv = None
        for lab in labs:
            if strings[lab.get(1, 0)] == key and lab.get(2):
                lv = strings[lab[2]]
        if vals:
            out[lv] = out.get(lv, 0) + vals[0]
    return out
