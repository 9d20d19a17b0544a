#!/usr/bin/env python3
"""The docs cannot drift from the code:
  - every flag and config key `pushprof-sidecar --help` prints is in
    docs/sidecar.md (as `--flag` and as the key);
  - every PUSHPROF_* variable the SDK reads (sdk/env_config.c) is in
    docs/sdk.md;
  - every relative link in README.md, CHANGELOG.md and docs/*.md names a
    file that exists and, with #anchor, a heading of that file (GitHub's
    slugs);
  - no issue numbers or development passes in README.md and docs/.
  check_docs.py SOURCE_DIR SIDECAR_BINARY
Prints one line per problem and exits 1 if there is any."""
import os
import re
import subprocess
import sys

src, sidecar = sys.argv[1], sys.argv[2]
problems = []


def read(rel):
    with open(os.path.join(src, rel), encoding="utf-8") as f:
        return f.read()


helptext = subprocess.run([sidecar, "--help"], stdout=subprocess.PIPE, text=True,
                          check=True).stdout
flags = re.findall(r"^\s+(--[a-z0-9-]+)\s+\[([a-z0-9_]+)\]", helptext, re.M)
if len(flags) < 20:
    problems.append("--help printed only %d flags: %r" % (len(flags), helptext[:200]))
sidecar_md = read("docs/sidecar.md")
for flag, key in flags:
    if not re.search(r"`%s[` =]" % re.escape(flag), sidecar_md):
        problems.append("docs/sidecar.md does not document %s" % flag)
    if "`%s`" % key not in sidecar_md:
        problems.append("docs/sidecar.md does not name the config key %s" % key)

env_vars = sorted(set(re.findall(r'"(PUSHPROF_[A-Z0-9_]+)"', read("sdk/env_config.c"))))
if len(env_vars) < 5:
    problems.append("found only %d PUSHPROF_* variables in sdk/env_config.c" % len(env_vars))
sdk_md = read("docs/sdk.md")
for v in env_vars:
    if not re.search(r"\b%s\b" % v, sdk_md):
        problems.append("docs/sdk.md does not document %s" % v)


def slugs(text):
    out, seen, fence = set(), {}, False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        m = None if fence else re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(2)).strip().lower()
        s = re.sub(r"[^\w\- ]", "", s).replace(" ", "-")
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else "%s-%d" % (s, n))
    return out


pages = ["README.md", "CHANGELOG.md"] + ["docs/" + f for f in sorted(os.listdir(
    os.path.join(src, "docs"))) if f.endswith(".md")]
for page in pages:
    text, fence = read(page), False
    for i, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
        if fence or line.startswith("    "):
            continue
        if re.search(r"\bissue \d+|\bitem \d+\b|\b(first|second|third|fourth|fifth|sixth|"
                     r"seventh) pass\b", line, re.I):
            problems.append("%s:%d: development history: %s" % (page, i, line.strip()[:80]))
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(os.path.join(src, page)), path)) \
                if path else os.path.join(src, page)
            if not os.path.exists(dest):
                problems.append("%s:%d: link to a missing file: %s" % (page, i, target))
            elif anchor and (not dest.endswith(".md") or anchor not in slugs(open(dest).read())):
                problems.append("%s:%d: link to a missing heading: %s" % (page, i, target))

for p in problems:
    print("FAIL " + p)
print("docs: %d flags, %d environment variables, %d pages checked; %d problems"
      % (len(flags), len(env_vars), len(pages), len(problems)))
sys.exit(1 if problems else 0)
