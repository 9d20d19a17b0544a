#!/usr/bin/env bash
# Labels per request, end to end: wl_labels (4 threads, 120 requests of
# 12 ms CPU, each in req_<id % 8> with trace_id=req-<id % 8> and a unique
# req_seq) writes its profile; read through `go tool pprof -raw`, every
# sample in req_N must carry trace_id=req-N (exactly: the label is set
# before the call and removed after it), no sample outside a request may
# carry a trace_id, and `-tagfocus trace_id=^req-3$` must select req_3
# alone. (pprof reads a purely numeric -tagfocus value such as "3" as a
# range over numeric labels, hence the non-numeric ids.)
#   it_sdk_labels.sh linked|static
. "$(dirname "$0")/../lib.sh"
mode=$1
mkdir -p "$T/prof"
export PUSHPROF_OUTPUT="$T/prof/labels-%p.pb.gz"
run_workload "$mode" wl_labels 30 12
prof=$(the_profile)
"${CHECK[@]}" "$prof" --quiet --value samples/count --min-samples 100 \
  --expect-function '^req_3$' --expect-function '^between_requests$' || fail "profile"

python3 - "$prof" "$PUSHPROF_SOURCE_DIR/tests/integration" <<'EOF' || fail "labels do not match the requests"
import re, sys
sys.path.insert(0, sys.argv[2])
import pprof_check as pc

prof = pc.parse_raw(pc.run_pprof(sys.argv[1]))
bad, in_req, per_req, seqs, outside, main_ok = 0, 0, {}, set(), 0, 0
for s in prof["samples"]:
    stack = []
    for lid in s["locs"]:
        stack.extend(pc.loc_functions(prof["locations"].get(lid)))
    reqs = {f for f in stack if re.fullmatch(r"req_[0-7]", f)}
    tid = s["labels"].get("trace_id", [])
    n = s["values"][0]
    if reqs:
        in_req += n
        want = [r[4:] for r in reqs]
        if len(reqs) != 1 or tid != ["req-" + want[0]] or len(s["labels"].get("req_seq", [])) != 1:
            bad += 1
            if bad <= 5:
                print("FAIL sample in %s has labels %s" % (sorted(reqs), s["labels"]))
            continue
        per_req[want[0]] = per_req.get(want[0], 0) + n
        seq = int(s["labels"]["req_seq"][0])
        if seq % 8 != int(want[0]):
            bad += 1
            print("FAIL sample in %s has req_seq %d" % (sorted(reqs), seq))
        seqs.add(seq)
    elif "between_requests" in stack or "main_work" in stack:
        outside += n
        if tid or "req_seq" in s["labels"]:
            bad += 1
            if bad <= 5:
                print("FAIL sample outside a request (%s) has labels %s" % (stack[:3], s["labels"]))
    if "main_work" in stack:
        if s["labels"].get("worker") == ["main"]:
            main_ok += n
        else:
            bad += 1
            print("FAIL main_work sample has labels %s" % s["labels"])
    if reqs or "between_requests" in stack:
        w = s["labels"].get("worker", [])
        if len(w) != 1 or not re.fullmatch(r"w[0-3]", w[0]):
            bad += 1
            if bad <= 5:
                print("FAIL worker sample has worker=%s" % w)
print("samples in requests %d, per trace_id %s, distinct req_seq %d, outside %d, main %d, bad %d"
      % (in_req, dict(sorted(per_req.items())), len(seqs), outside, main_ok, bad))
ok = bad == 0 and len(per_req) == 8 and min(per_req.values()) >= 5 and len(seqs) >= 40 \
    and outside >= 5 and main_ok >= 5
sys.exit(0 if ok else 1)
EOF

# The focus a user would type: only req_3's samples remain.
top=$(go tool pprof -symbolize=none -tagfocus 'trace_id=^req-3$' -top "$prof" 2>"$T/top.err") ||
  fail "go tool pprof -tagfocus: $(cat "$T/top.err")"
grep -qE ' req_3$' <<<"$top" || fail "-tagfocus trace_id=^req-3$ does not show req_3: $top"
if grep -E ' (req_[0-24-7]|between_requests|main_work)$' <<<"$top"; then
  fail "-tagfocus trace_id=^req-3$ shows other requests' functions"
fi
echo "pass ($mode)"
