/* A group's gauge columns and each process's latest push (see
 * batcher_gauge.h). A latest push is kept as a packed pprof of its gauge
 * columns only: a decoded profile's arena holds about 16 times its encoded
 * size, and its counter columns are in the batch already. Processes are
 * kept in an array searched linearly: a batch holds one service with one
 * set of process labels, so a handful of processes, rarely hundreds. */
#include "batcher_gauge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_frame.h"
#include "pp_merge.h"
#include "pp_parse.h"

#define GAUGE_PREFIX "inuse_"

struct gauge_proc {
  char host[PP_HOSTNAME_MAX + 1]; /* pp_push_decode checked its length */
  uint32_t pid;
  int64_t start_ns;
  int64_t end_ns;
  uint64_t seq;
  uint8_t *pprof; /* its gauge columns, packed (pp_builder_pack) */
  size_t len;
};

int batcher_gauge_cols(gauge_cols *c, const Perftools__Profiles__Profile *p) {
  memset(c, 0, sizeof *c);
  if (p->n_sample_type == 0)
    return 0;
  c->counter = calloc(p->n_sample_type, sizeof *c->counter);
  c->gauge = calloc(p->n_sample_type, sizeof *c->gauge);
  if (!c->counter || !c->gauge) {
    batcher_gauge_cols_free(c);
    return -1;
  }
  c->n = p->n_sample_type;
  for (size_t i = 0; i < p->n_sample_type; i++) {
    int64_t t = p->sample_type[i]->type;
    const char *name = t >= 0 && (size_t)t < p->n_string_table ? p->string_table[t] : "";
    c->gauge[i] = strncmp(name, GAUGE_PREFIX, sizeof GAUGE_PREFIX - 1) == 0;
    c->counter[i] = !c->gauge[i];
    c->ngauge += c->gauge[i];
  }
  return 0;
}

void batcher_gauge_cols_free(gauge_cols *c) {
  free(c->counter);
  free(c->gauge);
  memset(c, 0, sizeof *c);
}

static int reserve(gauge_latest *s) {
  if (s->n < s->cap)
    return 0;
  size_t ncap = s->cap ? 2 * s->cap : 4;
  gauge_proc *np = realloc(s->procs, ncap * sizeof *np);
  if (!np)
    return -1;
  s->mem += (ncap - s->cap) * sizeof *np;
  s->procs = np;
  s->cap = ncap;
  return 0;
}

static bool same_process(const gauge_proc *g, const Pushprof__V1__PushRequest *r) {
  return g->pid == r->pid && g->start_ns == r->process_start_time_nanos &&
         strcmp(g->host, r->hostname ? r->hostname : "") == 0;
}

/* Whether r is later than what g holds; on a tie the one that arrived
 * last (r). */
static bool later(const gauge_proc *g, const Pushprof__V1__PushRequest *r) {
  if (r->end_time_nanos != g->end_ns)
    return r->end_time_nanos > g->end_ns;
  return r->sequence >= g->seq;
}

/* p's gauge columns as a packed pprof (only the samples that have gauge
 * values). 0, or -1 with why. */
static int pack_gauges(const Perftools__Profiles__Profile *p, const gauge_cols *c, uint8_t **out,
                       size_t *len, char *why, size_t whylen) {
  pp_builder *b = pp_builder_new();
  int rc = -1;
  if (!b)
    snprintf(why, whylen, "out of memory keeping a process's gauge values");
  else if (pp_merge_add_columns(b, p, c->gauge, why, whylen) == 0) {
    rc = pp_builder_pack(b, out, len);
    if (rc != 0)
      snprintf(why, whylen, "out of memory packing a process's gauge values");
  }
  pp_builder_free(b);
  return rc;
}

int batcher_gauge_offer(gauge_latest *s, const gauge_cols *c, const pp_push *push, char *why,
                        size_t whylen) {
  const Pushprof__V1__PushRequest *r = push->req;
  gauge_proc *g = NULL;
  if (r->pid != 0)
    for (size_t i = 0; i < s->n && !g; i++)
      if (same_process(&s->procs[i], r))
        g = &s->procs[i];
  if (g && !later(g, r))
    return 0;
  if (!g && reserve(s) != 0) {
    snprintf(why, whylen, "out of memory keeping a process's gauge values");
    return -1;
  }
  uint8_t *packed = NULL;
  size_t len = 0;
  if (pack_gauges(pp_pprof_profile(push->prof), c, &packed, &len, why, whylen) != 0)
    return -1;
  if (g) {
    s->mem -= g->len;
    free(g->pprof);
  } else {
    g = &s->procs[s->n++];
    snprintf(g->host, sizeof g->host, "%s", r->hostname ? r->hostname : "");
    g->pid = r->pid;
    g->start_ns = r->process_start_time_nanos;
  }
  g->end_ns = r->end_time_nanos;
  g->seq = r->sequence;
  g->pprof = packed;
  g->len = len;
  s->mem += len;
  return 0;
}

int batcher_gauge_merge(gauge_latest *s, pp_builder *b, char *why, size_t whylen) {
  size_t done = 0;
  int rc = 0;
  for (; done < s->n; done++) {
    gauge_proc *g = &s->procs[done];
    pp_pprof *p = pp_pprof_parse(g->pprof, g->len, g->len, why, whylen);
    if (!p || pp_merge_add(b, pp_pprof_profile(p), why, whylen) != 0) {
      pp_pprof_free(p);
      rc = -1;
      break;
    }
    pp_pprof_free(p);
    s->mem -= g->len;
    free(g->pprof);
  }
  memmove(s->procs, s->procs + done, (s->n - done) * sizeof *s->procs);
  s->n -= done;
  return rc;
}

void batcher_gauge_free(gauge_latest *s) {
  for (size_t i = 0; i < s->n; i++)
    free(s->procs[i].pprof);
  free(s->procs);
  memset(s, 0, sizeof *s);
}
