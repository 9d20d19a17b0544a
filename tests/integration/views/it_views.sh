#!/usr/bin/env bash
# pushprof top/folded/flame/diff against go tool pprof, on profiles from Go's
# runtime profiler (goburn.go), from the SDK (demo_work under LD_PRELOAD) and
# from pushprof's builder (gen_views_pprof, with labels and two mappings):
# the same flat%/cum%, the same stacks and counts, the same label focus.
# Then directories and the export layout (--service), --since/--until,
# merging, bad input (exit 2, one line naming the file, nothing written),
# hostile frame names (the SVG stays well-formed XML) and a diff with known
# splits.
. "$(dirname "$0")/../lib.sh"
S=$PUSHPROF_SOURCE_DIR/tests/integration/views
P=$B/views/pushprof
GEN=$B/tests/gen_views_pprof
CHK=(python3 "$S/views_check.py")
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
command -v go >/dev/null || fail "go not found (bash tests/deps.sh installs golang-go)"

# pprof_same NAME FILE [pushprof filter] [pprof filter] [top-only]: top and
# folded agree (pprof -traces prints plain numbers only for count units).
pprof_same() {
  local name=$1 file=$2 ours=${3:-} theirs=${4:-} only=${5:-}
  # shellcheck disable=SC2086
  "$P" top --nodecount 100000 $ours "$file" >"$T/$name.top" || fail "$name: pushprof top failed"
  # shellcheck disable=SC2086
  go tool pprof -top -nodecount=100000 -nodefraction=0 -edgefraction=0 $theirs "$file" \
    >"$T/$name.pprof-top" 2>"$T/$name.pprof-err" || { cat "$T/$name.pprof-err"; fail "$name: pprof"; }
  "${CHK[@]}" top "$T/$name.top" "$T/$name.pprof-top" || {
    cat "$T/$name.top" "$T/$name.pprof-top"; fail "$name: top differs from go tool pprof"; }
  [ "$only" != top-only ] || return 0
  # shellcheck disable=SC2086
  "$P" folded $ours "$file" >"$T/$name.folded" || fail "$name: pushprof folded failed"
  # folded shows samples/count unless --value says otherwise
  local index=-sample_index=samples
  case $theirs in *-sample_index=*) index= ;; esac
  # shellcheck disable=SC2086
  go tool pprof -traces $index $theirs "$file" >"$T/$name.traces" 2>/dev/null ||
    fail "$name: pprof -traces"
  "${CHK[@]}" folded "$T/$name.folded" "$T/$name.traces" || fail "$name: folded differs from pprof"
}

folded_total() { awk '{n += $NF} END {print n + 0}' "$1"; }

# expect_bad WHAT OUTFILE CMD...: exit 2, one stderr line containing WHAT,
# and OUTFILE (and any temp file beside it) not created.
expect_bad() {
  local what=$1 out=$2 rc=0
  shift 2
  "$@" >"$T/bad.out" 2>"$T/bad.err" || rc=$?
  [ "$rc" -eq 2 ] || { cat "$T/bad.err"; fail "exit $rc, want 2: $*"; }
  [ "$(wc -l <"$T/bad.err")" -eq 1 ] || { cat "$T/bad.err"; fail "want one line on stderr: $*"; }
  grep -qF -- "$what" "$T/bad.err" || { cat "$T/bad.err"; fail "stderr lacks \"$what\": $*"; }
  if [ -n "$out" ] && ls "$out"* >/dev/null 2>&1; then fail "$out was written: $*"; fi
  echo "refused as expected: $(cat "$T/bad.err")"
}

echo "== Go runtime profile"
mkdir -p "$T/go"
(cd "$T/go" && go build -o goburn "$S/goburn.go") || fail "cannot build goburn.go"
"$T/go/goburn" "$T/go/cpu.pprof" 1.5 "$T/go/heap.pprof" "$T/go/block.pprof" "$T/go/mutex.pprof" ||
  fail "goburn failed"
pprof_same go "$T/go/cpu.pprof"
grep -q "main.gamma" "$T/go.top" || fail "main.gamma missing from the Go profile's top"
pprof_same go_label "$T/go/cpu.pprof" "--label route=/b" "-tagfocus=route=/b"
[ "$(folded_total "$T/go_label.folded")" -gt 0 ] || fail "no sample under route=/b"
grep -q "main.beta" "$T/go_label.folded" || fail "route=/b lacks main.beta"
if grep -q "main.gamma" "$T/go_label.folded"; then fail "route=/b holds main.gamma"; fi
pprof_same go_focus "$T/go/cpu.pprof" "--focus ^main\.alpha$" "-focus=^main\.alpha$"
pprof_same go_value "$T/go/cpu.pprof" "--value samples" "-sample_index=samples"
# a heap profile: four sample types, picked with --value (pprof: -sample_index)
pprof_same go_heap "$T/go/heap.pprof" "--value alloc_space" "-sample_index=alloc_space" top-only
grep -q "main.hoard" "$T/go_heap.top" || fail "main.hoard missing from the heap profile's top"
pprof_same go_heap_objects "$T/go/heap.pprof" "--value alloc_objects" "-sample_index=alloc_objects"
# without --value, pprof's default (inuse_space), in bytes
pprof_same go_heap_default "$T/go/heap.pprof" "" "" top-only
grep -q '^Type: inuse_space (bytes)' "$T/go_heap_default.top" ||
  fail "a heap profile's top does not default to inuse_space"
# the same file uncompressed
gzip -dc "$T/go/cpu.pprof" >"$T/go/plain.prof"
"$P" folded "$T/go/plain.prof" | cmp -s - "$T/go.folded" || fail "plain and gzip files differ"

# Go's block and mutex profiles: one layout (contentions/count, delay/ns),
# read as pprof reads them; beside Go's CPU profile, the wall view counts the
# block profile's waits as off-CPU time and leaves the mutex profile out, as
# it does pushprof's lock profiles (it charges the unlocker, not a wait).
pprof_same go_block "$T/go/block.pprof" "--value delay" "-sample_index=delay" top-only
grep -q "main.waiter" "$T/go_block.top" || fail "main.waiter missing from the block profile's top"
pprof_same go_mutex "$T/go/mutex.pprof" "--value delay" "-sample_index=delay" top-only
grep -q "main.holder" "$T/go_mutex.top" || fail "main.holder missing from the mutex profile's top"
mkdir -p "$T/gowall"
cp "$T/go/cpu.pprof" "$T/go/block.pprof" "$T/go/mutex.pprof" "$T/gowall/"
"$P" top --cum --nodecount 1000 "$T/gowall" >"$T/gowall.top" 2>"$T/gowall.err" ||
  fail "top of Go's CPU, block and mutex profiles failed: $(cat "$T/gowall.err")"
grep -q '^Type: wall (nanoseconds) = on-CPU (cpu of 1 CPU profile file) + off-CPU (delay of 1 off-CPU profile file), of 3 profile files$' "$T/gowall.top" ||
  { cat "$T/gowall.top"; fail "top did not read Go's CPU and block profiles as wall time"; }
"$P" folded --value wall -o "$T/gowall.folded" "$T/gowall" || fail "folded --value wall of Go's profiles"
gcpu=$(pprof_totals "$T/go/cpu.pprof")
gblock=$(pprof_totals "$T/go/block.pprof")
[ "$(folded_total "$T/gowall.folded")" -eq $((${gcpu#* } + ${gblock#* })) ] ||
  fail "Go wall total $(folded_total "$T/gowall.folded") is not cpu ${gcpu#* } + block ${gblock#* } ns"
python3 - "$T/gowall.folded" <<'PY' || fail "Go wall view: the waits are not where goburn made them"
import sys
by = {}
for line in open(sys.argv[1]):
    stack, v = line.rsplit(None, 1)
    for f in set(stack.split(";")):
        by[f] = by.get(f, 0) + int(v)
ms = lambda f: by.get(f, 0) / 1e6
# waiter received 3 x 100 ms, locker waited ~200 ms for holder's Unlock
assert 250 <= ms("main.waiter") <= 450, "main.waiter %.0f ms off-CPU" % ms("main.waiter")
assert 150 <= ms("main.locker") <= 350, "main.locker %.0f ms off-CPU" % ms("main.locker")
assert ms("main.holder") == 0, "the mutex profile was counted: main.holder %.0f ms" % ms("main.holder")
assert ms("main.gamma") > 0, "no on-CPU time for main.gamma"
print("Go wall view: waiter %.0f ms, locker %.0f ms off-CPU" % (ms("main.waiter"), ms("main.locker")))
PY

echo "== pushprof SDK profile (demo_work under LD_PRELOAD)"
mkdir -p "$T/prof"
LD_PRELOAD=$PRELOAD PUSHPROF_SERVICE=demo-job PUSHPROF_OUTPUT="$T/prof/demo-%p.pb.gz" \
  "$B/examples/demo_work" 0.6 >"$T/out" 2>"$T/err" || { cat "$T/err"; fail "demo_work failed"; }
demo=$(the_profile)
pprof_same sdk "$demo"

echo "== pushprof builder profile with labels and two mappings"
printf '%b' '30\troute=/x,trace_id=t1\tmain;serve;parse\n20\troute=/y\tmain;serve;lib:inflate\n' \
  '10\troute=/x,trace_id=t2\tmain;serve;lib:inflate;lib:crc\n40\t-\tmain;idle\n' |
  "$GEN" "$T/gen.pb.gz" >/dev/null 2>&1 || fail "gen_views_pprof"
pprof_same gen "$T/gen.pb.gz"
pprof_same gen_label "$T/gen.pb.gz" "--label route=/x" "-tagfocus=route=/x"
[ "$(folded_total "$T/gen_label.folded")" -eq 40 ] || fail "route=/x: want 40 samples"
pprof_same gen_ignore "$T/gen.pb.gz" "--ignore ^inflate$" "-ignore=^inflate$"
[ "$(folded_total "$T/gen_ignore.folded")" -eq 70 ] || fail "--ignore inflate: want 70 samples"
"$P" flame -o "$T/gen.svg" "$T/gen.pb.gz" || fail "flame"
"${CHK[@]}" svg "$T/gen.svg" 100 main=100 serve=60 inflate=30 idle=40 || fail "gen.svg"
grep -q '>libviews.so</text>' "$T/gen.svg" || fail "the legend lacks the library mapping"
"$P" flame -o "$T/gen.html" --label trace_id=t2 "$T/gen.pb.gz" || fail "flame -o html"
grep -q '<svg version' "$T/gen.html" && head -c 15 "$T/gen.html" | grep -q '<!DOCTYPE html>' ||
  fail "gen.html is not a page holding the SVG"

# a location without a symbol is named after its mapping, as pprof names it
pprof_same unsymbolized "$PUSHPROF_SOURCE_DIR/tests/fuzz/corpus/views/seed_full.pb" "" \
  "-symbolize=none"
grep -qF '[libc.so.6]' "$T/unsymbolized.top" || fail "no [libc.so.6] frame"
# The header says how much has no symbol: the share of samples whose leaf
# frame has no function name, as go tool pprof -raw reads the same file.
want=$(python3 "$PUSHPROF_SOURCE_DIR/tests/integration/pprof_check.py" \
  "$PUSHPROF_SOURCE_DIR/tests/fuzz/corpus/views/seed_full.pb" --value cpu/nanoseconds |
  python3 -c 'import json, sys; r = json.load(sys.stdin)
print("%.2f" % (100.0 * r["unnamed_self"] / r["total"]["cpu/nanoseconds"]))')
got=$(sed -n 's/^No symbol for [^,]*, \([0-9.]*\)% of .*/\1/p' "$T/unsymbolized.top")
[ -n "$got" ] && [ "$got" = "$want" ] ||
  fail "unnamed share: top says '${got:-nothing}', pprof's samples without a leaf name $want%"
if grep -q '^No symbol' "$T/gen.top"; then fail "gen.pb.gz has every frame named, yet top says otherwise"; fi

echo "== directories, the export layout, merging, time windows"
mkdir -p "$T/exp/node1/api" "$T/exp/node1/worker" "$T/exp/node2/api"
cp "$T/gen.pb.gz" "$T/exp/node1/api/20231114T221320Z-aa.pb.gz"
cp "$T/gen.pb.gz" "$T/exp/node2/api/20231114T221320Z-bb.pb.gz"
cp "$demo" "$T/exp/node1/worker/20231114T221320Z-cc.pb.gz"
touch "$T/exp/node1/api/.20231114T221321Z-dd.pb.gz.tmp" "$T/exp/node1/api/notes.txt"
"$P" folded --service api "$T/exp" >"$T/api.folded" || fail "--service api"
[ "$(folded_total "$T/api.folded")" -eq 200 ] || fail "--service api: want 2 x 100 samples"
pprof_same merged "$T/exp/node1/api/20231114T221320Z-aa.pb.gz" # sanity
go tool pprof -traces -sample_index=samples "$T/exp/node1/api/"*.pb.gz "$T/exp/node2/api/"*.pb.gz \
  >"$T/api.traces" 2>/dev/null || fail "pprof on two files"
"${CHK[@]}" folded "$T/api.folded" "$T/api.traces" || fail "merged folded differs from pprof"
"$P" top "$T/exp/node1/worker" | grep -q "1 of 1 profile files" || fail "a directory with one file"
"$P" folded --until 2023-11-15 "$T/exp/node1/api" >/dev/null || fail "--until after the profile"
"$P" folded --since 2023-11-14T22:13:25Z --until @1700000006 "$T/exp/node1/api" >/dev/null ||
  fail "a window inside the profile's 10 s"
expect_bad "none of the 1 profile file is in the --since/--until window" "" \
  "$P" folded --since 2023-11-15 "$T/exp/node1/api"
expect_bad 'of service "nope"' "" "$P" top --service nope "$T/exp"
# Go's CPU profile merges with the SDK's (the same sample types and period);
# a heap profile does not: refused, naming both files
"$P" folded "$T/go/cpu.pprof" "$demo" >/dev/null || fail "Go and SDK CPU profiles merge"
expect_bad "$T/go/heap.pprof: cannot merge with $T/go/cpu.pprof: sample types differ" \
  "$T/mix.svg" "$P" flame -o "$T/mix.svg" "$T/go/cpu.pprof" "$T/go/heap.pprof"
# a service's directory with CPU and heap batches (the file exporter's
# names): --value picks the profiles of one type, without it a hint says so
mkdir -p "$T/mixed/node1/api"
cp "$T/go/cpu.pprof" "$T/mixed/node1/api/20231114T221320Z-aa.pb.gz"
cp "$T/go/heap.pprof" "$T/mixed/node1/api/20231114T221320Z-heap-bb.pb.gz"
"$P" top --value inuse_space "$T/mixed" >"$T/mixed.top" || fail "--value inuse_space on a mixed directory"
grep -q '^Type: inuse_space (bytes), 1 of 2 profile files' "$T/mixed.top" || {
  cat "$T/mixed.top"; fail "--value inuse_space did not pick the heap profile alone"; }
"$P" folded --value samples "$T/mixed" | cmp -s - "$T/go.folded" ||
  fail "--value samples did not pick the CPU profile alone"
expect_bad "pick the profiles of one type with --value TYPE" "" "$P" top "$T/mixed"

echo "== bad input"
mkdir -p "$T/empty" "$T/outdir"
echo "not a profile" >"$T/notpprof.pb.gz"
head -c 200 "$T/gen.pb.gz" >"$T/truncated.pb.gz"
expect_bad "$T/notpprof.pb.gz" "$T/outdir/a.svg" "$P" flame -o "$T/outdir/a.svg" "$T/notpprof.pb.gz"
expect_bad "$T/truncated.pb.gz" "$T/outdir/b.svg" "$P" flame -o "$T/outdir/b.svg" "$T/truncated.pb.gz"
expect_bad "$T/empty: no .pb.gz" "$T/outdir/c.svg" "$P" flame -o "$T/outdir/c.svg" "$T/empty"
expect_bad "$T/missing.pb.gz" "" "$P" top "$T/missing.pb.gz"
expect_bad 'no sample has a label "tenant"' "$T/outdir/d.svg" \
  "$P" flame --label tenant=1 -o "$T/outdir/d.svg" "$T/gen.pb.gz"
expect_bad "route=/nowhere" "" "$P" folded --label route=/nowhere "$T/gen.pb.gz"
expect_bad "--focus" "" "$P" top --focus '(' "$T/gen.pb.gz"
expect_bad "no sample type \"alloc\"" "" "$P" top --value alloc "$T/gen.pb.gz"
expect_bad "-o FILE.svg" "" "$P" flame "$T/gen.pb.gz"
expect_bad "must end in .svg or .html" "$T/outdir/e.png" "$P" flame -o "$T/outdir/e.png" "$T/gen.pb.gz"
expect_bad "no samples left" "$T/outdir/f.svg" "$P" flame --focus zzz -o "$T/outdir/f.svg" "$T/gen.pb.gz"
expect_bad "BASE... -- NEW..." "" "$P" diff "$T/gen.pb.gz" "$T/gen.pb.gz"
[ -z "$(ls -A "$T/outdir")" ] || fail "bad input left files: $(ls -A "$T/outdir")"

echo "== hostile frame names"
long=$(printf 'x%.0s' $(seq 10240))
printf '%b' "5\t-\tmain;<script>alert(1)</script>;a&b\\\\x22c'd\n" \
  "7\t-\tmain;]]></script><g>;\\\\xff\\\\xfe\\\\xc3\\\\x28 bad utf8;ctl\\\\x01\\\\x1b[31m\n" \
  "3\t-\tmain;semi\\\\x3bcolon;$long\n" "2\t-\tmain;&amp;&#0;&lt\n" |
  "$GEN" "$T/hostile.pb" >/dev/null 2>&1 || fail "gen hostile"
"$P" flame -o "$T/hostile.svg" "$T/hostile.pb" || fail "flame on hostile names"
"${CHK[@]}" svg "$T/hostile.svg" 17 main=17 || fail "hostile.svg"
grep -qF '&lt;script&gt;alert(1)&lt;/script&gt;' "$T/hostile.svg" || fail "<script> not escaped"
if grep -q '<script>alert' "$T/hostile.svg"; then fail "a raw <script> from a name"; fi
"$P" folded "$T/hostile.pb" >"$T/hostile.folded" || fail "folded on hostile names"
[ "$(wc -l <"$T/hostile.folded")" -eq 4 ] || fail "hostile folded: want 4 lines"
grep -q 'semi:colon' "$T/hostile.folded" || fail "';' in a name not replaced"
python3 -c "open('$T/hostile.folded', encoding='utf-8', errors='strict').read()" ||
  fail "folded output is not valid UTF-8"
"$P" top "$T/hostile.pb" >/dev/null || fail "top on hostile names"

echo "== diff with known splits"
printf '%b' '50\t-\tmain;a;b\n50\t-\tmain;a;c\n' | "$GEN" "$T/base.pb" >/dev/null 2>&1
printf '%b' '144\t-\tmain;a;b\n36\t-\tmain;a;c\n20\t-\tmain;d\n' | "$GEN" "$T/new.pb.gz" >/dev/null 2>&1
"$P" diff --folded "$T/base.pb" -- "$T/new.pb.gz" >"$T/diff.folded" || fail "diff --folded"
printf 'main;a;b 50 144\nmain;a;c 50 36\nmain;d 0 20\n' | diff - "$T/diff.folded" ||
  fail "diff --folded lines"
"$P" diff "$T/base.pb" -- "$T/new.pb.gz" -o "$T/diff.svg" || fail "diff -o"
"${CHK[@]}" svg "$T/diff.svg" 200 b=144 c=36 || fail "diff.svg"
for t in 'b (144 samples, 72.00%; +22.0 pt)' 'c (36 samples, 18.00%; -32.0 pt)' \
  'a (180 samples, 90.00%; -10.0 pt)' 'd (20 samples, 10.00%; +10.0 pt)'; do
  grep -qF "<title>$t</title>" "$T/diff.svg" || fail "diff.svg lacks the title $t"
done
# the same split given as directories, options after the NEW files
mkdir -p "$T/before" "$T/after"
cp "$T/base.pb" "$T/before/x.pb"
cp "$T/new.pb.gz" "$T/after/"
"$P" diff "$T/before" -- "$T/after" --folded | diff - "$T/diff.folded" || fail "diff of directories"
echo pass
