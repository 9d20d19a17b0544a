#!/usr/bin/env bash
# examples/preload: xz from Debian, unmodified, profiled through LD_PRELOAD
# and PUSHPROF_* only; the profile the sidecar exports holds xz's own code
# and pprof reads it: most samples land in liblzma's code (by mapping: its
# internal functions have no symbols in Debian's stripped library) and the
# ones in its exported lzma_crc32 are named from liblzma's .dynsym.
source "$(dirname "$0")/ex_lib.sh"
command -v xz >/dev/null || fail "xz not installed (bash tests/deps.sh installs xz-utils)"
start_sidecar xz --batch-window 60
ASAN_OPTIONS=$HOST_ASAN PUSHPROF_SOCKET=$SOCK PUSHPROF_PRELOAD=$PRELOAD sh "$S/examples/preload/profile_xz.sh" 150 \
  >"$W/xz.out" 2>"$W/xz.err" || fail "profile_xz.sh exited $?: $(cat "$W/xz.err")"
[ ! -s "$W/xz.err" ] || fail "stderr from xz under the SDK: $(cat "$W/xz.err")"
grep -q 'compressed 150 MiB' "$W/xz.out" || fail "profile_xz.sh printed: $(cat "$W/xz.out")"
[ "$(accepted_pids | wc -l)" -eq 2 ] || fail "want pushes from 2 xz processes: $(accepted_pids | tr '\n' ' ')"
stop_and_export
json=$(profiles_json xz)
python3 - "$json" <<'PY' || fail "exported profile: $json"
import json, sys
r = json.loads(sys.argv[1])
crc = r["cum"].get("lzma_crc32", 0)
assert r["total"] >= 30, "only %d samples" % r["total"]
assert crc >= 3, "lzma_crc32 (liblzma .dynsym) on %d samples; functions %s" % (crc, r["functions"][:30])
print("ok %d samples, lzma_crc32 on %d" % (r["total"], crc))
PY
# Leaf frames by mapping: xz's own code (liblzma) holds most samples.
for f in $(find "$OUT" -path '*/xz/*' -name '*.pb.gz'); do go tool pprof -raw -symbolize=none "$f"; done |
  python3 -c '
import re, sys
text = sys.stdin.read()
tot = lz = 0
for part in text.split("PeriodType")[1:]:
    maps = {m.group(1): m.group(2) for m in re.finditer(r"^(\d+): 0x\S+ (\S+)", part.split("Mappings", 1)[1], re.M)}
    locs = {m.group(1): m.group(2) for m in re.finditer(r"^\s+(\d+): 0x[0-9a-f]+ M=(\d+)", part, re.M)}
    samples = part.split("Samples:", 1)[1].split("Locations", 1)[0]
    for m in re.finditer(r"^\s+(\d+)\s+\d+: (\d+)", samples, re.M):
        n = int(m.group(1))
        tot += n
        if "liblzma" in maps.get(locs.get(m.group(2), ""), ""):
            lz += n
assert tot > 0, "no samples parsed"
assert lz >= 0.6 * tot, "only %d of %d leaf samples in liblzma" % (lz, tot)
print("ok %d of %d leaf samples in liblzma" % (lz, tot))' || fail "samples by mapping"
echo pass
