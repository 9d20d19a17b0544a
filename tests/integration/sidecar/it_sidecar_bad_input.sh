#!/usr/bin/env bash
# Bad input never disturbs the sidecar: each kind gets its error reply (or a
# timeout), is counted by reason in /metrics, and a valid push right after
# still succeeds.
source "$(dirname "$0")/../lib.sh"

start_sidecar a --batch-window 1 --read-timeout 1 --max-frame-bytes 1MiB
"$GEN" profile "$W/good.pb" --seed 3 >/dev/null
"$GEN" frame "$W/ok.frame" ok --seed 4
"$GEN" frame "$W/badproto.frame" badproto
"$GEN" frame "$W/badpprof.frame" badpprof

good_push() {
  "$CLI" push "$W/good.pb" --socket "$SOCK" --service after-bad >/dev/null ||
    fail "a valid push after $1 failed"
}

# expect CASE REPLY_REGEX METRIC_REASON -- rawclient args...
expect() {
  local what=$1 want=$2 reason=$3
  shift 4
  local before got
  before=$(rejected "$reason")
  got=$($RAW "$SOCK" "$@")
  echo "$what: $got"
  [[ $got =~ $want ]] || fail "$what: reply '$got' does not match '$want'"
  wait_metric "pushprof_pushes_rejected_total{reason=\"$reason\"}" $((before + 1)) 5
  good_push "$what"
}

# Reply codes: 1 INVALID_FRAME, 2 INVALID_PUSH, 3 INVALID_PPROF.
got=$($RAW "$SOCK" send "$W/ok.frame")
[[ $got =~ ^code=0\ .*push_id=.+ ]] || fail "raw valid frame: $got"
expect "random bytes" '^code=1 reason=.*magic' bad_magic -- random 4096
expect "bad magic" '^code=1 reason=.*magic' bad_magic -- badmagic "$W/ok.frame"
expect "4 GiB frame" '^code=1 reason=.*(large|limit)' frame_too_large -- huge
expect "truncated frame" '^code=1 reason=.*truncated' truncated_frame -- truncated "$W/ok.frame"
expect "invalid protobuf" '^code=2 ' invalid_push -- send "$W/badproto.frame"
expect "invalid pprof" '^code=3 ' invalid_pprof -- send "$W/badpprof.frame"
expect "silent client" '^(code=1 reason=.*timeout|closed)' read_timeout -- silent 5

# Over --max-frame-bytes with a real payload behind it.
"$GEN" frame "$W/big.frame" ok --samples 40000 --functions 5000
[ "$(stat -c %s "$W/big.frame")" -gt 1048576 ] || fail "big frame is not over 1 MiB"
expect "frame over the limit" '^code=1 reason=.*(large|limit)' frame_too_large -- send "$W/big.frame"

# Several frames on one connection, each acked.
python3 - "$SOCK" "$W/ok.frame" <<'PY' || fail "several frames on one connection"
import socket, struct, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
frame = open(sys.argv[2], "rb").read()
for i in range(3):
    if i == 2:
        # Idle 0.9 s, then 0.25 s to send: over 1 s since the last frame, but
        # the 1 s read timeout counts from the frame's first byte.
        time.sleep(0.9)
        s.sendall(frame[:100])
        time.sleep(0.25)
        s.sendall(frame[100:])
    else:
        s.sendall(frame)
    hdr = s.recv(12, socket.MSG_WAITALL)
    n = struct.unpack(">I", hdr[8:12])[0]
    body = s.recv(n, socket.MSG_WAITALL)
    # code OK (0) is omitted by proto3, so no field 1; push_id (field 4) present
    assert not body.startswith(b"\x08"), body
    assert b"\x22" in body, body
print("3 frames acked on one connection")
PY
# 300 random mutations of a valid frame (bytes flipped, cut, inserted, header
# bytes changed): every one is answered or closed, none crashes the sidecar.
python3 - "$SOCK" "$W/ok.frame" <<'PY' || fail "mutated frames"
import random, socket, struct, sys
path, frame = sys.argv[1], open(sys.argv[2], "rb").read()
rng = random.Random(1234)
seen = {}
for i in range(300):
    d = bytearray(frame)
    k = rng.randrange(4)
    if k == 0:
        for _ in range(rng.randint(1, 20)):
            d[rng.randrange(12, len(d))] = rng.randrange(256)
    elif k == 1:
        d = d[:rng.randrange(12, len(d))]
        d[8:12] = struct.pack(">I", len(d) - 12)
    elif k == 2:
        pos = rng.randrange(12, len(d))
        d[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        d[8:12] = struct.pack(">I", len(d) - 12)
    else:
        d[rng.randrange(0, 12)] = rng.randrange(256)
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(path)
    try:
        s.sendall(d)
        s.shutdown(socket.SHUT_WR)
        h = s.recv(12, socket.MSG_WAITALL)
        body = s.recv(struct.unpack(">I", h[8:12])[0], socket.MSG_WAITALL) if len(h) == 12 else b""
        code = body[1] if body.startswith(b"\x08") else (0 if h else "closed")
    except (ConnectionResetError, BrokenPipeError):
        code = "reset"
    seen[code] = seen.get(code, 0) + 1
    s.close()
print("mutated frames, replies by code:", seen)
assert set(seen) - {0, 1, 2, 3, "closed", "reset"} == set(), seen
PY
kill -0 "$SC_PID" || fail "sidecar died"
[ "$(metric pushprof_pushes_accepted_total)" -ge 12 ] || fail "accepted $(metric pushprof_pushes_accepted_total)"
stop_sidecar
echo "ok: every bad input refused, counted, and followed by a good push"
