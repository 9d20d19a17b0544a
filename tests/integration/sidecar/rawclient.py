#!/usr/bin/env python3
"""Raw-socket clients for the sidecar tests: send exact bytes, print the reply.

  rawclient.py SOCK send FILE            send a frame file as is
  rawclient.py SOCK random N             N random bytes
  rawclient.py SOCK truncated FILE       the first half of a frame, then half-close
  rawclient.py SOCK huge                 a header claiming 4 GiB - 1
  rawclient.py SOCK badmagic FILE        a frame with its magic replaced
  rawclient.py SOCK silent SECONDS       connect, send nothing, wait for the sidecar
  rawclient.py SOCK slow FILE SECONDS    half a frame, "half" on stdout, pause, the rest
  rawclient.py SOCK hold N SECONDS       hold N idle connections open for SECONDS
  rawclient.py SOCK watchmode PATH SECS  print the mode of PATH the moment it appears

Prints one line: "code=<n> reason=<text> push_id=<id>", or "closed" if the
sidecar closed without a reply, or "noreply" if nothing came in time.
"""
import os
import socket
import stat
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pbwire  # noqa: E402

def parse_reply(payload):
    out = {1: 0, 2: b"", 3: 0, 4: b""}
    for num, _, v in pbwire.fields(payload):
        out[num] = v
    return out

def recv_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data

def read_reply(s, timeout):
    s.settimeout(timeout)
    try:
        hdr = recv_exact(s, 12)
        if hdr is None:
            return "closed"
        magic, ver, typ, length = struct.unpack(">4sHHI", hdr)
        if magic != b"PPRF" or typ != 2:
            return "badreply magic=%r type=%d" % (magic, typ)
        payload = recv_exact(s, length)
        if payload is None:
            return "closed"
    except socket.timeout:
        return "noreply"
    except ConnectionResetError:
        return "closed"
    f = parse_reply(payload)
    return "code=%d reason=%s push_id=%s" % (f[1], f[2].decode(errors="replace"),
                                              f[4].decode(errors="replace"))

def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s

def send_and_reply(path, data, halfclose=False, timeout=10):
    s = connect(path)
    try:
        s.sendall(data)
        if halfclose:
            s.shutdown(socket.SHUT_WR)
    except (BrokenPipeError, ConnectionResetError):
        pass
    r = read_reply(s, timeout)
    s.close()
    return r

def main():
    path, cmd = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    if cmd == "send":
        print(send_and_reply(path, open(args[0], "rb").read()))
    elif cmd == "random":
        data = os.urandom(int(args[0]))
        if data[:4] == b"PPRF":
            data = b"XXXX" + data[4:]
        print(send_and_reply(path, data))
    elif cmd == "truncated":
        data = open(args[0], "rb").read()
        print(send_and_reply(path, data[:len(data) // 2], halfclose=True))
    elif cmd == "huge":
        print(send_and_reply(path, struct.pack(">4sHHI", b"PPRF", 1, 1, 0xFFFFFFFF) + b"\0" * 100))
    elif cmd == "badmagic":
        data = open(args[0], "rb").read()
        print(send_and_reply(path, b"JUNK" + data[4:]))
    elif cmd == "silent":
        s = connect(path)
        t0 = time.time()
        r = read_reply(s, float(args[0]))
        print("%s after=%.1f" % (r, time.time() - t0))
    elif cmd == "slow":
        data = open(args[0], "rb").read()
        s = connect(path)
        s.sendall(data[:len(data) // 2])
        print("half", flush=True)
        time.sleep(float(args[1]))
        s.sendall(data[len(data) // 2:])
        print(read_reply(s, 10), flush=True)
    elif cmd == "hold":
        conns = [connect(path) for _ in range(int(args[0]))]
        print("holding", flush=True)
        time.sleep(float(args[1]))
        for c in conns:
            c.close()
    elif cmd == "watchmode":
        target, deadline = args[0], time.time() + float(args[1])
        while time.time() < deadline:
            try:
                st = os.lstat(target)
            except FileNotFoundError:
                continue
            print("%o %s" % (stat.S_IMODE(st.st_mode), "socket" if stat.S_ISSOCK(st.st_mode) else "other"))
            return
        print("never")
    else:
        sys.exit("unknown command " + cmd)

if __name__ == "__main__":
    main()
