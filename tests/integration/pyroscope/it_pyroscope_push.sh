#!/usr/bin/env bash
# The real sidecar exports to a Pyroscope stand-in (a test double checking
# Pyroscope's documented push API rules) over the push API: tenant and basic
# auth headers, series labels (__name__, service_name, dotted process labels
# turned into underscores; a heap profile is __name__=memory with
# __delta__=false), every profile a valid pprof, a 5 MiB profile
# split below the 4 MiB per-profile limit and, with --pyroscope-max-samples
# lowered, a 3 x 200-sample merged profile split by count, sample totals kept.
source "$(dirname "$0")/lib_pyroscope.sh"

SECRET=pw-SENTINEL-$RANDOM$RANDOM
printf '%s\n' "$SECRET" >"$W/pw"
start_standin push --tenant team-a --basic "alice:$SECRET"
PYROSCOPE_BASIC_AUTH_USER=alice PYROSCOPE_BASIC_AUTH_PASSWORD_FILE=$W/pw \
  start_sidecar push --export "pyroscope+$PY_URL" --pyroscope-tenant team-a --batch-window 2 \
  --pyroscope-max-samples 250

want_n=0 want_c=0
for i in 1 2 3; do
  read -r n c < <("$GEN" profile "$W/in$i.pb" --seed "$i" --samples 200)
  want_n=$((want_n + n)) want_c=$((want_c + c))
  "$CLI" push "$W/in$i.pb" --socket "$SOCK" --service checkout --label k8s.pod.name=pod-7 \
    --label deployment.environment=test --label service.name=ignored >/dev/null || fail "push $i"
done
# About 5.3 MB uncompressed: over Pyroscope's 4 MiB per-profile limit.
read -r big_n big_c < <("$B/tests/gen_big_pprof" "$W/big.pb" 5000 300)
big_len=$(stat -c %s "$W/big.pb")
[ "$big_len" -gt $((4 << 20)) ] || fail "generated profile is only $big_len bytes"
"$CLI" push "$W/big.pb" --socket "$SOCK" --service bigsvc >/dev/null || fail "push big"
# A heap profile (Go's layout): Pyroscope's memory profile.
"$GEN" frame "$W/heap.frame" heap --service heapsvc --alloc 1048576 --inuse 2097152 ||
  fail "gen_pprof heap"
case $($RAW "$SOCK" send "$W/heap.frame") in code=0\ *) ;; *) fail "heap push not acked" ;; esac

wait_accepted "$PY_OUT" 2 40
wait_metric pushprof_batches_exported_total 2 40 # every request of the split one too
no_violations "$PY_OUT"

# checkout: one series, the labels Pyroscope needs, dots made underscores.
labels=$(pyq "$PY_OUT" '[s["labels"] for r in reqs for s in r["series"] if s["labels"]["service_name"] == "checkout"][0]')
want="{'__name__': 'process_cpu', 'deployment_environment': 'test', 'k8s_pod_name': 'pod-7', 'service_name': 'checkout'}"
[ "$labels" = "$want" ] || fail "checkout labels $labels, want $want"
got=$(totals "$PY_OUT" checkout)
[ "$got" = "$want_n $want_c" ] || fail "checkout totals $got, pushed $want_n $want_c"
ncheck=$(pyq "$PY_OUT" 'sum(len(s["samples"]) for r in reqs for s in r["series"] if s["labels"]["service_name"] == "checkout")')
[ "$ncheck" -ge 2 ] || fail "3 x 200 samples with --pyroscope-max-samples 250 arrived as $ncheck profile(s)"
maxn=$(pyq "$PY_OUT" 'max(smp["samples"] for r in reqs for s in r["series"] if s["labels"]["service_name"] == "checkout" for smp in s["samples"])')
[ "$maxn" -le 250 ] || fail "a checkout piece has $maxn samples"

# heapsvc: __name__=memory, and __delta__=false (its alloc_* is the batch's).
heap_series() { pyq "$PY_OUT" 'sum(1 for r in reqs for s in r["series"] if s["labels"]["service_name"] == "heapsvc")'; }
wait_count "heapsvc series at the stand-in" 1 40 heap_series
labels=$(pyq "$PY_OUT" '[s["labels"] for r in reqs for s in r["series"] if s["labels"]["service_name"] == "heapsvc"][0]')
want="{'__delta__': 'false', '__name__': 'memory', 'service_name': 'heapsvc'}"
[ "$labels" = "$want" ] || fail "heapsvc labels $labels, want $want"

# bigsvc: split into several profiles, each under 4 MiB, totals kept.
nbig=$(pyq "$PY_OUT" 'sum(len(s["samples"]) for r in reqs for s in r["series"] if s["labels"]["service_name"] == "bigsvc")')
[ "$nbig" -ge 2 ] || fail "the ${big_len}-byte profile arrived as $nbig profile(s), want a split"
maxsize=$(pyq "$PY_OUT" 'max(smp["size"] for r in reqs for s in r["series"] if s["labels"]["service_name"] == "bigsvc" for smp in s["samples"])')
[ "$maxsize" -le $((4 << 20)) ] || fail "a piece is $maxsize bytes"
got=$(totals "$PY_OUT" bigsvc)
[ "$got" = "$big_n $big_c" ] || fail "bigsvc totals $got over $nbig pieces, pushed $big_n $big_c"
grep -q 'msg="profile split for Pyroscope' "$SC_LOG" || fail "the split is not logged"

metrics | grep -q -- "$SECRET" && fail "the basic-auth password appears in /metrics"
stop_sidecar
grep -q -- "$SECRET" "$SC_LOG" && fail "the basic-auth password appears in the sidecar log"

# The double's checks can fail: no tenant/auth, and a bad label name, get 400.
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/proto' \
  -H 'Connect-Protocol-Version: 1' --data-binary '' "$PY_URL/push.v1.PusherService/Push")
[ "$code" = 400 ] || fail "stand-in accepted a request without tenant/auth ($code)"
# PushRequest{series{labels{name:"a.b" value:"x"}}} in protobuf wire format.
printf '\x0a\x0a\x0a\x08\x0a\x03a.b\x12\x01x' >"$W/badlabel.bin"
code=$(curl -s -o /dev/null -w '%{http_code}' -u "alice:$SECRET" -H 'X-Scope-OrgID: team-a' \
  -H 'Content-Type: application/proto' -H 'Connect-Protocol-Version: 1' \
  --data-binary @"$W/badlabel.bin" "$PY_URL/push.v1.PusherService/Push")
[ "$code" = 400 ] || fail "stand-in accepted the label name a.b ($code)"
grep -q "invalid label name 'a.b'" "$PY_OUT/violations.txt" || fail "bad label not reported"
echo "ok: push API, labels, tenant + basic auth, $big_len-byte profile split into $nbig, totals match"
