#!/usr/bin/env bash
# Sidecar benchmarks: starts the real pushprof-sidecar on a temporary
# socket, spool and file:// export directory, drives it with bench_sidecar
# (real pprof payloads over the real Unix socket), samples the sidecar's RSS
# from /proc/PID/status and its CPU time from /proc/PID/stat, repeats every
# scenario and prints one table of medians. A benchmark, not a test: it prints
# figures and never fails on time.
#
#   bash tests/bench/sidecar_bench.sh [--build DIR] [--runs N] [--idle-seconds S]
#        [--load-seconds S] [--batch-window S] [--latency-pushes N]
#        [--latency-rate PUSHES/S] [--nice N] [--no-pin] [--keep]
#        [--rows FILE] [--no-build]
#
# By default the sidecar is pinned to CPU 0 (the issue's "on one core") and the
# clients and this script to the other CPUs. --nice -10 (root) runs the sidecar
# and the clients ahead of other work on a shared machine. The spool lives
# under $TMPDIR (default /tmp): fsync cost depends on that file system.
# --rows FILE appends the figures as rows for tests/bench/run (benchrows.py);
# --no-build uses the binaries in --build as they are.
set -euo pipefail
cd "$(dirname "$0")/../.."

build=build runs=5 idle_s=10 load_s=10 window=5 lat_n=200 lat_rate=20 pin=1 keep=0 nice=0
rows="" build_it=1
usage() { sed -n '9,13p' "$0" | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case $1 in
  --build) build=$2; shift ;;
  --runs) runs=$2; shift ;;
  --idle-seconds) idle_s=$2; shift ;;
  --load-seconds) load_s=$2; shift ;;
  --batch-window) window=$2; shift ;;
  --latency-pushes) lat_n=$2; shift ;;
  --latency-rate) lat_rate=$2; shift ;;
  --nice) nice=$2; shift ;;
  --no-pin) pin=0 ;;
  --keep) keep=1 ;;
  --rows) rows=$2; shift ;;
  --no-build) build_it=0 ;;
  -h | --help) usage; exit 0 ;;
  *) echo "sidecar_bench: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

log() { echo "sidecar_bench: $*" >&2; }

if ((build_it)) && [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" >/dev/null
fi
if grep -Eq '^PUSHPROF_SANITIZE:STRING=.+' "$build/CMakeCache.txt"; then
  log "warning: $build is a sanitizer build; figures will be far off (use a plain build dir: --build DIR)"
fi
if ((build_it)); then
  cmake --build "$build" -j"$(nproc)" --target pushprof-sidecar bench_sidecar >/dev/null
fi
sidecar_bin=$(realpath "$build")/sidecar/pushprof-sidecar
bench_bin=$(realpath "$build")/tests/bench_sidecar
for b in "$sidecar_bin" "$bench_bin"; do
  [ -x "$b" ] || { log "missing $b (did the build fail?)"; exit 2; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/pushprof-sidebench.XXXXXX")
sidecar_pid=
cleanup() {
  if [ -n "$sidecar_pid" ]; then
    kill -KILL "$sidecar_pid" 2>/dev/null || true
    wait "$sidecar_pid" 2>/dev/null || true
  fi
  if ((keep)); then log "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

ncpu=$(nproc)
sidecar_cpus= client_cpus=
if ((pin && ncpu >= 2)); then
  sidecar_cpus=0 client_cpus=1-$((ncpu - 1))
  # This script, the RSS sampler and the clients stay off the sidecar's CPU.
  taskset -pc "$client_cpus" $$ >/dev/null
fi
hz=$(getconf CLK_TCK)
fs=$(findmnt -n -o FSTYPE -T "$work" 2>/dev/null || stat -f -c %T "$work")

# $1 pid, $2 field (VmRSS, VmHWM): the value in KiB, 0 if gone.
status_kib() {
  local k v rest
  while read -r k v rest; do
    if [ "$k" = "$2:" ]; then echo "$v"; return; fi
  done <"/proc/$1/status" 2>/dev/null || true
  echo 0
}
# $1 pid: utime + stime of all its threads, in clock ticks.
cpu_ticks() {
  local stat
  stat=$(<"/proc/$1/stat")
  stat=${stat##*) } # comm may hold spaces; fields restart after ") "
  read -r -a f <<<"$stat"
  # After comm: f[0] is field 3 (state); utime is field 14, stime 15.
  echo $((f[11] + f[12]))
}
# Files still waiting in the spool (dot files are temporaries, quarantine aside).
spool_files() {
  { find "$1" -type f -name '*.push' ! -name '.*' ! -path '*/quarantine*' 2>/dev/null || true; } | wc -l
}
# $1 spool dir, $2 seconds: waits until the spool is empty, or gives up.
drain() {
  local end=$((SECONDS + $2)) n
  while n=$(spool_files "$1") && ((n > 0)); do
    if ((SECONDS >= end)); then
      log "spool still holds $n files after ${2}s; going on"
      return
    fi
    sleep 0.2
  done
}
# Reads key=value figures from a bench_sidecar line: $1 line, $2 key.
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
range() { printf '%s\n' "$@" | sort -g | awk 'NR==1{lo=$1} {hi=$1} END {print lo ".." hi}'; }

start_sidecar() {
  local dir=$1 port
  mkdir -p "$dir"
  port=$((20000 + RANDOM % 20000))
  local cmd=("$sidecar_bin" --socket "$dir/pushprof.sock" --spool "$dir/spool"
    --export "file://$dir/out" --batch-window "$window" --metrics-addr "127.0.0.1:$port")
  if [ -n "$sidecar_cpus" ]; then cmd=(taskset -c "$sidecar_cpus" "${cmd[@]}"); fi
  if ((nice)); then cmd=(nice -n "$nice" "${cmd[@]}"); fi
  "${cmd[@]}" 2>"$dir/sidecar.log" &
  sidecar_pid=$!
  echo "$port" >"$dir/metrics_port"
  for _ in $(seq 200); do
    [ -S "$dir/pushprof.sock" ] && return 0
    kill -0 "$sidecar_pid" 2>/dev/null || break
    sleep 0.05
  done
  log "the sidecar did not open its socket; its log:"
  cat "$dir/sidecar.log" >&2
  exit 2
}
stop_sidecar() {
  kill -TERM "$sidecar_pid" 2>/dev/null || true
  for _ in $(seq 150); do
    kill -0 "$sidecar_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$sidecar_pid" 2>/dev/null || true
  wait "$sidecar_pid" 2>/dev/null || true
  sidecar_pid=
}
run_bench() {
  local out
  local cmd=("$bench_bin" "$@")
  if ((nice)); then cmd=(nice -n "$nice" "${cmd[@]}"); fi
  if ! out=$("${cmd[@]}" 2>"$work/bench.err"); then
    log "bench_sidecar $* failed:"
    cat "$work/bench.err" >&2
  fi
  [ -s "$work/bench.err" ] && sed 's/^/  /' "$work/bench.err" >&2
  echo "$out"
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
declare -a r_cpu_mib r_rate r_tp50 r_tp99 r_lp50 r_lp99 r_lmax r_idle_rss r_load_rss r_lat_rss r_idle_m r_load_cores r_cpu_push r_errors r_exported
log "$runs runs; sidecar $([ -n "$sidecar_cpus" ] && echo "on CPU $sidecar_cpus, clients on CPU $client_cpus" || echo unpinned); spool on $fs ($work)"
for r in $(seq "$runs"); do
  dir=$work/run$r
  start_sidecar "$dir"
  sleep 1 # let it settle after start-up
  r_idle_rss+=("$(status_kib "$sidecar_pid" VmRSS)")
  c0=$(cpu_ticks "$sidecar_pid")
  sleep "$idle_s"
  c1=$(cpu_ticks "$sidecar_pid")
  r_idle_m+=("$(awk -v t=$((c1 - c0)) -v hz="$hz" -v s="$idle_s" 'BEGIN {printf "%.1f", t / hz / s * 1000}')")

  # Throughput: 8 clients, 100 KiB pushes, closed loop; RSS sampled every 0.1 s.
  : >"$dir/rss"
  (while [ ! -e "$dir/stop_rss" ]; do status_kib "$sidecar_pid" VmRSS >>"$dir/rss"; sleep 0.1; done) &
  sampler=$!
  c0=$(cpu_ticks "$sidecar_pid")
  t0=$(date +%s.%N)
  line=$(run_bench --socket "$dir/pushprof.sock" --clients 8 --size 102400 --duration "$load_s")
  c1=$(cpu_ticks "$sidecar_pid")
  t1=$(date +%s.%N)
  touch "$dir/stop_rss"
  wait "$sampler"
  peak=$(sort -n "$dir/rss" | tail -1)
  hwm=$(status_kib "$sidecar_pid" VmHWM)
  ((hwm > peak)) && peak=$hwm
  r_load_rss+=("$peak")
  acked=$(field "$line" acked)
  r_rate+=("$(field "$line" rate)")
  r_tp50+=("$(field "$line" p50_ms)")
  r_tp99+=("$(field "$line" p99_ms)")
  r_errors+=("$(field "$line" errors)")
  r_load_cores+=("$(awk -v t=$((c1 - c0)) -v hz="$hz" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", t / hz / (b - a)}')")
  r_cpu_push+=("$(awk -v t=$((c1 - c0)) -v hz="$hz" -v n="${acked:-0}" 'BEGIN {if (n > 0) printf "%.0f", t / hz / n * 1e6; else print "nan"}')")
  log "run $r throughput: $line"
  drain "$dir/spool" $((window + 60))

  # Ack latency: one client, 1 MiB pushes, paced so each push is served alone.
  c0=$(cpu_ticks "$sidecar_pid")
  line=$(run_bench --socket "$dir/pushprof.sock" --clients 1 --size 1048576 --count "$lat_n" --rate "$lat_rate")
  drain "$dir/spool" $((window + 60))
  c1=$(cpu_ticks "$sidecar_pid")
  acked=$(field "$line" acked)
  r_cpu_mib+=("$(awk -v t=$((c1 - c0)) -v hz="$hz" -v n="${acked:-0}" 'BEGIN {if (n > 0) printf "%.1f", t / hz / n * 1e3; else print "nan"}')")
  r_lp50+=("$(field "$line" p50_ms)")
  r_lp99+=("$(field "$line" p99_ms)")
  r_lmax+=("$(field "$line" max_ms)")
  r_lat_rss+=("$(status_kib "$sidecar_pid" VmHWM)")
  log "run $r latency:    $line"
  port=$(<"$dir/metrics_port")
  if command -v curl >/dev/null && curl -fsS -m 2 "http://127.0.0.1:$port/metrics" >"$dir/metrics" 2>/dev/null; then
    grep -Ei '^pushprof_[a-z_]*(push|export|drop|reject)[a-z_]*(\{[^}]*\})? ' "$dir/metrics" | sed 's/^/  metrics: /' >&2 || true
  fi
  stop_sidecar
  r_exported+=("$({ find "$dir/out" -type f -name '*.pb.gz' 2>/dev/null || true; } | wc -l)")
  if grep -Eiq 'level=(error|warn)' "$dir/sidecar.log"; then
    log "run $r: the sidecar logged warnings/errors:"
    { grep -Ei 'level=(error|warn)' "$dir/sidecar.log" | sed -E 's/^ts=[^ ]+ //; s/ peer_pid=[0-9]+//' |
      sort | uniq -c | sort -rn | head -5 >&2; } || true
  fi
done

mib() { awk -v k="$1" 'BEGIN {printf "%.1f\n", k / 1024}'; }
kib_list() { for k in "$@"; do mib "$k"; done; }
# $1 median, $2 op (ge/le), $3 target: "yes" or "NO (by how much)".
verdict() {
  awk -v m="$1" -v op="$2" -v t="$3" 'BEGIN {
    if (m == "" || m == "nan") { print "n/a"; exit }
    ok = (op == "ge") ? (m >= t) : (m <= t)
    if (ok) print "yes"; else printf "NO (%+.0f%%)\n", (m - t) / t * 100 }'
}
row() { printf '| %-44s | %-6s | %-8s | %-16s | %-10s |\n' "$@"; }

rate=$(median "${r_rate[@]}") tp50=$(median "${r_tp50[@]}") tp99=$(median "${r_tp99[@]}")
lp50=$(median "${r_lp50[@]}") lp99=$(median "${r_lp99[@]}") lmax=$(median "${r_lmax[@]}")
idle_rss=$(mib "$(median "${r_idle_rss[@]}")") load_rss=$(mib "$(median "${r_load_rss[@]}")")
lat_rss=$(mib "$(median "${r_lat_rss[@]}")") idle_m=$(median "${r_idle_m[@]}")
load_cores=$(median "${r_load_cores[@]}") cpu_push=$(median "${r_cpu_push[@]}")

echo
echo "pushprof-sidecar, $runs runs, medians (run range); $ncpu CPUs ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1))."
echo "Sidecar $([ -n "$sidecar_cpus" ] && echo "pinned to CPU $sidecar_cpus, clients on CPU $client_cpus" || echo "unpinned"); spool and export on $fs; --batch-window $window."
echo "Throughput: 8 clients, 100 KiB pprof, closed loop for ${load_s}s. Latency: 1 client, 1 MiB pprof, $lat_n pushes at $lat_rate/s."
echo "Objects exported per run: ${r_exported[*]}. Load average before/after: $load_start / $(cut -d' ' -f1-3 /proc/loadavg)$( ((nice)) && echo "; sidecar and clients at nice $nice")."
echo "CPU comes from /proc/PID/stat in ticks of 1/$hz s: over ${idle_s}s the idle figure's resolution is $(awk -v h="$hz" -v s="$idle_s" 'BEGIN {printf "%.1f", 1000 / h / s}') millicores."
echo
row "Figure" "Target" "Median" "Runs" "Met"
row "--------------------------------------------" "------" "--------" "----------------" "----------"
row "Ingest, 100 KiB pushes, 8 clients (pushes/s)" ">= 200" "$rate" "$(range "${r_rate[@]}")" "$(verdict "$rate" ge 200)"
row "Pushes refused under that load (per run)" "" "$(median "${r_errors[@]}")" "$(range "${r_errors[@]}")" ""
row "Ack latency p50, 100 KiB, 8 clients (ms)" "" "$tp50" "$(range "${r_tp50[@]}")" ""
row "Ack latency p99, 100 KiB, 8 clients (ms)" "" "$tp99" "$(range "${r_tp99[@]}")" ""
row "Ack latency p50, 1 MiB (ms)" "" "$lp50" "$(range "${r_lp50[@]}")" ""
row "Ack latency p99, 1 MiB (ms)" "<= 10" "$lp99" "$(range "${r_lp99[@]}")" "$(verdict "$lp99" le 10)"
row "Ack latency max, 1 MiB (ms)" "" "$lmax" "$(range "${r_lmax[@]}")" ""
row "RSS idle (MiB)" "<= 16" "$idle_rss" "$(range $(kib_list "${r_idle_rss[@]}"))" "$(verdict "$idle_rss" le 16)"
row "RSS peak under 8-client load (MiB)" "<= 64" "$load_rss" "$(range $(kib_list "${r_load_rss[@]}"))" "$(verdict "$load_rss" le 64)"
row "RSS peak after 1 MiB pushes too (MiB)" "" "$lat_rss" "$(range $(kib_list "${r_lat_rss[@]}"))" ""
row "CPU idle over ${idle_s}s (millicores)" "" "$idle_m" "$(range "${r_idle_m[@]}")" ""
row "CPU under 8-client load (cores)" "<= 1" "$load_cores" "$(range "${r_load_cores[@]}")" "$(verdict "$load_cores" le 1)"
row "CPU per 100 KiB push (us)" "" "$cpu_push" "$(range "${r_cpu_push[@]}")" ""
row "CPU per 1 MiB push, with its export (ms)" "" "$(median "${r_cpu_mib[@]}")" "$(range "${r_cpu_mib[@]}")" ""

# $1 key, $2 label, $3 target, $4 digits, then the per-run values.
emit() { if [ -n "$rows" ]; then python3 tests/bench/benchrows.py add "$rows" "$@"; fi; }
emit sidecar_ingest_rate "Sidecar ingest, 100 KiB pushes from 8 clients (pushes/s)" ">= 200" 0 "${r_rate[@]}"
emit sidecar_refused "Pushes refused under that load (per ${load_s} s run)" "" 0 "${r_errors[@]}"
emit sidecar_ack_p50_100k "Ack latency p50, 100 KiB pushes, 8 clients (ms)" "" 1 "${r_tp50[@]}"
emit sidecar_ack_p99_100k "Ack latency p99, 100 KiB pushes, 8 clients (ms)" "" 1 "${r_tp99[@]}"
emit sidecar_ack_p50_1m "Ack latency p50, 1 MiB pushes, 1 client at $lat_rate/s (ms)" "" 1 "${r_lp50[@]}"
emit sidecar_ack_p99_1m "Ack latency p99, 1 MiB pushes, 1 client at $lat_rate/s (ms)" "<= 10" 1 "${r_lp99[@]}"
emit sidecar_rss_idle_mib "Sidecar RSS idle (MiB)" "<= 16" 1 $(kib_list "${r_idle_rss[@]}")
emit sidecar_rss_load_mib "Sidecar RSS peak under the 8-client load (MiB)" "<= 64" 1 $(kib_list "${r_load_rss[@]}")
emit sidecar_rss_after_1m_mib "Sidecar RSS peak after the 1 MiB pushes too (MiB)" "" 1 $(kib_list "${r_lat_rss[@]}")
emit sidecar_cpu_idle_mcores "Sidecar CPU idle, over ${idle_s} s (millicores)" "" 1 "${r_idle_m[@]}"
emit sidecar_cpu_load_cores "Sidecar CPU under the 8-client load (cores)" "<= 1" 2 "${r_load_cores[@]}"
emit sidecar_cpu_per_push_us "Sidecar CPU per 100 KiB push (us)" "" 0 "${r_cpu_push[@]}"
emit sidecar_cpu_per_1m_ms "Sidecar CPU per 1 MiB push, with its export (ms)" "" 1 "${r_cpu_mib[@]}"
