# Sourced by the shell benches, from the top of the tree: their options,
# the build step, a scratch directory removed at exit with the processes
# the bench started, and a free TCP port.

# bench_args NAME "OPT..." ARGS...: each --OPT VALUE (OPT one of the
# space-separated names) sets the variable OPT, dashes as underscores;
# --no-build sets build_it=0. Anything else: a usage error, exit 2.
bench_args() {
  local me=$1 opts=" $2 " var
  shift 2
  while (($#)); do
    var=${1#--}
    var=${var//-/_}
    if [ "$1" = --no-build ]; then
      build_it=0
    elif [[ $1 == --* && $opts == *" ${1#--} "* && $# -ge 2 ]]; then
      printf -v "$var" %s "$2"
      shift
    else
      echo "$me: unknown argument $1" >&2
      exit 2
    fi
    shift
  done
}

# bench_build TARGET...: configures $build if it is not yet, then builds
# the targets, unless --no-build gave build_it=0.
bench_build() {
  ((${build_it:-1})) || return 0
  [ -f "$build/CMakeCache.txt" ] || cmake -S . -B "$build" >/dev/null
  cmake --build "$build" -j"$(nproc)" --target "$@" >/dev/null
}

# bench_workdir NAME: W, a new directory; at exit the processes in pids are
# killed and W removed.
bench_workdir() {
  W=$(mktemp -d "${TMPDIR:-/tmp}/pushprof-$1.XXXXXX")
  pids=()
  trap bench_cleanup EXIT
}
bench_cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$W"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
