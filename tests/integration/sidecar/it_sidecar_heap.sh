#!/usr/bin/env bash
# Heap profiles (Go's layout) through the real sidecar into a file:// export,
# read back with go tool pprof -raw (an independent parser): a batch shows
# each process's live heap once, its latest push's inuse_* summed over the
# processes, while alloc_* adds up over every push; a retried copy of a push
# counts in neither; the same holds when the sidecar is killed with the
# batch open and rebuilds it from its spool. The service's CPU batch lands
# under a name of its own, and `pushprof top` shows inuse_space in bytes.
source "$(dirname "$0")/../lib.sh"
command -v go >/dev/null || fail "go not found (bash tests/deps.sh installs golang-go)"
MIB=1048576
BASE=$(date +%s)

# push SERVICE PID SEQ ALLOC INUSE: one heap push of process PID on node-a
# (its window ends at BASE + SEQ s), acked.
push() {
  "$GEN" frame "$W/f.frame" heap --service "$1" --pid "$2" --host node-a --seq "$3" \
    --base-s "$BASE" --alloc "$4" --inuse "$5" || fail "gen_pprof heap $*"
  local out
  out=$($RAW "$SOCK" send "$W/f.frame")
  case $out in code=0\ *) ;; *) fail "heap push $* not acked: $out" ;; esac
}

# pushes SERVICE: process 100 pushes six times, 1 MiB allocated in each
# window and k MiB live at its k-th push, the third one twice (an SDK retry
# whose ack was lost); process 200 twice, 3 then 2 MiB live. Each also holds
# 4096 bytes live in main;init;old (gen_pprof).
pushes() {
  local k
  for k in 1 2 3 4 5 6; do
    push "$1" 100 "$k" "$MIB" $((k * MIB))
    if [ "$k" -eq 3 ]; then push "$1" 100 3 "$MIB" $((3 * MIB)); fi
    if [ "$k" -eq 2 ]; then push "$1" 200 1 "$MIB" $((3 * MIB)); fi
    if [ "$k" -eq 5 ]; then push "$1" 200 2 "$MIB" $((2 * MIB)); fi
  done
}

# The eight distinct pushes allocated 8 MiB in 64 KiB objects; live: 6 MiB
# (process 100's last) + 2 MiB (process 200's last) + 4096 bytes each. The
# sums of every push's inuse would be 26 MiB + 8 x 4096.
WANT="alloc_objects=128 alloc_space=$((8 * MIB)) inuse_objects=$((96 + 32 + 2))"
WANT="$WANT inuse_space=$((8 * MIB + 8192))"

# heap_file SERVICE: the one heap profile exported for SERVICE.
heap_file() {
  local files
  mapfile -t files < <(find "$OUT/testnode/$1" -name '*-heap-*.pb.gz')
  [ "${#files[@]}" -eq 1 ] || fail "$1: ${#files[@]} heap files exported, want 1: ${files[*]}"
  echo "${files[0]}"
}

# check_heap FILE: its totals per sample type, by go tool pprof -raw.
check_heap() {
  "${CHECK[@]}" "$1" --value inuse_space/bytes >"$W/heap.json" || fail "pprof_check $1"
  local got
  got=$(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
t = r["total"]
print(" ".join("%s=%d" % (k.split("/")[0], t[k]) for k in r["sample_types"]))
assert r["period_type"] == "space bytes" and r["period"] == 524288, (r["period_type"], r["period"])' \
    "$W/heap.json") || fail "$1: not Go's heap layout: $(head -c 400 "$W/heap.json")"
  [ "$got" = "$WANT" ] || fail "$1: $got, want $WANT"
  echo "ok $1: $got"
}

echo "== one run: six pushes of one process, two of another, a retried copy"
start_sidecar a --batch-window 3600
pushes heap-a
"$GEN" frame "$W/cpu.frame" ok --service heap-a --seed 3 || fail "gen_pprof frame ok"
case $($RAW "$SOCK" send "$W/cpu.frame") in code=0\ *) ;; *) fail "CPU push not acked" ;; esac
[ "$(metric pushprof_pushes_deduplicated_total)" -eq 1 ] ||
  fail "deduplicated: $(metric pushprof_pushes_deduplicated_total), want 1"
stop_sidecar # exports the open batches
heap=$(heap_file heap-a)
check_heap "$heap"
# The service's CPU batch of the same window: its own name, no type in it.
mapfile -t cpu < <(find "$OUT/testnode/heap-a" -name '*.pb.gz' ! -name '*-heap-*')
[ "${#cpu[@]}" -eq 1 ] || fail "heap-a: ${#cpu[@]} CPU files, want 1: ${cpu[*]}"
[[ $(basename "${cpu[0]}") =~ ^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{16}\.pb\.gz$ ]] ||
  fail "CPU batch name changed: ${cpu[0]}"
[[ $(basename "$heap") =~ ^[0-9]{8}T[0-9]{6}Z-heap-[0-9a-f]{16}\.pb\.gz$ ]] ||
  fail "heap batch name: $heap"
"${CHECK[@]}" "${cpu[0]}" --quiet --value samples/count --min-samples 1 || fail "CPU batch"

echo "== killed with the batch open: the restart rebuilds it from the spool"
start_sidecar b --batch-window 3600
pushes heap-b
kill9_sidecar
[ -z "$(find "$OUT/testnode/heap-b" -name '*.pb.gz' 2>/dev/null)" ] || fail "heap-b exported before the kill"
start_sidecar c --batch-window 3600
stop_sidecar
check_heap "$(heap_file heap-b)"

echo "== pushprof top"
# Without --value: the profile's default type, inuse_space, in bytes.
"$CLI" top --nodecount 100 "$heap" >"$W/top" || fail "pushprof top $heap"
cat "$W/top"
grep -q '^Type: inuse_space (bytes), 1 of 1 profile files' "$W/top" || fail "top: not inuse_space"
awk '$NF == "grow" && $1 == "8MiB" { ok = 1 } END { exit !ok }' "$W/top" ||
  fail "top: grow does not hold 8MiB flat (6 + 2 MiB live)"
go tool pprof -top -nodecount=100000 -nodefraction=0 -edgefraction=0 -sample_index=inuse_space \
  "$heap" >"$W/pprof-top" 2>"$W/pprof-err" || fail "go tool pprof -top: $(cat "$W/pprof-err")"
python3 "$S/tests/integration/views/views_check.py" top "$W/top" "$W/pprof-top" ||
  fail "pushprof top differs from go tool pprof -top"
# The service's directory holds both types: --value picks the heap batch.
"$CLI" top --value inuse_space "$OUT/testnode/heap-a" >"$W/top-dir" || fail "top --value on the directory"
grep -q '^Type: inuse_space (bytes), 1 of 2 profile files' "$W/top-dir" ||
  fail "top --value inuse_space: $(head -1 "$W/top-dir")"
"$CLI" top --value alloc_space "$OUT/testnode/heap-a" | grep -q '^Showing nodes accounting for 8MiB' ||
  fail "alloc_space does not add up to 8MiB"
echo "ok"
