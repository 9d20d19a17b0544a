/* Per-thread labels: see labels.h for the protocol. The set path after the
 * thread's first label is: bounded strnlen of key and value, a scan of at
 * most PUSHPROF_LABELS_MAX pairs, an edit of the private copy and a copy of
 * its words into the inactive buffer, then the OpenTelemetry record built
 * from the private copy. No malloc, no locks, no syscalls, except the first
 * time the process sees a key (the key map grows under a lock). */
#include "labels.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pushprof.h"
#include "threads_linux.h"

_Static_assert(PUSHPROF_LABELS_MAX == RING_MAX_LABELS, "labels must fit a ring record");
_Static_assert(PUSHPROF_LABELS_BYTES == RING_LABEL_BYTES, "labels must fit a ring record");
_Static_assert(RING_LABEL_BYTES % 8 == 0 && RING_LABEL_BYTES < 0xffff, "word copies");

#define LABELS_COPY_TRIES 4
#define RESERVED_PREFIX "pushprof_" /* keys the collector adds itself */

static __thread labels_block *g_self __attribute__((tls_model("initial-exec")));
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static int g_key_ok;
static _Atomic uint64_t g_skipped;

static void free_block(void *p) {
  /* The handler and external readers follow these pointers on this thread:
   * clear them before the free. */
  if (atomic_load_explicit(&otel_records_on, memory_order_relaxed))
    otel_thread_ctx_v1 = NULL;
  g_self = NULL;
  atomic_signal_fence(memory_order_seq_cst);
  free(p);
}

static void init_once(void) {
  g_key_ok = pthread_key_create(&g_key, free_block) == 0;
}

labels_block *labels_self_block(void) {
  return g_self;
}

/* The thread's first label: its block, and its thread-table slot (a thread
 * found by a scan, or never registered with the static library, now gets
 * exact stack bounds and a timer if sampling is on). */
static labels_block *self_block(void) {
  labels_block *b = g_self;
  if (b)
    return b;
  pthread_once(&g_once, init_once);
  b = calloc(1, sizeof *b);
  if (!b)
    return NULL;
  if (g_key_ok && pthread_setspecific(g_key, b) != 0) {
    free(b);
    return NULL;
  }
  (void)threads_register_self(); /* failure: the rescan still finds it */
  atomic_signal_fence(memory_order_seq_cst);
  g_self = b;
  return b;
}

/* Builds the thread's OTEP 4947 record from the private copy into the
 * record no reader is pointed at, then points otel_thread_ctx_v1 at it (or
 * at nothing when the thread has no labels). The ids are the record's only
 * if both trace_id and span_id are W3C hex; else they go as attributes.
 * Compiler fences suffice: readers see this thread stopped. */
static void publish_otel(labels_block *b) {
  if (!atomic_load_explicit(&otel_records_on, memory_order_relaxed))
    return;
  if (!b->nlabels) {
    otel_thread_ctx_v1 = NULL;
    return;
  }
  otel_record *r = &b->rec[b->cur ^ 1];
  int ids = b->ids_ok == 3;
  if (ids) {
    memcpy(r->trace_id, b->trace_id, 16);
    memcpy(r->span_id, b->span_id, 8);
  } else {
    memset(r->trace_id, 0, 24);
  }
  r->valid = 1;
  r->flags = 0;
  uint8_t *p = r->attrs;
  size_t off = 0;
  for (unsigned i = 0; i < b->nlabels; i++) {
    size_t kl = b->klens[i], vl = b->vlens[i];
    const char *v = b->shadow + off + kl + 1;
    off += kl + vl + 2;
    int idx = b->kidx[i];
    if (idx < 0 || (ids && idx <= OTEL_KEY_SPAN_ID))
      continue;
    if (vl > OTEL_ATTR_VALUE_MAX) { /* cut at a UTF-8 character boundary */
      vl = OTEL_ATTR_VALUE_MAX;
      while (vl && ((unsigned char)v[vl] & 0xc0) == 0x80)
        vl--;
    }
    p[0] = (uint8_t)idx;
    p[1] = (uint8_t)vl;
    /* Whole words: values are short, and a variable-length memcpy costs
     * more here than the copy. The bytes past vl stay within the block
     * (the shadow's tail, the record's room) and the next entry or
     * attrs_size covers them. */
    for (size_t j = 0; j < vl; j += 8)
      memcpy(p + 2 + j, v + j, 8);
    p += 2 + vl;
  }
  r->attrs_size = (uint16_t)(p - r->attrs);
  atomic_signal_fence(memory_order_seq_cst);
  otel_thread_ctx_v1 = r;
  b->cur ^= 1;
}

/* The pair with key index idx now has value (vlen bytes; NULL: removed):
 * keeps the decoded ids current. */
static void note_ids(labels_block *b, int idx, const char *value, size_t vlen) {
  if (idx == OTEL_KEY_TRACE_ID) {
    b->ids_ok = (uint8_t)((b->ids_ok & ~1u) |
                          (value && otel_hex_id(value, vlen, b->trace_id, 16) ? 1u : 0u));
  } else if (idx == OTEL_KEY_SPAN_ID) {
    b->ids_ok =
        (uint8_t)((b->ids_ok & ~2u) | (value && otel_hex_id(value, vlen, b->span_id, 8) ? 2u : 0u));
  }
}

/* Recomputes every pair's key index and the ids (after a restore). */
static void reindex(labels_block *b) {
  size_t off = 0;
  b->ids_ok = 0;
  for (unsigned i = 0; i < b->nlabels; i++) {
    const char *k = b->shadow + off;
    size_t kl = strlen(k);
    const char *v = k + kl + 1;
    size_t vl = strlen(v);
    b->klens[i] = (uint16_t)kl;
    b->vlens[i] = (uint16_t)vl;
    b->kidx[i] = (int16_t)otel_key_index(k, kl);
    note_ids(b, b->kidx[i], v, vl);
    off += kl + vl + 2;
  }
}

static void publish(labels_block *b) {
  uint64_t s = atomic_load_explicit(&b->seq, memory_order_relaxed);
  unsigned nb = (unsigned)(((s >> 1) + 1) & 1);
  atomic_store_explicit(&b->seq, s + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release); /* seq odd before any word changes */
  size_t nw = ((size_t)b->len + 7) / 8;
  for (size_t i = 0; i < nw; i++) {
    uint64_t w;
    memcpy(&w, b->shadow + 8 * i, 8);
    atomic_store_explicit(&b->buf[nb][i], w, memory_order_relaxed);
  }
  atomic_store_explicit(&b->meta[nb], (uint32_t)b->nlabels << 16 | b->len, memory_order_relaxed);
  atomic_store_explicit(&b->seq, s + 2, memory_order_release);
  publish_otel(b);
}

/* Offset of the pair whose key is key (klen bytes), or -1; *pairlen its
 * size, *ord its position. */
static int find_pair(const labels_block *b, const char *key, size_t klen, size_t *pairlen,
                     unsigned *ord) {
  size_t off = 0;
  for (unsigned i = 0; i < b->nlabels; i++) {
    const char *k = b->shadow + off;
    size_t kl = b->klens[i], vl = b->vlens[i];
    if (kl == klen && memcmp(k, key, klen) == 0) {
      *pairlen = kl + vl + 2;
      *ord = i;
      return (int)off;
    }
    off += kl + vl + 2;
  }
  return -1;
}

int pushprof_label_set(const char *key, const char *value) {
  if (!key || !key[0] || strncmp(key, RESERVED_PREFIX, sizeof RESERVED_PREFIX - 1) == 0)
    return PUSHPROF_EINVAL;
  if (value && !value[0])
    return PUSHPROF_EINVAL; /* pprof drops empty string labels */
  size_t klen = strnlen(key, PUSHPROF_LABEL_KEY_MAX + 1);
  if (klen > PUSHPROF_LABEL_KEY_MAX)
    return PUSHPROF_ELIMIT;
  size_t vlen = 0;
  if (value) {
    vlen = strnlen(value, PUSHPROF_LABEL_VALUE_MAX + 1);
    if (vlen > PUSHPROF_LABEL_VALUE_MAX)
      return PUSHPROF_ELIMIT;
  }
  labels_block *b = g_self;
  if (!b) {
    if (!value)
      return PUSHPROF_OK; /* nothing to remove */
    if (!(b = self_block()))
      return PUSHPROF_ENOMEM;
  }
  size_t oldlen = 0;
  unsigned ord = 0;
  int off = find_pair(b, key, klen, &oldlen, &ord);
  if (!value) {
    if (off < 0)
      return PUSHPROF_OK;
    memmove(b->shadow + off, b->shadow + off + oldlen, b->len - (size_t)off - oldlen);
    b->len = (uint16_t)(b->len - oldlen);
    b->nlabels--;
    note_ids(b, b->kidx[ord], NULL, 0);
    memmove(b->kidx + ord, b->kidx + ord + 1, (b->nlabels - ord) * sizeof b->kidx[0]);
    memmove(b->klens + ord, b->klens + ord + 1, (b->nlabels - ord) * sizeof b->klens[0]);
    memmove(b->vlens + ord, b->vlens + ord + 1, (b->nlabels - ord) * sizeof b->vlens[0]);
    publish(b);
    return PUSHPROF_OK;
  }
  size_t newlen = klen + vlen + 2;
  if (off >= 0) {
    if (b->len - oldlen + newlen > RING_LABEL_BYTES)
      return PUSHPROF_ELIMIT;
    char *v = b->shadow + off + klen + 1;
    if (newlen != oldlen) {
      size_t tail = (size_t)off + oldlen;
      memmove(b->shadow + off + newlen, b->shadow + tail, b->len - tail);
      b->len = (uint16_t)(b->len - oldlen + newlen);
    }
    memcpy(v, value, vlen + 1);
    b->vlens[ord] = (uint16_t)vlen;
    note_ids(b, b->kidx[ord], value, vlen);
  } else {
    if (b->nlabels >= PUSHPROF_LABELS_MAX || b->len + newlen > RING_LABEL_BYTES)
      return PUSHPROF_ELIMIT;
    char *p = b->shadow + b->len;
    memcpy(p, key, klen + 1);
    memcpy(p + klen + 1, value, vlen + 1);
    b->len = (uint16_t)(b->len + newlen);
    b->klens[b->nlabels] = (uint16_t)klen;
    b->vlens[b->nlabels] = (uint16_t)vlen;
    b->kidx[b->nlabels] = (int16_t)otel_key_index(key, klen);
    note_ids(b, b->kidx[b->nlabels], value, vlen);
    b->nlabels++;
  }
  publish(b);
  return PUSHPROF_OK;
}

/* The private layout of pushprof_label_scope. */
typedef struct scope_data {
  uint32_t magic;
  uint16_t nlabels, len;
  char pairs[RING_LABEL_BYTES];
} scope_data;
#define SCOPE_MAGIC 0x70707363u /* "ppsc" */
_Static_assert(sizeof(scope_data) <= sizeof(pushprof_label_scope),
               "pushprof_label_scope is too small for the label set");

int pushprof_labels_save(pushprof_label_scope *scope) {
  if (!scope)
    return PUSHPROF_EINVAL;
  scope_data *d = (scope_data *)(void *)scope;
  const labels_block *b = g_self;
  d->magic = SCOPE_MAGIC;
  d->nlabels = b ? b->nlabels : 0;
  d->len = b ? b->len : 0;
  if (d->len)
    memcpy(d->pairs, b->shadow, d->len);
  return PUSHPROF_OK;
}

int pushprof_labels_restore(const pushprof_label_scope *scope) {
  if (!scope)
    return PUSHPROF_EINVAL;
  const scope_data *d = (const scope_data *)(const void *)scope;
  if (d->magic != SCOPE_MAGIC || d->len > RING_LABEL_BYTES || d->nlabels > RING_MAX_LABELS)
    return PUSHPROF_EINVAL;
  labels_block *b = g_self;
  if (!b) {
    if (d->nlabels == 0)
      return PUSHPROF_OK; /* nothing set, nothing to restore */
    if (!(b = self_block()))
      return PUSHPROF_ENOMEM;
  }
  if (b->nlabels == d->nlabels && b->len == d->len && memcmp(b->shadow, d->pairs, d->len) == 0)
    return PUSHPROF_OK; /* unchanged: no publication */
  memcpy(b->shadow, d->pairs, d->len);
  b->nlabels = d->nlabels;
  b->len = d->len;
  reindex(b);
  publish(b);
  return PUSHPROF_OK;
}

int pushprof_labels_clear(void) {
  labels_block *b = g_self;
  if (b && b->nlabels) {
    b->nlabels = 0;
    b->len = 0;
    b->ids_ok = 0;
    publish(b);
  }
  return PUSHPROF_OK;
}

int labels_copy(const labels_block *b, char *dst, uint16_t *nlabels, uint16_t *len) {
  labels_block *m = (labels_block *)b; /* atomic loads of a const object */
  for (int t = 0; t < LABELS_COPY_TRIES; t++) {
    uint64_t s = atomic_load_explicit(&m->seq, memory_order_acquire);
    unsigned i = (unsigned)((s >> 1) & 1);
    uint32_t meta = atomic_load_explicit(&m->meta[i], memory_order_relaxed);
    uint32_t n = meta >> 16, l = meta & 0xffff;
    size_t nw = l <= RING_LABEL_BYTES ? (l + 7) / 8 : LABELS_WORDS;
    for (size_t k = 0; k < nw; k++) {
      uint64_t w = atomic_load_explicit(&m->buf[i][k], memory_order_relaxed);
      memcpy(dst + 8 * k, &w, 8);
    }
    atomic_thread_fence(memory_order_acquire);
    uint64_t s2 = atomic_load_explicit(&m->seq, memory_order_relaxed);
    /* buf[i] is next overwritten by the write that makes seq (s & ~1) + 3. */
    if (s2 - (s & ~(uint64_t)1) <= 2 && n <= RING_MAX_LABELS && l <= RING_LABEL_BYTES) {
      *nlabels = (uint16_t)n;
      *len = (uint16_t)l;
      return 0;
    }
  }
  return -1;
}

void labels_snapshot(ring_record *rec) {
  const labels_block *b = g_self;
  rec->nlabels = 0;
  rec->labels_len = 0;
  if (b && labels_copy(b, rec->labels, &rec->nlabels, &rec->labels_len) != 0) {
    rec->nlabels = 0;
    rec->labels_len = 0;
    atomic_fetch_add_explicit(&g_skipped, 1, memory_order_relaxed);
  }
}

uint64_t labels_skipped(void) {
  return atomic_load_explicit(&g_skipped, memory_order_relaxed);
}
