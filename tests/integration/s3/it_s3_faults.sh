#!/usr/bin/env bash
# Delivery rules under faults. For 12 s (a minute scaled
# down to keep the test under a minute) the verifying proxy answers each
# upload in turn with 500, 503, 429 + Retry-After: 2, a hang (past the
# sidecar's 2 s --http-timeout), a connection closed mid-upload, and an
# upload stored whose answer is lost; then it recovers. Checked:
#  - every batch arrives exactly once per content hash (one acknowledged PUT
#    per key, one object per key, hash = name), totals match the pushes;
#  - backoff shows in the request timestamps: Retry-After is honoured, later
#    retries wait longer than the first ones, and there is no storm;
#  - the sidecar's RSS stays bounded;
#  - a 403 (AccessDenied) moves the pushes to failed/ with the reason beside
#    them, counted in /metrics.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/lib_s3.sh"

start_s3rver profiles
start_testbed --roles s3 --upstream "127.0.0.1:$S3RVER_PORT" --region us-east-1 \
  --static-key "AKIDFAULT:SENTINEL-faultsecret" --faults 500,503,429:2,hang,close,stored-close \
  --fault-seconds 12 --hang-seconds 20 --deny-bucket denied --no-keepalive
unset AWS_SESSION_TOKEN AWS_ROLE_ARN AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_ENDPOINT_URL_S3
export AWS_ACCESS_KEY_ID=AKIDFAULT AWS_SECRET_ACCESS_KEY=SENTINEL-faultsecret AWS_REGION=us-east-1
export AWS_ENDPOINT_URL=http://127.0.0.1:$(tb_port s3) PUSHPROF_TEST_BACKOFF_MS=100

start_sidecar faults --export s3://profiles/f --batch-window 1 --rescan-interval 1 --http-timeout 2
tot_n=0 tot_c=0
for s in a b c d e; do
  read -r n c < <(push_profiles "svc-$s" 2 "$RANDOM")
  tot_n=$((tot_n + n)) tot_c=$((tot_c + c))
done
rss_max=0
for i in $(seq 500); do
  rss=$(ps -o rss= -p "$SC_PID" | tr -d ' ')
  [ "${rss:-0}" -gt "$rss_max" ] && rss_max=$rss
  [ "$(metric pushprof_batches_exported_total)" -ge 5 ] && [ "$(metric pushprof_spool_files)" -eq 0 ] && break
  sleep 0.1
done
[ "$(metric pushprof_batches_exported_total)" -ge 5 ] || fail "batches not all exported after the faults"
retries=$(metric pushprof_export_retries_total)
[ "$retries" -ge 6 ] || fail "only $retries retries: the faults did not bite"
for cls in http_5xx http_429 timeout connection; do
  v=$(metric "pushprof_export_failures_by_class_total{reason=\"$cls\"}")
  [ "$v" -ge 1 ] || fail "failures of class $cls not counted in /metrics"
done
grep -q SENTINEL "$SC_LOG" && fail "secret in the log"
metrics | grep -q SENTINEL && fail "secret in /metrics"
stop_sidecar
[ "$rss_max" -lt 65536 ] || fail "sidecar RSS reached ${rss_max} KiB under faults"

python3 "$T3/check_objects.py" --log "$W/tb.jsonl" --s3 "127.0.0.1:$S3RVER_PORT" --bucket profiles \
  --prefix f/testnode/ --download "$W/dl" --no-violations || fail "objects after faults"
[ "$(find "$W/dl" -name '*.pb.gz' | wc -l)" -eq 5 ] || fail "want 5 objects for 5 batches"
got=$(pprof_totals "$W"/dl/*/*.pb.gz)
[ "$got" = "$tot_n $tot_c" ] || fail "totals $got after faults, pushed $tot_n $tot_c"

# Backoff in the timestamps (t0 = when each request arrived): each retry
# came no sooner than the delay the sidecar logged for it, those delays grow
# with the attempt number (full jitter under a doubling ceiling), and
# Retry-After: 2 is honoured.
python3 - "$W/tb.jsonl" "$SC_LOG" <<'PY' || fail "backoff not visible in the request timestamps"
import collections, json, re, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
by = collections.defaultdict(list)
for r in recs:
    if r["role"] == "s3" and r["method"] == "PUT" and r.get("key"):
        by[r["key"].split("/")[2]].append(r)
delays = collections.defaultdict(list)
for line in open(sys.argv[2]):
    m = re.search(r'msg="export failed; will retry" service="?([^" ]+)"? attempt=(\d+) retry_in_ms=(\d+)', line)
    if m:
        delays[m.group(1)].append((int(m.group(2)), int(m.group(3))))
ok = True
faults = collections.Counter(r.get("fault") for r in recs if r.get("fault"))
first, later = [], []
for svc, rs in by.items():
    rs.sort(key=lambda r: r["t0"])
    ds = delays[svc]
    if len(ds) != len(rs) - 1:
        print("%s: %d requests but %d logged retries" % (svc, len(rs), len(ds))); ok = False
        continue
    for i, (attempt, ms) in enumerate(ds):
        gap = rs[i + 1]["t0"] - rs[i]["t0"]
        if gap < ms / 1000.0 - 0.05:
            print("%s: retry %d came after %.3f s, before its %d ms backoff" % (svc, attempt, gap, ms)); ok = False
        if rs[i].get("fault", "").startswith("429") and gap < 1.9:
            print("%s: Retry-After 2 ignored (retry after %.2f s)" % (svc, gap)); ok = False
        if not rs[i].get("fault", "").startswith("429"):
            (first if attempt == 1 else later if attempt >= 4 else []).append(ms)
attempts = sum(len(v) for v in by.values())
print("faults injected: %s; %d PUTs for %d batches" % (dict(faults), attempts, len(by)))
if len(faults) < 6:
    print("not every fault kind fired"); ok = False
if first and later:
    print("backoff drawn: attempt 1 max %d ms, attempts >= 4 max %d ms" % (max(first), max(later)))
    if max(later) <= max(first):
        print("later retries do not wait longer"); ok = False
else:
    print("too few retries to see the backoff grow"); ok = False
if attempts > 80:
    print("retry storm: %d PUTs" % attempts); ok = False
sys.exit(0 if ok else 1)
PY
# A 403 is permanent: the pushes move to failed/ with the reason beside them.
start_sidecar denied --export s3://denied/x --batch-window 1 --rescan-interval 1 --http-timeout 2
push_profiles refused 1 3 >/dev/null
wait_metric 'pushprof_drops_total{reason="export_permanent"}' 1 20
ls "$W/spool/failed/"*.reason >/dev/null 2>&1 || fail "no reason file in failed/"
grep -q 'HTTP 403: AccessDenied' "$W"/spool/failed/*.reason || fail "reason: $(cat "$W"/spool/failed/*.reason)"
[ "$(find "$W/spool/failed" -type f ! -name '*.reason' | wc -l)" -ge 1 ] || fail "push not kept in failed/"
grep -q 'batch refused for good' "$SC_LOG" || fail "403 not logged"
grep -rq SENTINEL "$W/spool/failed" "$SC_LOG" && fail "a secret reached failed/ or the log"
stop_sidecar
echo "ok: faults survived (retries=$retries, RSS max ${rss_max} KiB), each batch once, 403 -> failed/ with reason"
