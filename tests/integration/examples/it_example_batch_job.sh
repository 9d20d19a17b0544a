#!/usr/bin/env bash
# examples/batch_job: the cron wrapper runs the (unmodified) job 50 times
# under LD_PRELOAD with PUSHPROF_SOCKET; the real sidecar accepts 50 pushes
# from 50 distinct pids, exports all 50 and the merged profile holds the
# job's own functions.
source "$(dirname "$0")/ex_lib.sh"
RUNS=${RUNS:-50}
start_sidecar batch --batch-window 60
t0=$(date +%s.%N)
for i in $(seq "$RUNS"); do
  PUSHPROF_SOCKET=$SOCK PUSHPROF_PRELOAD=$PRELOAD \
    sh "$S/examples/batch_job/run_batch_job.sh" "$B/examples/batch_job" \
    >"$W/job.out" 2>"$W/job.err" || fail "run $i exited $?: $(cat "$W/job.err")"
  grep -q '^batch_job: 300000 records' "$W/job.out" || fail "run $i printed: $(cat "$W/job.out")"
  [ ! -s "$W/job.err" ] || fail "run $i wrote to stderr: $(cat "$W/job.err")"
done
t1=$(date +%s.%N)
pids=$(accepted_pids | wc -l)
[ "$pids" -eq "$RUNS" ] || fail "$pids distinct pids in 'push accepted' lines, want $RUNS"
stop_and_export
pushed=$(exported_pushes batch_job)
[ "$pushed" -eq "$RUNS" ] || fail "exported batches hold $pushed pushes, want $RUNS"
json=$(profiles_json batch_job)
python3 - "$json" "$RUNS" <<'PY' || fail "exported profile: $json"
import json, sys
r, runs = json.loads(sys.argv[1]), int(sys.argv[2])
# load_records (~1-2 ms of a ~55 ms run, before the first 10 ms tick) gets
# 0-4 samples over 50 runs, so it is printed, not required (a CI run had 0).
# (gcc may name a specialised copy load_records.constprop.0)
need = ["sort_records", "summarize_regions", "main"]
missing = [f for f in need if not any(g == f or g.startswith(f + ".") for g in r["functions"])]
assert not missing, "missing functions %s" % missing
# At 100 Hz each run of ~0.1-0.2 s CPU gives several samples.
assert r["total"] >= runs * 3, "only %d samples over %d runs" % (r["total"], runs)
load = sum(v for k, v in r["cum"].items() if k == "load_records" or k.startswith("load_records."))
print("ok %d samples; cum main=%s sort_records=%s summarize_regions=%s load_records=%d" % (
    r["total"], r["cum"].get("main"), r["cum"].get("sort_records"), r["cum"].get("summarize_regions"),
    load))
PY
echo "ok $RUNS runs in $(python3 -c "print(round($t1 - $t0, 1))") s, $pids pids, $pushed pushes exported"
echo pass
