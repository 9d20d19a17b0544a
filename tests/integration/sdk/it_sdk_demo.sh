#!/usr/bin/env bash
# The README's main job profiles examples/demo/demo_work under LD_PRELOAD with
# PUSHPROF_OUTPUT: that path writes one profile with its samples in the
# stages. (gcc's identical-code folding may merge demo_work's three identical
# stage functions into one address, so only one stage name is required.)
# No function name carries a symbol version (glibc's .symtab names
# clock_gettime@@GLIBC_2.17): other tools' profiles name it without one.
. "$(dirname "$0")/../lib.sh"
mkdir -p "$T/prof"
rc=0
LD_PRELOAD=$PRELOAD PUSHPROF_SERVICE=demo-job PUSHPROF_OUTPUT="$T/prof/demo-%p.pb.gz" \
  "$B/examples/demo_work" 0.5 >"$T/out" 2>"$T/err" || rc=$?
cat "$T/out" "$T/err"
[ "$rc" -eq 0 ] || fail "demo_work exited with $rc"
[ ! -s "$T/err" ] || fail "unexpected stderr from the SDK"
prof=$(the_profile)
"${CHECK[@]}" "$prof" --quiet --min-samples 50 \
  --expect-function '^(parse_records|compress_blocks|checksum_output)' --forbid-function '@'
echo pass
