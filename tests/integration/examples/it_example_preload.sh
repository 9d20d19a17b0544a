#!/usr/bin/env bash
# examples/preload: xz from Debian, unmodified, profiled through LD_PRELOAD
# and PUSHPROF_* only; the profile the sidecar exports holds xz's own code
# (liblzma's lzma_* functions) and pprof reads it.
source "$(dirname "$0")/ex_lib.sh"
command -v xz >/dev/null || fail "xz not installed (bash tests/deps.sh installs xz-utils)"
start_sidecar xz --batch-window 60
PUSHPROF_SOCKET=$SOCK PUSHPROF_PRELOAD=$PRELOAD sh "$S/examples/preload/profile_xz.sh" 6 \
  2>"$W/xz.err" || fail "profile_xz.sh exited $?: $(cat "$W/xz.err")"
[ ! -s "$W/xz.err" ] || fail "stderr from xz under the SDK: $(cat "$W/xz.err")"
[ "$(accepted_pids | wc -l)" -ge 1 ] || fail "the sidecar accepted no push from xz"
stop_and_export
json=$(profiles_json xz)
python3 - "$json" <<'PY' || fail "exported profile: $json"
import json, sys
r = json.loads(sys.argv[1])
lz = sorted(f for f in r["functions"] if f.startswith("lzma_"))
assert lz, "no lzma_* function in %s" % r["functions"][:40]
lzcum = max(r["cum"].get(f, 0) for f in lz)
assert r["total"] >= 50, "only %d samples" % r["total"]
# xz spends its time compressing: liblzma's entry points are on most stacks.
assert lzcum >= r["total"] * 0.5, "lzma_* on %d of %d samples" % (lzcum, r["total"])
print("ok %d samples, lzma functions: %s (largest cum %d)" % (r["total"], " ".join(lz[:8]), lzcum))
PY
echo pass
