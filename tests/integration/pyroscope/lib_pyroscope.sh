# Helpers for the Pyroscope exporter tests (sourced): the sidecar helpers of
# tests/integration/lib.sh plus a Pyroscope stand-in per test (a
# test double; see pyroscope_standin.py for what it checks and why).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
STANDIN=$S/tests/integration/pyroscope/pyroscope_standin.py
PY_PIDS=()

pyro_on_exit() {
  local rc=$? p
  for p in "${PY_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ $rc -ne 0 ]; then
    for f in "$W"/py-*/violations.txt "$W"/py-*/requests.jsonl; do
      [ -f "$f" ] && { echo "== $f" >&2; cut -c1-400 "$f" | tail -20 >&2; }
    done
  fi
  set +e
  (exit $rc) # on_exit takes the status from $?
  on_exit
}
trap pyro_on_exit EXIT

# start_standin NAME [stand-in flags...]: sets PY_OUT and PY_URL.
start_standin() {
  local name=$1
  shift
  PY_OUT=$W/py-$name
  start_server "$PY_OUT" "stand-in $name" python3 "$STANDIN" "$@"
  PY_PIDS+=("$SERVER_PID")
  PY_URL=$SERVER_URL
}

# accepted_json DIR: every accepted request record of the stand-in in DIR.
accepted() { grep -h '"status": 200' "$1/requests.jsonl" 2>/dev/null || true; }

# wait_accepted DIR N SECONDS: until the stand-in accepted N requests.
accepted_n() { accepted "$1" | wc -l; }
wait_accepted() { wait_count "requests stand-in $1 accepted" "$2" "$3" accepted_n "$1"; }

no_violations() {
  [ ! -s "$1/violations.txt" ] || fail "the stand-in found violations: $(cat "$1/violations.txt")"
}

# totals DIR SERVICE: "<sum col1> <sum col2>" over every profile the
# stand-in accepted for SERVICE, as its go tool pprof -raw run listed them.
totals() {
  python3 - "$1" "$2" <<'PY'
import json, sys
n = c = 0
for l in open(sys.argv[1] + "/requests.jsonl"):
    r = json.loads(l)
    if r.get("status") != 200:
        continue
    for s in r.get("series", [{"labels": {"service_name": r.get("app")}, "samples": r.get("samples", [])}]):
        if s["labels"].get("service_name") == sys.argv[2]:
            for smp in s["samples"]:
                n += smp["totals"][0]
                c += smp["totals"][1]
print(n, c)
PY
}

# jq-free field extraction: python over requests.jsonl. pyq DIR EXPR prints
# EXPR evaluated for the list `reqs` of accepted records.
pyq() {
  python3 - "$1" "$2" <<'PY'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1] + "/requests.jsonl") if l.strip()]
reqs = [r for r in reqs if r.get("status") == 200]
print(eval(sys.argv[2]))
PY
}
