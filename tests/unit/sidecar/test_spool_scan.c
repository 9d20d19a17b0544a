/* Unit tests for sidecar/spool_scan.c: the scan at start and the rescans
 * for dropped-in files, what they hand over and what they quarantine. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "batch_test_util.h"
#include "pp_test.h"
#include "spool.h"
#include "spool_test_util.h"

static void test_scan_quarantines_truncated_and_garbage_files(void) {
  setup();
  size_t len = 0;
  uint8_t *f = btu_frame("svc", 5, &len);
  PP_CHECK(f != NULL);
  if (!f)
    return;
  PP_CHECK_INT(btu_write_file(sub("00000000000000000001-0000000000.push"), f, len - 7), ==, 0);
  PP_CHECK_INT(btu_write_file(sub("00000000000000000002-0000000000.push"), "garbage!garbage!", 16),
               ==, 0);
  PP_CHECK_INT(btu_write_file(sub("00000000000000000003-0000000000.push"), f, len), ==, 0);
  PP_CHECK_INT(btu_write_file(sub("00000000000000000004-0000000000.push"), "", 0), ==, 0);
  free(f);
  uint64_t q0 = quarantined_total();
  spool *s = open_spool(1 << 20, false);
  PP_CHECK(s != NULL);
  if (!s)
    return;
  seen got = {0};
  PP_CHECK_INT(spool_scan(s, collect, &got), ==, 1);
  PP_CHECK_STR(got.ids[0], "00000000000000000003-0000000000.push");
  PP_CHECK_INT(spool_files(s), ==, 1);
  PP_CHECK_INT(spool_bytes(s), ==, len);
  snprintf(path, sizeof path, "%s/quarantine", dir);
  PP_CHECK_INT(btu_count(path, ".push"), ==, 3);
  PP_CHECK_INT(btu_count(path, ".reason"), ==, 3);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 1);
  char *m = metrics_render();
  char want[80];
  snprintf(want, sizeof want, "\npushprof_spool_quarantined_total %llu\n",
           (unsigned long long)q0 + 3);
  PP_CHECK(m && strstr(m, want));
  free(m);
  /* Rescanning finds nothing new and does not loop. */
  seen again = {0};
  PP_CHECK_INT(spool_rescan_new(s, collect, &again), ==, 0);
  spool_close(s);
  btu_rmtree(dir);
}

static void test_rescan_new_picks_up_drop_ins_once(void) {
  setup();
  spool *s = open_spool(1 << 20, false);
  PP_CHECK(s != NULL);
  if (!s)
    return;
  seen got = {0};
  PP_CHECK_INT(spool_scan(s, collect, &got), ==, 0);
  size_t len = 0;
  uint8_t *f = btu_frame("dropped", 7, &len);
  PP_CHECK(f != NULL);
  PP_CHECK_INT(btu_write_file(sub(".sdk-1-1.push"), f, len), ==, 0);
  char a[PATH_MAX], b[PATH_MAX];
  snprintf(a, sizeof a, "%s/.sdk-1-1.push", dir);
  snprintf(b, sizeof b, "%s/sdk-1-1.push", dir);
  PP_CHECK_INT(rename(a, b), ==, 0);
  free(f);
  PP_CHECK_INT(spool_rescan_new(s, collect, &got), ==, 1);
  PP_CHECK_STR(got.ids[0], "sdk-1-1.push");
  PP_CHECK_STR(got.services[0], "dropped");
  PP_CHECK_INT(spool_bytes(s), ==, len);
  PP_CHECK_INT(spool_rescan_new(s, collect, &got), ==, 0);
  PP_CHECK_INT(got.n, ==, 1);
  PP_CHECK_INT(spool_remove(s, "sdk-1-1.push"), ==, SPOOL_OK);
  PP_CHECK_INT(spool_bytes(s), ==, 0);
  spool_close(s);
  btu_rmtree(dir);
}

typedef struct race_arg {
  spool *s;
  int puts, removes;
} race_arg;

static void *putter(void *p) {
  race_arg *a = p;
  size_t len = 0;
  uint8_t *f = btu_frame("race", 1, &len);
  for (int i = 0; i < 200 && f; i++) {
    char id[SPOOL_ID_MAX];
    if (spool_put(a->s, f, len, id) != SPOOL_OK)
      continue;
    a->puts++;
    if (i % 2 == 0 && spool_remove(a->s, id) == SPOOL_OK)
      a->removes++;
  }
  free(f);
  return NULL;
}

/* Files written by spool_put are never handed out again by a concurrent
 * rescan, and the byte count stays exact. */
static void test_rescan_races_with_puts_without_double_handover(void) {
  setup();
  spool *s = open_spool(1 << 26, false);
  PP_CHECK(s != NULL);
  if (!s)
    return;
  race_arg a = {.s = s};
  pthread_t t;
  PP_CHECK_INT(pthread_create(&t, NULL, putter, &a), ==, 0);
  seen got = {0};
  int handed = 0;
  for (int i = 0; i < 100; i++)
    handed += spool_rescan_new(s, collect, &got);
  pthread_join(t, NULL);
  handed += spool_rescan_new(s, collect, &got);
  PP_CHECK_INT(handed, ==, 0);
  PP_CHECK_INT(a.puts, ==, 200);
  PP_CHECK_INT(spool_files(s), ==, a.puts - a.removes);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, a.puts - a.removes);
  size_t len = 0;
  free(btu_frame("race", 1, &len));
  PP_CHECK_INT(spool_bytes(s), ==, (uint64_t)(a.puts - a.removes) * len);
  spool_close(s);
  btu_rmtree(dir);
}

/* The spool hands over a file's bytes as they are (it decodes nothing) and
 * quarantines what the callback refuses, with the callback's reason. */
typedef struct refuse_arg {
  const uint8_t *want;
  size_t want_len;
  int calls, same;
} refuse_arg;

static int refuse_second(void *arg, const char *id, const uint8_t *frame, size_t len, char *why,
                         size_t whylen) {
  refuse_arg *a = arg;
  (void)id;
  a->calls++;
  if (len == a->want_len && memcmp(frame, a->want, len) == 0)
    a->same++;
  if (a->calls == 2) {
    snprintf(why, whylen, "the test says no");
    return -1;
  }
  return 0;
}

static void test_scan_hands_over_bytes_and_quarantines_what_cb_refuses(void) {
  setup();
  size_t len = 0;
  uint8_t *f = btu_frame("bytes", 9, &len);
  PP_CHECK(f != NULL);
  if (!f)
    return;
  PP_CHECK_INT(btu_write_file(sub("00000000000000000001-0000000000.push"), f, len), ==, 0);
  PP_CHECK_INT(btu_write_file(sub("00000000000000000002-0000000000.push"), f, len), ==, 0);
  spool *s = open_spool(1 << 20, false);
  PP_CHECK(s != NULL);
  if (!s) {
    free(f);
    return;
  }
  refuse_arg a = {.want = f, .want_len = len};
  PP_CHECK_INT(spool_scan(s, refuse_second, &a), ==, 1);
  PP_CHECK_INT(a.calls, ==, 2);
  PP_CHECK_INT(a.same, ==, 2);
  PP_CHECK_INT(spool_files(s), ==, 1);
  PP_CHECK_INT(spool_bytes(s), ==, len);
  char reason[64] = "";
  FILE *r = fopen(sub("quarantine/00000000000000000002-0000000000.push.reason"), "r");
  PP_CHECK(r != NULL);
  if (r) {
    PP_CHECK(fgets(reason, sizeof reason, r) != NULL);
    fclose(r);
  }
  PP_CHECK_STR(reason, "the test says no\n");
  spool_close(s);
  free(f);
  btu_rmtree(dir);
}

/* A spool file torn at every byte offset (0 .. len-1) is quarantined with a
 * reason; the whole file (offset len) is handed over intact; nothing crashes
 * (ASan checks every prefix is decoded in bounds), and reopening the spool
 * twice (a restart, then another) neither hands anything twice nor
 * quarantines again. On tmpfs when there is one: 3 fsyncs per file. */
static void test_scan_quarantines_a_file_torn_at_every_offset(void) {
  snprintf(dir, sizeof dir, "/dev/shm/pp_test_tornXXXXXX");
  if (!mkdtemp(dir))
    setup();
  size_t len = 0;
  uint8_t *f = btu_frame("torn-service", 7, &len);
  PP_CHECK(f != NULL && len > PP_FRAME_HEADER_SIZE);
  if (!f)
    return;
  for (size_t off = 0; off <= len; off++) {
    char name[64];
    snprintf(name, sizeof name, "%020zu-torn.push", off);
    PP_CHECK_INT(btu_write_file(sub(name), f, off), ==, 0);
  }
  uint64_t q0 = quarantined_total();
  for (int start = 0; start < 3; start++) {
    spool *s = open_spool(1 << 20, false);
    PP_CHECK(s != NULL);
    if (!s)
      break;
    seen got = {0};
    PP_CHECK_INT(spool_scan(s, collect, &got), ==, 1);
    char whole[64];
    snprintf(whole, sizeof whole, "%020zu-torn.push", len);
    PP_CHECK_STR(got.ids[0], whole);
    PP_CHECK_STR(got.services[0], "torn-service");
    PP_CHECK_INT(got.bytes[0], ==, len);
    PP_CHECK_INT(spool_files(s), ==, 1);
    PP_CHECK_INT(spool_bytes(s), ==, len);
    spool_close(s);
    PP_CHECK_INT(quarantined_total(), ==, q0 + len); /* only at the first start */
  }
  snprintf(path, sizeof path, "%s/quarantine", dir);
  PP_CHECK_INT(btu_count(path, ".push"), ==, (int)len);
  PP_CHECK_INT(btu_count(path, ".reason"), ==, (int)len);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 1);
  free(f);
  btu_rmtree(dir);
}

int main(void) {
  PP_RUN(test_scan_quarantines_truncated_and_garbage_files);
  PP_RUN(test_rescan_new_picks_up_drop_ins_once);
  PP_RUN(test_rescan_races_with_puts_without_double_handover);
  PP_RUN(test_scan_hands_over_bytes_and_quarantines_what_cb_refuses);
  PP_RUN(test_scan_quarantines_a_file_torn_at_every_offset);
  PP_DONE();
}
