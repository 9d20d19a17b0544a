# Helpers for the OTLP exporter tests (sourced): the sidecar helpers of
# tests/integration/lib.sh plus a strict OTLP receiver per test (a
# test double; see otlp_receiver.py for what it checks).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
RECEIVER=$S/tests/integration/otlp/otlp_receiver.py
COMPARE=$S/tests/integration/otlp/otlp_compare.py
GEN_OTLP=$B/tests/gen_otlp_pprof
# Debian's python3 has python3-protobuf; a pyenv python on PATH may not.
PYPB=/usr/bin/python3
"$PYPB" -c 'import google.protobuf' 2>/dev/null ||
  fail "$PYPB cannot import google.protobuf: install python3-protobuf (bash tests/deps.sh)"
RX_PIDS=()

rx_on_exit() {
  local rc=$? p
  for p in "${RX_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ $rc -ne 0 ]; then
    for f in "$W"/rx-*/violations.txt "$W"/rx-*/requests.jsonl "$W"/rx-*/stderr; do
      [ -f "$f" ] && { echo "== $f" >&2; cut -c1-600 "$f" | tail -20 >&2; }
    done
  fi
  set +e
  (exit $rc)
  on_exit
}
trap rx_on_exit EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_receiver NAME [receiver flags...]: sets RX_OUT, RX_URL (http://127.0.0.1:PORT).
start_receiver() {
  local name=$1
  shift
  RX_OUT=$W/rx-$name
  start_server "$RX_OUT" "receiver $name" "$PYPB" "$RECEIVER" "$@"
  RX_PIDS+=("$SERVER_PID")
  RX_URL=$SERVER_URL
}

rx_accepted() {
  local n
  n=$(grep -c '"status": 200' "$1/requests.jsonl" 2>/dev/null) || true
  echo "${n:-0}"
}
rx_requests() { wc -l <"$1/requests.jsonl" 2>/dev/null || echo 0; }

# rx_wait DIR N SECONDS: until the receiver accepted N requests.
rx_wait() { wait_count "requests receiver $1 accepted" "$2" "$3" rx_accepted "$1"; }

rx_clean() {
  [ ! -s "$1/violations.txt" ] || fail "the receiver found violations: $(cat "$1/violations.txt")"
}

# rx_q DIR EXPR: python EXPR over `reqs`, the accepted request records.
rx_q() {
  python3 - "$1" "$2" <<'PY'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1] + "/requests.jsonl") if l.strip()]
reqs = [r for r in reqs if r.get("status") == 200]
profs = [p for r in reqs for p in r.get("profiles", [])]
print(eval(sys.argv[2]))
PY
}

# spool_pushes: pushes not yet exported (held in the journal, in push files
# or in pending batches' manifests), from the running sidecar's /metrics.
spool_pushes() { metric pushprof_spool_files; }
