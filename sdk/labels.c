/* Per-thread labels: see labels.h for the protocol. The set path after the
 * thread's first label is: bounded strnlen of key and value, a scan of at
 * most PUSHPROF_LABELS_MAX pairs, an edit of the private copy and a copy of
 * its words into the inactive buffer. No malloc, no locks, no syscalls. */
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
  /* The handler reads g_self on this thread: clear it before the free. */
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
}

/* Offset of the pair whose key is key (klen bytes), or -1; *pairlen its size. */
static int find_pair(const labels_block *b, const char *key, size_t klen, size_t *pairlen) {
  size_t off = 0;
  for (unsigned i = 0; i < b->nlabels; i++) {
    const char *k = b->shadow + off;
    size_t kl = strlen(k);
    size_t vl = strlen(k + kl + 1);
    if (kl == klen && memcmp(k, key, klen) == 0) {
      *pairlen = kl + vl + 2;
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
  int off = find_pair(b, key, klen, &oldlen);
  if (!value) {
    if (off < 0)
      return PUSHPROF_OK;
    memmove(b->shadow + off, b->shadow + off + oldlen, b->len - (size_t)off - oldlen);
    b->len = (uint16_t)(b->len - oldlen);
    b->nlabels--;
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
  } else {
    if (b->nlabels >= PUSHPROF_LABELS_MAX || b->len + newlen > RING_LABEL_BYTES)
      return PUSHPROF_ELIMIT;
    char *p = b->shadow + b->len;
    memcpy(p, key, klen + 1);
    memcpy(p + klen + 1, value, vlen + 1);
    b->len = (uint16_t)(b->len + newlen);
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
  publish(b);
  return PUSHPROF_OK;
}

int pushprof_labels_clear(void) {
  labels_block *b = g_self;
  if (b && b->nlabels) {
    b->nlabels = 0;
    b->len = 0;
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
