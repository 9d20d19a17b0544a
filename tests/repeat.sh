#!/usr/bin/env bash
# Runs ctest tests again and again, optionally beside a CPU hog, and prints
# each test's pass count and the figure line each run printed, so a memory,
# time or count bound can be judged by its distribution, not by one run.
#   bash tests/repeat.sh --build DIR [--runs N] [--hog] [--figure REGEX] TEST...
# --hog keeps one core busy (a shell loop) for the whole run, as a second
# test does when CI runs two at once. --figure picks the line of each run's
# output to keep (default: the last line that starts with "pass", "ok:" or
# "outage:"). Exits 0; read the table.
set -euo pipefail
build= runs=20 hog= figure='^(pass|ok:|outage:)'
tests=()
while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --runs) runs=$2; shift ;;
    --hog) hog=1 ;;
    --figure) figure=$2; shift ;;
    -h | --help) sed -n '2,9p' "$0"; exit 0 ;;
    *) tests+=("$1") ;;
  esac
  shift
done
[ -n "$build" ] && [ ${#tests[@]} -gt 0 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
hog_pid=
if [ -n "$hog" ]; then
  (while :; do :; done) &
  hog_pid=$!
fi
trap '[ -z "$hog_pid" ] || kill "$hog_pid" 2>/dev/null || true' EXIT
out=$(mktemp -d /tmp/pushprof-repeat.XXXXXX)
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
done
