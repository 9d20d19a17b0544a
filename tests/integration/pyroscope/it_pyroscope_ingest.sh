#!/usr/bin/env bash
# --pyroscope-api=ingest against the Pyroscope stand-in (a test double of
# the older POST /ingest API): name=SERVICE{labels} with dotted labels made
# valid, from/until, format=pprof, spyName, sampleRate from the CPU period,
# a multipart "profile" field holding a valid pprof, the bearer token read
# from a file and never logged.
source "$(dirname "$0")/lib_pyroscope.sh"

TOKEN=tok-SENTINEL-$RANDOM$RANDOM
printf '%s\n' "$TOKEN" >"$W/token"
start_standin ingest --bearer "$TOKEN" --tenant ops
PYROSCOPE_BEARER_TOKEN_FILE=$W/token PYROSCOPE_TENANT_ID=ops \
  start_sidecar ingest --export "pyroscope+$PY_URL/" --pyroscope-api ingest --batch-window 1

before=$(date +%s)
read -r n c < <("$GEN" profile "$W/in.pb" --seed 5 --samples 300)
"$CLI" push "$W/in.pb" --socket "$SOCK" --service billing --label region.name=eu-1 \
  --label 'odd=a,b}c' >/dev/null || fail "push"
wait_accepted "$PY_OUT" 1 30
no_violations "$PY_OUT"
after=$(date +%s)

[ "$(pyq "$PY_OUT" 'reqs[0]["path"].split("?")[0]')" = /ingest ] || fail "not the ingest path"
[ "$(pyq "$PY_OUT" 'reqs[0]["app"]')" = billing ] || fail "app $(pyq "$PY_OUT" 'reqs[0]["app"]')"
labels=$(pyq "$PY_OUT" 'reqs[0]["labels"]')
[ "$labels" = "{'odd': 'a_b_c', 'region_name': 'eu-1'}" ] || fail "ingest labels $labels"
[ "$(pyq "$PY_OUT" 'reqs[0]["spyName"]')" = pushprof ] || fail "spyName"
# gen_pprof profiles sample every 10 ms of CPU: 100 Hz.
[ "$(pyq "$PY_OUT" 'reqs[0]["sampleRate"]')" = 100 ] || fail "sampleRate $(pyq "$PY_OUT" 'reqs[0]["sampleRate"]')"
from=$(pyq "$PY_OUT" 'reqs[0]["from"]')
until=$(pyq "$PY_OUT" 'reqs[0]["until"]')
[ "$from" -ge $((before - 5)) ] && [ "$until" -le $((after + 5)) ] && [ "$from" -le "$until" ] ||
  fail "from=$from until=$until outside [$before, $after]"
got=$(totals "$PY_OUT" billing)
[ "$got" = "$n $c" ] || fail "ingested totals $got, pushed $n $c"
stop_sidecar
grep -q -- "$TOKEN" "$SC_LOG" && fail "the bearer token appears in the sidecar log"
grep -q 'api=ingest tenant=set auth=bearer' "$SC_LOG" || fail "start line does not say ingest/bearer"
echo "ok: ingest API with multipart profile, labels, times, sampleRate, bearer token + tenant"
