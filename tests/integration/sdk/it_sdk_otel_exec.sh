#!/usr/bin/env bash
# The process context across exec and fork, as an outside reader sees it
# (otel_reader.py, from the OTEP texts):
# - a preloaded shell that execs sleep: the new image publishes its own
#   context (service.name sleep, a new service.instance.id);
# - a forked child that pushes to the sidecar (python3's os.fork under
#   LD_PRELOAD) publishes its own, with an instance id of its own, while
#   the parent's stays.
. "$(dirname "$0")/../lib.sh"
R="$S/tests/integration/sdk/otel_reader.py"
start_sidecar otelexec
ctx() { # ctx PID KEY: the value of KEY in PID's process context, waiting up to 5 s
  local i v
  for i in $(seq 50); do
    v=$(python3 "$R" ctx "$1" | python3 -c "import json,sys; print(json.load(sys.stdin).get('attributes', {}).get('$2', ''))")
    [ -n "$v" ] && { echo "$v"; return 0; }
    sleep 0.1
  done
  echo ""
}
# sh waits for a file before it execs: both contexts are read at leisure.
ASAN_OPTIONS=$HOST_ASAN PUSHPROF_SOCKET=$SOCK LD_PRELOAD=$PRELOAD \
  sh -c 'while [ ! -e "$1" ]; do sleep 0.05; done; exec sleep 3' sh "$T/go" &
pid=$!
id1=$(ctx $pid service.instance.id)
svc1=$(ctx $pid service.name)
[ "$svc1" = sh ] || fail "before exec the context names '$svc1', want sh"
touch "$T/go"
for _ in $(seq 40); do [ "$(tr -d '\0' </proc/$pid/cmdline)" = sleep3 ] && break; sleep 0.1; done
sleep 0.3
svc2=$(ctx $pid service.name)
id2=$(ctx $pid service.instance.id)
[ "$svc2" = sleep ] || fail "after exec the context names '$svc2', want sleep"
[ -n "$id2" ] && [ "$id2" != "$id1" ] || fail "after exec the instance id is '$id2' (before: $id1)"
kill $pid 2>/dev/null || true
wait $pid 2>/dev/null || true

cat >"$T/forker.py" <<'PY'
import os, sys, time
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(w, b"x")
    time.sleep(3)
    os._exit(0)
print(pid, flush=True)
time.sleep(3)
os.waitpid(pid, 0)
PY
ASAN_OPTIONS=$HOST_ASAN PUSHPROF_SOCKET=$SOCK PUSHPROF_SERVICE=forker LD_PRELOAD=$PRELOAD \
  python3 "$T/forker.py" >"$T/forker.out" &
parent=$!
for _ in $(seq 50); do [ -s "$T/forker.out" ] && break; sleep 0.1; done
child=$(head -1 "$T/forker.out")
[ -n "$child" ] || fail "the forking program printed no child pid"
pid_p=$(ctx $parent service.instance.id)
pid_c=$(ctx "$child" service.instance.id)
[ -n "$pid_p" ] || fail "the parent has no context"
[ -n "$pid_c" ] || fail "the forked child that pushes published no context of its own"
[ "$pid_c" != "$pid_p" ] || fail "the child shows the parent's instance id"
[ "$(ctx "$child" service.name)" = forker ] || fail "the child's context names another service"
wait $parent || true
stop_sidecar
echo pass
