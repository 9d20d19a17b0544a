/* The OpenTelemetry context module: W3C id decoding, the process context's
 * header and its in-place update when the key map grows, the thread record
 * that follows pushprof_label_set, and a forked child without the parent's
 * mapping. The outside view (/proc/PID/mem, gdb) is it_sdk_otel_ctx.sh. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "labels.h"
#include "otel_ctx.h"
#include "pp_test.h"
#include "pushprof.h"

typedef struct hdr {
  char signature[8];
  uint32_t version, payload_size;
  uint64_t published_at_ns, payload;
} hdr;

static void test_otel_hex_id_accepts_only_w3c_ids(void) {
  uint8_t id[16];
  PP_CHECK(otel_hex_id("4bf92f3577b34da6a3ce929d0e0e4736", 32, id, 16));
  PP_CHECK_INT(id[0], ==, 0x4b);
  PP_CHECK_INT(id[15], ==, 0x36);
  PP_CHECK(otel_hex_id("00F067AA0BA902B7", 16, id, 8));
  PP_CHECK_INT(id[7], ==, 0xb7);
  PP_CHECK(!otel_hex_id("00f067aa0ba902b", 15, id, 8));
  PP_CHECK(!otel_hex_id("00f067aa0ba902bg", 16, id, 8));
  PP_CHECK(!otel_hex_id("0000000000000000", 16, id, 8)); /* all zero: no span */
  PP_CHECK(!otel_hex_id("req-3", 5, id, 16));
}

static int payload_has(const hdr *h, const char *s) {
  return memmem((const void *)(uintptr_t)h->payload, h->payload_size, s, strlen(s)) != NULL;
}

static void test_otel_ctx_update_lists_new_keys_under_a_new_timestamp(void) {
  static const char labels[] = "env\0test\0service.name\0not-ours\0";
  char err[256];
  PP_CHECK_INT(otel_ctx_publish("svc-a", labels, 2, err, sizeof err), ==, 0);
  const hdr *h = otel_ctx_header();
  PP_CHECK(h != NULL);
  if (!h)
    return;
  PP_CHECK(memcmp(h->signature, "OTEL_CTX", 8) == 0);
  PP_CHECK_INT(h->version, ==, 2);
  PP_CHECK(h->published_at_ns != 0);
  PP_CHECK(h->payload == (uintptr_t)h + sizeof *h);
  PP_CHECK(payload_has(h, "svc-a") && payload_has(h, "env") && payload_has(h, "tls_v1"));
  PP_CHECK(!payload_has(h, "not-ours")); /* our service.name wins */
  PP_CHECK_INT(otel_key_index("trace_id", 8), ==, OTEL_KEY_TRACE_ID);
  PP_CHECK_INT(otel_key_index("span_id", 7), ==, OTEL_KEY_SPAN_ID);
  uint64_t t0 = h->published_at_ns;
  uint32_t n0 = h->payload_size;
  PP_CHECK(!payload_has(h, "brand_new_key"));
  int k = otel_key_index("brand_new_key", 13);
  PP_CHECK_INT(k, >=, 2);
  PP_CHECK_INT(otel_key_index("brand_new_key_longer", 13), ==, k); /* klen bounds the key */
  PP_CHECK(h->published_at_ns != t0 && h->published_at_ns != 0);
  PP_CHECK_INT(h->payload_size, >, n0);
  PP_CHECK(payload_has(h, "brand_new_key"));
  /* Publishing again updates the same mapping. */
  PP_CHECK_INT(otel_ctx_publish("svc-b", labels, 2, err, sizeof err), ==, 0);
  PP_CHECK(otel_ctx_header() == h);
  PP_CHECK(payload_has(h, "svc-b") && !payload_has(h, "svc-a"));
}

static const otel_record *rec(void) {
  atomic_signal_fence(memory_order_seq_cst);
  return otel_thread_ctx_v1;
}

/* The value of attribute key index k in r, or NULL. */
static const char *attr(const otel_record *r, int k, char *buf) {
  const char *found = NULL;
  for (unsigned i = 0; i + 2 <= r->attrs_size;) {
    unsigned n = r->attrs[i + 1];
    if (r->attrs[i] == k) {
      memcpy(buf, r->attrs + i + 2, n);
      buf[n] = '\0';
      found = buf;
    }
    i += 2 + n;
  }
  return found;
}

static void test_otel_record_follows_the_labels(void) {
  char buf[300];
  PP_CHECK(rec() == NULL);
  PP_CHECK_INT(pushprof_label_set("route", "/api"), ==, 0);
  const otel_record *r = rec();
  PP_CHECK(r && r->valid == 1);
  if (!r)
    return;
  int route = otel_key_index("route", 5);
  PP_CHECK_STR(attr(r, route, buf), "/api");
  PP_CHECK_INT(pushprof_label_set("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"), ==, 0);
  r = rec();
  PP_CHECK(r->trace_id[0] == 0); /* no span_id yet: the trace id is an attribute */
  PP_CHECK_STR(attr(r, OTEL_KEY_TRACE_ID, buf), "4bf92f3577b34da6a3ce929d0e0e4736");
  PP_CHECK_INT(pushprof_label_set("span_id", "00f067aa0ba902b7"), ==, 0);
  r = rec();
  PP_CHECK(r->valid == 1 && r->trace_id[0] == 0x4b && r->span_id[7] == 0xb7);
  PP_CHECK(attr(r, OTEL_KEY_TRACE_ID, buf) == NULL && attr(r, OTEL_KEY_SPAN_ID, buf) == NULL);
  PP_CHECK_STR(attr(r, route, buf), "/api");
  pushprof_label_scope scope;
  PP_CHECK_INT(pushprof_labels_save(&scope), ==, 0);
  /* A long value is cut to 255 bytes, not inside a UTF-8 character. */
  char longv[PUSHPROF_LABEL_VALUE_MAX + 1];
  memset(longv, 'a', 254);
  memcpy(longv + 254, "\xc3\xa9", 3); /* 'é' straddles byte 255 */
  PP_CHECK_INT(pushprof_label_set("route", longv), ==, 0);
  PP_CHECK_INT(strlen(attr(rec(), route, buf)), ==, 254);
  PP_CHECK_INT(pushprof_label_set("span_id", NULL), ==, 0);
  PP_CHECK(rec()->trace_id[0] == 0);
  PP_CHECK_INT(pushprof_labels_clear(), ==, 0);
  PP_CHECK(rec() == NULL);
  PP_CHECK_INT(pushprof_labels_restore(&scope), ==, 0);
  r = rec();
  PP_CHECK(r && r->trace_id[0] == 0x4b && r->span_id[0] == 0x00 && r->span_id[7] == 0xb7);
  PP_CHECK_STR(attr(r, route, buf), "/api");
  PP_CHECK_INT(pushprof_labels_clear(), ==, 0);
}

static void test_otel_ctx_forked_child_has_none(void) {
  char err[256];
  PP_CHECK_INT(otel_ctx_publish("svc", "", 0, err, sizeof err), ==, 0);
  pid_t pid = fork();
  if (pid == 0) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int seen = 0;
    while (f && fgets(line, sizeof line, f))
      seen |= strstr(line, "OTEL_CTX") != NULL;
    _exit(f && !seen && otel_ctx_header() == NULL ? 0 : 1);
  }
  int st = 0;
  PP_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
  PP_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  PP_CHECK(otel_ctx_header() != NULL); /* the parent keeps its own */
}

int main(void) {
  PP_RUN(test_otel_hex_id_accepts_only_w3c_ids);
  PP_RUN(test_otel_ctx_update_lists_new_keys_under_a_new_timestamp);
  PP_RUN(test_otel_record_follows_the_labels);
  PP_RUN(test_otel_ctx_forked_child_has_none);
  PP_DONE();
}
