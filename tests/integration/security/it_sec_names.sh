#!/usr/bin/env bash
# No service or label value makes a path outside the export directory or a
# key outside the bucket prefix, end to end: a table of hostile values pushed
# with `pushprof push --service V --label k=V --label V=x` into the real
# sidecar, exported by the file exporter and then by the S3 exporter to
# s3rver (behind the SigV4-checking testbed). Each push is either refused
# (exit 1: the protocol's limits) or exported exactly once, inside
# OUT/testnode/<one safe segment>/ or under s3://profiles/team/prod/testnode/;
# exports counted = files found there = pushes accepted, so an escaped file
# cannot hide. As root the sidecar runs as nobody, so a regression could not
# write into system directories.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../s3/lib_s3.sh"

long128=$(printf '../%.0s' {1..42})..
long_a=$(printf 'a%.0s' {1..5000})
vals=('../' '..' '.' '' '/' '//' '/etc/passwd' '../../../../tmp/pp-escape' '..\..\win' '%2e%2e'
  '%2e%2e%2f' '..%2f..%2f' '%252e%252e' 'a/../../b' './././' $'\x01\x02' $'line\r\nbreak' $'\x7f'
  $'\xff\xfe' $'\xc0\xae\xc0\xae' $'\u2215' $'\uff0e\uff0e' $'\u202e' 'ünïcødé' '~root' '-rf'
  '.hidden' '...' ' ' '*' "$long128" "$long_a")

if [ "$(id -u)" -eq 0 ]; then
  chmod 711 "$W"
  mkdir -p "$W/run" "$W/spool" "$OUT"
  chown nobody "$W/run" "$W/spool" "$OUT"
  printf '#!/bin/sh\nexec setpriv --reuid=nobody --regid=nogroup --clear-groups %s "$@"\n' \
    "$SIDECAR" >"$W/sidecar-as-nobody"
  chmod 755 "$W/sidecar-as-nobody"
  SIDECAR=$W/sidecar-as-nobody
  SOCK=$W/run/s.sock
fi

# totals_all FILE...: "samples count" over all files in one go tool pprof
# -raw run (it reads and merges every file; one run instead of 60).
totals_all() { pprof_totals_big "$@"; }

# push_all PREFIX: pushes every value as a service and as a label, one
# distinct profile each; sets accepted, refused and want ("samples count").
push_all() {
  local i=0 v rc pn pc tn=0 tc=0
  accepted=0 refused=0
  for v in "${vals[@]}"; do
    for role in service label; do
      i=$((i + 1))
      read -r pn pc < <("$GEN" profile "$W/n-$1-$i.pb" --seed $((i + 100)))
      chmod 644 "$W/n-$1-$i.pb"
      rc=0
      if [ $role = service ]; then
        "$CLI" push "$W/n-$1-$i.pb" --socket "$SOCK" --service "$v" --label "k=$v" \
          >/dev/null 2>"$W/push.err" || rc=$?
      else
        "$CLI" push "$W/n-$1-$i.pb" --socket "$SOCK" --service "$1-lbl-$i" --label "k=$v" \
          --label "$v=x" >/dev/null 2>"$W/push.err" || rc=$?
      fi
      case $rc in
        0) accepted=$((accepted + 1)) tn=$((tn + pn)) tc=$((tc + pc)) ;;
        1) refused=$((refused + 1)) ;;
        2) grep -q -- '--service\|--label' "$W/push.err" || fail "push #$i: $(cat "$W/push.err")"
          refused=$((refused + 1)) ;; # the client's own check
        *) fail "push $role #$i ($(printf %q "${v:0:40}")): exit $rc: $(cat "$W/push.err")" ;;
      esac
    done
  done
  want="$tn $tc"
}

# --- file exporter ---
start_sidecar file --batch-window 1
touch "$W/marker"
push_all f
[ "$accepted" -ge 40 ] || fail "only $accepted of $((accepted + refused)) hostile pushes accepted"
wait_metric pushprof_batches_exported_total "$accepted" 30
sleep 0.5
[ "$(metric pushprof_batches_exported_total)" -eq "$accepted" ] ||
  fail "$(metric pushprof_batches_exported_total) exports for $accepted pushes"
stop_sidecar
mapfile -t files < <(find "$W" -name '*.pb.gz' -newer "$W/marker")
[ "${#files[@]}" -eq "$accepted" ] || fail "${#files[@]} exported files found under $W, want $accepted"
outreal=$(realpath "$OUT")
for f in "${files[@]}"; do
  r=$(realpath "$f")
  seg=${r#"$outreal"/testnode/}
  [ "$seg" != "$r" ] || fail "exported outside $OUT/testnode: $f"
  svc=${seg%/*}
  [[ $svc =~ ^[A-Za-z0-9._-]+$ ]] && [ "$svc" != . ] && [ "$svc" != .. ] && [[ ${seg#*/} != */* ]] ||
    fail "not one safe segment below testnode: $seg"
done
got=$(totals_all "${files[@]}")
[ "$got" = "$want" ] || fail "file export totals $got, pushed $want"
echo "ok file: $accepted hostile pushes exported inside $OUT/testnode, $refused refused, totals $got"

# --- S3: every key under the bucket prefix, nothing in another bucket ---
start_s3rver profiles other
start_testbed --roles s3 --upstream "127.0.0.1:$S3RVER_PORT" --region eu-central-1 \
  --static-key "AKIDNAMES:SENTINEL-namesecret"
unset AWS_SESSION_TOKEN AWS_ROLE_ARN AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_ENDPOINT_URL_S3
export AWS_ACCESS_KEY_ID=AKIDNAMES AWS_SECRET_ACCESS_KEY=SENTINEL-namesecret AWS_REGION=eu-central-1
export AWS_ENDPOINT_URL=http://127.0.0.1:$(tb_port s3)
start_sidecar s3 --export s3://profiles/team/prod --batch-window 1
push_all s
wait_metric pushprof_batches_exported_total "$accepted" 40
stop_sidecar
python3 - "$W/tb.jsonl" "127.0.0.1:$S3RVER_PORT" "$accepted" <<'PY' || fail "S3 keys"
import json, sys, urllib.request, xml.etree.ElementTree as ET
log, s3, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
bad = []
puts = [json.loads(l) for l in open(log)]
puts = [r for r in puts if r.get("role") == "s3" and r.get("method") in ("PUT", "POST")]
for r in puts:
    k = r.get("key") or ""
    if r.get("bucket") != "profiles" or not k.startswith("team/prod/testnode/") or \
            any(p in ("", ".", "..") for p in k.split("/")):
        bad.append("request outside the prefix: %s %s" % (r.get("method"), r.get("path")))
def keys(bucket):
    x = ET.fromstring(urllib.request.urlopen("http://%s/%s?list-type=2" % (s3, bucket)).read())
    return [e.text for e in x.iter() if e.tag.endswith("Key")]
prof, other = keys("profiles"), keys("other")
if other:
    bad.append("objects in another bucket: %s" % other[:3])
for k in prof:
    parts = k.split("/")
    if len(parts) != 5 or parts[:3] != ["team", "prod", "testnode"]:
        bad.append("key not team/prod/testnode/<service>/<name>: %r" % k)
if len(prof) != want:
    bad.append("%d objects for %d accepted pushes" % (len(prof), want))
for b in bad:
    print("FAIL: " + b, file=sys.stderr)
print("s3: %d PUTs, %d objects under team/prod/testnode/, none elsewhere" % (len(puts), len(prof)))
sys.exit(1 if bad else 0)
PY
python3 "$T3/check_objects.py" --log "$W/tb.jsonl" --s3 "127.0.0.1:$S3RVER_PORT" --bucket profiles \
  --prefix team/prod/testnode/ --download "$W/dl" --no-violations || fail "object check failed"
mapfile -t dl < <(find "$W/dl" -name "*.pb.gz")
got=$(totals_all "${dl[@]}")
[ "$got" = "$want" ] || fail "S3 totals $got, pushed $want"
echo "ok s3: $accepted hostile pushes stored under s3://profiles/team/prod/testnode/, totals $got"
