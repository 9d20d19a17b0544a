#!/usr/bin/env bash
# Nothing is interrupted: a program that makes blocking calls with timeouts
# (sleep, usleep, nanosleep, clock_nanosleep, poll, ppoll, select,
# epoll_wait, a read and a recv on a socket, a condition variable, a
# semaphore) while two threads burn CPU, under every profile type at once,
# counts no call that came back early or with another result or errno; the
# off-CPU profile holds the waits it made.
#   it_wait_eintr.sh preload|linked
. "$(dirname "$0")/../lib.sh"
mode=$1
mkdir -p "$T/prof"
PRELOAD=$PRELOAD:$HEAP_LIB:$WAIT_LIB
export PUSHPROF_OUTPUT="$T/prof/e-%t.pb.gz" PUSHPROF_PROFILES=cpu,heap,offcpu,lock PUSHPROF_HZ=250
# Linked programs and sanitizer builds have no heap interposers in front of malloc.
[ "$mode" = linked ] || [ -n "$SAN_RUNTIME" ] && export PUSHPROF_PROFILES=cpu,offcpu,lock
run_workload "$mode" wl_wait_eintr 10
calls=$(out_value calls)
early=$(out_value early)
[ "$calls" -ge 100 ] || fail "only $calls calls made"
[ "$early" -eq 0 ] || fail "$early of $calls calls came back early: $(grep ^early "$T/out")"
"${CHECK[@]}" "$T/prof/e-offcpu.pb.gz" --value delay/nanoseconds \
  --expect-function '^main$' --expect-function '^(nanosleep|__GI___nanosleep|main)$' >"$T/off.json" ||
  fail "off-CPU profile: $(cat "$T/off.json")"
waited=$(python3 -c "import json; print(int(json.load(open('$T/off.json'))['cum'].get('main', 0)))")
# 10 rounds of 12 waits of 5 ms and 2 sleeps of 1 s: 2.6 s in main.
[ "$waited" -gt 2000000000 ] || fail "main waited $waited ns by the profile, want about 2.6 s"
echo "pass ($mode): $calls calls, none early; main waited $waited ns by the profile"
