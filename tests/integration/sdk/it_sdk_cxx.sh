#!/usr/bin/env bash
# A C++ program's profile names its functions demangled (namespace,
# template argument, class) and keeps the mangled name as system_name.
# pprof_check reads with -symbolize=none so pprof cannot demangle for us.
#   it_sdk_cxx.sh preload|linked
. "$(dirname "$0")/../lib.sh"
mode=$1
mkdir -p "$T/prof"
export PUSHPROF_OUTPUT="$T/prof/cxx-%p.pb.gz"
run_workload "$mode" wl_cxx 0.6
prof=$(the_profile)
"${CHECK[@]}" "$prof" --min-samples 30 \
  --expect-function '^cxxwork::Kernel<3>::run(\(double\))?$' \
  --expect-function '^cxxwork::Matrix::multiply(\(double, int\))?$' \
  --forbid-function '^_Z' --expect-system-name '^_ZN7cxxwork6Matrix8multiplyEdi$' \
  >"$T/report.json"
echo "pass ($mode)"
