#!/usr/bin/env bash
# test_profbuild writes a real pprof (symbolized from its own binary, libc and
# a C++ helper); go tool pprof -raw, an independent parser, must read it and
# show the names, values and labels we put in.
# usage: profbuild_go_pprof.sh <test_profbuild binary>
set -euo pipefail
bin=$1
: "${HOME:=/tmp}"
export HOME
export GOCACHE=${GOCACHE:-/tmp/pushprof-gocache}
command -v go >/dev/null || { echo "go not found (install golang-go: bash tests/deps.sh)"; exit 1; }
dir=$(mktemp -d /tmp/pp-profbuild-go.XXXXXX)
trap 'rm -rf "$dir"' EXIT

"$bin" "$dir/prof.pb" 2>"$dir/unit.log" || { cat "$dir/unit.log"; exit 1; }
[ -s "$dir/prof.pb" ] || { echo "no profile written"; exit 1; }
go tool pprof -raw -symbolize=none "$dir/prof.pb" >"$dir/raw.txt" 2>"$dir/pprof.err" || {
  echo "go tool pprof rejected the profile:"; cat "$dir/pprof.err"; exit 1; }

fail=0
need() { # need <fixed string> <what>
  if ! grep -qF -- "$1" "$dir/raw.txt"; then echo "missing $2: $1"; fail=1; fi
}
need "PeriodType: cpu nanoseconds" "period type"
need "Period: 10000000" "period"
need "samples/count cpu/nanoseconds" "sample types"
need "profbuild_probe_leaf" "leaf function"
need "profbuild_probe_mid" "caller"
need "profbuild_probe_root" "root"
need "trace_id:[abc123]" "label"
need "route:[/checkout]" "label"
need "$(readlink -f "$bin")" "main mapping file name"
# values = count * period for the 3-sample stack
if ! grep -Eq '^ +3 +30000000: [0-9]+ [0-9]+ [0-9]+ *$' "$dir/raw.txt"; then
  echo "missing sample '3 30000000: <3 locations>'"; fail=1
fi
if [ $fail -ne 0 ]; then echo "--- go tool pprof -raw:"; cat "$dir/raw.txt"; exit 1; fi
echo "go tool pprof -raw accepted the profile"
