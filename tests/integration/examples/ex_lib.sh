# Sourced by the example tests: the shared helpers (start_sidecar, $W,
# $SOCK, $OUT, fail, wait_files) plus what the examples need.
# shellcheck source=../lib.sh
source "$PUSHPROF_SOURCE_DIR/tests/integration/lib.sh"
LIBSO=$B/sdk/libpushprof.so

# accepted_pids: the distinct pids of the sidecar's "push accepted" lines.
accepted_pids() {
  sed -n 's/.*msg="push accepted".* pid=\([0-9]*\).*/\1/p' "$SC_LOG" | sort -u
}

# exported_pushes SERVICE: sum of pushes= over the "batch exported" lines.
exported_pushes() {
  grep 'msg="batch exported"' "$SC_LOG" | grep "service=\"\?$1\"\? " |
    sed -n 's/.* pushes=\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }'
}

# profiles_json SERVICE: pprof_check.py's JSON report of every profile
# exported for SERVICE, merged: {"total": N, "functions": [...], "labels": {...}}.
profiles_json() {
  local f files
  files=$(find "$OUT" -path "*/$1/*" -name '*.pb.gz' | sort)
  [ -n "$files" ] || fail "no profile exported for service $1 (in $OUT)"
  for f in $files; do
    "${CHECK[@]}" "$f" --value samples/count || fail "go tool pprof rejected $f"
  done | python3 -c '
import json, sys
dec = json.JSONDecoder()
text = sys.stdin.read()
total, funcs, labels, cum, i = 0, set(), {}, {}, 0
while i < len(text):
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    r, i = dec.raw_decode(text, i)
    total += r["total"].get("samples/count", 0)
    funcs.update(r["functions"])
    for f, v in r["cum"].items():
        cum[f] = cum.get(f, 0) + v
    for k, vals in r["labels"].items():
        for v, n in vals.items():
            labels.setdefault(k, {})
            labels[k][v] = labels[k].get(v, 0) + n
print(json.dumps({"total": total, "functions": sorted(funcs), "cum": cum, "labels": labels}))'
}

# stop_and_export: SIGTERM the sidecar (it exports open batches first).
stop_and_export() {
  stop_sidecar
}

# expect_clean_run NAME LINE: the example NAME printed LINE first on its
# stdout ($W/svc.out) and nothing on its stderr ($W/svc.err); then the
# sidecar stops with everything exported.
expect_clean_run() {
  grep -q "^$2" "$W/svc.out" || fail "$1 printed: $(cat "$W/svc.out")"
  [ ! -s "$W/svc.err" ] || fail "$1 stderr: $(cat "$W/svc.err")"
  stop_and_export
}
