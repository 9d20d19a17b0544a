/* Four threads serve simulated requests: request r sets trace_id=req-<r % 8>
 * and a unique req_seq=<r>, spins in req_<r % 8>, then removes both and
 * spins a little in between_requests. The main thread labels itself
 * worker=main and spins in main_work. The test checks that every sample in
 * req_N carries trace_id=req-N and none outside a request carries a trace_id.
 *   wl_labels [requests per thread, default 40] [CPU ms per request, default 20]
 * WL_STATIC (libpushprof.a): the threads are created before pushprof_start
 * (found by its scan) and never call pushprof_thread_register; their first
 * label registers them. The main thread calls pushprof_stop itself. */
#include <pthread.h>
#include <string.h>

#include "wl_common.h"

#define NTHREADS 4

WL_SPIN_FN(req_0)
WL_SPIN_FN(req_1)
WL_SPIN_FN(req_2)
WL_SPIN_FN(req_3)
WL_SPIN_FN(req_4)
WL_SPIN_FN(req_5)
WL_SPIN_FN(req_6)
WL_SPIN_FN(req_7)
WL_SPIN_FN(between_requests)
WL_SPIN_FN(main_work)

static uint64_t (*const req[8])(double) = {req_0, req_1, req_2, req_3, req_4, req_5, req_6, req_7};
static int nreq = 40;
static double req_s = 0.020;
static pthread_barrier_t go;

static void set(const char *k, const char *v) {
  int rc = pushprof_label_set(k, v);
  if (rc != 0) {
    fprintf(stderr, "wl_labels: pushprof_label_set(%s): %s\n", k, pushprof_strerror(rc));
    exit(4);
  }
}

static void *worker(void *arg) {
  unsigned t = (unsigned)(uintptr_t)arg;
  char v[32];
  pthread_barrier_wait(&go);
  snprintf(v, sizeof v, "w%u", t);
  set("worker", v);
  for (int i = 0; i < nreq; i++) {
    unsigned r = t * (unsigned)nreq + (unsigned)i;
    snprintf(v, sizeof v, "req-%u", r % 8);
    set("trace_id", v);
    snprintf(v, sizeof v, "%u", r);
    set("req_seq", v);
    req[r % 8](req_s);
    set("trace_id", NULL);
    set("req_seq", NULL);
    between_requests(req_s / 4);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1)
    nreq = atoi(argv[1]);
  if (argc > 2)
    req_s = atof(argv[2]) / 1000;
  if (nreq < 1 || nreq > 100000 || !(req_s > 0 && req_s < 10)) {
    fprintf(stderr, "usage: wl_labels [requests per thread] [CPU ms per request]\n");
    return 2;
  }
  if (pthread_barrier_init(&go, NULL, NTHREADS + 1) != 0)
    return 1;
#ifndef WL_STATIC
  wl_start();
#endif
  pthread_t th[NTHREADS];
  for (uintptr_t i = 0; i < NTHREADS; i++)
    if (pthread_create(&th[i], NULL, worker, (void *)i) != 0) {
      fprintf(stderr, "wl_labels: pthread_create failed\n");
      return 1;
    }
#ifdef WL_STATIC
  wl_start();
#endif
  pthread_barrier_wait(&go);
  set("worker", "main");
  main_work(0.2);
  pushprof_labels_clear();
  for (int i = 0; i < NTHREADS; i++)
    pthread_join(th[i], NULL);
  wl_report();
  printf("requests=%d\n", NTHREADS * nreq);
#ifdef WL_STATIC
  int rc = pushprof_stop();
  if (rc != 0) {
    fprintf(stderr, "wl_labels: pushprof_stop: %s\n", pushprof_strerror(rc));
    return 5;
  }
#endif
  return 0;
}
