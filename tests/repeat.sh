#!/usr/bin/env bash
# Runs ctest tests again and again, optionally beside a CPU hog, and prints
# each test's pass count and the figure line each run printed, so a memory,
# time or count bound can be judged by its distribution, not by one run.
#   bash tests/repeat.sh --build DIR [--runs N] [--hog] [--label L] [--figure REGEX] [TEST...]
# --hog keeps one core busy (a shell loop) for the whole run, as a second
# test does when CI runs two at once. --label adds every test carrying the
# ctest label L (stat: the statistical and timed checks). --figure picks
# the line of each run's output to keep (default: the last line that starts
# with "pass", "ok:" or "outage:"). Runs round by round (each test once a
# round) and prints one table row per test (test, runs, passes, the
# figure's spread) at the end, or when interrupted; exits 0: read it.
set -euo pipefail
build= runs=20 hog= label= figure='^(pass|ok:|outage:)'
tests=()
while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --runs) runs=$2; shift ;;
    --hog) hog=1 ;;
    --label) label=$2; shift ;;
    --figure) figure=$2; shift ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    *) tests+=("$1") ;;
  esac
  shift
done
[ -n "$build" ] || { sed -n '2,12p' "$0" >&2; exit 2; }
if [ -n "$label" ]; then
  # ctest -N lists "  Test #12: name"; the fixtures' setup and cleanup
  # (it_sec_log_*) come along with any test and are not ours to count.
  while read -r t; do tests+=("$t"); done < <(ctest --test-dir "$build" -N -L "^${label}\$" |
    sed -n 's/^ *Test *#[0-9]*: *//p' | grep -v '^it_sec_log_')
fi
[ ${#tests[@]} -gt 0 ] || { echo "repeat.sh: no test named or labelled ${label:-}" >&2; exit 2; }
hog_pid=
if [ -n "$hog" ]; then
  (while :; do :; done) &
  hog_pid=$!
fi
out=$(mktemp -d /tmp/pushprof-repeat.XXXXXX)
declare -A pass done_runs
# table: one row per test from what ran so far (also when interrupted).
table() {
  echo
  echo "| test | runs | passes | deviations from the truth (min..max) |"
  echo "|---|---|---|---|"
  for t in "${tests[@]}"; do
    [ "${done_runs[$t]:-0}" -gt 0 ] || continue
    # The spread of each run's deviations from its truth, as stat_bound
    # printed them ("(+1.2%)").
    spread=$(cat "$out/$t".*.log 2>/dev/null | grep -oE '\([+-][0-9.]+%\)' | tr -d '()%' | sort -g |
      sed -n '1p;$p' | paste -sd' ' | awk 'NF { printf "%+.1f%%..%+.1f%%", $1, $NF }' || true)
    printf '| %s | %d | %d | %s |\n' "$t" "${done_runs[$t]}" "${pass[$t]:-0}" "${spread:--}"
  done
  echo "(logs in $out${hog:+; beside a CPU hog})"
}
trap '[ -z "$hog_pid" ] || kill "$hog_pid" 2>/dev/null || true' EXIT
trap 'table; exit 130' INT TERM
# Round by round, every test once per round: an interrupted census still
# gives every test the same number of runs, give or take one.
for i in $(seq "$runs"); do
  for t in "${tests[@]}"; do
    if ctest --test-dir "$build" -R "^${t}\$" -V >"$out/$t.$i.raw" 2>&1; then
      pass[$t]=$((${pass[$t]:-0} + 1))
      r=pass
    else
      r=FAIL
    fi
    done_runs[$t]=$((${done_runs[$t]:-0} + 1))
    # -V prefixes each output line with its test's number: keep this test's.
    num=$(sed -n "s/.*Test *#\([0-9]*\): ${t} .*/\1/p" "$out/$t.$i.raw" | head -1)
    sed -n "s/^${num:-x}: //p" "$out/$t.$i.raw" >"$out/$t.$i.log"
    line=$(grep -E "$figure" "$out/$t.$i.log" | tail -1 || true)
    [ "$r" = pass ] || line=$(grep -E 'FAIL' "$out/$t.$i.log" | head -1 || true)
    printf '%s run %2d %s  %s\n' "$t" "$i" "$r" "$line"
  done
done
table
