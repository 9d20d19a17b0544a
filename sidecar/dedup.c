/* Push identities and their index (see dedup.h): an open-addressing hash
 * table with linear probing; ids come from SHA-256, so their first 8 bytes
 * already spread well. Deleted slots are tombstones until the next resize. */
#include "dedup.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

/* 24 bytes a slot: ids are never all zero, so a zero id marks a free slot
 * (expires_s 1: deleted, probes go on; 0: empty, probes stop). Times are
 * whole seconds, rounded up; 0 while pending. */
typedef struct slot {
  dedup_id id;
  uint32_t file_tag;
  uint32_t expires_s;
} slot;

struct dedup_index {
  slot *v;
  size_t cap; /* power of two, or 0 */
  size_t used, deleted, done;
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

uint32_t dedup_file_tag(const char *spool_id) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const unsigned char *p = (const unsigned char *)spool_id; p && *p; p++) {
    h ^= *p;
    h *= 1099511628211ull;
  }
  return (uint32_t)(h ^ (h >> 32));
}

static uint64_t id_hash(const dedup_id *id) {
  uint64_t h;
  memcpy(&h, id->b, sizeof h);
  return h;
}

static bool slot_used(const slot *s) {
  return !dedup_id_is_zero(&s->id);
}

static void slot_free(dedup_index *x, slot *s) {
  if (s->expires_s)
    x->done--;
  memset(&s->id, 0, sizeof s->id);
  s->expires_s = 1;
  x->used--;
  x->deleted++;
}

static uint32_t to_s(int64_t ns) {
  if (ns <= 0)
    return 0;
  int64_t sec = (ns + 999999999) / 1000000000;
  return sec > UINT32_MAX ? UINT32_MAX : (uint32_t)(sec < 2 ? 2 : sec);
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
    if (!slot_used(s) && s->expires_s == 0)
      return NULL;
    if (slot_used(s) && memcmp(s->id.b, id->b, sizeof id->b) == 0)
      return s;
  }
  return NULL;
}

bool dedup_find(const dedup_index *x, const dedup_id *id, dedup_entry *out) {
  slot *s = x ? find_slot(x, id) : NULL;
  if (s && out) {
    out->id = s->id;
    out->file_tag = s->file_tag;
    out->expires_ns = (int64_t)s->expires_s * 1000000000LL;
  }
  return s != NULL;
}

/* First free slot on id's probe path, in a table known to have one. */
static slot *free_slot(slot *v, size_t cap, const dedup_id *id) {
  size_t mask = cap - 1;
  size_t i = id_hash(id) & mask;
  while (slot_used(&v[i]))
    i = (i + 1) & mask;
  return &v[i];
}

static int grow(dedup_index *x) {
  size_t ncap = x->cap ? x->cap : 64;
  while ((x->used + 1) * 2 > ncap) /* keep live entries under half */
    ncap *= 2;
  slot *nv = calloc(ncap, sizeof *nv);
  if (!nv)
    return -1;
  for (size_t i = 0; i < x->cap; i++)
    if (slot_used(&x->v[i]))
      *free_slot(nv, ncap, &x->v[i].id) = x->v[i];
  free(x->v);
  x->v = nv;
  x->cap = ncap;
  x->deleted = 0;
  return 0;
}

/* Over DEDUP_MAX_DONE exported ids: forget the oldest quarter or so of the
 * expiry range, as often as needed. */
static void evict_oldest(dedup_index *x) {
  while (x->done >= DEDUP_MAX_DONE) {
    uint32_t lo = UINT32_MAX, hi = 0;
    for (size_t i = 0; i < x->cap; i++) {
      const slot *s = &x->v[i];
      if (slot_used(s) && s->expires_s) {
        lo = s->expires_s < lo ? s->expires_s : lo;
        hi = s->expires_s > hi ? s->expires_s : hi;
      }
    }
    if (hi == 0) { /* none found: the count was off; never spin */
      x->done = 0;
      return;
    }
    uint32_t cut = lo + (hi - lo) / 4;
    for (size_t i = 0; i < x->cap; i++) {
      slot *s = &x->v[i];
      if (slot_used(s) && s->expires_s && s->expires_s <= cut)
        slot_free(x, s);
    }
  }
}

int dedup_put(dedup_index *x, const dedup_id *id, uint32_t file_tag, int64_t expires_ns) {
  if (!x || dedup_id_is_zero(id))
    return -1;
  uint32_t exp = to_s(expires_ns);
  slot *s = find_slot(x, id);
  if (!s) {
    if (exp && x->done >= DEDUP_MAX_DONE)
      evict_oldest(x);
    /* Used plus deleted slots stay under 3/4 so probes end at an empty one. */
    if ((x->used + x->deleted + 1) * 4 > x->cap * 3 && grow(x) != 0)
      return -1;
    s = free_slot(x->v, x->cap, id);
    if (s->expires_s) /* a deleted slot reused */
      x->deleted--;
    s->id = *id;
    s->expires_s = 0;
    x->used++;
  }
  x->done += (exp != 0) - (s->expires_s != 0);
  s->file_tag = file_tag;
  s->expires_s = exp;
  return 0;
}

void dedup_erase(dedup_index *x, const dedup_id *id) {
  slot *s = x ? find_slot(x, id) : NULL;
  if (s)
    slot_free(x, s);
}

void dedup_expire(dedup_index *x, int64_t now_ns) {
  if (!x)
    return;
  uint32_t now = to_s(now_ns);
  for (size_t i = 0; i < x->cap; i++) {
    slot *s = &x->v[i];
    if (slot_used(s) && s->expires_s && s->expires_s < now)
      slot_free(x, s);
  }
}
