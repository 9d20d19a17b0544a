#!/usr/bin/env bash
# Debian's GNU sort (stripped, no frame pointers) under LD_PRELOAD with the
# default signal, SIGPROF. sort installs a cleanup handler for SIGPROF (among
# other signals) once it runs, after profiling started; that handler removes
# its temporary files and re-raises the signal with the default action. The
# SDK's sigaction/signal interposition keeps our handler and makes sort's the
# one other senders' SIGPROFs go to, so: sort exits 0 with correct output,
# is profiled, and a SIGPROF sent from outside still reaches sort's handler
# (sort dies of it, as it would with no profiler).
# Samples: at least 0.85 of the sampled CPU time x 100 Hz (~70 samples, 3
# standard deviations), where the sampled CPU is the process's CPU clock
# over the profile's window less the SDK's own threads', as the profile's
# comment states it; that figure is checked against sort's CPU time from
# outside (getrusage of the same run: at most that, at least half of a run
# without the SDK). sort's CPU time varies by 20% from run to run under
# the ASan runtime, so a floor from another run's CPU failed 1 run in 3.
. "$(dirname "$0")/../lib.sh"
command -v sort >/dev/null || fail "sort (coreutils) is not installed"
mkdir -p "$T/prof"
export ASAN_OPTIONS=$HOST_ASAN # sort and python3 are not ours to leak-check
python3 -c "
import random
r = random.Random(7)
with open('$T/in.txt', 'w') as f:
    f.writelines('%d\n' % r.randrange(10**9) for _ in range(1500000))
"
# run_sort PRELOAD OUT IN: runs sort with LD_PRELOAD=PRELOAD; prints its
# exit status and CPU seconds.
run_sort() {
  LD_PRELOAD=$1 PUSHPROF_OUTPUT="$T/prof/sort-%p.pb.gz" python3 - "${@:2}" <<'PY'
import os, resource, subprocess, sys
out = open(sys.argv[1], 'w')
p = subprocess.Popen(['sort', '-n', '--parallel=4', '-S', '20M', sys.argv[2]], stdout=out)
rc = p.wait()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(rc, ru.ru_utime + ru.ru_stime)
PY
}
# python3 itself runs under the SDK too: its own profile goes to a
# different %p; only sort's is checked below.
read -r rc0 cpu < <(run_sort "$SAN_RUNTIME" "$T/out0.txt" "$T/in.txt")
[ "$rc0" -eq 0 ] || fail "sort exited with $rc0 without the SDK"
read -r rc cpu1 < <(run_sort "$PRELOAD" "$T/out.txt" "$T/in.txt")
echo "sort exited $rc after ${cpu1}s of CPU (${cpu}s without the SDK)"
[ "$rc" -eq 0 ] || fail "sort exited with $rc under the SDK (-27: killed by SIGPROF)"
python3 -c "
a = [int(x) for x in open('$T/in.txt')]
b = [int(x) for x in open('$T/out.txt')]
assert b == sorted(a), 'sort output is wrong'
" || fail "sort's output is not the sorted input"
prof=""
for f in "$T"/prof/sort-*.pb.gz; do
  go tool pprof -raw "$f" 2>/dev/null | grep -Eq "^1: .* /(usr/)?bin/sort " && prof=$f
done
[ -n "$prof" ] || fail "no profile of sort in $T/prof: $(ls "$T/prof")"
# Names as perf and gdb print them: __libc_start_main, not
# __libc_start_main@@GLIBC_2.34 as glibc's .symtab has it.
"${CHECK[@]}" "$prof" --value samples/count --forbid-function '@' \
  --expect-function '^__libc_start_main$' >"$T/report.json"
python3 - "$T/report.json" "$cpu" "$cpu1" <<'PY' || fail "sort's samples do not match its CPU time"
import json, re, sys
from pprof_check import stat_bound
r = json.load(open(sys.argv[1]))
base, outside = float(sys.argv[2]), float(sys.argv[3])
m = [re.search(r"\((\d+) signals in ([0-9.]+) CPU s", c) for c in r["comments"]]
m = [x for x in m if x]
if not m:
    sys.exit("no sampled-CPU comment in %s" % r["comments"])
sampled = float(m[0].group(2))
total = r["total"]["samples/count"]
print("samples %d for %.3f s sampled CPU (sort: %.3f s with the SDK, %.3f s without)"
      % (total, sampled, outside, base))
ok = True
# The SDK's window is inside the run sort's rusage measured: not more, and
# not less than half (what runs before the start and after the cut).
if not 0.5 * outside <= sampled <= outside + 0.01:
    print("FAIL sampled CPU %.3f s is not within [%.3f, %.3f]" % (sampled, 0.5 * outside, outside))
    ok = False
good, line = stat_bound(total, sampled * 100, 0.15, side="low", what="samples at 100 Hz")
print(("ok   " if good else "FAIL ") + line)
ok = ok and good
sys.exit(0 if ok else 1)
PY

# A SIGPROF from outside is sort's: its handler runs and it dies of SIGPROF.
mkfifo "$T/fifo"
LD_PRELOAD=$PRELOAD PUSHPROF_OUTPUT="$T/prof/killed-%p.pb.gz" sort "$T/fifo" >/dev/null &
pid=$!
exec 3>"$T/fifo" # sort is now blocked reading, its handlers installed
sleep 0.5
kill -PROF "$pid"
rc=0
wait "$pid" || rc=$?
exec 3>&-
[ "$rc" -eq 155 ] || fail "sort sent SIGPROF from outside exited $rc, expected 155 (died of SIGPROF)"
echo "pass"
