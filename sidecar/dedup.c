/* Push identities and their index (see dedup.h): an open-addressing hash
 * table with linear probing; ids come from SHA-256, so their first 8 bytes
 * already spread well. Deleted slots are tombstones until the next resize. */
#include "dedup.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

enum { SLOT_EMPTY, SLOT_USED, SLOT_DELETED };

typedef struct slot {
  dedup_entry e;
  uint8_t state;
} slot;

struct dedup_index {
  slot *v;
  size_t cap; /* power of two, or 0 */
  size_t used, deleted;
};

bool dedup_id_is_zero(const dedup_id *id) {
  for (size_t i = 0; i < sizeof id->b; i++)
    if (id->b[i])
      return false;
  return true;
}

bool dedup_push_id(const Pushprof__V1__PushRequest *req, dedup_id *id) {
  memset(id, 0, sizeof *id);
  if (!req || req->sequence == 0 || req->process_start_time_nanos == 0)
    return false;
  /* Length-prefixed fields: no two different tuples hash the same input. */
  char buf[1024];
  const char *svc = req->service ? req->service : "";
  const char *host = req->hostname ? req->hostname : "";
  int n = snprintf(buf, sizeof buf,
                   "pushprof-push-id-1|%zu:%s|%zu:%s|%" PRIu32 "|%" PRId64 "|%" PRIu64 "|%" PRId64
                   "|%" PRId64,
                   strlen(svc), svc, strlen(host), host, req->pid, req->process_start_time_nanos,
                   req->sequence, req->start_time_nanos, req->end_time_nanos);
  if (n < 0 || (size_t)n >= sizeof buf)
    return false;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (EVP_Digest(buf, (size_t)n, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen < sizeof id->b)
    return false;
  memcpy(id->b, md, sizeof id->b);
  if (dedup_id_is_zero(id))
    id->b[0] = 1; /* zero means "none" */
  return true;
}

void dedup_file_id(const char *spool_id, dedup_id *id) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  char buf[128];
  int n = snprintf(buf, sizeof buf, "pushprof-file-id-1|%s", spool_id ? spool_id : "");
  memset(id, 0, sizeof *id);
  if (n > 0 && EVP_Digest(buf, (size_t)n, md, &mdlen, EVP_sha256(), NULL) == 1 &&
      mdlen >= sizeof id->b)
    memcpy(id->b, md, sizeof id->b);
  else
    memcpy(id->b, &(uint64_t){dedup_file_tag(spool_id)}, sizeof(uint64_t));
  if (dedup_id_is_zero(id))
    id->b[0] = 1;
}

uint64_t dedup_file_tag(const char *spool_id) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const unsigned char *p = (const unsigned char *)spool_id; p && *p; p++) {
    h ^= *p;
    h *= 1099511628211ull;
  }
  return h;
}

static uint64_t id_hash(const dedup_id *id) {
  uint64_t h;
  memcpy(&h, id->b, sizeof h);
  return h;
}

dedup_index *dedup_new(void) {
  return calloc(1, sizeof(dedup_index));
}

void dedup_free(dedup_index *x) {
  if (!x)
    return;
  free(x->v);
  free(x);
}

size_t dedup_size(const dedup_index *x) {
  return x ? x->used : 0;
}

/* The slot holding id, or NULL. */
static slot *find_slot(const dedup_index *x, const dedup_id *id) {
  if (!x->cap)
    return NULL;
  size_t mask = x->cap - 1;
  for (size_t i = id_hash(id) & mask, n = 0; n < x->cap; i = (i + 1) & mask, n++) {
    slot *s = &x->v[i];
    if (s->state == SLOT_EMPTY)
      return NULL;
    if (s->state == SLOT_USED && memcmp(s->e.id.b, id->b, sizeof id->b) == 0)
      return s;
  }
  return NULL;
}

const dedup_entry *dedup_find(const dedup_index *x, const dedup_id *id) {
  slot *s = x ? find_slot(x, id) : NULL;
  return s ? &s->e : NULL;
}

/* Places e in a table known to have room and not to hold e's id. */
static void place(slot *v, size_t cap, const dedup_entry *e) {
  size_t mask = cap - 1;
  size_t i = id_hash(&e->id) & mask;
  while (v[i].state == SLOT_USED)
    i = (i + 1) & mask;
  v[i].e = *e;
  v[i].state = SLOT_USED;
}

static int grow(dedup_index *x) {
  size_t ncap = x->cap ? x->cap : 64;
  while ((x->used + 1) * 2 > ncap) /* keep live entries under half */
    ncap *= 2;
  slot *nv = calloc(ncap, sizeof *nv);
  if (!nv)
    return -1;
  for (size_t i = 0; i < x->cap; i++)
    if (x->v[i].state == SLOT_USED)
      place(nv, ncap, &x->v[i].e);
  free(x->v);
  x->v = nv;
  x->cap = ncap;
  x->deleted = 0;
  return 0;
}

int dedup_put(dedup_index *x, const dedup_id *id, uint64_t file_tag, int64_t expires_ns) {
  if (!x)
    return -1;
  slot *s = find_slot(x, id);
  if (s) {
    s->e.file_tag = file_tag;
    s->e.expires_ns = expires_ns;
    return 0;
  }
  /* Used plus deleted slots stay under 3/4 so probes end at an empty one. */
  if ((x->used + x->deleted + 1) * 4 > x->cap * 3 && grow(x) != 0)
    return -1;
  dedup_entry e = {.id = *id, .file_tag = file_tag, .expires_ns = expires_ns};
  size_t mask = x->cap - 1;
  size_t i = id_hash(id) & mask;
  while (x->v[i].state == SLOT_USED)
    i = (i + 1) & mask;
  if (x->v[i].state == SLOT_DELETED)
    x->deleted--;
  x->v[i].e = e;
  x->v[i].state = SLOT_USED;
  x->used++;
  return 0;
}

void dedup_erase(dedup_index *x, const dedup_id *id) {
  slot *s = x ? find_slot(x, id) : NULL;
  if (!s)
    return;
  s->state = SLOT_DELETED;
  x->used--;
  x->deleted++;
}

void dedup_expire(dedup_index *x, int64_t now_ns) {
  if (!x)
    return;
  for (size_t i = 0; i < x->cap; i++) {
    slot *s = &x->v[i];
    if (s->state == SLOT_USED && s->e.expires_ns != 0 && s->e.expires_ns < now_ns) {
      s->state = SLOT_DELETED;
      x->used--;
      x->deleted++;
    }
  }
}
