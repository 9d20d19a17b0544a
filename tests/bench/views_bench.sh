#!/usr/bin/env bash
# pushprof flame / top on a large merged profile (the target: a 10 MiB
# profile, hundreds of thousands of samples over 50,000 distinct stacks,
# rendered in under 1 s and 100 MiB). gen_views_pprof --random writes the
# profile (uncompressed, ~10.3 MiB with the defaults: 157,000 sample records
# holding ~390,000 samples, 50,000 stacks 8..40 deep, a trace_id label each);
# each run is a fresh process: wall time, CPU (user+sys from wait4, the
# figure that holds on a shared machine) and peak RSS (ru_maxrss).
#   tests/bench/views_bench.sh [--build DIR] [--runs N] [--stacks N]
#                              [--samples N] [--rows FILE]
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/bench/lib_bench.sh
build=build runs=5 stacks=50000 samples=157000 rows=""
bench_args views_bench.sh "build runs stacks samples rows" "$@"
P=$build/views/pushprof
GEN=$build/tests/gen_views_pprof
[ -x "$P" ] && [ -x "$GEN" ] || { echo "views_bench.sh: build pushprof_cli and gen_views_pprof in $build" >&2; exit 2; }
T=$(mktemp -d /tmp/pushprof-views-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
total=$("$GEN" --random "$T/merged.pb" "$stacks" "$samples" 7 2>/dev/null)
bytes=$(stat -c %s "$T/merged.pb")
echo "profile: $bytes bytes ($(awk -v b="$bytes" 'BEGIN {printf "%.2f", b / 1048576}') MiB)," \
  "$samples sample records, $total samples, $stacks distinct stacks"

# measure OUT CMD...: appends "wall_s rss_mib cpu_s" of one run of CMD to OUT
measure() {
  local out=$1
  shift
  python3 - "$@" >>"$out" <<'EOF'
import os, subprocess, sys, time
t = time.monotonic()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, ru = os.wait4(p.pid, 0)
wall = time.monotonic() - t
if status != 0:
    sys.exit("run failed: %s" % " ".join(sys.argv[1:]))
print("%.4f %.2f %.4f" % (wall, ru.ru_maxrss / 1024, ru.ru_utime + ru.ru_stime))
EOF
}
: >"$T/flame" && : >"$T/top"
for _ in $(seq "$runs"); do
  measure "$T/flame" "$P" flame -o "$T/out.svg" "$T/merged.pb"
  measure "$T/top" "$P" top "$T/merged.pb"
done
frames=$(grep -c 'class="f"' "$T/out.svg")
echo "flame: $(stat -c %s "$T/out.svg") bytes of SVG, $frames frames drawn"
echo "flame runs (wall s, RSS MiB, CPU s):" $(tr '\n' ';' <"$T/flame")
echo "top runs (wall s, RSS MiB, CPU s):" $(tr '\n' ';' <"$T/top")
if [ -n "$rows" ]; then
  R=(python3 tests/bench/benchrows.py add "$rows")
  "${R[@]}" views_flame_s "pushprof flame, $(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1048576}') MiB profile (s)" "< 1" 2 $(cut -d' ' -f1 "$T/flame")
  "${R[@]}" views_flame_cpu_s "pushprof flame, same, CPU user+sys (s)" "" 2 $(cut -d' ' -f3 "$T/flame")
  "${R[@]}" views_flame_rss_mib "pushprof flame, peak RSS (MiB)" "< 100" 1 $(cut -d' ' -f2 "$T/flame")
  "${R[@]}" views_top_s "pushprof top, same profile (s)" "" 2 $(cut -d' ' -f1 "$T/top")
fi
