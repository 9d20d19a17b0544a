#!/usr/bin/env bash
# The on-demand API's rules, on the real sidecar:
# - GET with nothing running, DELETE with nothing to stop (412), PUT (405);
# - bad bodies get 400 naming the field; a 20 KB body 413; slow bodies
#   neither hold the listener (GET answers at once beside them) nor stay
#   open past the idle timeout;
# - no matching process: 404 after the window, with the reason;
# - neon's own curl lines (POST with its JSON body, archive, GET, DELETE
#   that ends a pending POST early) against a preloaded Debian `sleep`;
# - a process that pushes without subscribing is listed as such;
# - pushprof profile, the command-line client;
# - off loopback: 403 without --http-token-file; with it, 401 without or
#   with a wrong token, 200 with the right one.
. "$(dirname "$0")/../lib.sh"
start_sidecar api
base=http://127.0.0.1:$METRICS_PORT
api=$base/profile/cpu
req() { # req METHOD BODY -> "code body"
  local code
  code=$(curl -s -o "$W/r.body" -w '%{http_code}' -X "$1" ${2:+-d "$2"} "$api")
  echo "$code $(cat "$W/r.body")"
}
expect() { # expect METHOD BODY CODE TEXT
  local got
  got=$(req "$1" "$2")
  [ "${got%% *}" = "$3" ] || fail "$1 $2: want $3, got $got"
  case $got in *"$4"*) ;; *) fail "$1 $2: the answer does not say \"$4\": $got" ;; esac
}
expect GET "" 200 '"running":false'
expect DELETE "" 412 'no cpu session is running'
expect PUT "" 405 'use POST'
expect POST 'not json' 400 'not valid JSON'
expect POST '[1]' 400 'must be a JSON object'
expect POST '{"bogus": 1}' 400 'unknown field \"bogus\"'
expect POST '{"sampling_frequency": 0}' 400 'sampling_frequency must be an integer 1..1000'
expect POST '{"sampling_frequency": 1001}' 400 'sampling_frequency must be an integer 1..1000'
expect POST '{"sampling_frequency": "99"}' 400 'sampling_frequency must be an integer'
expect POST '{"timeout_seconds": 301}' 400 'timeout_seconds must be an integer 1..300'
expect POST '{"archive": "yes"}' 400 'archive must be true or false'
expect POST '{"pid": -1}' 400 'pid must be an integer'
expect POST '{"labels": {"env": 1}}' 400 'labels.env must be a string'
expect POST '{"archive": true, "archive": false}' 400 'duplicate'
python3 -c 'print("{\"service\": \"" + "x" * 20000 + "\"}")' >"$W/big.json"
code=$(curl -s -o "$W/big.out" -w '%{http_code}' -X POST --data-binary @"$W/big.json" "$api")
[ "$code" = 413 ] || fail "a 20 KB body: $code $(cat "$W/big.out")"
curl -sf "$base/healthz" >/dev/null || fail "healthz after the oversized body"

# Five clients that send headers and a byte of a 100-byte body, then stall.
python3 - "$METRICS_PORT" "$api" >"$W/slow.out" 2>&1 <<'PY' &
import socket, subprocess, sys, time
port, api = int(sys.argv[1]), sys.argv[2]
socks = []
for _ in range(5):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /profile/cpu HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    socks.append(s)
time.sleep(0.3)
t = time.time()
out = subprocess.run(["curl", "-sf", api], capture_output=True, timeout=10)
took = time.time() - t
assert out.returncode == 0 and b'"running":' in out.stdout, out
assert took < 1.0, "GET beside five stalled bodies took %.2f s" % took
print("GET beside stalled bodies: %.3f s" % took)
t = time.time()
for s in socks:  # the idle timeout (10 s) closes them: recv sees the end
    s.settimeout(20)
    s.recv(1024)
print("stalled bodies closed after %.1f s" % (time.time() - t))
assert time.time() - t < 15
PY
slow=$!

t0=$(date +%s)
expect POST '{"timeout_seconds": 1, "service": "nobody"}' 404 'no profiled process matched service=nobody'
[ $(($(date +%s) - t0)) -ge 1 ] || fail "404 before the window ended"

# A Debian program, preloaded, idle in nanosleep (the SDK never signals it).
ASAN_OPTIONS=$HOST_ASAN PUSHPROF_SOCKET=$SOCK PUSHPROF_SERVICE=odapi PUSHPROF_UPLOAD_PERIOD=60 \
  LD_PRELOAD=$PRELOAD sleep 30 &
sleeper=$!
wait_count subscribers 1 10 sh -c "curl -sf $api | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"subscribers\"])'"
# neon's documented calls, with our address.
curl -X POST -H "Content-Type: application/json" \
  -d '{"sampling_frequency": 99, "timeout_seconds": 1, "archive": false}' "$api" -o "$W/profile.pb" -s
"${CHECK[@]}" "$W/profile.pb" >"$W/profile.json" || fail "neon's POST did not answer a pprof"
grep -q '"period": 10101010' "$W/profile.json" || fail "99 Hz not the profile's period: $(head -c 300 "$W/profile.json")"
curl -X POST -H "Content-Type: application/json" \
  -d '{"sampling_frequency": 99, "timeout_seconds": 1, "archive": true}' "$api" -o "$W/profile.pb.gz" -s
[ "$(head -c2 "$W/profile.pb.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "archive: true is not gzip"
"${CHECK[@]}" "$W/profile.pb.gz" >/dev/null || fail "the archive is not a pprof"
curl -X GET "$api" -s | grep -q '"running":false' || fail "neon's GET"
t0=$(date +%s.%N)
curl -X POST -H "Content-Type: application/json" -d '{"sampling_frequency": 99, "timeout_seconds": 30}' \
  "$api" -o "$W/stopped.pb" -s -w '%{http_code}' >"$W/stopped.code" &
post=$!
sleep 1
curl -X DELETE "$api" -s | grep -q '"stopped":true' || fail "neon's DELETE did not stop the session"
wait $post
t1=$(date +%s.%N)
[ "$(cat "$W/stopped.code")" = 200 ] || fail "the stopped POST answered $(cat "$W/stopped.code")"
python3 -c "import sys; sys.exit(0 if $t1 - $t0 < 5 else 1)" || fail "DELETE did not end the POST early"
"${CHECK[@]}" "$W/stopped.pb" >"$W/check.json"; grep -q 'stopped early by DELETE' "$W/check.json" || fail "the early answer does not say it was stopped"

# A process that starts during a window joins it for the rest of it.
curl -s -X POST -d '{"timeout_seconds": 3}' "$api" -o "$W/late.pb" -w '%{http_code}' >"$W/late.code" &
post=$!
sleep 1
ASAN_OPTIONS=$HOST_ASAN PUSHPROF_SOCKET=$SOCK PUSHPROF_SERVICE=odlate LD_PRELOAD=$PRELOAD sleep 10 &
late=$!
wait $post
[ "$(cat "$W/late.code")" = 200 ] || fail "the POST with a late joiner: $(cat "$W/late.code")"
curl -sf "$api" | python3 -c '
import json, sys
s = json.load(sys.stdin)
j = {p["service"]: p for p in s["joined"]}
assert j.get("odlate", {}).get("delivered") and j.get("odapi", {}).get("delivered"), s' ||
  fail "a process started during the window did not join it: $(curl -s "$api")"
"${CHECK[@]}" "$W/late.pb" >"$W/check.json"; grep -q '2 of 2 processes delivered' "$W/check.json" || fail "the late joiner's push is not in the answer"
kill "$late" 2>/dev/null || true

# A client that pushes without subscribing (pushprof push, or an older SDK).
"$CLI" push "$W/profile.pb" --socket "$SOCK" --service oldsdk >/dev/null || fail "pushprof push"
curl -sf "$api" | python3 -c 'import json,sys; s=json.load(sys.stdin); assert "oldsdk" in [p["service"] for p in s["not_subscribed"]], s' ||
  fail "the status does not list a process that pushes without subscribing"

# The command-line client.
"$CLI" profile --addr "127.0.0.1:$METRICS_PORT" --seconds 1 --hz 50 --service odapi -o "$W/cli.pb" >"$W/cli.out" ||
  fail "pushprof profile: $(cat "$W/cli.out")"
"${CHECK[@]}" "$W/cli.pb" >"$W/check.json"; grep -q '"period": 20000000' "$W/check.json" || fail "pushprof profile --hz 50"
rc=0
"$CLI" profile --addr "127.0.0.1:$METRICS_PORT" --seconds 1 --pid 1 -o "$W/none.pb" 2>"$W/none.err" || rc=$?
[ "$rc" = 1 ] && grep -q 'answered 404' "$W/none.err" || fail "pushprof profile with no match: rc $rc $(cat "$W/none.err")"
[ ! -e "$W/none.pb" ] || fail "pushprof profile wrote a file for an error"
kill "$sleeper" 2>/dev/null || true
wait "$sleeper" 2>/dev/null || true
wait $slow || fail "slow bodies: $(cat "$W/slow.out")"
cat "$W/slow.out"
stop_sidecar

# Off loopback: a token is needed.
start_sidecar open --metrics-addr 0.0.0.0:0
api=http://127.0.0.1:$METRICS_PORT/profile/cpu
expect GET "" 403 'need --http-token-file'
curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" >/dev/null || fail "/metrics needs no token"
stop_sidecar
printf 'sesame-%s\n' "$RANDOM$RANDOM" >"$W/token"
start_sidecar token --metrics-addr 0.0.0.0:0 --http-token-file "$W/token"
api=http://127.0.0.1:$METRICS_PORT/profile/cpu
expect GET "" 401 'bearer token'
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer wrong" "$api")
[ "$code" = 401 ] || fail "a wrong token: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$W/token")" "$api")
[ "$code" = 200 ] || fail "the right token: $code"
rc=0
"$CLI" profile --addr "127.0.0.1:$METRICS_PORT" --token-file "$W/token" --seconds 1 -o "$W/t.pb" 2>"$W/t.err" || rc=$?
[ "$rc" = 1 ] && grep -q 'answered 404' "$W/t.err" || fail "pushprof profile --token-file: rc $rc $(cat "$W/t.err")"
stop_sidecar
rc=0
: >"$W/empty"
"$SIDECAR" --socket "$SOCK" --spool "$W/spool" --metrics-addr 127.0.0.1:0 --http-token-file "$W/empty" 2>"$W/empty.err" || rc=$?
[ "$rc" = 2 ] && grep -q 'http-token-file.*empty' "$W/empty.err" || fail "an empty token file: rc $rc $(cat "$W/empty.err")"
echo pass
