#!/usr/bin/env bash
# A profile merged by pp_merge_add and gzipped by pp_gzip is read by
# `go tool pprof -raw` (an independent parser) with the summed values and the
# per-sample labels intact.
set -euo pipefail
build=${PUSHPROF_BUILD_DIR:?run from ctest}
export HOME=${HOME:-/tmp} GOCACHE=${GOCACHE:-/tmp/pushprof-gocache}
tmp=$(mktemp -d /tmp/pp-it-raw-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

"$build/tests/test_pprof" --write-merged "$tmp/merged.pb.gz"
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
