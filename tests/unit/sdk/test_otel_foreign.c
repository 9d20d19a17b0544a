/* Unit tests for sdk/otel/otel_foreign.c: the Resource reader (service.name
 * and threadlocal.attribute_key_map, other attributes and fields skipped,
 * malformed bytes refused), and the load of a process context another
 * tracer published (a memfd named OTEL_CTX made here): its key map and
 * service, and contexts no reader may take (mid-update, wrong signature or
 * version) leaving the previous map in place. */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "otel_foreign.h"
#include "pp_test.h"

static size_t put_len(uint8_t *p, unsigned field, size_t n) {
  p[0] = (uint8_t)(field << 3 | 2);
  p[1] = (uint8_t)n; /* every length here is under 128 */
  return 2;
}

static size_t any_str(uint8_t *p, unsigned field, const char *s) {
  size_t n = strlen(s), o = put_len(p, field, n + 2);
  o += put_len(p + o, 1, n);
  memcpy(p + o, s, n);
  return o + n;
}

static size_t kv_str(uint8_t *p, const char *k, const char *v) {
  size_t kl = strlen(k), vl = strlen(v), o = put_len(p, 1, 2 + kl + 2 + 2 + vl);
  o += put_len(p + o, 1, kl);
  memcpy(p + o, k, kl);
  o += kl;
  return o + any_str(p + o, 2, v);
}

/* A Resource: service.name, an int attribute, the key map of n keys. */
static size_t resource(uint8_t *p, const char *svc, const char *const *keys, int n) {
  size_t o = kv_str(p, "service.name", svc);
  static const uint8_t int_kv[] = {0x0a, 8, 0x0a, 2, 'p', 'i', 0x12, 2, 0x18, 7};
  memcpy(p + o, int_kv, sizeof int_kv); /* pi = AnyValue{int_value: 7} */
  o += sizeof int_kv;
  uint8_t arr[200];
  size_t an = 0;
  for (int i = 0; i < n; i++)
    an += any_str(arr + an, 1, keys[i]);
  static const char mk[] = "threadlocal.attribute_key_map";
  size_t ml = sizeof mk - 1;
  o += put_len(p + o, 1, 2 + ml + 2 + 2 + an);
  o += put_len(p + o, 1, ml);
  memcpy(p + o, mk, ml);
  o += ml;
  o += put_len(p + o, 2, 2 + an);
  o += put_len(p + o, 5, an);
  memcpy(p + o, arr, an);
  return o + an;
}

static char g_seen[8][32];
static void on_key(unsigned i, const char *s, size_t n, void *arg) {
  (void)arg;
  if (i < 8 && n < 32) {
    memcpy(g_seen[i], s, n);
    g_seen[i][n] = 0;
  }
}

static void test_parse_resource(void) {
  static const char *const keys[] = {"trace_id", "span_id", "http.route"};
  uint8_t buf[512];
  size_t n = resource(buf, "checkout", keys, 3);
  char svc[64];
  memset(g_seen, 0, sizeof g_seen);
  PP_CHECK_INT(otel_parse_resource(buf, n, svc, sizeof svc, on_key, NULL), ==, 0);
  PP_CHECK_STR(svc, "checkout");
  PP_CHECK_STR(g_seen[0], "trace_id");
  PP_CHECK_STR(g_seen[2], "http.route");
  PP_CHECK_STR(g_seen[3], "");
  /* Every truncation either parses a prefix or is refused: never beyond n. */
  for (size_t cut = 0; cut < n; cut++)
    (void)otel_parse_resource(buf, cut, svc, sizeof svc, NULL, NULL);
  buf[1] = 0xff; /* a length past the end */
  PP_CHECK_INT(otel_parse_resource(buf, n, svc, sizeof svc, NULL, NULL), ==, -1);
}

/* A context as a tracer publishes it; returns the mapping. */
static uint8_t *publish(const char *svc, const char *const *keys, int n, uint64_t published) {
  int fd = memfd_create("OTEL_CTX", MFD_CLOEXEC);
  PP_CHECK(fd >= 0 && ftruncate(fd, 4096) == 0);
  uint8_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  PP_CHECK(m != MAP_FAILED);
  uint32_t version = 2, size = (uint32_t)resource(m + 32, svc, keys, n);
  uint64_t addr = (uint64_t)(uintptr_t)(m + 32);
  memcpy(m + 8, &version, 4);
  memcpy(m + 12, &size, 4);
  memcpy(m + 16, &published, 8);
  memcpy(m + 24, &addr, 8);
  memcpy(m, "OTEL_CTX", 8);
  return m;
}

static void test_load_a_tracers_context(void) {
  static const char *const keys[] = {"trace_id", "span_id", "tenant"};
  uint8_t *m = publish("billing", keys, 3, 42);
  char out[64];
  PP_CHECK_INT(otel_foreign_load(), ==, 0);
  PP_CHECK_INT(otel_foreign_key(2, out, sizeof out), ==, 0);
  PP_CHECK_STR(out, "tenant");
  PP_CHECK_INT(otel_foreign_key(3, out, sizeof out), ==, -1); /* not in the map */
  PP_CHECK_INT(otel_foreign_key(2, out, 4), ==, -1);          /* does not fit */
  PP_CHECK_INT(otel_foreign_service(out, sizeof out), ==, 0);
  PP_CHECK_STR(out, "billing");
  /* Mid-update (published_at 0), or not a context: refused, the map stays. */
  memset(m + 16, 0, 8);
  PP_CHECK_INT(otel_foreign_load(), ==, -1);
  uint64_t t = 43;
  memcpy(m + 16, &t, 8);
  memcpy(m, "OTEL_CTY", 8);
  PP_CHECK_INT(otel_foreign_load(), ==, -1);
  memcpy(m, "OTEL_CTX", 8);
  uint32_t v3 = 3;
  memcpy(m + 8, &v3, 4);
  PP_CHECK_INT(otel_foreign_load(), ==, -1);
  PP_CHECK_INT(otel_foreign_key(2, out, sizeof out), ==, 0);
  PP_CHECK_STR(out, "tenant");
  munmap(m, 4096);
}

int main(void) {
  PP_RUN(test_parse_resource);
  PP_RUN(test_load_a_tracers_context);
  PP_DONE();
}
