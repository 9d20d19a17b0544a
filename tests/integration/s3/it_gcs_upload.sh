#!/usr/bin/env bash
# GCS exporter, three ways in:
#  - HMAC keys through the S3-compatible XML API: the same SigV4-verifying
#    proxy and s3rver as the S3 tests, with region "auto";
#  - bearer token from the metadata server stand-in (GCE_METADATA_HOST;
#    Metadata-Flavor: Google checked; tokens live 6 s, scaled down from an
#    hour) to the JSON API upload stand-in, which checks uploadType=media,
#    ifGenerationMatch=0 and the token. The first upload is stored but its
#    answer is lost (connection closed): the retry gets 412, which must count
#    as done, leaving one object;
#  - GOOGLE_OAUTH_ACCESS_TOKEN.
# The stand-ins are doubles built from the documented APIs. Every secret
# holds SENTINEL, which must never reach a log line or /metrics.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/lib_s3.sh"

start_s3rver gprofiles
mkdir -p "$W/gcs"
start_testbed --roles s3,meta,gcs --upstream "127.0.0.1:$S3RVER_PORT" --region auto \
  --static-key "GOOG1EXAMPLEID:SENTINEL-hmacsecret" --gcs-dir "$W/gcs" --cred-lifetime 6 \
  --faults stored-close --fault-seconds 0.3 --fault-roles gcs --static-bearer SENTINEL-envbearer
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_ROLE_ARN \
  AWS_CONTAINER_CREDENTIALS_FULL_URI GOOGLE_OAUTH_ACCESS_TOKEN STORAGE_EMULATOR_HOST
export PUSHPROF_TEST_BACKOFF_MS=300

# --- HMAC through the S3-compatible API ---
PUSHPROF_GCS_HMAC_ACCESS_ID=GOOG1EXAMPLEID PUSHPROF_GCS_HMAC_SECRET=SENTINEL-hmacsecret \
  start_sidecar hmac --export gs://gprofiles/hmac --gcs-endpoint "http://127.0.0.1:$(tb_port s3)" \
  --batch-window 1 --rescan-interval 1
read -r want_n want_c < <(push_profiles api 2 1)
push_profiles worker 1 5 >/dev/null
wait_metric pushprof_batches_exported_total 2 30
check_no_sentinel hmac
stop_sidecar
python3 "$T3/check_objects.py" --log "$W/tb.jsonl" --s3 "127.0.0.1:$S3RVER_PORT" --bucket gprofiles \
  --prefix hmac/testnode/ --download "$W/dl-hmac" --expect-services api,worker --no-violations ||
  fail "HMAC objects"
got=$(pprof_totals "$W"/dl-hmac/api/*.pb.gz)
[ "$got" = "$want_n $want_c" ] || fail "HMAC api totals $got, pushed $want_n $want_c"

# --- bearer from the metadata server, JSON API upload ---
GCE_METADATA_HOST=127.0.0.1:$(tb_port meta) start_sidecar meta --export gs://gbucket/meta \
  --gcs-endpoint "http://127.0.0.1:$(tb_port gcs)" --batch-window 1 --rescan-interval 1
grep -q 'credentials=metadata' "$SC_LOG" || fail "metadata token source not chosen"
push_each_second svc 8 10
wait_metric pushprof_batches_exported_total 8 30
check_no_sentinel meta
stop_sidecar
grep -q '"fault": "stored-close"' "$W/tb.jsonl" || fail "the lost-answer fault never fired"
grep -q '"status": 412' "$W/tb.jsonl" || fail "no 412 on the retry of a stored upload"
grep -q 'already stored' "$SC_LOG" || fail "412 not taken as already stored"
python3 "$T3/check_objects.py" --log "$W/tb.jsonl" --role gcs --gcs-dir "$W/gcs" --bucket gbucket \
  --prefix meta/testnode/ --download "$W/dl-meta" --no-violations || fail "bearer objects"
[ "$(find "$W/dl-meta" -name '*.pb.gz' | wc -l)" -eq 8 ] || fail "want 8 objects from 8 batches"
pprof_totals "$W"/dl-meta/svc1/*.pb.gz >/dev/null
meta_calls=$(grep -c '"role": "meta".*"status": 200' "$W/tb.jsonl" || true)
[ "$meta_calls" -ge 2 ] || fail "metadata token fetched $meta_calls times in 8 s of 6 s tokens (no refresh?)"

# --- GOOGLE_OAUTH_ACCESS_TOKEN ---
GOOGLE_OAUTH_ACCESS_TOKEN=SENTINEL-envbearer start_sidecar envtok --export gs://gbucket/envtok \
  --gcs-endpoint "http://127.0.0.1:$(tb_port gcs)" --batch-window 1 --rescan-interval 1
push_profiles solo 1 77 >/dev/null
wait_metric pushprof_batches_exported_total 1 30
check_no_sentinel envtok
stop_sidecar
python3 "$T3/check_objects.py" --log "$W/tb.jsonl" --role gcs --gcs-dir "$W/gcs" --bucket gbucket \
  --prefix envtok/testnode/ --download "$W/dl-env" --expect-services solo --no-violations ||
  fail "env token objects"
grep -q SENTINEL "$W"/sidecar-*.log && fail "secret in a log after stop"
echo "ok: GCS via HMAC (verified SigV4), metadata tokens ($meta_calls fetches, 412 retry = done), env token"
