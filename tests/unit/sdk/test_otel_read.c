/* Unit tests for sdk/signal/otel_read.c: a tracer's record read into a
 * ring record's labels (ids in hex, attributes by key index), the
 * program's own labels kept and winning by name, and records no reader may
 * use (NULL, unmapped, not valid, attrs past the record, all-zero ids)
 * adding nothing; the label space's bounds hold. */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "otel_read.h"
#include "pp_test.h"

static uint8_t rec_bytes[640] __attribute__((aligned(8)));
static void *g_slot;

static void make_record(int valid, uint16_t attrs_size) {
  memset(rec_bytes, 0, sizeof rec_bytes);
  for (int i = 0; i < 16; i++)
    rec_bytes[i] = (uint8_t)(0xa0 + i);
  for (int i = 0; i < 8; i++)
    rec_bytes[16 + i] = (uint8_t)(0x10 + i);
  rec_bytes[24] = (uint8_t)valid;
  static const uint8_t attrs[] = {2, 3, 'a', 'b', 'c', 17, 0};
  memcpy(rec_bytes + 28, attrs, sizeof attrs);
  memcpy(rec_bytes + 26, &attrs_size, 2);
}

/* The label value of key in r, or NULL. */
static const char *label(const ring_record *r, const char *key, size_t klen) {
  size_t off = 0;
  for (unsigned i = 0; i < r->nlabels; i++) {
    const char *k = r->labels + off;
    const char *v = k + strlen(k) + 1;
    if (strlen(k) == klen && memcmp(k, key, klen) == 0)
      return v;
    off = (size_t)(v + strlen(v) + 1 - r->labels);
  }
  return NULL;
}

static void read_into(ring_record *r) {
  memset(r, 0, sizeof *r);
  otel_read_record((uintptr_t)&g_slot, r);
}

static void test_valid_record_labels_ids_and_attributes(void) {
  ring_record r;
  make_record(1, 7);
  g_slot = rec_bytes;
  read_into(&r);
  PP_CHECK_INT(r.nlabels, ==, 4);
  PP_CHECK_STR(label(&r, "trace_id", 8), "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
  PP_CHECK_STR(label(&r, "span_id", 7), "1011121314151617");
  PP_CHECK_STR(label(&r,
                     "\x01"
                     "2",
                     2),
               "abc");
  PP_CHECK_STR(label(&r,
                     "\x01"
                     "17",
                     3),
               ""); /* an empty value is a value */
}

static void test_own_labels_win_and_stay(void) {
  ring_record r;
  make_record(1, 7);
  g_slot = rec_bytes;
  memset(&r, 0, sizeof r);
  static const char own[] = "trace_id\0mine\0route\0/x";
  memcpy(r.labels, own, sizeof own);
  r.labels_len = sizeof own;
  r.nlabels = 2;
  otel_read_record((uintptr_t)&g_slot, &r);
  PP_CHECK_STR(label(&r, "trace_id", 8), "mine");
  PP_CHECK_STR(label(&r, "route", 5), "/x");
  PP_CHECK(label(&r, "span_id", 7) != NULL);
  PP_CHECK_INT(r.nlabels, ==, 5);
}

static void test_unusable_records_add_nothing(void) {
  ring_record r;
  g_slot = NULL;
  read_into(&r);
  PP_CHECK_INT(r.nlabels, ==, 0);
  make_record(0, 7); /* not valid */
  g_slot = rec_bytes;
  read_into(&r);
  PP_CHECK_INT(r.nlabels, ==, 0);
  make_record(1, 0xffff); /* attrs past the record */
  read_into(&r);
  PP_CHECK_INT(r.nlabels, ==, 0);
  void *gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(gone, 4096);
  g_slot = gone;
  read_into(&r);
  PP_CHECK_INT(r.nlabels, ==, 0);
  make_record(1, 0);
  memset(rec_bytes, 0, 24); /* valid, but no ids (all zero) and no attributes */
  g_slot = rec_bytes;
  read_into(&r);
  PP_CHECK_INT(r.nlabels, ==, 0);
}

static void test_label_space_is_bounded(void) {
  ring_record r;
  make_record(1, 0);
  /* 60 attributes of 9 bytes: far more than RING_MAX_LABELS. */
  uint16_t size = 0;
  for (int i = 0; i < 60; i++) {
    uint8_t *a = rec_bytes + 28 + size;
    a[0] = (uint8_t)i;
    a[1] = 7;
    memcpy(a + 2, "value-x", 7);
    size = (uint16_t)(size + 9);
  }
  memcpy(rec_bytes + 26, &size, 2);
  g_slot = rec_bytes;
  read_into(&r);
  PP_CHECK_INT(r.nlabels, ==, RING_MAX_LABELS);
  PP_CHECK(r.labels_len <= RING_LABEL_BYTES);
}

int main(void) {
  PP_RUN(test_valid_record_labels_ids_and_attributes);
  PP_RUN(test_own_labels_win_and_stay);
  PP_RUN(test_unusable_records_add_nothing);
  PP_RUN(test_label_space_is_bounded);
  PP_DONE();
}
