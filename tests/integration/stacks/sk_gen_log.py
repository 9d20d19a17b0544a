#!/usr/bin/env python3
"""Writes deterministic log-like text (what xz compresses in it_sk_vs_perf
and tests/bench/nofp_bench.py).  sk_gen_log.py FILE BYTES"""
import random
import sys

WORDS = ["GET", "POST", "/api/v1/items", "/static/app.js", "user", "session", "ok", "error",
         "timeout", "200", "404", "500", "cache", "miss", "hit"]


def main():
    path, size = sys.argv[1], int(float(sys.argv[2]))
    r = random.Random(11)
    n = 0
    with open(path, "w") as f:
        while n < size:
            line = "%d.%03d %s %s id=%08x bytes=%d %s\n" % (
                1700000000 + n // 200, r.randrange(1000), r.choice(WORDS), r.choice(WORDS),
                r.getrandbits(32), r.randrange(100000),
                " ".join(r.choice(WORDS) for _ in range(r.randrange(6))))
            f.write(line)
            n += len(line)


if __name__ == "__main__":
    main()
