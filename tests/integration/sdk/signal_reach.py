#!/usr/bin/env python3
"""What the SDK's signal handler can reach: from the handler's own section,
follows every relocation of every section it reaches (objects built with
-ffunction-sections -fdata-sections, so a section is one function or one
datum), across the objects given, and lists the symbols it reaches that no
object defines: the calls that leave the SDK. Each must be on the allowed
list (async-signal-safe by POSIX or by construction); anything else (malloc,
a mutex, stdio, dlsym, ...) fails.
  signal_reach.py [--root SYMBOL]... OBJECT...
Default root: sampler_handle_signal. Reads the objects with readelf.
Calls through a function pointer are not followed (the sampler calls
libc's sigaction through one): the pointers' targets are set outside the
handler, and what they may be is the sampler's contract.
Prints the path from the root to each symbol that is not allowed."""
import argparse
import re
import subprocess
import sys
from collections import deque

# async-signal-safe (POSIX 2017, 2.4.3) or plain memory operations.
ALLOWED = {
    "memcpy", "memmove", "memset", "memcmp",  # compilers emit them for copies
    "__errno_location",                       # errno saved and restored
    "raise", "sigaction", "pthread_sigmask", "sigfillset", "sigemptyset",
    "sigaddset", "sched_yield", "syscall",    # futex wake
    "clock_gettime", "gettid", "getpid", "write",
    "__popcountdi2",                          # libgcc arithmetic
    "__stack_chk_fail",
    "_GLOBAL_OFFSET_TABLE_",                  # a relocation base, not a call
}
# aarch64 gcc's outline atomics (-moutline-atomics, the default): libgcc's
# static helpers, one LSE instruction or an LL/SC loop each.
OUTLINE_ATOMIC = re.compile(
    r"^__aarch64_(cas|swp|ldadd|ldclr|ldeor|ldset)(1|2|4|8|16)_(relax|acq|rel|acq_rel)$")


def readelf(args, obj):
    return subprocess.run(["readelf", "-W"] + args + [obj], stdout=subprocess.PIPE, text=True,
                          check=True).stdout


def load(obj):
    sections = {}  # index -> name
    for m in re.finditer(r"^\s*\[\s*(\d+)\]\s+(\S+)", readelf(["-S"], obj), re.M):
        sections[int(m.group(1))] = m.group(2)
    defined = {}   # symbol -> section name (globals and locals of this object)
    for line in readelf(["-s"], obj).splitlines():
        f = line.split()
        if len(f) >= 8 and f[0].endswith(":") and f[6].isdigit():
            defined.setdefault(f[7], sections.get(int(f[6])))
    relocs = {}    # section name -> symbols its relocations name
    cur = None
    for line in readelf(["-r"], obj).splitlines():
        m = re.match(r"Relocation section '\.rela?(\S+)'", line)
        if m:
            cur = relocs.setdefault(m.group(1), set())
            continue
        f = line.split()
        if cur is not None and len(f) >= 5 and re.match(r"^[0-9a-f]+$", f[0]):
            name = f[4]
            cur.add(name)
    return defined, relocs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", action="append")
    ap.add_argument("objects", nargs="+")
    a = ap.parse_args()
    roots = a.root or ["sampler_handle_signal"]
    globals_, nodes = {}, {}  # symbol -> (obj, section); (obj, section) -> symbols
    locals_ = {}
    for obj in a.objects:
        defined, relocs = load(obj)
        locals_[obj] = defined
        for sym, sec in defined.items():
            if sec is not None:
                globals_.setdefault(sym, (obj, sec))
        for sec, syms in relocs.items():
            nodes[(obj, sec)] = syms
    start = [globals_[r] for r in roots if r in globals_]
    if len(start) != len(roots):
        sys.exit("signal_reach: roots not defined in the objects: %s" %
                 [r for r in roots if r not in globals_])
    seen, parent, external = set(start), {}, {}
    q = deque(start)
    while q:
        node = q.popleft()
        obj, sec = node
        for sym in nodes.get(node, ()):
            # A section symbol, a local of this object, or a global of any.
            if sym.startswith("."):
                nxt = (obj, sym)
            elif locals_[obj].get(sym):
                nxt = (obj, locals_[obj][sym])
            elif sym in globals_:
                nxt = globals_[sym]
            else:
                external.setdefault(sym, node)
                continue
            if nxt not in seen:
                seen.add(nxt)
                parent[nxt] = node
                q.append(nxt)
    # A sanitizer build's instrumentation calls its runtime everywhere.
    bad = sorted(s for s in external
                 if s not in ALLOWED and not OUTLINE_ATOMIC.match(s)
                 and not s.startswith(("__asan_", "__ubsan_", "__tsan_", "__sanitizer_")))
    print("signal path from %s: %d sections reached; leaves the SDK for: %s"
          % (", ".join(roots), len(seen), " ".join(sorted(external)) or "nothing"))
    for s in bad:
        path, node = [s], external[s]
        while node:
            path.append(node[1])
            node = parent.get(node)
        print("FAIL not async-signal-safe: %s" % " <- ".join(path))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
