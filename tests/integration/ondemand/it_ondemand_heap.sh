#!/usr/bin/env bash
# On-demand heap profile: POST /profile/heap answers at once with the live
# heap of the running process (64 MiB kept by keep_live, sampled every
# 64 KiB: ~1,000 samples, so within 10%), in Go's heap layout; the snapshot
# leaves the continuous heap window alone (its push at exit still counts
# keep_live's allocations).
#   it_ondemand_heap.sh preload|linked
. "$(dirname "$0")/../lib.sh"
mode=$1
PRELOAD=$PRELOAD_HEAP # the SDK and libpushprof_heap.so
[ -n "$SAN_RUNTIME" ] && { echo "skip: a sanitizer's malloc comes first (see it_heap_sites)"; exit 77; }
start_sidecar odheap
api=http://127.0.0.1:$METRICS_PORT/profile/heap
export PUSHPROF_SOCKET=$SOCK PUSHPROF_UPLOAD_PERIOD=60 PUSHPROF_SERVICE=odheap \
  PUSHPROF_PROFILES=cpu,heap PUSHPROF_HEAP_RATE=65536
run_workload "$mode" wl_od_heap 6 &
wl=$!
wait_count subscribers 1 10 sh -c "curl -sf $api | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"subscribers\"])'"
for _ in $(seq 100); do grep -q true_live "$T/out" 2>/dev/null && break; sleep 0.05; done
live=$(out_value true_live)
[ -n "$live" ] || fail "the workload did not build its live heap"
t0=$(date +%s.%N)
code=$(curl -s -o "$W/heap.pb" -w '%{http_code}' -X POST -d '{"archive": true}' "$api")
t1=$(date +%s.%N)
[ "$code" = 200 ] || fail "POST /profile/heap answered $code: $(cat "$W/heap.pb")"
python3 -c "import sys; e=$t1-$t0; print('answered in %.2f s' % e); sys.exit(0 if e < 2 else 1)" ||
  fail "the heap answer took over 2 s"
[ "$(head -c2 "$W/heap.pb" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "archive: true did not gzip"
"${CHECK[@]}" "$W/heap.pb" --value inuse_space/bytes --by self --shares keep_live \
  --min-attributed-value "$(calc "int($live*0.9)")" >"$W/heap.json"
python3 - "$W/heap.json" "$live" <<'PY' || fail "the live heap is off: $(head -c 600 "$W/heap.json")"
import json, sys
r, live = json.load(open(sys.argv[1])), int(sys.argv[2])
assert r["sample_types"] == ["alloc_objects/count", "alloc_space/bytes", "inuse_objects/count",
                             "inuse_space/bytes"], r["sample_types"]
got = r["self"].get("keep_live", 0)
print("keep_live inuse %.1f MiB of %.1f" % (got / 2**20, live / 2**20))
assert abs(got - live) <= 0.10 * live, got
PY
wait $wl || fail "the workload failed"
stop_sidecar
prof=$(find "$OUT" -name '*heap*.pb.gz' | head -1)
[ -n "$prof" ] || fail "no continuous heap profile exported: $(find "$OUT")"
"${CHECK[@]}" "$prof" --value alloc_space/bytes --by self --shares keep_live \
  --min-attributed-value "$(calc "int($live*0.9)")" >/dev/null ||
  fail "the continuous heap window lost keep_live's allocations to the snapshot"
echo "pass ($mode)"
