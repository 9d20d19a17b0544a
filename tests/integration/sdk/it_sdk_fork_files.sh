#!/usr/bin/env bash
# Standalone files of forked children (PUSHPROF_OUTPUT with %p, no
# sidecar): wl_fork_children forks two children that burn 1 s of CPU in
# child_work() (200 Hz: ~200 samples, 4.5 Poisson sigma 32%) and end by
# exit(), by returning from main, after forking a grandchild of their own,
# and in the preload library (where the handlers are on by default) by
# _exit() or killed by SIGTERM, SIGINT or SIGQUIT left at their default
# action (each must still die of its signal, its profile written first).
# Each child and grandchild writes its own file, named by its pid, holding
# its own function and none of its parent's, with child_work's samples
# within 10% (or 4.5 Poisson sigma) of the CPU wait4 measured for it x
# 200 Hz. A child that exits before its first sample writes nothing. The
# parent writes its own file as always. Preloaded, a child that execs (the
# same pid, a second program) keeps its file under its pid and the exec'd
# program writes beside it with ".exec1" put in: each holds its own
# program's function, and both together the CPU wait4 measured.
#   it_sdk_fork_files.sh preload|linked
. "$(dirname "$0")/../lib.sh"
mode=$1
mkdir -p "$T/prof"
# The exit timeout is not what this tests: under ASan on a loaded machine
# building and writing a profile at exec has taken over the 2 s default.
export PUSHPROF_OUTPUT="$T/prof/fk-%p.pb.gz" PUSHPROF_HZ=200 PUSHPROF_EXIT_TIMEOUT_MS=20000
hows="exit return grandchild"
[ "$mode" = preload ] && hows="$hows _exit SIGTERM SIGINT SIGQUIT"
for how in $hows quick; do
  rm -f "$T"/prof/*
  run_workload "$mode" wl_fork_children "$how" 2 1
  files=$(ls "$T/prof")
  # The parent's own file, then one per child (and grandchild) that worked.
  kids=$(sed -n 's/^\(grand\)\{0,1\}child=\([0-9]*\) .*/\2/p' "$T/out")
  want=$((1 + $(wc -w <<<"$kids")))
  [ "$how" = quick ] && want=1
  [ "$(wc -w <<<"$files")" -eq "$want" ] ||
    fail "$how: want $want files (the parent's and one per working child), got: $files ($(cat "$T/out"))"
  ls "$T"/prof/*.tmp.* >/dev/null 2>&1 && fail "$how: a temporary file was left behind"
  [ "$how" = quick ] && { echo "ok $how: only the parent's file ($files)"; continue; }
  while read -r who pid cpu; do
    f=$T/prof/fk-$pid.pb.gz
    [ -s "$f" ] || fail "$how: no file for $who $pid: $files"
    fn=child_work
    [ "$who" = grandchild ] && fn=grandchild_work
    "${CHECK[@]}" "$f" --value samples/count --shares "$fn" --expect-attributed "$(calc "$cpu*200")":10 \
      --forbid-function '^parent_work$' --quiet || fail "$how: $who $pid's profile ($cpu CPU s)"
  done < <(sed -n 's/^\(child\|grandchild\)=\([0-9]*\) cpu_seconds=\(.*\)/\1 \2 \3/p' "$T/out")
  echo "ok $how: $(wc -w <<<"$files") files, each child's own"
done
if [ "$mode" = preload ]; then
  rm -f "$T"/prof/*
  run_workload "$mode" wl_fork_children exec 2 1
  files=$(ls "$T/prof")
  [ "$(wc -w <<<"$files")" -eq 5 ] || fail "exec: want 5 files (the parent's, two per child), got: $files"
  while read -r pid cpu; do
    pre=$T/prof/fk-$pid.pb.gz post=$T/prof/fk-$pid.exec1.pb.gz
    [ -s "$pre" ] && [ -s "$post" ] || fail "exec: child $pid's two files are not both there: $files"
    python3 - "$pre" "$post" "$cpu" <<'PY' || fail "exec: child $pid's two profiles"
import sys
from pprof_check import parse_raw, run_pprof, summarize, stat_bound
pre, post = (summarize(parse_raw(run_pprof(f))) for f in sys.argv[1:3])
ok = True
for name, rep, mine, other in (("pre-exec", pre, "child_work", "exec_work"),
                               ("exec'd", post, "exec_work", "child_work")):
    if not rep["cum"].get(mine) or rep["cum"].get(other):
        print("FAIL the %s profile holds %s %s, %s %s" % (name, mine, rep["cum"].get(mine), other,
                                                         rep["cum"].get(other)))
        ok = False
n = pre["total"]["samples/count"] + post["total"]["samples/count"]
good, line = stat_bound(n, float(sys.argv[3]) * 200, 0.10, what="both programs' samples")
print(("ok   " if good else "FAIL ") + line)
sys.exit(0 if ok and good else 1)
PY
  done < <(sed -n 's/^child=\([0-9]*\) cpu_seconds=\(.*\)/\1 \2/p' "$T/out")
  echo "ok exec: each child's two programs in two files"
fi
echo "pass ($mode)"
