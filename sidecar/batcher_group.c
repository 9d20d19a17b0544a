/* The groups: a batch's key, its pushes, its builder and payload, its
 * per-target retry state; their memory accounting and gauges. */
#include "batcher_int.h"

typedef struct keybuf {
  char *p;
  size_t len, cap;
  bool oom;
} keybuf;

/* Length-prefixed so no two different field lists give the same key. */
static void key_add(keybuf *k, const char *s) {
  if (k->oom)
    return;
  if (!s)
    s = "";
  size_t sl = strlen(s);
  size_t need = k->len + 24 + sl;
  if (need > k->cap) {
    size_t ncap = need * 2;
    char *np = realloc(k->p, ncap);
    if (!np) {
      k->oom = true;
      return;
    }
    k->p = np;
    k->cap = ncap;
  }
  k->len += (size_t)snprintf(k->p + k->len, k->cap - k->len, "%zu:", sl);
  memcpy(k->p + k->len, s, sl);
  k->len += sl;
}

static const char *pstr(const Perftools__Profiles__Profile *p, int64_t i) {
  return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "";
}

static int cmp_labels(const void *a, const void *b) {
  const Pushprof__V1__Label *x = *(Pushprof__V1__Label *const *)a;
  const Pushprof__V1__Label *y = *(Pushprof__V1__Label *const *)b;
  int c = strcmp(x->key, y->key);
  return c ? c : strcmp(x->value, y->value);
}

/* Sorts req's labels in place (order does not matter to anyone) and builds
 * the grouping key. NULL on ENOMEM. */
const char *batcher_profile_type(const Pushprof__V1__PushRequest *req,
                                 const Perftools__Profiles__Profile *p) {
  const char *t = req && req->profile_type && req->profile_type[0] ? req->profile_type
                                                                   : exporter_profile_type(p);
  return strcmp(t, "cpu") == 0 ? "" : t;
}

char *batcher_key(Pushprof__V1__PushRequest *req, const Perftools__Profiles__Profile *p,
                  size_t *keylen) {
  keybuf k = {0};
  char num[32];
  if (req->n_labels > 1)
    qsort(req->labels, req->n_labels, sizeof *req->labels, cmp_labels);
  key_add(&k, req->service);
  snprintf(num, sizeof num, "%zu", req->n_labels);
  key_add(&k, num);
  for (size_t i = 0; i < req->n_labels; i++) {
    key_add(&k, req->labels[i]->key);
    key_add(&k, req->labels[i]->value);
  }
  snprintf(num, sizeof num, "%zu", p->n_sample_type);
  key_add(&k, num);
  for (size_t i = 0; i < p->n_sample_type; i++) {
    key_add(&k, pstr(p, p->sample_type[i]->type));
    key_add(&k, pstr(p, p->sample_type[i]->unit));
  }
  if (p->period_type) {
    key_add(&k, pstr(p, p->period_type->type));
    key_add(&k, pstr(p, p->period_type->unit));
  } else {
    key_add(&k, "");
    key_add(&k, "");
  }
  snprintf(num, sizeof num, "%" PRId64, p->period);
  key_add(&k, num);
  key_add(&k, batcher_profile_type(req, p));
  if (k.oom) {
    free(k.p);
    return NULL;
  }
  *keylen = k.len;
  return k.p;
}

/* ---- groups ---- */

void batcher_group_free(group *g) {
  if (!g)
    return;
  for (size_t i = 0; i < g->nlabels; i++) {
    free(g->label_store[i].key);
    free(g->label_store[i].value);
  }
  free(g->label_store);
  free(g->labels);
  pp_builder_free(g->pb);
  batcher_gauge_free(&g->gauges);
  batcher_gauge_cols_free(&g->cols);
  free(g->ids);
  free(g->pids);
  free(g->node);
  free(g->subdir);
  free(g->gz);
  free(g->service);
  free(g->key);
  for (size_t t = 0; t < BATCHER_MAX_TARGETS; t++)
    free(g->ts[t].failed);
  free(g);
}

/* g's payload leaves memory: its buffer becomes the spare the next batch
 * gzips into (its pages stay mapped: a batch's payload is megabytes, each
 * page a fault when new), unless one is kept already or it is past the
 * soft limit. Lock held; the caller accounts mem_payload. */
void batcher_give_back_gz_locked(batcher *b, group *g) {
  if (!g->gz)
    return;
  if (!b->gz_spare && g->gzcap <= b->merge_soft) {
    b->gz_spare = g->gz;
    b->gz_spare_cap = g->gzcap;
  } else {
    free(g->gz);
  }
  g->gz = NULL;
  g->gzcap = 0;
}

/* Frees g and takes its memory out of the accounts. Lock held. */
void batcher_group_release(batcher *b, group *g) {
  b->mem_merge -= g->pbmem;
  if (g->gz)
    b->mem_payload -= g->gzlen;
  batcher_give_back_gz_locked(b, g);
  batcher_group_free(g);
}

/* Re-accounts g's builder after a merge. Lock held. */
void batcher_account_builder(batcher *b, group *g) {
  size_t now = (g->pb ? pp_builder_mem_content(g->pb) : 0) + g->gauges.mem;
  b->mem_merge = b->mem_merge - g->pbmem + now;
  g->pbmem = now;
}

/* An estimate of what a pending group costs in memory besides its builder
 * and payload: the index the issue allows per batch. */
static size_t group_index_mem(const group *g) {
  size_t n = sizeof *g + g->keylen + strlen(g->service) + 2 * 16 +
             g->capids * (SPOOL_ID_MAX + sizeof *g->pids) +
             g->nlabels * (sizeof *g->label_store + 32);
  return n;
}

/* Every target that still owes g an attempt may try now. */
void batcher_group_due_now(group *g) {
  for (size_t t = 0; t < BATCHER_MAX_TARGETS; t++)
    g->ts[t].next_attempt_mono = 0;
}

/* The first target of g due at now (-1: none); *next gets the earliest
 * attempt time of the targets not due yet (INT64_MAX: none). */
int batcher_group_due_target(const batcher *b, const group *g, int64_t now, int64_t *next) {
  int due = -1;
  *next = INT64_MAX;
  for (size_t t = 0; t < b->nex; t++) {
    if (g->ts[t].done)
      continue;
    if (g->ts[t].next_attempt_mono <= now) {
      if (due < 0)
        due = (int)t;
    } else if (g->ts[t].next_attempt_mono < *next) {
      *next = g->ts[t].next_attempt_mono;
    }
  }
  return due;
}

/* "pushprof label KEY=VALUE" with every byte outside printable ASCII (and
 * the backslash) as \xNN: a label may hold any bytes, a pprof string should
 * be UTF-8. NULL on ENOMEM. */
static char *label_comment(const char *k, const char *v) {
  static const char prefix[] = "pushprof label ";
  size_t kl = strlen(k), vl = strlen(v);
  char *out = malloc(sizeof prefix + 4 * (kl + vl) + 2), *o = out;
  if (!out)
    return NULL;
  memcpy(o, prefix, sizeof prefix - 1);
  o += sizeof prefix - 1;
  for (int part = 0; part < 2; part++) {
    for (const unsigned char *p = (const unsigned char *)(part ? v : k); *p; p++) {
      if (*p >= 0x20 && *p < 0x7f && *p != '\\')
        *o++ = (char)*p;
      else
        o += sprintf(o, "\\x%02x", *p);
    }
    if (!part)
      *o++ = '=';
  }
  *o = '\0';
  return out;
}

/* The batch's process labels travel in its profile too (one comment each,
 * first), so a file or S3 object says which pod or version it is from:
 * `go tool pprof -comments`. 0, or -1 on ENOMEM. */
static int add_label_comments(pp_builder *pb, Pushprof__V1__Label *const *labels, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char *c = label_comment(labels[i]->key, labels[i]->value);
    int rc = c ? pp_builder_add_comment(pb, c) : -1;
    free(c);
    if (rc != 0)
      return -1;
  }
  return 0;
}

/* A group for req's service and labels. open: pushes are merged into it (a
 * builder, label comments first); a batch recovered from its manifest has
 * its payload already and gets neither. */
/* A new group; open: with a builder, pb (an empty one to reuse; the group
 * owns it from here, even on failure) or a new one. */
group *batcher_group_new(char *key, size_t keylen, const Pushprof__V1__PushRequest *req,
                         pp_builder *pb, bool open) {
  group *g = calloc(1, sizeof *g);
  if (!g) {
    pp_builder_free(pb);
    return NULL;
  }
  g->pb = open ? (pb ? pb : pp_builder_new()) : NULL;
  g->service = strdup(req->service);
  if (req->n_labels) {
    g->label_store = calloc(req->n_labels, sizeof *g->label_store);
    g->labels = calloc(req->n_labels, sizeof *g->labels);
  }
  if ((open && !g->pb) || !g->service || (req->n_labels && (!g->label_store || !g->labels)))
    goto fail;
  for (size_t i = 0; i < req->n_labels; i++) {
    pushprof__v1__label__init(&g->label_store[i]);
    g->label_store[i].key = strdup(req->labels[i]->key);
    g->label_store[i].value = strdup(req->labels[i]->value);
    g->labels[i] = &g->label_store[i];
    g->nlabels = i + 1;
    if (!g->label_store[i].key || !g->label_store[i].value)
      goto fail;
  }
  if (open && add_label_comments(g->pb, g->labels, g->nlabels) != 0)
    goto fail;
  g->key = key;
  g->keylen = keylen;
  g->opened_mono = mono_ns();
  g->oldest_wall = INT64_MAX;
  g->start_ns = INT64_MAX;
  g->end_ns = INT64_MIN;
  return g;
fail:
  batcher_group_free(g);
  return NULL;
}

int batcher_group_add_id(group *g, const char *id, const dedup_id *pid) {
  if (g->nids == g->capids) {
    size_t ncap = g->capids ? g->capids * 2 : 1; /* most batches in an outage hold one push */
    char(*nv)[SPOOL_ID_MAX] = realloc(g->ids, ncap * sizeof *nv);
    if (!nv)
      return -1;
    g->ids = nv;
    dedup_id *np = realloc(g->pids, ncap * sizeof *np);
    if (!np)
      return -1;
    g->pids = np;
    g->capids = ncap;
  }
  g->pids[g->nids] = *pid;
  snprintf(g->ids[g->nids++], SPOOL_ID_MAX, "%s", id);
  return 0;
}

/* When the push was first made durable: our spool ids start with the ns time
 * of the write, which survives restarts; else the push's own end time if it
 * is plausible; else now. */
int64_t batcher_push_birth(const char *id, const Pushprof__V1__PushRequest *req, int64_t now) {
  if (strlen(id) > 21 && id[20] == '-') {
    int64_t t = 0;
    bool digits = true;
    for (int i = 0; i < 20 && digits; i++) {
      if (id[i] < '0' || id[i] > '9')
        digits = false;
      else
        t = t * 10 + (id[i] - '0');
    }
    if (digits && t > 0 && t <= now)
      return t;
  }
  if (req->end_time_nanos > 0 && req->end_time_nanos <= now)
    return req->end_time_nanos;
  return now;
}

void batcher_group_unlink(batcher *b, group *g) {
  for (group **pp = &b->groups; *pp; pp = &(*pp)->next) {
    if (*pp == g) {
      *pp = g->next;
      return;
    }
  }
}

void batcher_publish_gauges(batcher *b, int64_t now_wall) {
  int64_t n = 0, oldest = 0;
  uint64_t index = 0;
  for (group *g = b->groups; g; g = g->next) {
    n++;
    index += group_index_mem(g);
    if (g->oldest_wall != INT64_MAX && now_wall - g->oldest_wall > oldest)
      oldest = now_wall - g->oldest_wall;
  }
  metrics_set(G_PENDING_BATCHES, n);
  metrics_set(G_OLDEST_PENDING_AGE, oldest / NS_PER_S);
  metrics_set(G_MEMORY_BATCHES, (int64_t)(b->mem_merge + b->mem_payload + index + b->pack_cap +
                                          b->gz_spare_cap + b->spare_pb_mem));
  for (size_t t = 0; t < b->nex; t++) {
    int64_t owed = 0;
    for (group *g = b->groups; g; g = g->next)
      owed += !g->ts[t].done;
    metrics_target_set_pending(b->target_metric[t], owed);
  }
}
