#!/usr/bin/env bash
# Temporary AWS credentials, against the testbed's doubles in front of s3rver:
#  - IRSA: AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE -> the STS stand-in,
#    which checks AssumeRoleWithWebIdentity and hands out credentials that
#    live 6 s (real ones live >= 15 min: scaled down). The token file is
#    rotated mid-run; STS only accepts its current content. The sidecar must
#    refresh before expiry (the verifier refuses expired credentials) and
#    keep uploading.
#  - EKS Pod Identity: AWS_CONTAINER_CREDENTIALS_FULL_URI +
#    AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE -> the agent stand-in.
# Every secret (tokens, issued secrets and session tokens) holds the word
# SENTINEL, which must never appear in a log line or in /metrics.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/lib_s3.sh"

echo "SENTINEL-webtoken-1" >"$W/webtoken"
echo "SENTINEL-podtoken" >"$W/podtoken"
start_s3rver profiles
start_testbed --roles s3,sts,pod --upstream "127.0.0.1:$S3RVER_PORT" --region us-west-2 \
  --role-arn arn:aws:iam::123456789012:role/pushprof --web-identity-token-file "$W/webtoken" \
  --pod-token-file "$W/podtoken" --cred-lifetime 6
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_CONTAINER_CREDENTIALS_FULL_URI
export AWS_REGION=us-west-2 AWS_ENDPOINT_URL_S3=http://127.0.0.1:$(tb_port s3)
export AWS_ENDPOINT_URL_STS=http://127.0.0.1:$(tb_port sts)/
export AWS_ROLE_ARN=arn:aws:iam::123456789012:role/pushprof AWS_WEB_IDENTITY_TOKEN_FILE=$W/webtoken

# --- IRSA: 12 s of pushes across three credential lifetimes ---
start_sidecar irsa --export s3://profiles/irsa --batch-window 1 --rescan-interval 1
grep -q 'credentials=irsa' "$SC_LOG" || fail "IRSA not chosen: $(grep 'exporter ready' "$SC_LOG")"
for i in $(seq 12); do
  push_profiles "job$i" 1 "$i" >/dev/null
  [ "$i" -eq 6 ] && echo "SENTINEL-webtoken-2" >"$W/webtoken.new" && mv "$W/webtoken.new" "$W/webtoken"
  sleep 1
done
wait_metric pushprof_batches_exported_total 12 30
check_no_sentinel irsa
stop_sidecar
sts_ok=$(python3 -c "
import json
r=[json.loads(l) for l in open('$W/tb.jsonl')]
print(sum(1 for x in r if x['role']=='sts' and x.get('status')==200))")
[ "$sts_ok" -ge 3 ] || fail "only $sts_ok STS calls in 12 s with 6 s credentials (no refresh?)"
grep -q 'WebIdentityToken is not' "$W/tb.jsonl" && fail "the sidecar sent a stale web identity token"
python3 "$T3/check_objects.py" --log "$W/tb.jsonl" --s3 "127.0.0.1:$S3RVER_PORT" --bucket profiles \
  --prefix irsa/testnode/ --download "$W/dl-irsa" --no-violations || fail "IRSA objects"
[ "$(find "$W/dl-irsa" -name '*.pb.gz' | wc -l)" -eq 12 ] || fail "want 12 IRSA objects"
pprof_totals "$W"/dl-irsa/job1/*.pb.gz >/dev/null

# --- EKS Pod Identity ---
unset AWS_ROLE_ARN AWS_WEB_IDENTITY_TOKEN_FILE
export AWS_CONTAINER_CREDENTIALS_FULL_URI=http://127.0.0.1:$(tb_port pod)/v1/credentials
export AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=$W/podtoken
start_sidecar pod --export s3://profiles/pod --batch-window 1 --rescan-interval 1
grep -q 'credentials=pod-identity' "$SC_LOG" || fail "Pod Identity not chosen"
push_each_second pod 8 40
wait_metric pushprof_batches_exported_total 8 30
check_no_sentinel pod
stop_sidecar
python3 "$T3/check_objects.py" --log "$W/tb.jsonl" --s3 "127.0.0.1:$S3RVER_PORT" --bucket profiles \
  --prefix pod/testnode/ --download "$W/dl-pod" --no-violations || fail "Pod Identity objects"
pod_ok=$(grep -c '"role": "pod".*"status": 200' "$W/tb.jsonl" || true)
[ "$pod_ok" -ge 2 ] || fail "Pod Identity credentials fetched $pod_ok times in 8 s of 6 s credentials"
grep -q SENTINEL "$W"/sidecar-*.log && fail "secret in a log after stop"
echo "ok: IRSA ($sts_ok STS calls, token rotated) and Pod Identity ($pod_ok agent calls) kept uploading; no secret in logs or metrics"
