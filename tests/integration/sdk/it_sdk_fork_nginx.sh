#!/usr/bin/env bash
# Debian's nginx (nginx-light) under LD_PRELOAD, started as root with two
# workers that switch to nobody, loaded with ab (keepalive), stopped with
# SIGQUIT as its init script does:
#   it_sdk_fork_nginx.sh files|sidecar
# files:   PUSHPROF_OUTPUT=<1777 dir>/ng-%p.pb.gz: each worker writes its own
#          file at its exit, named by its pid;
# sidecar: PUSHPROF_SOCKET, the socket's group opened to the workers'
#          (nogroup) and their uid allowed (--allow-uid): each worker's
#          push is accepted under its pid, and the service's merged
#          profile holds the processes' CPU together.
# files, then: a directory the workers may not write in gets each worker
#          one line on its stderr (nginx's error log) naming the path and
#          the reason, and the master's file is still written.
# Either way the profiles name nginx's request path (ngx_http_*) and hold
# the CPU x 250 Hz (read from /proc/PID/stat before the stop) within 10%,
# or 4.5 Poisson sigma: 200,000 requests give each worker ~1.5 s of CPU,
# ~375 samples, 4.5 sigma 23%.
. "$(dirname "$0")/../lib.sh"
mode=$1
[ -z "$SAN_RUNTIME" ] || { echo "skip: nginx is not built with the sanitizer; the normal build runs it"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root, as nginx's master runs to switch its workers to nobody"; exit 77; }
command -v nginx >/dev/null || fail "nginx not found (bash tests/deps.sh installs nginx-light)"
command -v ab >/dev/null || fail "ab not found (bash tests/deps.sh installs apache2-utils)"
id nobody >/dev/null 2>&1 || fail "no user nobody"
chmod 755 "$W"
mkdir -p "$W/www" "$W/tmp" "$W/prof" "$W/logs"
chmod 1777 "$W/prof"
head -c 8192 /dev/urandom | base64 >"$W/www/index.html"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$W/nginx.conf" <<EOF
worker_processes 2;
user nobody nogroup;
pid $W/nginx.pid;
error_log $W/logs/error.log info;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $W/tmp/body;
  proxy_temp_path $W/tmp/proxy;
  fastcgi_temp_path $W/tmp/fastcgi;
  uwsgi_temp_path $W/tmp/uwsgi;
  scgi_temp_path $W/tmp/scgi;
  server {
    listen 127.0.0.1:$port;
    root $W/www;
  }
}
EOF
export PUSHPROF_HZ=250
env_mode=(PUSHPROF_OUTPUT="$W/prof/ng-%p.pb.gz")
if [ "$mode" = sidecar ]; then
  start_sidecar nginx --allow-uid "0,$(id -u nobody)"
  chgrp nogroup "$SOCK"
  chmod 755 "$(dirname "$SOCK")"
  env_mode=(PUSHPROF_SOCKET="$SOCK" PUSHPROF_SERVICE=nginx)
fi
# start_nginx ENV...: nginx under LD_PRELOAD with ENV; sets master, workers.
start_nginx() {
  env "$@" LD_PRELOAD="$PRELOAD" nginx -p "$W" -c "$W/nginx.conf" -g 'daemon off;' \
    >"$W/nginx.out" 2>&1 &
  master=$!
  for _ in $(seq 100); do
    curl -sf -o /dev/null "http://127.0.0.1:$port/index.html" && break
    kill -0 "$master" 2>/dev/null || fail "nginx exited at start: $(cat "$W/nginx.out" "$W/logs/error.log")"
    sleep 0.1
  done
  # One worker may answer before the master has forked the other.
  for _ in $(seq 100); do
    workers=$(pgrep -P "$master" | sort -n | paste -sd' ')
    [ "$(wc -w <<<"$workers")" -ge 2 ] && break
    sleep 0.05
  done
  [ "$(wc -w <<<"$workers")" -eq 2 ] || fail "want 2 workers of $master, got '$workers'"
}
start_nginx "${env_mode[@]}"
ab -q -k -n 200000 -c 8 "http://127.0.0.1:$port/index.html" >"$W/ab.out" 2>&1 ||
  fail "ab: $(tail -5 "$W/ab.out")"
grep -q '^Failed requests: *0' "$W/ab.out" || fail "ab saw failed requests: $(grep -i failed "$W/ab.out")"
tck=$(getconf CLK_TCK)
declare -A cpu
for p in $master $workers; do
  # utime and stime: fields 14 and 15, after the parenthesised command.
  cpu[$p]=$(sed 's/.*) //' "/proc/$p/stat" | awk -v t="$tck" '{ printf "%.3f", ($12 + $13) / t }')
done
echo "master $master ${cpu[$master]} s, workers $workers $(for p in $workers; do echo -n "${cpu[$p]} "; done)s CPU; $(grep 'Requests per second' "$W/ab.out")"
kill -QUIT "$master"
wait "$master" || fail "nginx exited with $? after SIGQUIT: $(tail -5 "$W/logs/error.log")"
grep -q 'pushprof' "$W/logs/error.log" "$W/nginx.out" &&
  fail "pushprof complained: $(grep -h pushprof "$W/logs/error.log" "$W/nginx.out")"
# check WHAT CPU FILE...: the samples in FILEs against CPU x 250 Hz, and
# nginx's request path among their functions.
check() {
  python3 - "$@" <<'PY' || fail "$1's profile"
import re, sys
from pprof_check import parse_raw, run_pprof, stat_bound, loc_functions
what, cpu, files = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
n, fns = 0, set()
for f in files:
    prof = parse_raw(run_pprof(f))
    vi = prof["sample_types"].index("samples/count")
    for s in prof["samples"]:
        n += s["values"][vi]
        for lid in s["locs"]:
            fns.update(loc_functions(prof["locations"].get(lid)))
ngx = sorted(f for f in fns if re.match(r"ngx_http_", f))
print("%s: %d samples, nginx functions %s" % (what, n, ", ".join(ngx[:4])))
ok, line = stat_bound(n, cpu * 250, 0.10, what="%s's samples for %.3f CPU s" % (what, cpu))
print(("ok   " if ok else "FAIL ") + line)
sys.exit(0 if ok and ngx else 1)
PY
}
if [ "$mode" = files ]; then
  for p in $workers; do
    f=$W/prof/ng-$p.pb.gz
    [ -s "$f" ] || fail "no file for worker $p: $(ls "$W/prof")"
    [ "$(stat -c %U "$f")" = nobody ] || fail "worker $p's file is not its own: $(stat -c %U "$f")"
    check "worker $p" "${cpu[$p]}" "$f"
  done
  mkdir -m 755 "$W/closed"
  : >"$W/logs/error.log"
  start_nginx PUSHPROF_OUTPUT="$W/closed/ng-%p.pb.gz"
  ab -q -k -n 20000 -c 4 "http://127.0.0.1:$port/index.html" >"$W/ab.out" 2>&1 || fail "ab: $(tail -3 "$W/ab.out")"
  kill -QUIT "$master"
  wait "$master" || fail "nginx exited with $? after SIGQUIT (closed directory)"
  for p in $workers; do
    n=$(grep -c "pushprof: cannot write the profile to $W/closed/ng-$p.pb.gz: Permission denied" \
      "$W/logs/error.log" "$W/nginx.out" | awk -F: '{ s += $NF } END { print s }')
    [ "$n" -eq 1 ] || fail "worker $p: want one line saying why its file is missing, got $n: $(cat "$W/logs/error.log")"
  done
  [ -s "$W/closed/ng-$master.pb.gz" ] || fail "the master's file is missing: $(ls "$W/closed")"
  echo "ok a closed directory: one line per worker, the master's file written"
else
  stop_sidecar
  for p in $workers; do
    grep -q "msg=\"push accepted\".* pid=$p " "$SC_LOG" || fail "no push from worker $p: $(grep push "$SC_LOG")"
  done
  mapfile -t profs < <(find "$OUT" -name '*.pb.gz')
  [ "${#profs[@]}" -gt 0 ] || fail "nothing exported to $OUT"
  check "nginx" "$(calc "$(for p in $master $workers; do echo -n "${cpu[$p]}+"; done)0")" "${profs[@]}"
fi
echo "pass ($mode)"
