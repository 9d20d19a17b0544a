#!/usr/bin/env bash
# A program built against pushprof.h 0.1 (pushprof_options without
# struct_size, hz first: wl_abi_v0.c) keeps working with the current library,
# linked (.so) and static (.a): it starts, profiles, stops, and its fields
# are honoured (hz as the period and sample count, output_path, the signal);
# an invalid hz is still refused naming pushprof_options.hz.
#   it_sdk_abi_v0.sh linked|static
. "$(dirname "$0")/../lib.sh"
bin=$WL/wl_abi_v0_$1
mkdir -p "$T/prof"

# run_v0 HZ SIGNAL-OFFSET: profile into $T/prof; sets rc.
run_v0() {
  rm -f "$T"/prof/*
  rc=0
  "$bin" "$T/prof/v0-%p.pb.gz" "$1" "$2" >"$T/out" 2>"$T/err" || rc=$?
}

# check_v0 HZ: the profile has HZ's period, samples for cpu x HZ and the
# signal the program asked for.
check_v0() {
  [ "$rc" -eq 0 ] || fail "wl_abi_v0 exited $rc: $(cat "$T/out" "$T/err")"
  local prof cpu sig
  prof=$(the_profile)
  cpu=$(out_value cpu_seconds)
  sig=$(out_value signal)
  "${CHECK[@]}" "$prof" --value samples/count --expect-total "$(calc "$cpu*$1")":15 \
    --expect-function '^abi_v0_spin$' >"$T/report.json" || fail "hz $1: profile"
  python3 - "$T/report.json" "$1" "$sig" <<'PY' || fail "hz $1: period or signal"
import json, sys
r, hz, sig = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
assert r["period"] == 10**9 // hz, "period %s, want %d" % (r["period"], 10**9 // hz)
want = "on signal %s" % sig
assert any(c.endswith(want) for c in r["comments"]), "no comment ending %r: %s" % (want, r["comments"])
PY
  echo "ok $1 Hz: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"])' "$T/report.json") samples in ${cpu}s, signal $sig"
}

run_v0 250 2
check_v0 250
run_v0 0 -1 # hz and signal unset: the defaults
check_v0 100
run_v0 5000 -1
[ "$rc" -eq 3 ] || fail "hz 5000: exit $rc, want 3 (start refused): $(cat "$T/out" "$T/err")"
grep -q '^rc=-1$' "$T/out" || fail "hz 5000: $(cat "$T/out")"
grep -q 'pushprof_options.hz="5000"' "$T/err" || fail "hz 5000: stderr $(cat "$T/err")"
echo "ok hz 5000 refused: $(cat "$T/err")"
echo "pass ($1)"
