#!/usr/bin/env python3
"""Every sample of sk_leafmix with func_a, func_b or func_c on its stack must
reach the thread's root: `worker` the outermost named function, then one or
two frames of libc (start_thread, thread_start; libc is stripped, so they
have no names) and nothing else.

  arm64_root_check.py PROFILE
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import pprof_check  # noqa: E402

FUNCS = {"func_a", "func_b", "func_c"}


def main():
    total = rooted = 0
    bad = []
    for n, fns, _, nlocs in pprof_check.sample_stacks(sys.argv[1]):
        if not FUNCS.intersection(fns):
            continue
        total += n
        w = fns.index("worker") if "worker" in fns else len(fns)
        above = fns[w + 1:]  # libc has no names for them: pprof shows addresses
        if w < len(fns) and 1 <= len(above) <= 2 and all(f.startswith("0x") for f in above):
            rooted += n
        elif len(bad) < 5:
            bad.append("%d x %s" % (n, " <- ".join(fns)))
    ok = total > 0 and rooted == total
    print("%s  %d/%d samples of func_a/b/c reach worker and the thread root" % (
        "ok  " if ok else "FAIL", rooted, total))
    for b in bad:
        print("     " + b)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
