#!/usr/bin/env bash
# A profile merged by pp_merge_add and gzipped by pp_gzip is read by
# `go tool pprof -raw` (an independent parser) with the summed values and the
# per-sample labels intact; and the edge profile of test_pp_builder_pack (pp_builder_pack.c's
# multi-byte ids and lengths, int64s below 0, numeric labels, mapping flags,
# comments) reads back with its values.
set -euo pipefail
build=${PUSHPROF_BUILD_DIR:?run from ctest}
export HOME=${HOME:-/tmp} GOCACHE=${GOCACHE:-/tmp/pushprof-gocache}
tmp=$(mktemp -d /tmp/pp-it-raw-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

"$build/tests/test_pp_merge" --write-merged "$tmp/merged.pb.gz"
go tool pprof -symbolize=none -raw "$tmp/merged.pb.gz" >"$tmp/raw.txt" 2>"$tmp/err.txt" || {
  echo "go tool pprof rejected the merged profile:" >&2
  cat "$tmp/err.txt" >&2
  exit 1
}
fail() { echo "FAIL: $*" >&2; cat "$tmp/raw.txt" >&2; exit 1; }

# Sample lines look like "   9   90: 1 2 3"; sum each value column.
read -r count cpu < <(awk '/^Samples:/ {s=1; next} /^Locations/ {s=0}
  s && $2 ~ /:$/ {c += $1; sub(":", "", $2); n += $2} END {print c+0, n+0}' "$tmp/raw.txt")
[ "$count" = 18 ] || fail "samples/count total $count, want 18 (4 + 2 from a, 5 + 7 from b)"
[ "$cpu" = 180 ] || fail "cpu/nanoseconds total $cpu, want 180"
grep -q '^ *9 *90: ' "$tmp/raw.txt" || fail "the leaf;work;main stack of a and b was not summed to 9/90"
grep -q 'route:\[/a\]' "$tmp/raw.txt" || fail "label route=/a lost"
grep -q 'bytes:\[123 bytes\]' "$tmp/raw.txt" || fail "numeric label bytes=123 lost"
grep -q '^PeriodType: cpu nanoseconds' "$tmp/raw.txt" || fail "period type lost"
grep -q ' other other.c:7 ' "$tmp/raw.txt" || fail "function other at other.c:7 lost"
echo "ok: go tool pprof reads the merged profile (18 samples, 180 ns, labels kept)"

"$build/tests/test_pp_builder_pack" --write-edge "$tmp/edge.pb"
go tool pprof -symbolize=none -raw "$tmp/edge.pb" >"$tmp/raw.txt" 2>"$tmp/err.txt" || {
  echo "go tool pprof rejected the edge profile:" >&2
  cat "$tmp/err.txt" >&2
  exit 1
}
grep -q '^Comment: pushprof edge$' "$tmp/raw.txt" || fail "edge: comment lost"
awk '/^Comment: x/ && length($2) == 20000 {ok=1} END {exit !ok}' "$tmp/raw.txt" ||
  fail "edge: the 20000-byte comment is not there whole"
grep -q '^PeriodType: cpu nanoseconds' "$tmp/raw.txt" || fail "edge: period type lost"
grep -q '^ *-9223372036854775808 *-1: [0-9]* [0-9]* [0-9]* [0-9]* *$' "$tmp/raw.txt" ||
  fail "edge: the sample of INT64_MIN, -1 over 4 locations is not there"
grep -q '^ *9223372036854775807 *128: ' "$tmp/raw.txt" || fail "edge: the INT64_MAX sample lost"
awk '/^ *9223372036854775807 *128: / && NF == 6002 {ok=1} END {exit !ok}' "$tmp/raw.txt" ||
  fail "edge: the 6000-frame sample does not have 6000 locations"
grep -q 'route:\[/edge\]' "$tmp/raw.txt" || fail "edge: label route=/edge lost"
grep -q 'bytes:\[-4096 bytes\]' "$tmp/raw.txt" || fail "edge: numeric label bytes=-4096 lost"
grep -q ': 0xffffffffffffffff M=2 f17000 edge.c:-17000 s=17000$' "$tmp/raw.txt" ||
  fail "edge: location of function 17000 (3-byte ids) lost"
grep -q ' f16384 edge.c:-16384 s=16384$' "$tmp/raw.txt" || fail "edge: function 16384 lost"
grep -q '^2: 0x0/0xffffffffffffffff/0x0 /lib/all.so  \[FN\]\[FL\]\[LN\]\[IN\]$' "$tmp/raw.txt" ||
  fail "edge: mapping 2 with every flag lost"
grep -q '^1: 0x400000/0xffffffffffff0000/0x8000000000000000 /bin/edge b1d \[FN\]$' "$tmp/raw.txt" ||
  fail "edge: mapping 1 lost"
echo "ok: go tool pprof reads the edge profile (3-byte ids, INT64_MIN/MAX, flags, long comment)"
