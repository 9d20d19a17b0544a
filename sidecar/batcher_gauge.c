/* A group's gauge columns and each process's latest push (see
 * batcher_gauge.h). Processes are kept in an array searched linearly: a
 * batch holds one service with one set of process labels, so a handful of
 * processes, rarely hundreds. */
#include "batcher_gauge.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_frame.h"
#include "pp_merge.h"

#define GAUGE_PREFIX "inuse_"

struct gauge_proc {
  char host[PP_HOSTNAME_MAX + 1]; /* pp_push_decode checked its length */
  uint32_t pid;
  int64_t start_ns;
  int64_t end_ns;
  uint64_t seq;
  pp_pprof *prof;
  size_t mem; /* the profile's arena */
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

int batcher_gauge_reserve(gauge_latest *s) {
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

static void put(gauge_latest *s, gauge_proc *g, pp_push *push) {
  const Pushprof__V1__PushRequest *r = push->req;
  snprintf(g->host, sizeof g->host, "%s", r->hostname ? r->hostname : "");
  g->pid = r->pid;
  g->start_ns = r->process_start_time_nanos;
  g->end_ns = r->end_time_nanos;
  g->seq = r->sequence;
  g->prof = push->prof;
  g->mem = pp_pprof_mem(push->prof);
  s->mem += g->mem;
  push->prof = NULL;
}

void batcher_gauge_offer(gauge_latest *s, pp_push *push) {
  const Pushprof__V1__PushRequest *r = push->req;
  if (r->pid != 0)
    for (size_t i = 0; i < s->n; i++) {
      gauge_proc *g = &s->procs[i];
      if (!same_process(g, r))
        continue;
      if (!later(g, r))
        return;
      s->mem -= g->mem;
      pp_pprof_free(g->prof);
      put(s, g, push);
      return;
    }
  assert(s->n < s->cap); /* batcher_gauge_reserve */
  put(s, &s->procs[s->n++], push);
}

int batcher_gauge_merge(gauge_latest *s, pp_builder *b, const gauge_cols *c, char *why,
                        size_t whylen) {
  size_t done = 0;
  int rc = 0;
  for (; done < s->n; done++) {
    gauge_proc *g = &s->procs[done];
    if (pp_merge_add_columns(b, pp_pprof_profile(g->prof), c->gauge, why, whylen) != 0) {
      rc = -1;
      break;
    }
    s->mem -= g->mem;
    pp_pprof_free(g->prof);
  }
  memmove(s->procs, s->procs + done, (s->n - done) * sizeof *s->procs);
  s->n -= done;
  return rc;
}

void batcher_gauge_free(gauge_latest *s) {
  for (size_t i = 0; i < s->n; i++)
    pp_pprof_free(s->procs[i].prof);
  free(s->procs);
  memset(s, 0, sizeof *s);
}
