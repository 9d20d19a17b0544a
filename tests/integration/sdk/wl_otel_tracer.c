/* A program with its own OpenTelemetry tracer, written from the OTEP texts
 * and not from pushprof's code: it exports otel_thread_ctx_v1, publishes an
 * OTEP 4719 process context (memfd OTEL_CTX: service.name "tracer-svc",
 * key map trace_id, span_id, http.route, tenant) and attaches OTEP 4947
 * records to its threads. Profiled under LD_PRELOAD, it never calls
 * pushprof unless PUSHPROF_WIN is set (then, found with dlsym, it sets the
 * pushprof label tenant=ours on the span thread: ours must win). Linked
 * (wl_otel_tracer_linked), it starts pushprof once its context is out.
 *   wl_otel_tracer [seconds, default 2]
 * Threads:
 *   span     alternates in_span() with a record attached (trace
 *            4bf92f3577b34da6a3ce929d0e0e4736, span 00f067aa0ba902b7,
 *            http.route=/checkout, tenant=acme, and key 200, which the map
 *            does not have) and outside_span() with none;
 *   hostile  runs hostile_spin() with records no reader may use: a pointer
 *            into unmapped memory, valid = 0, an attrs size past the
 *            record, and one freed while attached. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "wl_common.h"

__attribute__((visibility("default"))) __thread void *otel_thread_ctx_v1;

WL_SPIN_FN(in_span)
WL_SPIN_FN(outside_span)
WL_SPIN_FN(hostile_spin)

typedef struct __attribute__((aligned(8))) record {
  uint8_t trace_id[16], span_id[8], valid, flags;
  uint16_t attrs_size;
  uint8_t attrs[612];
} record;

static uint8_t *put_len(uint8_t *p, unsigned field, size_t n) {
  *p++ = (uint8_t)(field << 3 | 2);
  while (n >= 0x80) {
    *p++ = (uint8_t)(n | 0x80);
    n >>= 7;
  }
  *p++ = (uint8_t)n;
  return p;
}

/* AnyValue{string_value} of s at p. */
static uint8_t *any_str(uint8_t *p, unsigned field, const char *s) {
  size_t n = strlen(s);
  p = put_len(p, field, n + 2);
  p = put_len(p, 1, n);
  memcpy(p, s, n);
  return p + n;
}

static uint8_t *kv_str(uint8_t *p, const char *k, const char *v) {
  size_t kl = strlen(k), vl = strlen(v);
  p = put_len(p, 1, kl + 2 + vl + 2 + 2);
  p = put_len(p, 1, kl);
  memcpy(p, k, kl);
  p += kl;
  return any_str(p, 2, v);
}

/* The process context (OTEP 4719 v2): header, then a Resource payload. */
static void publish_context(void) {
  int fd = memfd_create("OTEL_CTX", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, 4096) != 0)
    exit(3);
  uint8_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED)
    exit(3);
  uint8_t *payload = m + 32, *p = payload;
  p = kv_str(p, "service.name", "tracer-svc");
  p = kv_str(p, "threadlocal.schema_version", "tls_v1");
  /* threadlocal.attribute_key_map: AnyValue{array_value{values: strings}} */
  static const char *keys[] = {"trace_id", "span_id", "http.route", "tenant"};
  uint8_t arr[256], *a = arr;
  for (int i = 0; i < 4; i++)
    a = any_str(a, 1, keys[i]);
  size_t arrn = (size_t)(a - arr);
  const char *mk = "threadlocal.attribute_key_map";
  size_t mkl = strlen(mk);
  size_t any = 1 + 1 + arrn; /* field 5 tag, one length byte (arrn < 128) */
  p = put_len(p, 1, 1 + 1 + mkl + 1 + 1 + any);
  p = put_len(p, 1, mkl);
  memcpy(p, mk, mkl);
  p += mkl;
  p = put_len(p, 2, any);
  p = put_len(p, 5, arrn);
  memcpy(p, arr, arrn);
  p += arrn;
  uint32_t version = 2, size = (uint32_t)(p - payload);
  uint64_t at = 1, addr = (uint64_t)(uintptr_t)payload;
  memcpy(m + 8, &version, 4);
  memcpy(m + 12, &size, 4);
  memcpy(m + 16, &at, 8);
  memcpy(m + 24, &addr, 8);
  uint64_t sig;
  memcpy(&sig, "OTEL_CTX", 8);
  __atomic_store_n((uint64_t *)(void *)m, sig, __ATOMIC_RELEASE); /* the signature last */
}

static void set_id(uint8_t *out, const char *hex, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    sscanf(hex + 2 * i, "%2x", &v);
    out[i] = (uint8_t)v;
  }
}

static void add_attr(record *r, uint8_t key, const char *v) {
  size_t n = strlen(v);
  r->attrs[r->attrs_size] = key;
  r->attrs[r->attrs_size + 1] = (uint8_t)n;
  memcpy(r->attrs + r->attrs_size + 2, v, n);
  r->attrs_size = (uint16_t)(r->attrs_size + 2 + n);
}

static double g_seconds;
static uint64_t g_sink;

static void *span_thread(void *arg) {
  (void)arg;
  static record r;
  set_id(r.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736", 16);
  set_id(r.span_id, "00f067aa0ba902b7", 8);
  add_attr(&r, 2, "/checkout");
  add_attr(&r, 3, "acme");
  add_attr(&r, 200, "no-such-key");
  r.flags = 1;
  r.valid = 1;
  if (getenv("PUSHPROF_WIN")) {
    int (*set)(const char *, const char *) =
        (int (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "pushprof_label_set");
    if (!set || set("tenant", "ours") != 0)
      exit(4);
  }
  double t0 = wl_thread_cpu();
  while (wl_thread_cpu() - t0 < g_seconds) {
    __atomic_store_n(&otel_thread_ctx_v1, &r, __ATOMIC_RELEASE);
    g_sink += in_span(0.02);
    __atomic_store_n(&otel_thread_ctx_v1, NULL, __ATOMIC_RELEASE);
    g_sink += outside_span(0.02);
  }
  return NULL;
}

static void *hostile_thread(void *arg) {
  (void)arg;
  static record invalid, oversize;
  set_id(invalid.trace_id, "11111111111111111111111111111111", 16);
  invalid.valid = 0;
  oversize = invalid;
  oversize.valid = 1;
  oversize.attrs_size = 0xffff;
  void *gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(gone, 4096);
  double t0 = wl_thread_cpu();
  for (int i = 0; wl_thread_cpu() - t0 < g_seconds; i++) {
    record *freed = malloc(sizeof *freed);
    memcpy(freed, &oversize, sizeof *freed);
    void *recs[4] = {gone, &invalid, &oversize, freed};
    otel_thread_ctx_v1 = recs[i % 4];
    free(freed); /* still attached: a reader sees whatever is left there */
    g_sink += hostile_spin(0.01);
    otel_thread_ctx_v1 = NULL;
  }
  return NULL;
}

int main(int argc, char **argv) {
  g_seconds = wl_arg(argc, argv, 2, 60, "wl_otel_tracer [seconds, 0..60]");
  publish_context();
  wl_start(); /* linked: pushprof starts after the tracer published */
  pthread_t a, b;
  if (pthread_create(&a, NULL, span_thread, NULL) != 0 ||
      pthread_create(&b, NULL, hostile_thread, NULL) != 0)
    return 2;
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  wl_report();
  printf("sink=%llu\n", (unsigned long long)(g_sink & 1));
  return 0;
}
