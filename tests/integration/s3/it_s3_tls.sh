#!/usr/bin/env bash
# TLS for the HTTP exporters: the verifying proxy serves HTTPS with a
# certificate from a test CA, for IP 127.0.0.1 only.
#  - default: the certificate is refused (unknown CA): uploads are retried;
#  - --ca-file CA: accepted (the CA is added to the system store);
#  - --ca-file CA but endpoint https://localhost: host name mismatch, refused;
#  - --tls-insecure-skip-verify: accepted, with a warning logged at start.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/lib_s3.sh"

cd "$W"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
  -subj "/CN=pushprof test CA" >/dev/null 2>&1 || fail "openssl: CA"
openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj "/CN=127.0.0.1" \
  >/dev/null 2>&1 || fail "openssl: CSR"
printf 'subjectAltName=IP:127.0.0.1\n' >san.ext
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 \
  -extfile san.ext >/dev/null 2>&1 || fail "openssl: sign"
cd - >/dev/null

start_s3rver profiles
start_testbed --roles s3 --upstream "127.0.0.1:$S3RVER_PORT" --region us-east-1 \
  --static-key "AKIDTLS:SENTINEL-tlssecret" --tls-cert "$W/srv.pem" --tls-key "$W/srv.key"
P=$(tb_port s3)
unset AWS_SESSION_TOKEN AWS_ROLE_ARN AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_ENDPOINT_URL_S3
export AWS_ACCESS_KEY_ID=AKIDTLS AWS_SECRET_ACCESS_KEY=SENTINEL-tlssecret AWS_REGION=us-east-1
export PUSHPROF_TEST_BACKOFF_MS=200

# refused_run NAME ENDPOINT [flags]: uploads must fail with a TLS error and be retried.
refused_run() {
  local name=$1 ep=$2
  shift 2
  start_sidecar "$name" --export "s3://profiles/$name" --s3-endpoint "$ep" --batch-window 1 \
    --rescan-interval 1 "$@"
  push_profiles "$name" 1 5 >/dev/null
  wait_metric pushprof_export_retries_total 2 20
  [ "$(metric pushprof_batches_exported_total)" -eq 0 ] || fail "$name: upload went through"
  grep 'will retry' "$SC_LOG" | grep -qiE 'SSL|certificate' || fail "$name: no TLS reason: $(grep 'will retry' "$SC_LOG" | head -1)"
  kill9_sidecar
  rm -rf "$W/spool"
}
refused_run untrusted "https://127.0.0.1:$P"
refused_run wronghost "https://localhost:$P" --ca-file "$W/ca.pem"

start_sidecar trusted --export s3://profiles/trusted --s3-endpoint "https://127.0.0.1:$P" \
  --ca-file "$W/ca.pem" --batch-window 1 --rescan-interval 1
push_profiles trusted 1 6 >/dev/null
wait_metric pushprof_batches_exported_total 1 20
grep -q 'verification is OFF' "$SC_LOG" && fail "insecure warning without the flag"
stop_sidecar

start_sidecar insecure --export s3://profiles/insecure --s3-endpoint "https://127.0.0.1:$P" \
  --tls-insecure-skip-verify --batch-window 1 --rescan-interval 1
grep -q 'level=warn.*verification is OFF' "$SC_LOG" || fail "no warning for --tls-insecure-skip-verify"
push_profiles insecure 1 7 >/dev/null
wait_metric pushprof_batches_exported_total 1 20
stop_sidecar
python3 "$T3/check_objects.py" --log "$W/tb.jsonl" --s3 "127.0.0.1:$S3RVER_PORT" --bucket profiles \
  --prefix trusted/testnode/ --download "$W/dl" --expect-services trusted --no-violations ||
  fail "objects over TLS"
pprof_totals "$W"/dl/trusted/*.pb.gz >/dev/null
echo "ok: TLS verified by default; --ca-file adds a CA; host names checked; insecure flag warns"
