#!/usr/bin/env python3
"""An outside reader of the OpenTelemetry context, written from the OTEP
texts alone (4719 process context, 4947 thread records):

  otel_reader.py ctx PID
      finds the OTEL_CTX mapping in /proc/PID/maps, reads it through
      /proc/PID/mem with the OTEP 4719 reading protocol (signature, version
      2, published_at_ns non-zero and unchanged around the payload read),
      decodes the opentelemetry.proto.resource.v1.Resource by hand and
      prints {"attributes": {key: string or [strings]}} as JSON, or
      {"none": reason}.
  otel_reader.py threads PID
      asks gdb (libthread_db) for each thread's otel_thread_ctx_v1 and the
      record it points at, decodes the record (28-byte head, attrs by key
      index) against the process context's key map and prints
      {tid: null or {"trace_id", "span_id", "flags", "valid", "attrs"}}.
"""
import json
import os
import re
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pbwire import fields  # noqa: E402

HEADER = struct.Struct("=8sIIQQ")  # signature, version, payload_size, published_at_ns, payload


def any_value(b):
    """AnyValue: string_value (1) or array_value (5) of strings."""
    for num, wt, v in fields(b):
        if num == 1 and wt == 2:
            return v.decode()
        if num == 5 and wt == 2:  # ArrayValue { repeated AnyValue values = 1 }
            return [any_value(x) for n, w, x in fields(v) if n == 1 and w == 2]
    return None


def resource(b):
    attrs = {}
    for num, wt, kv in fields(b):
        if num != 1 or wt != 2:
            continue
        key, val = None, None
        for n, w, x in fields(kv):
            if n == 1 and w == 2:
                key = x.decode()
            elif n == 2 and w == 2:
                val = any_value(x)
        if key in attrs:
            raise ValueError("duplicate key %s" % key)
        attrs[key] = val
    return attrs


def find_mapping(pid):
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split(None, 5)
            name = parts[5].strip() if len(parts) > 5 else ""
            if name.startswith("[anon_shmem:OTEL_CTX]") or name.startswith("/memfd:OTEL_CTX"):
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                yield lo, hi, name


def read_ctx(pid):
    found = list(find_mapping(pid))
    if not found:
        return {"none": "no OTEL_CTX mapping"}
    with open("/proc/%d/mem" % pid, "rb", buffering=0) as mem:
        for lo, hi, name in found:
            for _ in range(100):
                mem.seek(lo)
                sig, ver, size, ts, ptr = HEADER.unpack(mem.read(HEADER.size))
                if sig != b"OTEL_CTX" or ver != 2:
                    break
                if ts == 0:
                    time.sleep(0.01)
                    continue
                mem.seek(ptr)
                payload = mem.read(size)
                mem.seek(lo)
                if HEADER.unpack(mem.read(HEADER.size))[3] != ts:
                    continue
                return {"mapping": name, "attributes": resource(payload), "published_at_ns": ts}
    return {"none": "no valid OTEL_CTX header"}


GDB_SCRIPT = r'''
import gdb, json, sys
out = {}
for t in gdb.selected_inferior().threads():
    t.switch()
    p = int(gdb.parse_and_eval("(unsigned long)otel_thread_ctx_v1"))
    rec = None
    if p:
        m = gdb.selected_inferior()
        head = bytes(m.read_memory(p, 28))
        n = int.from_bytes(head[26:28], sys.byteorder)
        rec = (head + bytes(m.read_memory(p + 28, n))).hex() if n else head.hex()
    out[t.ptid[1]] = rec
print("OTEL_THREADS " + json.dumps(out))
'''


def read_threads(pid, tmpdir):
    script = "%s/otel_threads_gdb.py" % tmpdir
    with open(script, "w") as f:
        f.write(GDB_SCRIPT)
    r = subprocess.run(["gdb", "-nx", "-batch", "-p", str(pid), "-ex", "source " + script],
                       capture_output=True, text=True, timeout=120)
    m = re.search(r"^OTEL_THREADS (.*)$", r.stdout, re.M)
    if not m:
        raise SystemExit("gdb read no threads:\n" + r.stdout[-2000:] + r.stderr[-2000:])
    keymap = read_ctx(pid).get("attributes", {}).get("threadlocal.attribute_key_map") or []
    out = {}
    for tid, rec in json.loads(m.group(1)).items():
        if rec is None:
            out[tid] = None
            continue
        b = bytes.fromhex(rec)
        trace, span, valid, flags, size = struct.unpack("=16s8sBBH", b[:28])
        attrs, i, data = {}, 0, b[28:28 + size]
        while i + 2 <= len(data):
            k, n = data[i], data[i + 1]
            if i + 2 + n > len(data):
                break
            if k < len(keymap):
                attrs[keymap[k]] = data[i + 2:i + 2 + n].decode()
            i += 2 + n
        out[tid] = {"valid": valid, "flags": flags, "trace_id": trace.hex(),
                    "span_id": span.hex(), "attrs": attrs}
    return out


if __name__ == "__main__":
    if sys.argv[1] == "ctx":
        print(json.dumps(read_ctx(int(sys.argv[2]))))
    else:
        print(json.dumps(read_threads(int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "/tmp")))
