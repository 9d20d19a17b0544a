/* libpushprof_preload.so: starts profiling from the environment in a
 * constructor, so unmodified programs are profiled with
 *   LD_PRELOAD=libpushprof_preload.so PUSHPROF_OUTPUT=/tmp/prof-%p.pb.gz prog
 * Without PUSHPROF_OUTPUT (or PUSHPROF_SOCKET) it stays off and says so in one
 * line, like gperftools' libprofiler without CPUPROFILE (which is silent; a
 * preloaded profiler that does nothing deserves a word). */
#include <sys/auxv.h>

#include "api_internal.h"
#include "pushprof.h"

__attribute__((constructor)) static void preload_init(void) {
  /* AT_SECURE: setuid/setgid or file capabilities. Never run inside them:
   * the environment is the caller's, the output path would be written with
   * the program's privileges. Not a word either: with /etc/ld.so.preload
   * the library is in every setuid program (su, passwd, ping), whose output
   * is not ours to change. Nothing else runs: no PUSHPROF_* is read. */
  if (getauxval(AT_SECURE))
    return;
  /* An unmodified job killed by SIGTERM/SIGINT/SIGHUP still ships: the
   * handlers are installed only where the program left the default. */
  pushprof_options o = PUSHPROF_OPTIONS_INIT;
  o.handle_term_signals = 1;
  (void)pushprof_start(&o); /* logs its own line on failure */
}
