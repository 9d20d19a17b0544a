/* A program built against pushprof.h 0.1, before pushprof_options had a
 * struct_size: the struct and the calls below are that header's, verbatim,
 * and pushprof.h is not included. It links the current library.
 *   wl_abi_v0 OUTPUT HZ SIGNAL-OFFSET [SOCKET SERVICE]
 * (SIGNAL-OFFSET: SIGRTMIN+n, -1: unset; with SOCKET it pushes there as
 * SERVICE instead of writing OUTPUT)
 * Prints rc=, signal=, cpu_seconds= (main thread); exits 0 when start and stop succeed,
 * 3 when pushprof_start fails (its code printed). */
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>

#include "wl_common.h"

typedef struct pushprof_options {
  int hz;                  /* samples per second per thread, 1..1000 (default 100) */
  const char *service;     /* service name (default: program name) */
  const char *output_path; /* standalone: write a gzip pprof at exit; %p = pid */
  int signal_number;       /* sampling signal (default SIGPROF) */
  const char *socket_path; /* push to the sidecar at this Unix socket */
  int upload_period_s;     /* seconds between pushes (default 10) */
  int exit_timeout_ms;     /* bound on the flush at exit (default 2000) */
  int handle_term_signals; /* 1: flush on SIGTERM/SIGINT/SIGHUP left at default */
  const char *spool_dir;   /* sidecar spool to write into if it is down at exit */
  int backlog;             /* unsent profiles kept in memory (default 6) */
} pushprof_options;
_Static_assert(sizeof(pushprof_options) == 72, "the 0.1 layout");

int pushprof_start(const pushprof_options *opts);
int pushprof_stop(void);
int pushprof_thread_register(void);

WL_SPIN_FN(abi_v0_spin)

int main(int argc, char **argv) {
  if (argc != 4 && argc != 6) {
    fprintf(stderr, "usage: wl_abi_v0 OUTPUT HZ SIGNAL-OFFSET [SOCKET SERVICE]\n");
    return 2;
  }
  pushprof_options o = {0};
  o.hz = atoi(argv[2]);
  o.output_path = argv[1];
  int off = atoi(argv[3]);
  if (off >= 0)
    o.signal_number = SIGRTMIN + off;
  o.exit_timeout_ms = 5000;
  if (argc == 6) {
    o.output_path = NULL;
    o.socket_path = argv[4];
    o.service = argv[5];
    o.upload_period_s = 3600; /* one push, at stop */
    o.backlog = 2;
  }
  int rc = pushprof_start(&o);
  printf("rc=%d\nsignal=%d\n", rc, off >= 0 ? SIGRTMIN + off : SIGPROF);
  if (rc != 0)
    return 3;
  double c0 = wl_thread_cpu(); /* the sampled work; not the SDK's threads */
  abi_v0_spin(0.5);
  double cpu = wl_thread_cpu() - c0;
  rc = pushprof_stop();
  printf("cpu_seconds=%.3f\nstop=%d\n", cpu, rc);
  return rc == 0 ? 0 : 4;
}
