/* Per-period push cost in the host process: CPU ms spent on the SDK's thread
 * to turn N unique aggregated stacks into a pprof (symbolization included)
 * and encode the push frame, for N = 1000 and 10000; with a socket path it
 * also sends each frame to a running sidecar and counts the acks. Figures,
 * never pass/fail.   bench_push [--runs N] [--rows FILE] [SOCKET] */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_rows.h"
#include "pp_client.h"
#include "profbuild.h"
#include "bench_clock.h"

static double cpu_ms(void) {
  return (double)bench_ns(CLOCK_THREAD_CPUTIME_ID) / 1e6;
}

/* Code addresses spread over libc and this binary, as real stacks have. */
static uintptr_t code_pc(size_t i) {
  static const char *const names[] = {"malloc", "free",   "memcpy",       "strlen",
                                      "qsort",  "printf", "fopen",        "read",
                                      "write",  "poll",   "clock_gettime"};
  void *p = dlsym(RTLD_DEFAULT, names[i % (sizeof names / sizeof names[0])]);
  if (!p)
    p = (void *)&cpu_ms;
  return (uintptr_t)p + 1 + (i / 11) % 48;
}

static int run(size_t nstacks, const char *sock, double *ms, int *acked) {
  enum { DEPTH = 24 };
  uintptr_t *pcs = malloc(nstacks * DEPTH * sizeof *pcs);
  profbuild_stack *st = calloc(nstacks, sizeof *st);
  static profbuild *pb; /* kept across pushes, as the SDK keeps it: warm symbol cache */
  if (!pb)
    pb = profbuild_new();
  if (!pcs || !st || !pb)
    return -1;
  for (size_t i = 0; i < nstacks; i++) {
    for (size_t d = 0; d < DEPTH; d++) /* unique per i: the leaf encodes i */
      pcs[i * DEPTH + d] = code_pc(d == 0 ? i : i / (d + 1) + d * 131);
    st[i].pcs = &pcs[i * DEPTH];
    st[i].depth = DEPTH;
    st[i].count = 1 + (int64_t)(i % 5);
  }
  double t0 = cpu_ms();
  uint8_t *prof = NULL, *frame = NULL;
  size_t plen = 0, flen = 0;
  profbuild_meta meta = {.period_ns = 10000000, .time_nanos = 1, .duration_nanos = 10};
  if (profbuild_refresh_maps(pb) != 0 || profbuild_build(pb, st, nstacks, &meta, &prof, &plen) != 0)
    return -1;
  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  req.service = "bench";
  req.pprof.data = prof;
  req.pprof.len = plen;
  req.end_time_nanos = 10;
  if (pp_client_encode_push(&req, &frame, &flen) != 0)
    return -1;
  if (sock) {
    pp_client_reply reply;
    if (pp_client_push_frame(sock, frame, flen, 5000, &reply) == PP_CLIENT_ACKED)
      (*acked)++;
  }
  *ms = cpu_ms() - t0;
  free(frame);
  free(prof);
  free(st);
  free(pcs);
  return 0;
}

#define MAX_RUNS 31

int main(int argc, char **argv) {
  const char *sock = NULL;
  bench_rows_opts o = {.runs = 7, .max_runs = MAX_RUNS, .socket = &sock};
  int rc = bench_rows_options(argc, argv, "bench_push", &o);
  if (rc)
    return rc;
  int reps = o.runs;
  static const size_t sizes[] = {1000, 10000};
  printf(
      "| unique stacks | CPU ms per push (median of %d: build, symbolize with a warm cache%s) |\n",
      reps, sock ? ", encode, send" : ", encode");
  printf("|---|---|\n");
  for (size_t s = 0; s < 2; s++) {
    double v[MAX_RUNS];
    int acked = 0;
    for (int r = 0; r < reps; r++)
      if (run(sizes[s], sock, &v[r], &acked) != 0) {
        fprintf(stderr, "bench_push: building the profile failed\n");
        return 1;
      }
    printf("| %zu | %.1f |%s\n", sizes[s], bench_rows_median(v, (size_t)reps),
           sock && acked != reps ? " (not all acked)" : "");
    char key[64], label[160];
    snprintf(key, sizeof key, "push_cpu_ms_%zuk", sizes[s] / 1000);
    snprintf(label, sizeof label,
             "Per-period push in the host, %zu unique stacks: build, symbolize, "
             "encode%s (CPU ms)",
             sizes[s], sock ? ", send" : "");
    /* Not every push acked: the figure is not what it says; leave it out. */
    if (bench_rows_add(o.rows, key, label, "", v, sock && acked != reps ? 0 : (size_t)reps, 1) != 0)
      rc = 1;
  }
  return bench_rows_finish(&o, "bench_push", rc);
}
