#!/usr/bin/env bash
# Heap profiles of programs nobody here wrote, as Debian ships them (built
# without frame pointers): sqlite3 building a large table and python3
# running an allocation-heavy script (PYTHONMALLOC=malloc, so objects come
# from malloc), each run once under heaptrack, which records every
# allocation (the exact reference), with pushprof preloaded behind it: both
# see the same process's allocations. The allocating functions must agree:
# heaptrack's top ones within 5 points of their share of allocations, or 4.5
# binomial sigma over pushprof's effective number of samples if that is
# wider, keyed by the allocator's caller and its caller
# (heaptrack_compare.py). PUSHPROF_HEAP_RATE=16384 keeps a few thousand
# effective samples per run (sqlite3: ~3,800, a 28% share's 4.5 sigma near
# 3.3 points); at 65536 there were ~950 and 4.5 sigma was 6.6 points.
. "$(dirname "$0")/../lib.sh"
PRELOAD=$PRELOAD_HEAP # the SDK and libpushprof_heap.so
[ -n "$SAN_RUNTIME" ] && { echo "skip: a sanitizer's malloc comes first (see it_heap_sites)"; exit 77; }
command -v heaptrack >/dev/null || fail "heaptrack not found (bash tests/deps.sh installs it)"
command -v sqlite3 >/dev/null || fail "sqlite3 not found (bash tests/deps.sh installs it)"
D=$(dirname "$0")
cmp() { python3 "$D/heaptrack_compare.py" "$@" || fail "pushprof and heaptrack disagree on $1"; }
mkdir -p "$T/prof"
# profile NAME CMD...: CMD under heaptrack ($T/ht-NAME.zst) with pushprof
# preloaded after heaptrack's interposers; every process the heaptrack script
# starts writes a profile, CMD's is the one that allocated the most.
profile() {
  local name=$1
  shift
  PUSHPROF_PROFILES=heap PUSHPROF_HEAP_RATE=16384 PUSHPROF_OUTPUT="$T/prof/$name-%p-%t.pb.gz" \
    LD_PRELOAD=$PRELOAD heaptrack -o "$T/ht-$name" "$@" >"$T/$name.out" 2>"$T/$name.err" ||
    fail "$name under heaptrack and pushprof: $(tail -3 "$T/$name.err")"
  [ -s "$T/ht-$name.zst" ] || fail "$name: no heaptrack file ($(tail -3 "$T/$name.err"))"
  python3 - "$T/prof/$name"-*-heap.pb.gz >"$T/$name.prof" <<'PY' || fail "$name: no heap profile"
import gzip, re, sys
alloc = {}
for f in sys.argv[1:]:
    m = re.search(rb"(\d+) bytes allocated in this window", gzip.open(f).read())
    alloc[f] = int(m.group(1)) if m else -1
print(max(alloc, key=alloc.get))
PY
}

profile sqlite sqlite3 "$T/a.db" <"$D/debian_sqlite.sql"
cmp "$(cat "$T/sqlite.prof")" "$T/ht-sqlite.zst" --frames 2 --top 6

PYTHONMALLOC=malloc profile python /usr/bin/python3 "$D/debian_alloc.py"
cmp "$(cat "$T/python.prof")" "$T/ht-python.zst" --frames 2 --top 6
echo pass
