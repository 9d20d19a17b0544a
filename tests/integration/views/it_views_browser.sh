#!/usr/bin/env bash
# A real browser opens pushprof's flame graphs: headless Chromium (Debian's
# chromium) loads the SVG, the HTML page and a differential graph, each with
# no console error; it opens on the root frame (a deep graph too); a mouse
# click zooms, the search reports the share
# pushprof top gives for the same frames; screenshots are kept in
# build/test-logs/it_views_browser/ for a look.
. "$(dirname "$0")/../lib.sh"
S=$PUSHPROF_SOURCE_DIR/tests/integration/views
P=$B/views/pushprof
GEN=$B/tests/gen_views_pprof
[ -x /usr/bin/chromium ] || fail "chromium not installed (bash tests/deps.sh installs it)"
node --experimental-websocket -e 'if (typeof WebSocket !== "function") process.exit(1)' \
  2>/dev/null || fail "node with WebSocket (>= 20) needed (bash tests/deps.sh installs nodejs)"
shots=${PUSHPROF_TEST_LOG_DIR:-$T}/${PUSHPROF_TEST_NAME:-it_views_browser}
mkdir -p "$shots"
check() { node --experimental-websocket "$S/browser_check.js" "$@" 2>&1; }

# main 100: serve 60 (parse 30, inflate 30 of which crc 10), idle 40
printf '%b' '30\troute=/x\tmain;serve;parse\n20\troute=/y\tmain;serve;lib:inflate\n' \
  '10\troute=/x\tmain;serve;lib:inflate;lib:crc\n40\t-\tmain;idle\n' |
  "$GEN" "$T/gen.pb.gz" >/dev/null 2>&1 || fail "gen_views_pprof"
"$P" flame -o "$T/gen.svg" "$T/gen.pb.gz" || fail "flame"
check "$T/gen.svg" "$shots/flame.png" serve '^(inflate|crc)$' 30.0 || fail "flame.svg in chromium"
"$P" flame -o "$T/gen.html" "$T/gen.pb.gz" || fail "flame html"
check "$T/gen.html" "$shots/flame-html.png" inflate '^parse$' 30.0 || fail "flame.html in chromium"

# a Go-like deep profile from the SDK: demo_work under the preload library
mkdir -p "$T/prof"
LD_PRELOAD=$PRELOAD PUSHPROF_OUTPUT="$T/prof/demo-%p.pb.gz" "$B/examples/demo_work" 0.5 \
  >"$T/out" 2>"$T/err" || { cat "$T/err"; fail "demo_work failed"; }
demo=$(the_profile)
"$P" flame -o "$T/demo.svg" "$demo" || fail "flame demo"
# the search's share must be what pushprof top --cum says for those frames
"$P" top --cum --value samples "$demo" >"$T/demo.top"
pct=$(awk '$6 == "parse_records" || $6 == "checksum_output" {sub("%", "", $5); s += $5; n++}
  END {if (n == 2) printf "%.2f", s}' "$T/demo.top")
[ -n "$pct" ] || { cat "$T/demo.top"; fail "parse_records or checksum_output missing from top"; }
check "$T/demo.svg" "$shots/demo.png" worker '^(parse_records|checksum_output)$' "$pct" ||
  fail "demo.svg in chromium"

# a deep graph (python3's stacks go 113-128 frames deep): 130 frames under
# main is over 2,000 px tall, and still opens on its root and widest frames
deep=$(seq -f 'f%g' 1 130 | paste -sd';')
printf '%b' "60\t-\tmain;$deep\n40\t-\tmain;idle\n" | "$GEN" "$T/deep.pb" >/dev/null 2>&1 ||
  fail "gen deep"
"$P" flame -o "$T/deep.svg" "$T/deep.pb" || fail "flame deep"
check "$T/deep.svg" "$shots/deep.png" f20 '^idle$' 40.0 || fail "deep.svg in chromium"
# a real deep profile: Debian's python3 building JSON, compressing it with
# zlib and running a regex (its stacks run through the interpreter's frames)
mkdir -p "$T/py"
[ -x /usr/bin/python3 ] || fail "Debian's python3 is not installed"
ASAN_OPTIONS=$HOST_ASAN LD_PRELOAD=$PRELOAD PUSHPROF_OUTPUT="$T/py/py-%p.pb.gz" PUSHPROF_HZ=250 \
  /usr/bin/python3 -c '
import json, re, time, zlib
def nest(d):
    return {"k": [nest(d - 1) for _ in range(2)]} if d else {"v": list(range(40))}
end = time.process_time() + 1.0
while time.process_time() < end:
    s = json.dumps(nest(7))
    zlib.decompress(zlib.compress(s.encode(), 6))
    re.findall(r"[0-9]+", s)
' || fail "python3 under the SDK failed"
py=$(ls -S "$T"/py/py-*.pb.gz | head -1)
[ -n "$py" ] || fail "no python3 profile"
"$P" flame -o "$T/py.svg" "$py" || fail "flame python3"
depth=$(python3 "$PUSHPROF_SOURCE_DIR/tests/integration/pprof_check.py" "$py" | python3 -c '
import json, sys; print(len(json.load(sys.stdin)["functions"]))')
"$P" top --cum --value samples "$py" >"$T/py.top"
pyct=$(awk '$6 == "Py_BytesMain" {sub("%", "", $5); print $5}' "$T/py.top")
[ -n "$pyct" ] || { head -20 "$T/py.top"; fail "Py_BytesMain missing from python3's top"; }
check "$T/py.svg" "$shots/python3.png" Py_BytesMain '^Py_BytesMain$' "$pyct" ||
  fail "python3 flame in chromium"
echo "python3: $depth functions; its graph opens on the root"

# the classic look: root at the bottom, a zoom shows the ancestors below
"$P" flame --inverted -o "$T/gen-inverted.svg" "$T/gen.pb.gz" || fail "flame --inverted"
grep -q 'data-root="bottom"' "$T/gen-inverted.svg" || fail "--inverted does not put the root at the bottom"
check "$T/gen-inverted.svg" "$shots/flame-inverted.png" serve '^(inflate|crc)$' 30.0 ||
  fail "flame --inverted in chromium"

# a differential graph
printf '%b' '50\t-\tmain;a;b\n50\t-\tmain;a;c\n' | "$GEN" "$T/base.pb" >/dev/null 2>&1
printf '%b' '144\t-\tmain;a;b\n36\t-\tmain;a;c\n20\t-\tmain;d\n' | "$GEN" "$T/new.pb" >/dev/null 2>&1
"$P" diff "$T/base.pb" -- "$T/new.pb" -o "$T/diff.svg" || fail "diff"
check "$T/diff.svg" "$shots/diff.png" a '^b$' 72.0 || fail "diff.svg in chromium"
for f in flame flame-html demo deep python3 flame-inverted diff; do
  python3 -c "import sys; d=open(sys.argv[1],'rb').read(); sys.exit(d[:8] != b'\x89PNG\r\n\x1a\n' or len(d) < 2000)" \
    "$shots/$f.png" || fail "$f.png is not a screenshot"
done
echo "screenshots in $shots"
echo pass
