#!/usr/bin/env bash
# Trace links from another tracer's records reach OTLP as Links, as those
# of pushprof's own labels do: wl_otel_tracer (its own OTEP 4947 records,
# preloaded) profiled to a file, pushed to the real sidecar exporting to
# the strict OTLP receiver (which checks each Link equals its sample's
# trace_id/span_id attributes); its in_span samples are linked.
source "$(dirname "$0")/lib_otlp.sh"
mkdir -p "$T/prof"
PUSHPROF_OUTPUT="$T/prof/p-%p.pb.gz" PUSHPROF_HZ=200 LD_PRELOAD=$PRELOAD \
  "$WL/wl_otel_tracer" 1 >"$T/out" 2>"$T/err" || fail "wl_otel_tracer: $(cat "$T/err")"
prof=$(the_profile)
start_receiver links
start_sidecar links --export "otlp+$RX_URL" --batch-window 1
"$CLI" push "$prof" --socket "$SOCK" --service tracer >/dev/null || fail "push"
rx_wait "$RX_OUT" 1 60
rx_clean "$RX_OUT"
python3 "$COMPARE" "$RX_OUT/requests.jsonl" tracer "$prof" --min-links 1 || fail "tracer links"
echo pass
