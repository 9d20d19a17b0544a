#!/usr/bin/env bash
# Heap profiles of programs nobody here wrote, as Debian ships them (built
# without frame pointers): sqlite3 building a large table and python3
# running an allocation-heavy script (PYTHONMALLOC=malloc, so objects come
# from malloc), each profiled by pushprof (preloaded) and by heaptrack,
# which records every allocation (the exact reference). The allocating
# functions must agree: heaptrack's top ones within 5 points of their
# share of allocations, keyed by the allocator's caller and its caller
# (heaptrack_compare.py). PUSHPROF_HEAP_RATE=65536 gives a few thousand
# samples per run; the default rate is the same estimator with fewer.
. "$(dirname "$0")/../lib.sh"
PRELOAD=$PRELOAD_HEAP # the SDK and libpushprof_heap.so
[ -n "$SAN_RUNTIME" ] && { echo "skip: a sanitizer's malloc comes first (see it_heap_sites)"; exit 77; }
command -v heaptrack >/dev/null || fail "heaptrack not found (bash tests/deps.sh installs it)"
command -v sqlite3 >/dev/null || fail "sqlite3 not found (bash tests/deps.sh installs it)"
D=$(dirname "$0")
cmp() { python3 "$D/heaptrack_compare.py" "$@" || fail "pushprof and heaptrack disagree on $1"; }
mkdir -p "$T/prof"
profile() { # profile NAME CMD...: a pushprof heap profile of CMD in $T/prof/NAME-heap.pb.gz
  local name=$1
  shift
  PUSHPROF_PROFILES=heap PUSHPROF_HEAP_RATE=65536 PUSHPROF_OUTPUT="$T/prof/$name-%t.pb.gz" \
    LD_PRELOAD=$PRELOAD "$@" >"$T/$name.out" 2>"$T/$name.err" || fail "$name under pushprof: $(cat "$T/$name.err")"
  [ -s "$T/prof/$name-heap.pb.gz" ] || fail "$name: no heap profile ($(cat "$T/$name.err"))"
}

heaptrack -o "$T/ht-sqlite" sqlite3 "$T/a.db" <"$D/debian_sqlite.sql" >/dev/null 2>"$T/ht.err" ||
  fail "heaptrack sqlite3: $(tail -3 "$T/ht.err")"
rm -f "$T/a.db"
profile sqlite sqlite3 "$T/b.db" <"$D/debian_sqlite.sql"
cmp "$T/prof/sqlite-heap.pb.gz" "$T/ht-sqlite.zst" --frames 2 --top 6

PYTHONMALLOC=malloc heaptrack -o "$T/ht-python" /usr/bin/python3 "$D/debian_alloc.py" >/dev/null \
  2>"$T/ht.err" || fail "heaptrack python3: $(tail -3 "$T/ht.err")"
PYTHONMALLOC=malloc profile python /usr/bin/python3 "$D/debian_alloc.py"
cmp "$T/prof/python-heap.pb.gz" "$T/ht-python.zst" --frames 2 --top 6
echo pass
