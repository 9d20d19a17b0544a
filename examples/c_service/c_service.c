/* c_service: a small server-like C program that links libpushprof.
 *
 * A thread pool takes simulated requests from a queue. For each request the
 * worker sets the pprof labels trace_id and route, handles it, and clears
 * the labels, so every sample says which request and route it belongs to
 * (go tool pprof -tagfocus route=/checkout).
 *
 *   c_service [REQUESTS] [THREADS]     (defaults 600 and 4)
 *
 * Where the profile goes comes from the environment: PUSHPROF_SOCKET (push
 * to the sidecar every PUSHPROF_UPLOAD_PERIOD seconds and at exit) or
 * PUSHPROF_OUTPUT (a file at exit).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pushprof.h>

enum { ROUTE_CHECKOUT, ROUTE_SEARCH, ROUTE_HEALTH, ROUTES };
static const char *const route_names[ROUTES] = {"/checkout", "/search", "/health"};

typedef struct request {
  uint64_t id;
  int route;
} request;

static struct {
  pthread_mutex_t mu;
  request *items;
  size_t n, next;
} queue = {.mu = PTHREAD_MUTEX_INITIALIZER};

static volatile uint64_t sink;

/* Work units: checkout costs 6, search 3, health 1. A leaf: without frame
 * pointers in it, its caller is found from the CFI (.eh_frame). */
__attribute__((noinline)) static uint64_t spin_units(uint64_t seed, int units) {
  uint64_t x = seed | 1;
  for (long i = 0; i < units * 1000000L; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

__attribute__((noinline)) static uint64_t price_cart(uint64_t id) {
  return spin_units(id, 4);
}
__attribute__((noinline)) static uint64_t charge_card(uint64_t id) {
  return spin_units(id + 1, 2);
}
__attribute__((noinline)) static uint64_t handle_checkout(uint64_t id) {
  return price_cart(id) ^ charge_card(id);
}
__attribute__((noinline)) static uint64_t handle_search(uint64_t id) {
  return spin_units(id * 3, 3);
}
__attribute__((noinline)) static uint64_t handle_health(uint64_t id) {
  return spin_units(id, 1);
}

__attribute__((noinline)) static int serve(const request *rq) {
  char trace[32];
  snprintf(trace, sizeof trace, "%016llx", (unsigned long long)(rq->id * 0x9e3779b97f4a7c15ULL));
  int rc = pushprof_label_set("trace_id", trace);
  if (rc == 0)
    rc = pushprof_label_set("route", route_names[rq->route]);
  if (rc != 0) {
    fprintf(stderr, "c_service: pushprof_label_set: %s\n", pushprof_strerror(rc));
    return -1;
  }
  uint64_t r;
  switch (rq->route) {
  case ROUTE_CHECKOUT:
    r = handle_checkout(rq->id);
    break;
  case ROUTE_SEARCH:
    r = handle_search(rq->id);
    break;
  default:
    r = handle_health(rq->id);
    break;
  }
  sink = r;
  pushprof_labels_clear();
  return 0;
}

static void *worker(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&queue.mu);
    if (queue.next == queue.n) {
      pthread_mutex_unlock(&queue.mu);
      return NULL;
    }
    request rq = queue.items[queue.next++];
    pthread_mutex_unlock(&queue.mu);
    if (serve(&rq) != 0)
      return (void *)1;
  }
}

static long arg_or(int argc, char **argv, int i, long def, long max) {
  if (argc <= i)
    return def;
  char *end;
  long v = strtol(argv[i], &end, 10);
  if (*end || v < 1 || v > max) {
    fprintf(stderr, "c_service: argument %d must be 1..%ld, got \"%s\"\n", i, max, argv[i]);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  long nreq = arg_or(argc, argv, 1, 600, 10000000);
  long nthreads = arg_or(argc, argv, 2, 4, 64);
  int rc = pushprof_start(NULL); /* everything from PUSHPROF_* */
  if (rc != 0) {
    fprintf(stderr, "c_service: pushprof_start: %s (running without profiling)\n",
            pushprof_strerror(rc));
  }
  queue.items = calloc((size_t)nreq, sizeof *queue.items);
  if (!queue.items) {
    fprintf(stderr, "c_service: out of memory for %ld requests\n", nreq);
    return 1;
  }
  /* Traffic mix: 1 checkout, 1 search, 2 health out of every 4 requests. */
  static const int mix[4] = {ROUTE_CHECKOUT, ROUTE_SEARCH, ROUTE_HEALTH, ROUTE_HEALTH};
  for (long i = 0; i < nreq; i++)
    queue.items[i] = (request){.id = (uint64_t)i + 1, .route = mix[i % 4]};
  queue.n = (size_t)nreq;

  pthread_t tids[64];
  long started = 0;
  int status = 0;
  for (; started < nthreads; started++) {
    if (pthread_create(&tids[started], NULL, worker, NULL) != 0) {
      fprintf(stderr, "c_service: cannot create worker thread %ld\n", started);
      status = 1;
      break;
    }
  }
  for (long i = 0; i < started; i++) {
    void *ret;
    pthread_join(tids[i], &ret);
    if (ret)
      status = 1;
  }
  printf("c_service: %ld requests on %ld threads\n", nreq, started);
  free(queue.items);
  if (rc == 0) {
    int src = pushprof_stop(); /* the final push, bounded by PUSHPROF_EXIT_TIMEOUT_MS */
    if (src != 0) {
      fprintf(stderr, "c_service: pushprof_stop: %s\n", pushprof_strerror(src));
      status = 1;
    }
  }
  return status;
}
