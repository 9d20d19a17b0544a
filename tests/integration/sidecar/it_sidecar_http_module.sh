#!/usr/bin/env bash
# The HTTP exporters live in pushprof-sidecar-http.so, loaded only when an
# --export URL needs them (sidecar/exporters/http_module.h):
#  - exporting to file:// only, the sidecar maps neither the module nor
#    libcurl, libxml2 or libssl, and still exports (jansson it maps: the
#    on-demand profile API reads and writes JSON);
#  - with an s3:// target it maps them, and the module logs and counts
#    through the sidecar's own log and /metrics (a refused connection shows
#    as an export failure of class "connection");
#  - a sidecar copied without its module still exports to file://, and for
#    s3://, gs://, otlp it exits 2 at start with one line naming the module,
#    where it looked and the fix; a broken or foreign file in the module's
#    place is reported the same way, never a crash.
source "$(dirname "$0")/../lib.sh"

HTTP_ONLY='pushprof-sidecar-http\.so|/libcurl[.-]|/libxml2\.|/libssl\.'

# push_one NAME SEED: one generated profile through the CLI.
push_one() {
  "$GEN" profile "$W/$1.pb.gz" --seed "$2" --gzip >/dev/null
  "$CLI" push "$W/$1.pb.gz" --socket "$SOCK" --service "$1" >/dev/null || fail "push $1 failed"
}

# --- file:// only: nothing of the HTTP exporters is mapped.
start_sidecar file --batch-window 1
push_one filesvc 3
wait_files "$OUT" 1 20 || fail "file:// export did not arrive"
mapped=$(grep -oE "/[^ ]*($HTTP_ONLY)[^ ]*" "/proc/$SC_PID/maps" | sort -u || true)
[ -z "$mapped" ] || fail "a file://-only sidecar maps HTTP-exporter libraries: $mapped"
echo "file:// only: $(grep VmRSS "/proc/$SC_PID/status"), no HTTP libraries mapped"
stop_sidecar

# --- s3:// (to a closed port): the module and its libraries are mapped, and
# its failures reach the sidecar's log and counters.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
unset AWS_SESSION_TOKEN AWS_ROLE_ARN AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_ENDPOINT_URL_S3 AWS_ENDPOINT_URL
export AWS_ACCESS_KEY_ID=AKIDMODULE AWS_SECRET_ACCESS_KEY=SENTINEL-modulesecret AWS_REGION=us-east-1
export PUSHPROF_TEST_BACKOFF_MS=100
start_sidecar s3 --export "s3://profiles/m" --s3-endpoint "http://127.0.0.1:$port" \
  --export "file://$OUT" --batch-window 1 --http-timeout 2 --shutdown-grace 1
maps=$(cat "/proc/$SC_PID/maps")
for lib in " $(realpath "$B/sidecar/pushprof-sidecar-http.so")" /libcurl /libxml2 /libssl; do
  grep -q "$lib" <<<"$maps" || fail "with an s3:// target, $lib is not mapped"
done
push_one s3svc 4
wait_metric 'pushprof_export_failures_by_class_total{reason="connection"}' 1 20
grep -q 'level=warn.*127.0.0.1' "$SC_LOG" || fail "the module's export failure is not in the log"
grep -q SENTINEL "$SC_LOG" && fail "secret in the log"
stop_sidecar

# --- the sidecar without its module.
lone=$W/lone
mkdir -p "$lone"
cp "$SIDECAR" "$lone/"
SIDECAR=$lone/pushprof-sidecar
OUT=$W/out-lone
rm -rf "$W/spool"
start_sidecar lone-file --batch-window 1
push_one lonesvc 5
wait_files "$OUT" 1 20 || fail "file:// export without the module did not arrive"
stop_sidecar

# refused LOG URL WHY: the sidecar exits 2 at start, one line (ASan builds
# add a mallopt warning) naming the module, WHY and the fix.
refused() {
  local log=$W/sidecar-$1.log rc=0
  timeout 10 "$SIDECAR" --socket "$W/r.sock" --spool "$W/spool-r" --export "$2" 2>"$log" || rc=$?
  [ $rc -eq 2 ] || fail "$1: exit $rc, want 2: $(cat "$log")"
  [ "$(grep -vc 'msg="mallopt failed' "$log")" -eq 1 ] || fail "$1: want one line: $(cat "$log")"
  grep -q "^pushprof-sidecar: --export $2: the .* exporter needs pushprof-sidecar-http.so: $3; reinstall pushprof so that it is beside pushprof-sidecar or in .*, or export to file:// only\$" "$log" ||
    fail "$1: message does not name the module, why ($3) and the fix: $(cat "$log")"
}
# Not found: unless a module is installed where the build would install it,
# which the sidecar then uses.
rc=0
timeout 10 "$SIDECAR" --socket "$W/r.sock" --spool "$W/spool-r" --export s3://profiles/m \
  --s3-endpoint "http://127.0.0.1:$port" 2>"$W/sidecar-probe.log" &
probe=$!
for _ in $(seq 100); do
  grep -qE 'sidecar started|needs pushprof-sidecar-http.so' "$W/sidecar-probe.log" && break
  kill -0 $probe 2>/dev/null || break
  sleep 0.05
done
if grep -q 'msg="sidecar started"' "$W/sidecar-probe.log"; then
  used=$(grep -o ' /.*/pushprof-sidecar-http\.so$' "/proc/$probe/maps" | sort -u)
  kill -TERM $probe
  wait $probe || true
  [ -n "$used" ] && [[ $used != " $lone/"* ]] || fail "lone sidecar started with module '$used'"
  echo "note: an installed module was found, 'not found' not checked:$used"
else
  wait $probe || rc=$?
  [ $rc -eq 2 ] || fail "lone sidecar, s3://: exit $rc, want 2: $(cat "$W/sidecar-probe.log")"
  for url in s3://profiles/m gs://bucket/p otlp "pyroscope+http://127.0.0.1:$port"; do
    refused "missing-${url%%:*}" "$url" "not found in $lone, .*"
  done
fi

# A file that is not a shared object, and a shared object that is not the module.
printf 'not an ELF file\n' >"$lone/pushprof-sidecar-http.so"
refused garbage s3://profiles/m "dlopen: $lone/pushprof-sidecar-http.so: .*"
libz=$(awk '/libz\.so\.1 / {print $NF; exit}' < <(ldconfig -p)) # (no pipe: pipefail)
[ -f "$libz" ] || fail "ldconfig does not know libz.so.1"
cp "$libz" "$lone/pushprof-sidecar-http.so"
refused foreign otlp "$lone/pushprof-sidecar-http.so: has no pushprof_sidecar_http_module (not a pushprof-sidecar HTTP module)"
echo "ok"
