#!/usr/bin/env bash
# The conservation check (the sidecar under faults). 500 short-lived
# jobs (wl_conserve, linked with libpushprof, samples labelled job=N) push at
# exit, 4 at a time, while
#  - the sidecar is SIGKILLed after 0.4..2.5 s of life and restarted after
#    0..0.3 s, again and again, on the same spool, until 5 s after the last
#    job;
#  - the S3 backend (s3rver behind the SigV4-verifying testbed proxy) fails half
#    of the uploads at random: 500, 503, a hang past the sidecar's 2 s
#    --http-timeout, a connection closed or reset mid-upload, and an upload
#    stored whose answer is lost (500, hang, close, reset);
#  - every batch also goes to a second target, a file:// directory, which
#    never fails: it keeps receiving while S3 retries, and must end up with
#    the same samples, each exactly once (two targets, one failing).
# Jobs reach the sidecar through conserve_tap.py, which records each push's
# bytes and the reply the sidecar gave. Then the faults stop; when the spool has drained, conserve_check.py checks that every push
# the SDK counts as acknowledged or spooled is exported with exactly its
# samples (go tool pprof over every object), nothing twice, and that the SDK
# accounts for every push it was not acknowledged; it prints the tally.
#   CONSERVE_JOBS (500), CONSERVE_PAR (4), CONSERVE_MS (20), CONSERVE_SEED
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../s3/lib_s3.sh"
TF=$S/tests/integration/faults
WL=$B/tests/faults_workloads/wl_conserve
JOBS=${CONSERVE_JOBS:-500}
PAR=${CONSERVE_PAR:-4}
MS=${CONSERVE_MS:-20}
SEED=${CONSERVE_SEED:-$RANDOM}
TAP_PID= JOBS_PID=
echo "it_conserve: $JOBS jobs, $PAR at a time, ${MS} ms CPU each, seed $SEED"
RANDOM=$SEED

# Watchdog: a hang fails the test with what every process was doing.
(
  trap 'kill $sl 2>/dev/null; exit 0' TERM
  sleep "${CONSERVE_WATCHDOG_S:-200}" &
  sl=$!
  wait $sl
  echo "WATCHDOG: it_conserve still running after ${CONSERVE_WATCHDOG_S:-200} s" >&2
  ps -eo pid,ppid,stat,etime,args --forest >&2 || true
  kill -TERM $$
) &
WD_PID=$!
conserve_exit() {
  local rc=$?
  set +e
  kill "$WD_PID" 2>/dev/null
  [ -n "$JOBS_PID" ] && kill "$JOBS_PID" 2>/dev/null
  [ -n "$TAP_PID" ] && kill "$TAP_PID" 2>/dev/null
  (exit $rc)
  s3_on_exit
}
trap conserve_exit EXIT

start_s3rver profiles
start_testbed --roles s3 --upstream "127.0.0.1:$S3RVER_PORT" --region us-east-1 \
  --static-key "AKIDCONSERVE:SENTINEL-conservesecret" \
  --faults 500,503,hang,close,reset,stored-500,stored-hang,stored-close,stored-reset \
  --fault-rate 0.5 --fault-seed "$SEED" --fault-stop-file "$W/faults.stop" --hang-seconds 3 \
  --no-keepalive
unset AWS_SESSION_TOKEN AWS_ROLE_ARN AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_ENDPOINT_URL_S3
export AWS_ACCESS_KEY_ID=AKIDCONSERVE AWS_SECRET_ACCESS_KEY=SENTINEL-conservesecret
export AWS_REGION=us-east-1 AWS_ENDPOINT_URL=http://127.0.0.1:$(tb_port s3)
export PUSHPROF_TEST_BACKOFF_MS=100

incarnation=0
sidecar_up() {
  incarnation=$((incarnation + 1))
  start_sidecar "$(printf '%03d' $incarnation)" --export s3://profiles/c \
    --export "file://$W/files" --batch-window 1 \
    --rescan-interval 1 --http-timeout 2 --shutdown-grace 5
}
sidecar_up

mkdir -p "$W/jobs"
python3 "$TF/conserve_tap.py" --listen "$W/tap.sock" --upstream "$SOCK" --frames "$W/frames" \
  --log "$W/tap.jsonl" 2>"$W/tap.err" &
TAP_PID=$!
for _ in $(seq 200); do [ -S "$W/tap.sock" ] && break; sleep 0.05; done
[ -S "$W/tap.sock" ] || fail "the tap did not start: $(cat "$W/tap.err")"

# The jobs, PAR at a time; each leaves N.pid, N.err (the SDK's own lines) and N.rc.
export PUSHPROF_SOCKET=$W/tap.sock PUSHPROF_SPOOL_DIR=$W/spool PUSHPROF_SERVICE=conserve
export PUSHPROF_HZ=250 PUSHPROF_UPLOAD_PERIOD=3600 PUSHPROF_EXIT_TIMEOUT_MS=2000
t0=$(date +%s.%N)
# shellcheck disable=SC2016
seq 1 "$JOBS" | xargs -P "$PAR" -I{} bash -c 'PUSHPROF_LABELS=shard=$(($1 % 4)) "$0" "$1" "$2" \
  2>"$3/$1.err" & echo $! >"$3/$1.pid"; wait $!; echo $? >"$3/$1.rc"' "$WL" {} "$MS" "$W/jobs" &
JOBS_PID=$!

# Kill and restart the sidecar at random moments while the jobs run, and
# for TAIL seconds after (the spool is draining then: more exports meet the
# faults).
TAIL=${CONSERVE_TAIL_S:-5}
t_end=
while :; do
  if [ -z "$t_end" ] && ! kill -0 "$JOBS_PID" 2>/dev/null; then
    t_end=$((SECONDS + TAIL))
    wait "$JOBS_PID" || fail "the job runner failed"
    JOBS_PID=
    t_jobs=$(python3 -c "import time; print(round(time.time() - $t0, 1))")
  fi
  [ -n "$t_end" ] && [ $SECONDS -ge "$t_end" ] && break
  ms=$((400 + RANDOM % 2100))
  sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
  kill9_sidecar
  sleep "0.$(printf '%03d' $((RANDOM % 300)))"
  sidecar_up
done

# Faults stop. Wait until the spool has drained: no push file, no pending
# batch manifest, twice in a row a rescan apart.
touch "$W/faults.stop"
drained=0
for _ in $(seq 240); do
  if [ -z "$(find "$W/spool" -maxdepth 1 -name '[!.]*.push' -print -quit)" ] &&
    [ -z "$(find "$W/spool/batches" -name '[!.]*.batch' -print -quit)" ]; then
    drained=$((drained + 1))
    [ $drained -ge 3 ] && break
  else
    drained=0
  fi
  sleep 0.5
done
[ $drained -ge 3 ] || fail "the spool did not drain within 120 s after the faults stopped: \
$(find "$W/spool" -maxdepth 2 -name '[!.]*.push' -o -name '[!.]*.batch' | wc -l) files left"
stop_sidecar
kill "$TAP_PID"
wait "$TAP_PID" 2>/dev/null || true
TAP_PID=

[ -z "$(find "$W/spool/quarantine" "$W/spool/failed" -type f -print -quit)" ] ||
  fail "files in quarantine/ or failed/: $(ls "$W/spool/quarantine" "$W/spool/failed")"
grep -h SENTINEL "$W"/sidecar-*.log && fail "a secret reached the sidecar's log"
python3 "$TF/conserve_check.py" --jobs "$JOBS" --jobs-dir "$W/jobs" --frames "$W/frames" \
  --tap-log "$W/tap.jsonl" --sidecar-logs "$W/sidecar-*.log" --tb-log "$W/tb.jsonl" \
  --s3 "127.0.0.1:$S3RVER_PORT" --bucket profiles --prefix c/ --download "$W/dl" \
  --pprof-check "$S/tests/integration/pprof_check.py" --files "$W/files" ||
  fail "conservation violated (seed $SEED; rerun with CONSERVE_SEED=$SEED)"
echo "ok: conservation held (seed $SEED, jobs ran ${t_jobs} s, $incarnation sidecar incarnations)"
