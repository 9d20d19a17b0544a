/* Load generator for pushprof-sidecar (a benchmark, not a test).
 *
 * Builds realistic pprof payloads of a given size with pp_builder (one fixed
 * "binary": mappings, functions, locations; per-variant samples with deep
 * stacks, a route label and a per-sample trace_id), then runs N client threads
 * that each push over the real Unix socket with pp_client_push_frame, one
 * connection per push like the SDK. Prints one line of key=value figures on
 * stdout; never fails on time, only on setup errors (exit 2) or when no push
 * was acknowledged (exit 1).
 *
 *   bench_sidecar --socket PATH [--size BYTES] [--clients N]
 *                 [--duration SECONDS | --count PUSHES] [--rate PUSHES/S]
 *                 [--variants N] [--timeout-ms MS] [--dump FILE [--dump-count K]]
 *                 [--distinct-services] [--retry]
 *
 * --distinct-services gives every push its own service (so its own batch,
 * the worst case for the sidecar's memory); --retry sends a push the sidecar
 * refused or did not answer again (same sequence, after 10-100 ms) until it
 * is acked, as the SDK's backlog does, and counts the retries.
 *
 * --dump FILE writes the first client's first payload to FILE and exits;
 * with --dump-count K, the first K payloads the clients send (client by
 * client, --variants each) to FILE.0 .. FILE.K-1, for bench_ingest.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pp_client.h"
#include "pp_frame.h"
#include "pp_builder.h"
#include "pushprof.pb-c.h"
#include "bench_clock.h"
#include "bench_rows.h"

#define NSEC_PER_SEC 1000000000LL
#define PERIOD_NS 10000000LL /* 100 Hz, the SDK's default */
#define NMAPPINGS 4
#define NROUTES 24
#define MAX_DEPTH 48
#define WINDOW_NS (60 * NSEC_PER_SEC) /* one push per minute per process */

typedef struct options {
  const char *socket_path;
  size_t size;
  int clients;
  double duration_s; /* > 0: run for this long */
  long count;        /* > 0: pushes in all (split over the clients) */
  double rate;       /* > 0: pushes/s in all, paced; 0: closed loop */
  int variants;      /* distinct payloads per client */
  int timeout_ms;
  const char *dump;
  int dump_count; /* with dump: how many payloads, as FILE.0 .. */
  bool distinct;  /* --distinct-services */
  bool retry;     /* --retry */
} options;

typedef struct client {
  pthread_t thread;
  int id;
  const options *opt;
  uint8_t **payloads;
  size_t *payload_lens;
  long quota; /* pushes to do when --count is used; -1: until the deadline */
  double *lat_ms;
  size_t nlat, caplat;
  long acked;
  long retries;
  long status[5];  /* by pp_client_status */
  long refused[8]; /* by PushReply code when REFUSED */
  char last_reason[256];
  size_t frame_bytes;
  int failed;  /* setup error inside the thread */
  bool shared; /* payloads are another client's (many clients build few) */
} client;
#define PAYLOAD_SETS 16 /* clients beyond this reuse the first ones' payloads */

static atomic_int g_go;
static int64_t g_start_ns, g_deadline_ns;

static int64_t now_ns(void) {
  return bench_ns(CLOCK_MONOTONIC);
}

static int64_t wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static void sleep_until(int64_t t_ns) {
  struct timespec ts = {.tv_sec = t_ns / NSEC_PER_SEC, .tv_nsec = t_ns % NSEC_PER_SEC};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

/* xorshift64*: deterministic, so a run can be repeated with the same payloads. */
static uint64_t rnd(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}

/* The "binary" every payload shares: what merges across pushes dedup. */
typedef struct pool {
  uint64_t *locs; /* location ids */
  size_t nlocs;
  uint64_t roots[3]; /* _start, main, worker_loop */
} pool;

static int build_pool(pp_builder *b, size_t target, pool *p) {
  static const char *const files[NMAPPINGS] = {
      "/usr/local/bin/bench-service", "/usr/lib/x86_64-linux-gnu/libc.so.6",
      "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/lib/x86_64-linux-gnu/libssl.so.3"};
  static const char *const root_names[3] = {"_start", "main", "worker_loop"};
  uint64_t maps[NMAPPINGS];
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  char name[160], file[96], build_id[41];

  /* A service binary with a few thousand functions is typical; scale with the
   * payload so small and large profiles both look like real ones. */
  size_t nfuncs = target / 500;
  if (nfuncs < 64)
    nfuncs = 64;
  if (nfuncs > 6000)
    nfuncs = 6000;
  for (int m = 0; m < NMAPPINGS; m++) {
    uint64_t r1 = rnd(&seed), r2 = rnd(&seed), r3 = rnd(&seed);
    snprintf(build_id, sizeof build_id, "%016" PRIx64 "%016" PRIx64 "%08" PRIx32, r1, r2,
             (uint32_t)r3);
    uint64_t start = 0x400000ULL + (uint64_t)m * 0x10000000ULL;
    maps[m] = pp_builder_mapping(b, start, start + 0x8000000ULL, 0, files[m], build_id, true);
    if (maps[m] == 0)
      return -1;
  }
  p->nlocs = nfuncs * 2; /* two call sites per function */
  p->locs = calloc(p->nlocs, sizeof *p->locs);
  if (p->locs == NULL)
    return -1;
  for (int i = 0; i < 3; i++) {
    uint64_t fn = pp_builder_function(b, root_names[i], root_names[i], "src/main.cc", 10 + i);
    if (fn == 0)
      return -1;
    int64_t line = 20 + i;
    p->roots[i] = pp_builder_location(b, maps[0], 0x401000ULL + (uint64_t)i * 0x40, &fn, &line, 1);
    if (p->roots[i] == 0)
      return -1;
  }
  for (size_t f = 0; f < nfuncs; f++) {
    int m = (int)(rnd(&seed) % 8);
    m = m < 5 ? 0 : m - 4; /* most code is in the main binary */
    if (m >= NMAPPINGS)
      m = NMAPPINGS - 1;
    snprintf(name, sizeof name, "bench::svc%02zu::Handler%03zu::process_request_part_%zu(Context&)",
             f % 37, f % 211, f);
    snprintf(file, sizeof file, "src/svc%02zu/handler%03zu.cc", f % 37, f % 211);
    int64_t start_line = (int64_t)(rnd(&seed) % 2000) + 1;
    uint64_t fn = pp_builder_function(b, name, name, file, start_line);
    if (fn == 0)
      return -1;
    for (int site = 0; site < 2; site++) {
      int64_t line = start_line + 3 + site * 7;
      uint64_t addr = 0x402000ULL + (uint64_t)m * 0x10000000ULL + f * 0x120 + (uint64_t)site * 0x30;
      uint64_t loc = pp_builder_location(b, maps[m], addr, &fn, &line, 1);
      if (loc == 0)
        return -1;
      p->locs[f * 2 + (size_t)site] = loc;
    }
  }
  return 0;
}

/* Adds n samples: stacks of 8..MAX_DEPTH frames under the common roots, a
 * route (24 values) and a per-sample trace_id, like a labelled server. */
static int add_samples(pp_builder *b, const pool *p, uint64_t *seed, size_t n) {
  static const char *const threads[4] = {"worker-0", "worker-1", "io", "flusher"};
  uint64_t stack[MAX_DEPTH + 3];
  char route[48], trace[40];
  for (size_t s = 0; s < n; s++) {
    size_t depth = 8 + (size_t)(rnd(seed) % (MAX_DEPTH - 8 + 1));
    /* A random walk with a bias to a few hot subtrees, innermost frame first. */
    uint64_t base = rnd(seed) % p->nlocs;
    for (size_t d = 0; d < depth; d++) {
      uint64_t r = rnd(seed);
      size_t idx = (r & 3) ? (size_t)((base + d * 17 + (r >> 8) % 5) % p->nlocs)
                           : (size_t)((r >> 8) % p->nlocs);
      stack[d] = p->locs[idx];
    }
    stack[depth] = p->roots[2];
    stack[depth + 1] = p->roots[1];
    stack[depth + 2] = p->roots[0];
    int64_t count = 1 + (int64_t)(rnd(seed) % 3);
    int64_t values[2] = {count, count * PERIOD_NS};
    snprintf(route, sizeof route, "/api/v1/resource%02d", (int)(rnd(seed) % NROUTES));
    snprintf(trace, sizeof trace, "%016" PRIx64 "%016" PRIx64, rnd(seed), rnd(seed));
    pp_label labels[3] = {
        {.key = "route", .str = route},
        {.key = "trace_id", .str = trace},
        {.key = "thread", .str = threads[rnd(seed) % 4]},
    };
    if (pp_builder_sample(b, stack, depth + 3, values, 2, labels, 3) != 0)
      return -1;
  }
  return 0;
}

/* Builds a pprof of at least target bytes (uncompressed); variant seeds the
 * samples so variants differ while sharing the same functions. */
static int build_profile(size_t target, uint64_t variant, uint8_t **out, size_t *len) {
  pp_builder *b = pp_builder_new();
  pool p = {0};
  uint8_t *buf = NULL;
  size_t blen = 0, base_len, added = 0;
  uint64_t seed = 0x5deece66dULL ^ (variant * 0x100000001b3ULL + 1);
  int rc = -1;

  if (b == NULL)
    goto fail;
  if (pp_builder_add_sample_type(b, "samples", "count") != 0 ||
      pp_builder_add_sample_type(b, "cpu", "nanoseconds") != 0 ||
      pp_builder_set_period(b, "cpu", "nanoseconds", PERIOD_NS) != 0 ||
      pp_builder_add_comment(b, "pushprof bench_sidecar synthetic profile") != 0)
    goto fail;
  pp_builder_set_time(b, wall_ns() - WINDOW_NS, WINDOW_NS);
  if (build_pool(b, target, &p) != 0)
    goto fail;
  if (pp_builder_pack(b, &buf, &blen) != 0)
    goto fail;
  base_len = blen;
  size_t batch = 64;
  for (int iter = 0; blen < target; iter++) {
    if (iter > 1000)
      goto fail; /* the builder stopped growing: a bug, not a load */
    if (add_samples(b, &p, &seed, batch) != 0)
      goto fail;
    added += batch;
    free(buf);
    buf = NULL;
    if (pp_builder_pack(b, &buf, &blen) != 0)
      goto fail;
    double per = blen > base_len ? (double)(blen - base_len) / (double)added : 100.0;
    batch = blen < target ? (size_t)((double)(target - blen) / per) + 1 : 0;
  }
  *out = buf;
  *len = blen;
  buf = NULL;
  rc = 0;
fail:
  free(buf);
  free(p.locs);
  pp_builder_free(b);
  return rc;
}

static int record_latency(client *c, double ms) {
  if (c->nlat == c->caplat) {
    size_t cap = c->caplat ? c->caplat * 2 : 1024;
    double *n = realloc(c->lat_ms, cap * sizeof *n);
    if (n == NULL)
      return -1;
    c->lat_ms = n;
    c->caplat = cap;
  }
  c->lat_ms[c->nlat++] = ms;
  return 0;
}

static void *client_main(void *arg) {
  client *c = arg;
  const options *o = c->opt;
  char host[64], cid[16];
  snprintf(host, sizeof host, "bench-host");
  snprintf(cid, sizeof cid, "%d", c->id);
  Pushprof__V1__Label l_env = PUSHPROF__V1__LABEL__INIT;
  Pushprof__V1__Label l_ver = PUSHPROF__V1__LABEL__INIT;
  l_env.key = "env";
  l_env.value = "bench";
  l_ver.key = "version";
  l_ver.value = "1.2.3";
  Pushprof__V1__Label *labels[2] = {&l_env, &l_ver};
  /* Per-client pacing: the global rate split evenly, starts staggered. */
  int64_t interval = o->rate > 0 ? (int64_t)((double)NSEC_PER_SEC * o->clients / o->rate) : 0;

  while (!atomic_load(&g_go)) {
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  int64_t next = g_start_ns + (interval ? interval * c->id / o->clients : 0);
  uint8_t *frame = NULL; /* kept while a push is retried */
  size_t flen = 0;
  uint64_t seq = 0, jitter = 0x2545F4914F6CDD1DULL ^ (uint64_t)(c->id + 1);
  for (;;) {
    if (c->quota >= 0 && (long)seq >= c->quota)
      break;
    if (interval) {
      sleep_until(next);
      next += interval;
    }
    if (o->duration_s > 0 && now_ns() >= g_deadline_ns)
      break;
    Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
    size_t v = (size_t)(seq % (uint64_t)o->variants);
    int64_t end = wall_ns();
    char svc[64] = "bench-service";
    if (o->distinct)
      snprintf(svc, sizeof svc, "bench-%04d-%06" PRIu64, c->id, seq + 1);
    req.service = svc;
    req.n_labels = 2;
    req.labels = labels;
    req.pid = 100000u + (uint32_t)c->id;
    req.hostname = host;
    req.start_time_nanos = end - WINDOW_NS;
    req.end_time_nanos = end;
    req.sequence = ++seq;
    req.pprof.data = c->payloads[v];
    req.pprof.len = c->payload_lens[v];
    req.process_start_time_nanos = end - 3600 * NSEC_PER_SEC;
    /* A retry sends the very same bytes (times included), as the SDK does:
     * the sidecar recognises a second copy only when it is one. */
    if (!frame && pp_client_encode_push(&req, &frame, &flen) != 0) {
      fprintf(stderr, "bench_sidecar: client %s: cannot encode a push (out of memory?)\n", cid);
      c->failed = 1;
      break;
    }
    c->frame_bytes = flen;
    pp_client_reply reply;
    memset(&reply, 0, sizeof reply);
    int64_t t0 = now_ns();
    int st = pp_client_push_frame(o->socket_path, frame, flen, o->timeout_ms, &reply);
    int64_t t1 = now_ns();
    bool again = false;
    if (st >= 0 && st < 5)
      c->status[st]++;
    if (st == PP_CLIENT_ACKED) {
      c->acked++;
      if (record_latency(c, (double)(t1 - t0) / 1e6) != 0) {
        c->failed = 1;
        break;
      }
    } else {
      if (st == PP_CLIENT_REFUSED && reply.code >= 0 && reply.code < 8)
        c->refused[reply.code]++;
      snprintf(c->last_reason, sizeof c->last_reason, "%s", reply.reason);
      if (st == PP_CLIENT_UNAVAILABLE || st == PP_CLIENT_REFUSED) {
        /* back off 10 ms (with --retry 10-100 ms), like a polite client */
        struct timespec ts = {0, 10000000 + (o->retry ? (long)(rnd(&jitter) % 90000000) : 0)};
        nanosleep(&ts, NULL);
      }
      bool busy = st == PP_CLIENT_REFUSED &&
                  (reply.code == PUSHPROF__V1__PUSH_REPLY__CODE__RESOURCE_EXHAUSTED ||
                   reply.code == PUSHPROF__V1__PUSH_REPLY__CODE__UNAVAILABLE);
      if (o->retry && (busy || st == PP_CLIENT_UNAVAILABLE || st == PP_CLIENT_TIMEOUT ||
                       st == PP_CLIENT_IO_ERROR)) {
        seq--; /* the same push again */
        again = true;
        c->retries++;
      }
    }
    if (!again) {
      free(frame);
      frame = NULL;
    }
  }
  free(frame);
  return NULL;
}

/* Nearest-rank percentile of a sorted array. */
static double pct(const double *v, size_t n, double p) {
  if (n == 0)
    return NAN;
  size_t rank = (size_t)ceil(p / 100.0 * (double)n);
  if (rank < 1)
    rank = 1;
  return v[rank - 1];
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_sidecar --socket PATH [--size BYTES] [--clients N]\n"
          "                     [--duration SECONDS | --count PUSHES] [--rate PUSHES/S]\n"
          "                     [--variants N] [--timeout-ms MS] [--dump FILE [--dump-count K]]\n"
          "                     [--distinct-services] [--retry]\n");
}

static int parse_args(int argc, char **argv, options *o) {
  static const struct option longopts[] = {{"socket", required_argument, NULL, 's'},
                                           {"size", required_argument, NULL, 'z'},
                                           {"clients", required_argument, NULL, 'c'},
                                           {"duration", required_argument, NULL, 'd'},
                                           {"count", required_argument, NULL, 'n'},
                                           {"rate", required_argument, NULL, 'r'},
                                           {"variants", required_argument, NULL, 'v'},
                                           {"timeout-ms", required_argument, NULL, 't'},
                                           {"dump", required_argument, NULL, 'o'},
                                           {"dump-count", required_argument, NULL, 'k'},
                                           {"distinct-services", no_argument, NULL, 'u'},
                                           {"retry", no_argument, NULL, 'y'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  *o = (options){.size = 100 * 1024, .clients = 8, .variants = 4, .timeout_ms = 10000};
  int ch;
  char *end;
  while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    errno = 0;
    end = NULL;
    switch (ch) {
    case 's':
      o->socket_path = optarg;
      break;
    case 'z':
      o->size = (size_t)strtoull(optarg, &end, 10);
      break;
    case 'c':
      o->clients = (int)strtol(optarg, &end, 10);
      break;
    case 'd':
      o->duration_s = strtod(optarg, &end);
      break;
    case 'n':
      o->count = strtol(optarg, &end, 10);
      break;
    case 'r':
      o->rate = strtod(optarg, &end);
      break;
    case 'v':
      o->variants = (int)strtol(optarg, &end, 10);
      break;
    case 't':
      o->timeout_ms = (int)strtol(optarg, &end, 10);
      break;
    case 'o':
      o->dump = optarg;
      break;
    case 'k':
      o->dump_count = (int)strtol(optarg, &end, 10);
      break;
    case 'u':
      o->distinct = true;
      break;
    case 'y':
      o->retry = true;
      break;
    case 'h':
      usage(stdout);
      exit(0);
    default:
      usage(stderr);
      return -1;
    }
    if (end != NULL && (errno != 0 || end == optarg || *end != '\0')) {
      fprintf(stderr, "bench_sidecar: bad number '%s' (use plain decimal)\n", optarg);
      return -1;
    }
  }
  if (optind != argc || (o->socket_path == NULL && o->dump == NULL) || o->size < 1024 ||
      o->size > PP_FRAME_MAX_DEFAULT - 4096 || o->clients < 1 || o->clients > 1024 ||
      o->variants < 1 || o->variants > 64 || o->timeout_ms < 1 || o->rate < 0 ||
      o->duration_s < 0 || o->count < 0 || o->dump_count < 0 || o->dump_count > 1024 ||
      (o->dump_count && !o->dump)) {
    fprintf(stderr,
            "bench_sidecar: bad arguments (--socket is required; --size 1024..%u, "
            "--clients 1..1024, --variants 1..64, --dump-count 1..1024 with --dump)\n",
            PP_FRAME_MAX_DEFAULT - 4096);
    usage(stderr);
    return -1;
  }
  if (o->duration_s == 0 && o->count == 0)
    o->duration_s = 10;
  if (o->duration_s > 0 && o->count > 0) {
    fprintf(stderr, "bench_sidecar: give --duration or --count, not both\n");
    return -1;
  }
  return 0;
}

/* Writes the payload of seed variant to path. 0 or 2. */
static int dump_one(const options *o, uint64_t variant, const char *path) {
  uint8_t *buf = NULL;
  size_t len = 0;
  if (build_profile(o->size, variant, &buf, &len) != 0) {
    fprintf(stderr, "bench_sidecar: cannot build a profile (out of memory?)\n");
    return 2;
  }
  FILE *f = fopen(path, "wb");
  if (f == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
    fprintf(stderr, "bench_sidecar: cannot write %s: %s\n", path, strerror(errno));
    free(buf);
    return 2;
  }
  free(buf);
  printf("bench_sidecar dumped=%s payload_bytes=%zu\n", path, len);
  return 0;
}

static int dump_profile(const options *o) {
  if (o->dump_count == 0)
    return dump_one(o, 0, o->dump);
  for (int k = 0; k < o->dump_count; k++) {
    /* The seeds main() gives client k / variants, variant k % variants. */
    uint64_t variant = (uint64_t)(k / o->variants) * 1000 + (uint64_t)(k % o->variants);
    char path[4096];
    if (snprintf(path, sizeof path, "%s.%d", o->dump, k) >= (int)sizeof path) {
      fprintf(stderr, "bench_sidecar: --dump path too long\n");
      return 2;
    }
    int rc = dump_one(o, variant, path);
    if (rc != 0)
      return rc;
  }
  return 0;
}

int main(int argc, char **argv) {
  options o;
  client *cs = NULL;
  int rc = 2, started = 0;
  double *all = NULL;

  if (parse_args(argc, argv, &o) != 0)
    return 2;
  if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
    perror("bench_sidecar: signal");
    return 2;
  }
  if (o.dump != NULL)
    return dump_profile(&o);

  cs = calloc((size_t)o.clients, sizeof *cs);
  if (cs == NULL)
    goto fail;
  size_t payload_total = 0, npayloads = 0;
  for (int i = 0; i < o.clients; i++) {
    client *c = &cs[i];
    c->id = i;
    c->opt = &o;
    c->quota = -1;
    if (o.count > 0)
      c->quota = o.count / o.clients + (i < o.count % o.clients ? 1 : 0);
    if (i >= PAYLOAD_SETS) {
      c->shared = true;
      c->payloads = cs[i % PAYLOAD_SETS].payloads;
      c->payload_lens = cs[i % PAYLOAD_SETS].payload_lens;
      continue;
    }
    c->payloads = calloc((size_t)o.variants, sizeof *c->payloads);
    c->payload_lens = calloc((size_t)o.variants, sizeof *c->payload_lens);
    if (c->payloads == NULL || c->payload_lens == NULL)
      goto fail;
    for (int v = 0; v < o.variants; v++) {
      if (build_profile(o.size, (uint64_t)i * 1000 + (uint64_t)v, &c->payloads[v],
                        &c->payload_lens[v]) != 0) {
        fprintf(stderr, "bench_sidecar: cannot build a %zu-byte profile (out of memory?)\n",
                o.size);
        goto fail;
      }
      payload_total += c->payload_lens[v];
      npayloads++;
    }
  }

  for (started = 0; started < o.clients; started++) {
    int err = pthread_create(&cs[started].thread, NULL, client_main, &cs[started]);
    if (err != 0) {
      fprintf(stderr, "bench_sidecar: pthread_create: %s\n", strerror(err));
      break;
    }
  }
  g_start_ns = now_ns();
  g_deadline_ns = g_start_ns + (int64_t)(o.duration_s * (double)NSEC_PER_SEC);
  atomic_store(&g_go, 1);
  for (int i = 0; i < started; i++) {
    int err = pthread_join(cs[i].thread, NULL);
    if (err != 0) {
      fprintf(stderr, "bench_sidecar: pthread_join: %s\n", strerror(err));
      goto fail;
    }
  }
  double elapsed = (double)(now_ns() - g_start_ns) / 1e9;
  if (started < o.clients)
    goto fail;

  long acked = 0, retries = 0, st[5] = {0}, refused[8] = {0};
  size_t nlat = 0, frame_bytes = 0;
  const char *reason = "";
  for (int i = 0; i < o.clients; i++) {
    if (cs[i].failed)
      goto fail;
    acked += cs[i].acked;
    retries += cs[i].retries;
    nlat += cs[i].nlat;
    for (int k = 0; k < 5; k++)
      st[k] += cs[i].status[k];
    for (int k = 0; k < 8; k++)
      refused[k] += cs[i].refused[k];
    if (cs[i].last_reason[0])
      reason = cs[i].last_reason;
    if (cs[i].frame_bytes > frame_bytes)
      frame_bytes = cs[i].frame_bytes;
  }
  all = malloc((nlat ? nlat : 1) * sizeof *all);
  if (all == NULL)
    goto fail;
  size_t k = 0;
  for (int i = 0; i < o.clients; i++) {
    if (cs[i].nlat > 0)
      memcpy(all + k, cs[i].lat_ms, cs[i].nlat * sizeof *all);
    k += cs[i].nlat;
  }
  qsort(all, nlat, sizeof *all, bench_rows_cmp);
  double mean = 0;
  for (size_t i = 0; i < nlat; i++)
    mean += all[i];
  mean = nlat ? mean / (double)nlat : NAN;
  long errors = st[1] + st[2] + st[3] + st[4];

  printf("bench_sidecar clients=%d payload_bytes=%zu frame_bytes=%zu seconds=%.3f acked=%ld "
         "errors=%ld rate=%.1f mb_per_s=%.1f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f "
         "mean_ms=%.3f retried=%ld\n",
         o.clients, npayloads ? payload_total / npayloads : 0, frame_bytes, elapsed, acked, errors,
         (double)acked / elapsed, (double)acked * (double)frame_bytes / elapsed / (1024.0 * 1024.0),
         pct(all, nlat, 50), pct(all, nlat, 90), pct(all, nlat, 99), nlat ? all[nlat - 1] : NAN,
         mean, retries);
  if (errors) {
    fprintf(stderr,
            "bench_sidecar: %ld pushes failed: refused=%ld (invalid_frame=%ld invalid_push=%ld "
            "invalid_pprof=%ld resource_exhausted=%ld permission_denied=%ld unavailable=%ld "
            "internal=%ld) unavailable=%ld timeout=%ld io_error=%ld; last reason: %s\n",
            errors, st[1], refused[1], refused[2], refused[3], refused[4], refused[5], refused[6],
            refused[7], st[2], st[3], st[4], reason);
  }
  rc = acked > 0 ? 0 : 1;
fail:
  if (rc == 2)
    fprintf(stderr, "bench_sidecar: setup failed\n");
  if (cs != NULL) {
    for (int i = 0; i < o.clients; i++) {
      free(cs[i].lat_ms);
      if (cs[i].shared)
        continue;
      for (int v = 0; cs[i].payloads && v < o.variants; v++)
        free(cs[i].payloads[v]);
      free(cs[i].payloads);
      free(cs[i].payload_lens);
    }
  }
  free(cs);
  free(all);
  return rc;
}
