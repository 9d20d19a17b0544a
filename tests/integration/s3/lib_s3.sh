# Shared helpers for the S3/GCS exporter tests (sourced after ../lib.sh).
# s3rver comes from npm, installed once into $PUSHPROF_BUILD_DIR/npm (cached
# between runs; flock'ed because tests run in parallel).
T3=$S/tests/integration/s3
NPM_DIR=$B/npm
S3RVER_PID= TB_PID=
S3RVER_PORT= TB_PORTS=

ensure_s3rver() {
  command -v node >/dev/null && command -v npm >/dev/null ||
    fail "node and npm are needed for s3rver (bash tests/deps.sh installs them)"
  mkdir -p "$NPM_DIR"
  (
    flock 9
    if [ ! -x "$NPM_DIR/node_modules/.bin/s3rver" ]; then
      npm install --prefix "$NPM_DIR" --no-audit --no-fund --loglevel=error s3rver@3.7.1 \
        >"$NPM_DIR/install.log" 2>&1 || { cat "$NPM_DIR/install.log" >&2; exit 1; }
    fi
  ) 9>"$NPM_DIR/.lock" || fail "npm install s3rver failed"
}

# start_s3rver BUCKET...: a real S3-compatible server on a loopback port.
start_s3rver() {
  ensure_s3rver
  local args=() b
  for b in "$@"; do args+=(--configure-bucket "$b"); done
  mkdir -p "$W/s3data"
  S3RVER_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$NPM_DIR/node_modules/.bin/s3rver" -d "$W/s3data" -a 127.0.0.1 -p "$S3RVER_PORT" \
    --no-vhost-buckets "${args[@]}" >"$W/s3rver.log" 2>&1 &
  S3RVER_PID=$!
  for _ in $(seq 200); do
    curl -s -o /dev/null "http://127.0.0.1:$S3RVER_PORT/" && return 0
    kill -0 "$S3RVER_PID" 2>/dev/null || { cat "$W/s3rver.log" >&2; fail "s3rver exited"; }
    sleep 0.05
  done
  fail "s3rver did not start in 10 s"
}

# start_testbed ARGS...: the test doubles (testbed.py); sets TB_PORTS (JSON file).
start_testbed() {
  TB_PORTS=$W/tb-ports.json
  rm -f "$TB_PORTS"
  python3 "$T3/testbed.py" --ports-file "$TB_PORTS" --log "$W/tb.jsonl" "$@" 2>"$W/testbed.err" &
  TB_PID=$!
  for _ in $(seq 200); do
    [ -s "$TB_PORTS" ] && return 0
    kill -0 "$TB_PID" 2>/dev/null || { cat "$W/testbed.err" >&2; fail "testbed exited"; }
    sleep 0.05
  done
  fail "testbed did not start in 10 s"
}

tb_port() { python3 -c "import json,sys; print(json.load(open('$TB_PORTS'))['$1'])"; }

stop_s3_tools() {
  local p
  for p in $TB_PID $S3RVER_PID; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  TB_PID= S3RVER_PID=
}

# The test doubles go down with the test, pass or fail.
s3_on_exit() {
  local rc=$?
  stop_s3_tools
  if [ $rc -ne 0 ] && [ -f "$W/tb.jsonl" ]; then
    echo "--- testbed requests (last 30) ---" >&2
    tail -30 "$W/tb.jsonl" >&2
    [ -s "$W/testbed.err" ] && { echo "--- testbed stderr ---" >&2; tail -20 "$W/testbed.err" >&2; }
  fi
  set +e # else (exit 1) ends the trap here and on_exit never stops the sidecar
  (exit $rc) # on_exit takes the status from $?
  on_exit
}
trap s3_on_exit EXIT

# check_no_sentinel NAME: no secret (the tests' SENTINEL-... values) in any
# sidecar log or in /metrics (kept as $W/metrics-NAME.txt).
check_no_sentinel() {
  metrics >"$W/metrics-$1.txt" || fail "cannot read /metrics"
  if grep -l SENTINEL "$W"/sidecar-*.log "$W/metrics-$1.txt"; then
    fail "a secret reached a log or /metrics: $(grep -h SENTINEL "$W"/sidecar-*.log "$W"/metrics-*.txt | head -3)"
  fi
}

# push_each_second PREFIX N SEED: N one-push services PREFIX1..PREFIXN, a
# second apart (seeds SEED+1..SEED+N).
push_each_second() {
  local i
  for ((i = 1; i <= $2; i++)); do
    push_profiles "$1$i" 1 "$(($3 + i))" >/dev/null
    sleep 1
  done
}

# push_profiles SERVICE N SEED: N pushes with gen_pprof via the CLI; prints "samples count".
push_profiles() {
  local svc=$1 n=$2 seed=$3 i tn=0 tc=0 pn pc
  for ((i = 0; i < n; i++)); do
    read -r pn pc < <("$GEN" profile "$W/p-$svc-$i.pb.gz" --seed $((seed + i)) --samples 200 --gzip)
    "$CLI" push "$W/p-$svc-$i.pb.gz" --socket "$SOCK" --service "$svc" --label env=test >/dev/null ||
      fail "push $svc $i failed"
    tn=$((tn + pn)) tc=$((tc + pc))
  done
  echo "$tn $tc"
}

# pprof_totals_big FILE...: like pprof_totals, but reads all of go tool
# pprof's output first (big profiles: no early close of the pipe); several
# files are read and merged in one run.
pprof_totals_big() {
  go tool pprof -raw "$@" >"$W/raw.txt" 2>"$W/pprof.err" || fail "go tool pprof -raw rejected $*: $(cat "$W/pprof.err")"
  raw_sums "$W/raw.txt"
}
