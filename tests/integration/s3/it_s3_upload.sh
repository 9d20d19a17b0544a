#!/usr/bin/env bash
# S3 exporter against a real S3-compatible server (s3rver from npm) behind a
# SigV4-verifying proxy (testbed.py: every request's signature recomputed
# with Python's hmac/hashlib). Static keys with a session token: every batch
# arrives under PREFIX/<node>/<service>/<UTC>-<hash16>.pb.gz, its bytes hash
# to the name, go tool pprof reads it and sample totals match the pushes.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/lib_s3.sh"

start_s3rver profiles
start_testbed --roles s3 --upstream "127.0.0.1:$S3RVER_PORT" --region eu-central-1 \
  --static-key "AKIDTEST:SENTINEL-envsecret:SENTINEL-envtoken"
S3P=$(tb_port s3)

export AWS_ACCESS_KEY_ID=AKIDTEST AWS_SECRET_ACCESS_KEY=SENTINEL-envsecret
export AWS_SESSION_TOKEN=SENTINEL-envtoken AWS_REGION=eu-central-1
export AWS_ENDPOINT_URL=http://127.0.0.1:$S3P
start_sidecar s3 --export s3://profiles/team/prod --batch-window 1 --rescan-interval 1
read -r want_n want_c < <(push_profiles checkout 3 1)
push_profiles "billing svc" 2 11 >/dev/null
# One batch above libcurl's 1 MiB "Expect: 100-continue" threshold.
read -r big_n big_c < <("$GEN" profile "$W/big.pb.gz" --seed 4 --samples 100000 --functions 20000 --gzip)
"$CLI" push "$W/big.pb.gz" --socket "$SOCK" --service big >/dev/null || fail "big push"
wait_metric pushprof_batches_exported_total 3 30
wait_spool_drained 10 "spool not drained"
metrics | grep -q SENTINEL && fail "a credential reached /metrics"
stop_sidecar

python3 "$T3/check_objects.py" --log "$W/tb.jsonl" --s3 "127.0.0.1:$S3RVER_PORT" --bucket profiles \
  --prefix team/prod/testnode/ --download "$W/dl" --expect-services checkout,billing_svc,big \
  --no-violations || fail "object check failed"
got=$(pprof_totals "$W"/dl/checkout/*.pb.gz)
[ "$got" = "$want_n $want_c" ] || fail "checkout totals $got, pushed $want_n $want_c"
big=$(pprof_totals_big "$W"/dl/big/*.pb.gz)
[ "$big" = "$big_n $big_c" ] || fail "big totals $big, pushed $big_n $big_c"
size=$(stat -c %s "$W"/dl/big/*.pb.gz)
[ "$size" -gt 1048576 ] || fail "the big batch is only $size bytes: not above 1 MiB"
grep -q "SENTINEL" "$W"/sidecar-*.log && fail "a credential reached the log: $(grep SENTINEL "$W"/sidecar-*.log | head -2)"
echo "ok: S3 uploads signed correctly (verified), objects named by content hash, totals $got, a $size-byte batch too"
