#!/usr/bin/env python3
"""Hostile and well-behaved clients for it_sidecar_hostile.sh.

  hostile.py SOCK idle N SECONDS        keep N connections open that never send;
                                        reopen (at most 200/s) what the sidecar closes
  hostile.py SOCK random SECONDS SEED   frames of random sizes and content, ~20/s
  hostile.py SOCK slow FRAME SECONDS    one byte per second of a valid frame
  hostile.py SOCK good FRAME SECONDS    push FRAME on a new connection every 20 ms,
                                        timing connect -> reply

Each prints one summary line of key=value pairs at the end.
"""
import os
import random
import resource
import selectors
import socket
import struct
import sys
import time

def connect(path, blocking=True):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    s.setblocking(blocking)
    return s

def reply_code(s, timeout):
    """The code of the next reply frame, "closed" or "noreply"."""
    s.settimeout(timeout)
    data = b""
    try:
        while len(data) < 12 or len(data) < 12 + struct.unpack(">I", data[8:12])[0]:
            chunk = s.recv(65536)
            if not chunk:
                return "closed"
            data += chunk
    except socket.timeout:
        return "noreply"
    except OSError:
        return "closed"
    payload = data[12:]
    # PushReply.code is field 1 (varint); absent means OK (0).
    if payload[:1] == b"\x08":
        return str(payload[1])
    return "0"

def idle(path, n, secs):
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    n = min(n, soft - 64)
    sel = selectors.DefaultSelector()
    opened = closed = evicted_replies = 0
    end = time.time() + secs
    budget, last = 0.0, time.time()
    live = 0
    print("idle holding %d" % n, flush=True)
    while time.time() < end:
        now = time.time()
        budget = min(budget + (now - last) * 200, 200)
        if opened < n:  # the first n at once, the burst the test is about
            budget = max(budget, n - opened)
        last = now
        while live < n and budget >= 1:
            try:
                s = connect(path, blocking=False)
            except OSError:
                break
            sel.register(s, selectors.EVENT_READ)
            live += 1
            opened += 1
            budget -= 1
        for key, _ in sel.select(timeout=0.02):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if data[:4] == b"PPRF":
                evicted_replies += 1
            sel.unregister(s)
            s.close()
            live -= 1
            closed += 1
    print("idle n=%d opened=%d closed_by_sidecar=%d replies=%d" % (n, opened, closed, evicted_replies))

def random_frames(path, secs, seed):
    rng = random.Random(seed)
    end = time.time() + secs
    sent = 0
    codes = {}
    while time.time() < end:
        kind = rng.randrange(4)
        size = int(2 ** rng.uniform(0, 20))  # 1 B .. 1 MiB, log-uniform
        body = rng.randbytes(size) if hasattr(rng, "randbytes") else os.urandom(size)
        if kind == 0:  # garbage, no header
            data = (b"XXXX" + body) if body[:4] == b"PPRF" else body
        elif kind == 1:  # a valid header and random payload of the length it claims
            data = struct.pack(">4sHHI", b"PPRF", 1, 1, size) + body
        elif kind == 2:  # a header claiming more than is sent, then close
            data = struct.pack(">4sHHI", b"PPRF", 1, 1, size + rng.randrange(1, 1 << 24)) + body
        else:  # a random header
            data = struct.pack(">4sHHI", b"PPRF", rng.randrange(3), rng.randrange(4),
                               rng.randrange(1 << 32)) + body[:4096]
        try:
            s = connect(path)
            s.sendall(data)
            if kind == 2:
                s.shutdown(socket.SHUT_WR)
            c = reply_code(s, 2)
            s.close()
        except OSError:
            c = "error"
        codes[c] = codes.get(c, 0) + 1
        sent += 1
        time.sleep(0.05)
    print("random sent=%d codes=%s" % (sent, ",".join("%s:%d" % kv for kv in sorted(codes.items()))))

def slow(path, frame, secs):
    data = open(frame, "rb").read()
    end = time.time() + secs
    conns = cut = completed = 0
    while time.time() < end:
        s = connect(path)
        conns += 1
        i = 0
        while time.time() < end:
            try:
                s.sendall(data[i:i + 1])
            except OSError:
                cut += 1
                break
            i += 1
            s.settimeout(1)
            try:
                got = s.recv(4096)
                cut += 1  # a reply (eviction, timeout) or EOF: the sidecar cut us
                break
            except socket.timeout:
                pass
            except OSError:
                cut += 1
                break
            if i == len(data):
                completed += 1
                break
        s.close()
    print("slow connections=%d cut=%d completed=%d" % (conns, cut, completed))

def good(path, frame, secs):
    data = open(frame, "rb").read()
    end = time.time() + secs
    lat, codes = [], {}
    while time.time() < end:
        t0 = time.perf_counter()
        try:
            while True:  # like the C client: a full backlog means retry shortly
                try:
                    s = connect(path)
                    break
                except BlockingIOError:
                    if time.perf_counter() - t0 > 10:
                        raise
                    time.sleep(0.01)
            s.sendall(data)
            c = reply_code(s, 10)
            s.close()
        except OSError as e:
            c = "error:" + type(e).__name__
        dt = (time.perf_counter() - t0) * 1000
        codes[c] = codes.get(c, 0) + 1
        if c == "0":
            lat.append(dt)
        time.sleep(0.02)
    lat.sort()
    pct = lambda p: lat[min(len(lat) - 1, int(len(lat) * p))] if lat else -1
    print("good pushes=%d acked=%d p50_ms=%.1f p99_ms=%.1f max_ms=%.1f codes=%s" %
          (sum(codes.values()), len(lat), pct(0.50), pct(0.99), lat[-1] if lat else -1,
           ",".join("%s:%d" % kv for kv in sorted(codes.items()))))

def main():
    path, cmd, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if cmd == "idle":
        idle(path, int(args[0]), float(args[1]))
    elif cmd == "random":
        random_frames(path, float(args[0]), int(args[1]))
    elif cmd == "slow":
        slow(path, args[0], float(args[1]))
    elif cmd == "good":
        good(path, args[0], float(args[1]))
    else:
        sys.exit("unknown command " + cmd)

if __name__ == "__main__":
    main()
