#!/usr/bin/env bash
# Runs ctest tests again and again, optionally beside a CPU hog, and prints
# each test's pass count and the figure line each run printed, so a memory,
# time or count bound can be judged by its distribution, not by one run.
#   bash tests/repeat.sh --build DIR [--runs N] [--hog] [--label L] [--figure REGEX] [TEST...]
# --hog keeps one core busy (a shell loop) for the whole run, as a second
# test does when CI runs two at once. --label adds every test carrying the
# ctest label L (stat: the statistical and timed checks). --figure picks
# the line of each run's output to keep (default: the last line that starts
# with "pass", "ok:" or "outage:"). Prints one table row per test (test,
# runs, passes, the figure's spread) at the end; exits 0: read the table.
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
trap '[ -z "$hog_pid" ] || kill "$hog_pid" 2>/dev/null || true' EXIT
out=$(mktemp -d /tmp/pushprof-repeat.XXXXXX)
: >"$out/table"
for t in "${tests[@]}"; do
  pass=0
  for i in $(seq "$runs"); do
    if ctest --test-dir "$build" -R "^${t}\$" -V >"$out/$t.$i.raw" 2>&1; then
      pass=$((pass + 1))
      r=pass
    else
      r=FAIL
    fi
    # -V prefixes each output line with its test's number: keep this test's.
    num=$(sed -n "s/.*Test *#\([0-9]*\): ${t} .*/\1/p" "$out/$t.$i.raw" | head -1)
    sed -n "s/^${num:-x}: //p" "$out/$t.$i.raw" >"$out/$t.$i.log"
    line=$(grep -E "$figure" "$out/$t.$i.log" | tail -1 || true)
    [ "$r" = pass ] || line=$(grep -E 'FAIL' "$out/$t.$i.log" | head -1 || true)
    printf '%s run %2d %s  %s\n' "$t" "$i" "$r" "$line"
  done
  echo "== $t: $pass of $runs passed${hog:+ beside a CPU hog} (logs in $out)"
  # The spread of each run's deviations from its truth, as stat_bound
  # printed them ("(+1.2%)"), or of the shares' points.
  spread=$(cat "$out/$t".*.log | grep -oE '\([+-][0-9.]+%\)' | tr -d '()%' | sort -g |
    sed -n '1p;$p' | paste -sd' ' | awk 'NF { printf "%+.1f%%..%+.1f%%", $1, $NF }')
  printf '| %s | %d | %d | %s |\n' "$t" "$runs" "$pass" "${spread:--}" >>"$out/table"
done
echo
echo "| test | runs | passes | deviations from the truth (min..max) |"
echo "|---|---|---|---|"
cat "$out/table"
