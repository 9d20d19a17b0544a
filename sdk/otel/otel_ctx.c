/* The OTEP 4719 process context and the OTEP 4947 key map: see otel_ctx.h.
 * One writer at a time (g_lock) follows the OTEP 4719 publication and
 * update protocols; the payload sits right after the header and is
 * rewritten in place while published_at_ns is 0, so a reader that checks
 * the timestamp before and after its copy never keeps a torn payload. */
#include "otel_ctx.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "pp_varint.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif
#ifndef PR_SET_VMA_ANON_NAME
#define PR_SET_VMA_ANON_NAME 0
#endif

#define CTX_NAME "OTEL_CTX"
#define CTX_VERSION 2
#define CTX_MAP_BYTES (64 * 1024) /* header and the largest payload we build */
#define CTX_HEADER_BYTES 32

typedef struct ctx_header {
  char signature[8];
  uint32_t version;
  uint32_t payload_size;
  uint64_t published_at_ns;
  uint64_t payload; /* a char * in the OTEP's words; 64-bit Linux only */
} ctx_header;
_Static_assert(sizeof(ctx_header) == CTX_HEADER_BYTES, "OTEP 4719 header layout");
_Static_assert(sizeof(void *) == 8, "the header's payload field is a 64-bit pointer");

__thread otel_record *otel_thread_ctx_v1 __attribute__((visibility("default")));
/* Our own definition, whichever one the name binds to in the process. */
extern __thread otel_record *otel_own_ctx
    __attribute__((alias("otel_thread_ctx_v1"), visibility("hidden")));
_Atomic int otel_records_on;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
/* The key map: g_keys[i] for i < g_nkeys never changes once set. */
static char *_Atomic g_keys[OTEL_KEYS_MAX];
static _Atomic uint16_t g_klens[OTEL_KEYS_MAX];
static _Atomic int g_nkeys;
/* Guarded by g_lock: the published mapping and what it was built from. */
static ctx_header *g_hdr;
static char g_service[256];
static char *g_labels;
static size_t g_nlabels;
static char g_instance_id[37];

static void atfork_prepare(void) {
  pthread_mutex_lock(&g_lock);
}

static void atfork_parent(void) {
  pthread_mutex_unlock(&g_lock);
}

/* MADV_DONTFORK left the child without the mapping: it has no context
 * until it publishes its own, with an instance id of its own. */
static void atfork_child(void) {
  g_hdr = NULL;
  g_instance_id[0] = '\0';
  pthread_mutex_unlock(&g_lock);
}

static void init_once(void) {
  /* A program or library that defines otel_thread_ctx_v1 ahead of ours
   * owns the pointer: writing it would replace its records with ours.
   * NULL: the name is in no dynamic symbol table, so ours is the one. */
  void *bound = dlsym(RTLD_DEFAULT, "otel_thread_ctx_v1");
  atomic_store(&otel_records_on, !bound || bound == (void *)&otel_own_ctx);
  static char trace_id[] = "trace_id", span_id[] = "span_id";
  atomic_store(&g_keys[OTEL_KEY_TRACE_ID], trace_id);
  atomic_store(&g_klens[OTEL_KEY_TRACE_ID], sizeof trace_id - 1);
  atomic_store(&g_keys[OTEL_KEY_SPAN_ID], span_id);
  atomic_store(&g_klens[OTEL_KEY_SPAN_ID], sizeof span_id - 1);
  atomic_store(&g_nkeys, 2);
  (void)pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

int otel_records_ours(void) {
  pthread_once(&g_once, init_once);
  return atomic_load(&otel_records_on);
}

static void new_instance_id(void) {
  uint8_t r[16];
  if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t a = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30, b = (uint64_t)getpid();
    memcpy(r, &a, 8);
    memcpy(r + 8, &b, 8);
  }
  r[6] = (uint8_t)((r[6] & 0x0f) | 0x40); /* UUID version 4 */
  r[8] = (uint8_t)((r[8] & 0x3f) | 0x80); /* RFC 4122 variant */
  snprintf(g_instance_id, sizeof g_instance_id,
           "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2],
           r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
}

/* Protobuf writing: a length-delimited field's tag and length. */
static uint8_t *put_len(uint8_t *p, unsigned field, size_t len) {
  *p++ = (uint8_t)(field << 3 | 2);
  return pp_put_varint(p, len);
}

static size_t len_field_size(size_t len) {
  return 1 + pp_varint_size(len) + len;
}

/* AnyValue{string_value = s}: its encoded size, and the writer. */
static size_t anystr_size(size_t slen) {
  return len_field_size(slen);
}

static uint8_t *put_anystr(uint8_t *p, const char *s, size_t slen) {
  p = put_len(p, 1, slen);
  memcpy(p, s, slen);
  return p + slen;
}

/* KeyValue{key, value = AnyValue{string_value}} as Resource.attributes. */
static size_t kv_str_size(size_t klen, size_t vlen) {
  return len_field_size(len_field_size(klen) + len_field_size(anystr_size(vlen)));
}

static uint8_t *put_kv_str(uint8_t *p, const char *k, size_t klen, const char *v, size_t vlen) {
  p = put_len(p, 1, len_field_size(klen) + len_field_size(anystr_size(vlen)));
  p = put_len(p, 1, klen);
  memcpy(p, k, klen);
  p += klen;
  p = put_len(p, 2, anystr_size(vlen));
  return put_anystr(p, v, vlen);
}

static int reserved_key(const char *k) {
  return strcmp(k, "service.name") == 0 || strcmp(k, "service.instance.id") == 0 ||
         strncmp(k, "threadlocal.", 12) == 0;
}

/* The Resource, into out (cap bytes): its size, or 0 if it does not fit. */
static size_t encode_resource(uint8_t *out, size_t cap, int nkeys) {
  static const char map_key[] = "threadlocal.attribute_key_map";
  size_t total = kv_str_size(12, strlen(g_service)) + kv_str_size(19, strlen(g_instance_id)) +
                 kv_str_size(26, sizeof OTEL_SCHEMA_VERSION - 1);
  const char *l = g_labels;
  for (size_t i = 0; i < g_nlabels; i++) {
    size_t kl = strlen(l), vl = strlen(l + kl + 1);
    if (!reserved_key(l))
      total += kv_str_size(kl, vl);
    l += kl + vl + 2;
  }
  size_t arr = 0; /* ArrayValue.values */
  for (int i = 0; i < nkeys; i++)
    arr += len_field_size(anystr_size(strlen(atomic_load(&g_keys[i]))));
  size_t any = len_field_size(arr); /* AnyValue.array_value (field 5) */
  size_t kv = len_field_size(sizeof map_key - 1) + len_field_size(any);
  total += len_field_size(kv);
  if (total > cap)
    return 0;

  uint8_t *p = out;
  p = put_kv_str(p, "service.name", 12, g_service, strlen(g_service));
  p = put_kv_str(p, "service.instance.id", 19, g_instance_id, strlen(g_instance_id));
  l = g_labels;
  for (size_t i = 0; i < g_nlabels; i++) {
    size_t kl = strlen(l), vl = strlen(l + kl + 1);
    if (!reserved_key(l))
      p = put_kv_str(p, l, kl, l + kl + 1, vl);
    l += kl + vl + 2;
  }
  p = put_kv_str(p, "threadlocal.schema_version", 26, OTEL_SCHEMA_VERSION,
                 sizeof OTEL_SCHEMA_VERSION - 1);
  p = put_len(p, 1, kv);
  p = put_len(p, 1, sizeof map_key - 1);
  memcpy(p, map_key, sizeof map_key - 1);
  p += sizeof map_key - 1;
  p = put_len(p, 2, any);
  p = put_len(p, 5, arr);
  for (int i = 0; i < nkeys; i++) {
    const char *k = atomic_load(&g_keys[i]);
    size_t kl = strlen(k);
    p = put_len(p, 1, anystr_size(kl));
    p = put_anystr(p, k, kl);
  }
  return (size_t)(p - out);
}

static uint64_t now_ns(uint64_t after) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  return t > after ? t : after + 1; /* readers detect an update by a change */
}

static void name_mapping(void *addr) {
  (void)prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)addr, CTX_MAP_BYTES,
              (unsigned long)CTX_NAME); /* unsupported before Linux 5.17: ignored */
}

/* Caller holds g_lock. The mapping: memfd first (it shows as
 * /memfd:OTEL_CTX), else shared anonymous memory (named
 * [anon_shmem:OTEL_CTX] where the kernel names mappings). */
static ctx_header *map_header(char *err, size_t errlen) {
  void *m = MAP_FAILED;
  int fd = memfd_create(CTX_NAME, MFD_CLOEXEC);
  if (fd >= 0) {
    if (ftruncate(fd, CTX_MAP_BYTES) == 0)
      m = mmap(NULL, CTX_MAP_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
  }
  if (m == MAP_FAILED)
    m = mmap(NULL, CTX_MAP_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    snprintf(err, errlen, "cannot map %d bytes: %s", CTX_MAP_BYTES, strerror(errno));
    return NULL;
  }
  if (madvise(m, CTX_MAP_BYTES, MADV_DONTFORK) != 0) {
    snprintf(err, errlen, "madvise(MADV_DONTFORK): %s", strerror(errno));
    munmap(m, CTX_MAP_BYTES);
    return NULL;
  }
  return m;
}

/* Caller holds g_lock: writes the payload, then publishes it (first time)
 * or updates it in place. */
static int write_locked(char *err, size_t errlen) {
  int fresh = g_hdr == NULL;
  ctx_header *h = g_hdr;
  if (fresh && !(h = map_header(err, errlen)))
    return -1;
  uint8_t *payload = (uint8_t *)h + CTX_HEADER_BYTES;
  uint64_t prev = fresh ? 0 : __atomic_load_n(&h->published_at_ns, __ATOMIC_RELAXED);
  if (!fresh) {
    __atomic_store_n(&h->published_at_ns, 0, __ATOMIC_RELAXED);
    atomic_thread_fence(memory_order_seq_cst); /* the 0 is seen before any payload byte */
  }
  size_t n = encode_resource(payload, CTX_MAP_BYTES - CTX_HEADER_BYTES, atomic_load(&g_nkeys));
  if (n == 0) {
    snprintf(err, errlen, "the resource does not fit %d bytes", CTX_MAP_BYTES);
    if (fresh)
      munmap(h, CTX_MAP_BYTES);
    else /* still consistent: nothing was written */
      __atomic_store_n(&h->published_at_ns, prev, __ATOMIC_RELEASE);
    return -1;
  }
  __atomic_store_n(&h->payload_size, (uint32_t)n, __ATOMIC_RELAXED);
  __atomic_store_n(&h->payload, (uint64_t)(uintptr_t)payload, __ATOMIC_RELAXED);
  if (fresh)
    __atomic_store_n(&h->version, CTX_VERSION, __ATOMIC_RELAXED);
  atomic_thread_fence(memory_order_seq_cst); /* payload and fields before the timestamp */
  __atomic_store_n(&h->published_at_ns, now_ns(prev), __ATOMIC_RELAXED);
  if (fresh) {
    atomic_thread_fence(memory_order_seq_cst); /* everything before the signature */
    memcpy(h->signature, CTX_NAME, 8);
    g_hdr = h;
  }
  name_mapping(h);
  return 0;
}

int otel_ctx_publish(const char *service, const char *labels, size_t nlabels, char *err,
                     size_t errlen) {
  pthread_once(&g_once, init_once);
  size_t len = 0;
  const char *l = labels;
  for (size_t i = 0; i < nlabels; i++) {
    size_t kl = strlen(l), vl = strlen(l + kl + 1);
    len += kl + vl + 2;
    l += kl + vl + 2;
  }
  char *copy = malloc(len ? len : 1);
  if (!copy) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (len)
    memcpy(copy, labels, len);
  pthread_mutex_lock(&g_lock);
  free(g_labels);
  g_labels = copy;
  g_nlabels = nlabels;
  snprintf(g_service, sizeof g_service, "%s", service);
  if (!g_instance_id[0])
    new_instance_id();
  int rc = write_locked(err, errlen);
  pthread_mutex_unlock(&g_lock);
  return rc;
}

/* The index of key in the first n entries of the map, or -1. */
static int find_key(const char *key, size_t klen, int n) {
  for (int i = 0; i < n; i++) {
    if (atomic_load_explicit(&g_klens[i], memory_order_relaxed) == klen &&
        memcmp(atomic_load_explicit(&g_keys[i], memory_order_relaxed), key, klen) == 0)
      return i;
  }
  return -1;
}

int otel_key_index(const char *key, size_t klen) {
  pthread_once(&g_once, init_once);
  int idx = find_key(key, klen, atomic_load_explicit(&g_nkeys, memory_order_acquire));
  if (idx >= 0)
    return idx;
  pthread_mutex_lock(&g_lock);
  int n = atomic_load_explicit(&g_nkeys, memory_order_relaxed);
  idx = find_key(key, klen, n);
  char *k;
  if (idx < 0 && n < OTEL_KEYS_MAX && (k = strndup(key, klen)) != NULL) {
    atomic_store_explicit(&g_keys[n], k, memory_order_relaxed);
    atomic_store_explicit(&g_klens[n], (uint16_t)klen, memory_order_relaxed);
    atomic_store_explicit(&g_nkeys, n + 1, memory_order_release);
    idx = n;
    char err[128];
    if (g_hdr) /* on failure the key stays unlisted: readers ignore its index */
      (void)write_locked(err, sizeof err);
  }
  pthread_mutex_unlock(&g_lock);
  return idx;
}

/* Hex digit values (g_is_hex says which bytes are digits): one load per
 * digit, no branch. */
static const uint8_t g_hex[256] = {
    ['0'] = 0,  ['1'] = 1,  ['2'] = 2,  ['3'] = 3,  ['4'] = 4,  ['5'] = 5,  ['6'] = 6,  ['7'] = 7,
    ['8'] = 8,  ['9'] = 9,  ['a'] = 10, ['b'] = 11, ['c'] = 12, ['d'] = 13, ['e'] = 14, ['f'] = 15,
    ['A'] = 10, ['B'] = 11, ['C'] = 12, ['D'] = 13, ['E'] = 14, ['F'] = 15};
static const uint8_t g_is_hex[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1};

int otel_hex_id(const char *s, size_t len, uint8_t *out, size_t n) {
  if (len != 2 * n)
    return 0;
  const unsigned char *u = (const unsigned char *)s;
  unsigned ok = 1, any = 0;
  for (size_t i = 0; i < n; i++) {
    ok &= (unsigned)(g_is_hex[u[2 * i]] & g_is_hex[u[2 * i + 1]]);
    out[i] = (uint8_t)(g_hex[u[2 * i]] << 4 | g_hex[u[2 * i + 1]]);
    any |= out[i];
  }
  return ok && any != 0;
}

const void *otel_ctx_header(void) {
  pthread_mutex_lock(&g_lock);
  const void *h = g_hdr;
  pthread_mutex_unlock(&g_lock);
  return h;
}
