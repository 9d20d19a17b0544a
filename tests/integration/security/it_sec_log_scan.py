#!/usr/bin/env python3
"""Credentials never reach logs: reads every line under the test-log
directory (each script test's stdout+stderr and the sidecar logs it kept,
see tests/integration/run_logged.sh) after every other test ran, and fails
naming file:line for any line holding a secret.

Every secret the credential tests hand out (secret keys, session tokens,
bearer tokens, basic-auth passwords, web identity and pod tokens) holds the
word SENTINEL. A line is a leak if it holds SENTINEL, its hex, or its base64
at any alignment (an Authorization: Basic header, a token echoed in base64),
or one of the full secret values given with --secret.

It cannot pass by reading nothing: each credential test that ran must have
left output lines and sidecar log lines here, including the sidecar's line
for an exporter with credentials; a test whose sidecar logged such a line
must be in the credential test list. If none of them ran (ctest -R
on other tests), it is skipped (exit 77); an empty log directory fails.
"""
import argparse
import base64
import os
import re
import sys


# The sidecar's start line for an exporter that holds credentials.
CRED_RE = re.compile(rb'msg="object store exporter ready".* credentials=|'
                     rb'msg="pyroscope exporter ready".* auth=(?!none\b)|'
                     rb'msg="otlp exporter ready".* headers="[^"]')


def base64_cores(word):
    """Substrings every base64 text that encodes word (at any offset) holds."""
    cores = []
    for pad in range(3):
        enc = base64.b64encode(b"\0" * pad + word + b"\0\0\0").decode()
        # characters fully determined by word's bytes: 3-byte groups inside it
        first = (pad + 2) // 3  # first group starting at or after the word
        last = (pad + len(word)) // 3  # groups ending at or before its end
        if last > first:
            cores.append(enc[first * 4:last * 4].encode())
    return cores


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log-dir", required=True)
    ap.add_argument("--credential-tests", nargs="+", required=True)
    ap.add_argument("--secret", action="append", default=[],
                    help="a full secret value to look for as well")
    a = ap.parse_args()

    word = b"SENTINEL"
    needles = [(word, "SENTINEL")]
    needles += [(word.hex().encode(), "hex of SENTINEL"),
                (word.hex().upper().encode(), "hex of SENTINEL")]
    needles += [(c, "base64 of SENTINEL") for c in base64_cores(word)]
    for s in a.secret:
        needles.append((s.encode(), "a secret value"))
        needles += [(c, "base64 of a secret value") for c in base64_cores(s.encode())]

    if not os.path.isdir(a.log_dir):
        print("FAIL: no test-log directory %s: the script tests left no logs "
              "(tests/integration/run_logged.sh broken?)" % a.log_dir)
        return 1
    files = lines = 0
    per_test = {}  # test -> [output lines, sidecar log lines]
    uses_creds = set()  # tests whose sidecar logged an exporter with credentials
    leaks = []
    for root, _, names in os.walk(a.log_dir):
        for n in sorted(names):
            path = os.path.join(root, n)
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            test = os.path.relpath(path, a.log_dir).split(os.sep)[0]
            counts = per_test.setdefault(test, [0, 0])
            files += 1
            with open(path, "rb") as f:
                for i, line in enumerate(f, 1):
                    lines += 1
                    counts[0 if n == "output.log" else 1] += 1
                    if n != "output.log" and CRED_RE.search(line):
                        uses_creds.add(test)
                    for needle, what in needles:
                        if needle in line:
                            shown = line.rstrip(b"\n")[:200]
                            for nd, _ in needles:
                                shown = shown.replace(nd, b"<" + b"*" * 8 + b">")
                            leaks.append("%s:%d: %s: %s" % (path, i, what,
                                                            shown.decode("utf-8", "replace")))
                            break
    if files == 0:
        print("FAIL: %s holds no log file: the script tests left no logs" % a.log_dir)
        return 1
    print("scanned %d lines in %d files of %d tests under %s" % (lines, files, len(per_test),
                                                                  a.log_dir))
    for leak in leaks:
        print("LEAK " + leak)
    if leaks:
        print("FAIL: %d log lines hold a secret (shown masked)" % len(leaks))
        return 1

    unlisted = sorted(uses_creds - set(a.credential_tests))
    if unlisted:
        print("FAIL: these tests gave the sidecar credentials but are not in the credential "
              "test list (tests/security.cmake): %s; give their secrets the word SENTINEL and "
              "list them" % " ".join(unlisted))
        return 1
    ran = [t for t in a.credential_tests if t in per_test]
    if not ran:
        print("skipped: none of the credential tests ran in this ctest run (%s)"
              % " ".join(a.credential_tests))
        return 77
    bad = []
    for t in ran:
        out, side = per_test[t]
        print("  %-22s %5d output lines, %5d sidecar log lines" % (t, out, side))
        if out == 0 or side == 0 or t not in uses_creds:
            bad.append(t)
    if bad:
        print("FAIL: credential tests with no output, no sidecar log lines, or no exporter "
              "with credentials in them: %s (is the sidecar log kept? "
              "tests/integration/lib.sh on_exit)" % " ".join(bad))
        return 1
    print("ok: no secret in %d lines; %d credential tests scanned (%s)"
          % (lines, len(ran), " ".join(ran)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
