/* Unit tests for sidecar/journal.c (the spool's write-ahead journal) and the
 * spool's use of it: replay after a crash, torn records, laps of the ring,
 * a full ring, and concurrent appends. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "batch_test_util.h"
#include "journal.h"

#include <isa-l/crc.h>
#include <zlib.h>
#include "pp_push.h"
#include "pp_test.h"
#include "spool.h"

#define JSIZE (1u << 20)

static char dir[64];

static int setup(void) {
  pp_test_mkdtemp(dir, sizeof dir, "test-journal");
  return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

typedef struct replayed {
  int n;
  char ids[64][JOURNAL_ID_MAX];
  size_t lens[64];
  uint8_t first[64];
  int fail_at; /* return -1 on this call (1-based), 0 never */
} replayed;

static int on_replay(void *arg, const char *id, const uint8_t *frame, size_t len) {
  replayed *r = arg;
  if (r->fail_at && r->n + 1 == r->fail_at) {
    errno = ENOSPC;
    return -1;
  }
  if (r->n < 64) {
    snprintf(r->ids[r->n], JOURNAL_ID_MAX, "%s", id);
    r->lens[r->n] = len;
    r->first[r->n] = len ? frame[0] : 0;
  }
  r->n++;
  return 0;
}

static journal *jopen(int dfd, uint64_t size, replayed *r) {
  char err[256] = "";
  journal *j = journal_open(dfd, dir, size, on_replay, r, err, sizeof err);
  if (!j)
    fprintf(stderr, "journal_open: %s\n", err);
  return j;
}

/* A frame-like payload of len bytes whose bytes all equal tag. */
static uint8_t *payload(size_t len, uint8_t tag) {
  uint8_t *p = malloc(len);
  memset(p, tag, len);
  return p;
}

static int put(journal *j, const char *id, size_t len, uint8_t tag, journal_rec *r) {
  uint8_t *p = payload(len, tag);
  int rc = journal_append(j, id, p, len, r);
  if (rc == 0)
    rc = journal_sync(j, r);
  free(p);
  return rc;
}

/* Records carry zlib's crc32, computed with ISA-L's crc32_gzip_refl: the
 * two must agree on every length, alignment and chaining, or a journal
 * written before the switch would not replay after it. */
static void test_record_crc_is_zlibs_crc32(void) {
  size_t cap = 256 * 1024 + 64;
  uint8_t *buf = malloc(cap);
  PP_CHECK(buf != NULL);
  if (!buf)
    return;
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (size_t i = 0; i < cap; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    buf[i] = (uint8_t)x;
  }
  static const size_t lens[] = {0,    1,    2,     3,      7,      8,         15,  16,
                                31,   63,   64,    65,     127,    255,       256, 1000,
                                4095, 4096, 65536, 102400, 102401, 256 * 1024};
  int checked = 0;
  for (size_t off = 0; off < 16; off += 5)
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
      size_t n = lens[i];
      uLong z = crc32(crc32(0L, Z_NULL, 0), buf + off, (uInt)n);
      PP_CHECK_INT((uint32_t)z, ==, crc32_gzip_refl(0, buf + off, n));
      /* chained as rec_crc does: a header's pieces, then the frame */
      uLong zc = crc32(crc32(crc32(0L, Z_NULL, 0), buf, 4), buf + 4 + off, (uInt)n);
      PP_CHECK_INT((uint32_t)zc, ==, crc32_gzip_refl(crc32_gzip_refl(0, buf, 4), buf + 4 + off, n));
      checked++;
    }
  PP_CHECK_INT(checked, ==, 4 * (int)(sizeof lens / sizeof lens[0]));
  free(buf);
}

static void test_unreleased_records_are_replayed_in_order_once(void) {
  int dfd = setup();
  replayed r = {0};
  journal *j = jopen(dfd, JSIZE, &r);
  PP_CHECK(j != NULL);
  PP_CHECK_INT(r.n, ==, 0);
  journal_rec a, b, c;
  PP_CHECK_INT(put(j, "a.push", 1000, 'a', &a), ==, 0);
  PP_CHECK_INT(put(j, "b.push", 70000, 'b', &b), ==, 0);
  PP_CHECK_INT(put(j, "c.push", 10, 'c', &c), ==, 0);
  PP_CHECK_INT(journal_release(j, &b), ==, 0);
  journal_close(j); /* a crash: a and c were acked, never copied */

  j = jopen(dfd, JSIZE, &r);
  PP_CHECK(j != NULL);
  PP_CHECK_INT(r.n, ==, 2);
  PP_CHECK_STR(r.ids[0], "a.push");
  PP_CHECK_INT(r.lens[0], ==, 1000);
  PP_CHECK_INT(r.first[0], ==, 'a');
  PP_CHECK_STR(r.ids[1], "c.push");
  PP_CHECK_INT(r.lens[1], ==, 10);
  journal_close(j);

  /* A replay hands them over; the next start begins a new lap. */
  replayed r2 = {0};
  j = jopen(dfd, JSIZE, &r2);
  PP_CHECK(j != NULL);
  PP_CHECK_INT(r2.n, ==, 0);
  journal_close(j);
  close(dfd);
  btu_rmtree(dir);
}

static void test_failed_replay_fails_the_open_and_keeps_the_records(void) {
  int dfd = setup();
  replayed r = {0};
  journal *j = jopen(dfd, JSIZE, &r);
  journal_rec a;
  PP_CHECK_INT(put(j, "a.push", 100, 'a', &a), ==, 0);
  journal_close(j);
  replayed bad = {.fail_at = 1};
  char err[256] = "";
  PP_CHECK(journal_open(dfd, dir, JSIZE, on_replay, &bad, err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "replaying") != NULL);
  replayed again = {0};
  j = jopen(dfd, JSIZE, &again);
  PP_CHECK_INT(again.n, ==, 1);
  journal_close(j);
  close(dfd);
  btu_rmtree(dir);
}

static void test_replay_stops_at_a_torn_record(void) {
  int dfd = setup();
  replayed r = {0};
  journal *j = jopen(dfd, JSIZE, &r);
  journal_rec a, b, c;
  PP_CHECK_INT(put(j, "a.push", 5000, 'a', &a), ==, 0);
  PP_CHECK_INT(put(j, "b.push", 5000, 'b', &b), ==, 0);
  PP_CHECK_INT(put(j, "c.push", 5000, 'c', &c), ==, 0);
  journal_close(j);
  /* Tear b at a few offsets of its header and body: every time the replay
   * hands over a alone and stops. */
  char jp[128];
  snprintf(jp, sizeof jp, "%s/%s", dir, JOURNAL_NAME);
  int fd = open(jp, O_RDWR);
  const uint64_t offs[] = {b.off - 64, b.off - 52, b.off - 10, b.off, b.off + 2500, b.off + 4999};
  for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
    uint8_t old, bad;
    PP_CHECK_INT(pread(fd, &old, 1, (off_t)offs[i]), ==, 1);
    bad = (uint8_t)(old ^ 0x5a);
    PP_CHECK_INT(pwrite(fd, &bad, 1, (off_t)offs[i]), ==, 1);
    /* Replays of the damaged copy: copy the file so the original stays. */
    replayed t = {0};
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/t && cp %s %s/t/", dir, jp, dir);
    PP_CHECK_INT(system(cmd), ==, 0);
    char tdir[128];
    snprintf(tdir, sizeof tdir, "%s/t", dir);
    int tfd = open(tdir, O_RDONLY | O_DIRECTORY);
    char err[256] = "";
    journal *tj = journal_open(tfd, tdir, JSIZE, on_replay, &t, err, sizeof err);
    PP_CHECK(tj != NULL);
    PP_CHECK_INT(t.n, ==, 1);
    PP_CHECK_STR(t.ids[0], "a.push");
    journal_close(tj);
    close(tfd);
    PP_CHECK_INT(pwrite(fd, &old, 1, (off_t)offs[i]), ==, 1);
  }
  close(fd);
  close(dfd);
  btu_rmtree(dir);
}

static void test_laps_of_the_ring_replay_only_live_records(void) {
  int dfd = setup();
  replayed r = {0};
  journal *j = jopen(dfd, JSIZE, &r);
  /* 100 KiB records: about 10 fit; 45 go round the ring 4 times. The last
   * three stay live. */
  journal_rec recs[45];
  char id[32];
  for (int i = 0; i < 45; i++) {
    snprintf(id, sizeof id, "%02d.push", i);
    PP_CHECK_INT(put(j, id, 100 * 1024, (uint8_t)i, &recs[i]), ==, 0);
    if (i >= 2 && i < 42)
      PP_CHECK_INT(journal_release(j, &recs[i - 2]), ==, 0);
  }
  PP_CHECK_INT(journal_release(j, &recs[40]), ==, 0);
  PP_CHECK_INT(journal_release(j, &recs[41]), ==, 0);
  journal_close(j);
  j = jopen(dfd, JSIZE, &r);
  PP_CHECK(j != NULL);
  PP_CHECK_INT(r.n, ==, 3);
  PP_CHECK_STR(r.ids[0], "42.push");
  PP_CHECK_INT(r.first[0], ==, 42);
  PP_CHECK_STR(r.ids[2], "44.push");
  journal_close(j);
  close(dfd);
  btu_rmtree(dir);
}

static void test_full_ring_refuses_then_frees_space(void) {
  int dfd = setup();
  replayed r = {0};
  journal *j = jopen(dfd, JSIZE, &r);
  journal_rec recs[64];
  int n = 0;
  while (n < 64 && put(j, "x.push", 60 * 1024, 'x', &recs[n]) == 0)
    n++;
  PP_CHECK_INT(n, >=, 14);
  PP_CHECK_INT(n, <, 64);
  journal_rec extra;
  uint8_t *more = payload(60 * 1024, 'y');
  errno = 0;
  PP_CHECK_INT(journal_append(j, "y.push", more, 60 * 1024, &extra), ==, -1);
  PP_CHECK_INT(errno, ==, ENOSPC);
  free(more);
  PP_CHECK_INT(journal_used(j), >, JSIZE / 2);
  /* Too big for the journal at all: refused at once. */
  uint8_t *big = payload(JSIZE / 2, 'z');
  errno = 0;
  PP_CHECK_INT(journal_append(j, "z.push", big, JSIZE / 2, &extra), ==, -1);
  PP_CHECK_INT(errno, ==, EFBIG);
  free(big);
  PP_CHECK_INT(journal_release(j, &recs[0]), ==, 0);
  PP_CHECK_INT(journal_release(j, &recs[1]), ==, 0);
  PP_CHECK_INT(put(j, "y.push", 60 * 1024, 'y', &extra), ==, 0);
  for (int i = 2; i < n; i++)
    journal_abort(j, &recs[i]);
  PP_CHECK_INT(journal_release(j, &extra), ==, 0);
  PP_CHECK_INT(journal_used(j), ==, 0);
  journal_close(j);
  /* Aborted records are not replayed as pushes: the test callback sees
   * them only if their dead mark was lost, and here it was not. */
  j = jopen(dfd, JSIZE, &r);
  PP_CHECK_INT(r.n, ==, 0);
  journal_close(j);
  close(dfd);
  btu_rmtree(dir);
}

static void test_resize_replays_first(void) {
  int dfd = setup();
  replayed r = {0};
  journal *j = jopen(dfd, JSIZE, &r);
  journal_rec a;
  PP_CHECK_INT(put(j, "a.push", 3000, 'a', &a), ==, 0);
  journal_close(j);
  j = jopen(dfd, 2 * JSIZE, &r);
  PP_CHECK(j != NULL);
  PP_CHECK_INT(r.n, ==, 1);
  struct stat st;
  char jp[128];
  snprintf(jp, sizeof jp, "%s/%s", dir, JOURNAL_NAME);
  PP_CHECK_INT(stat(jp, &st), ==, 0);
  PP_CHECK_INT(st.st_size, ==, 2 * JSIZE);
  journal_close(j);
  char err[256] = "";
  PP_CHECK(journal_open(dfd, dir, 4096, on_replay, &r, err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "minimum") != NULL);
  close(dfd);
  btu_rmtree(dir);
}

typedef struct worker {
  journal *j;
  int id, ok;
} worker;

static void *append_loop(void *arg) {
  worker *w = arg;
  char id[32];
  for (int i = 0; i < 200; i++) {
    journal_rec r;
    snprintf(id, sizeof id, "%d-%d.push", w->id, i);
    size_t len = 1000 + (size_t)(i * 37 % 9000);
    if (put(w->j, id, len, (uint8_t)w->id, &r) != 0)
      continue; /* ring full for a moment: the spool would write a file */
    if (i % 5 == 4)
      journal_abort(w->j, &r);
    else if (journal_release(w->j, &r) == 0)
      w->ok++;
  }
  return NULL;
}

static void test_concurrent_appends_release_everything(void) {
  int dfd = setup();
  replayed r = {0};
  journal *j = jopen(dfd, JSIZE, &r);
  pthread_t t[4];
  worker w[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker){.j = j, .id = i};
    PP_CHECK_INT(pthread_create(&t[i], NULL, append_loop, &w[i]), ==, 0);
  }
  int ok = 0;
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    ok += w[i].ok;
  }
  PP_CHECK_INT(ok, >, 400);
  PP_CHECK_INT(journal_used(j), ==, 0);
  journal_close(j);
  j = jopen(dfd, JSIZE, &r);
  PP_CHECK_INT(r.n, ==, 0);
  journal_close(j);
  close(dfd);
  btu_rmtree(dir);
}

/* ---- the spool with a journal ---- */

typedef struct handed {
  int n;
  char ids[8][SPOOL_ID_MAX];
  int64_t total;
} handed;

/* Takes what a scan hands over if it decodes (as batcher_add_spooled). */
static int collect(void *arg, const char *id, const uint8_t *frame, size_t len, char *why,
                   size_t whylen) {
  handed *h = arg;
  int code;
  pp_push *p = pp_push_decode(frame, len, PP_FRAME_MAX_DEFAULT, &code, why, whylen);
  if (!p)
    return -1;
  pp_push_free(p);
  if (h->n < 8)
    snprintf(h->ids[h->n], SPOOL_ID_MAX, "%s", id);
  h->n++;
  return 0;
}

static spool *jspool(void) {
  char err[512] = "";
  spool_config c = {.dir = dir, .max_bytes = 64u << 20, .journal_bytes = JSIZE};
  spool *s = spool_open(&c, err, sizeof err);
  if (!s)
    fprintf(stderr, "spool_open: %s\n", err);
  return s;
}

/* An acked push stays held in the journal, with no file, until it is
 * released (its batch's manifest is durable); a crash before that replays
 * it into a file the scan hands over, a release is final. */
static void test_spool_held_push_survives_a_crash_release_is_final(void) {
  int dfd = setup();
  close(dfd);
  spool *s = jspool();
  PP_CHECK(s != NULL);
  size_t len;
  uint8_t *f = btu_frame("svc", 7, &len);
  spool_txn held, released, aborted;
  char id1[SPOOL_ID_MAX], id2[SPOOL_ID_MAX];
  PP_CHECK_INT(spool_begin(s, f, len, &held), ==, SPOOL_OK);
  PP_CHECK(held.jrec.rseq != 0);
  PP_CHECK_INT(spool_commit(s, &held, id1), ==, SPOOL_OK);
  PP_CHECK_INT(spool_begin(s, f, len, &released), ==, SPOOL_OK);
  PP_CHECK_INT(spool_commit(s, &released, id2), ==, SPOOL_OK);
  PP_CHECK_INT(spool_files(s), ==, 2);
  PP_CHECK_INT(spool_remove(s, id2), ==, SPOOL_OK);
  PP_CHECK_INT(spool_begin(s, f, len, &aborted), ==, SPOOL_OK);
  spool_abort(s, &aborted);
  /* No push got a file; one is still held. */
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 0);
  PP_CHECK_INT(spool_files(s), ==, 1);
  PP_CHECK_INT(spool_bytes(s), ==, len);
  spool_close(s); /* crash before the first push's batch was written */

  s = jspool();
  PP_CHECK(s != NULL);
  handed h = {0};
  PP_CHECK_INT(spool_scan(s, collect, &h), ==, 1);
  PP_CHECK_INT(h.n, ==, 1);
  PP_CHECK_STR(h.ids[0], id1);
  PP_CHECK_INT(spool_remove(s, id1), ==, SPOOL_OK);
  spool_close(s);
  /* Exported and removed: never replayed again. */
  s = jspool();
  handed h2 = {0};
  PP_CHECK_INT(spool_scan(s, collect, &h2), ==, 0);
  spool_close(s);
  free(f);
  btu_rmtree(dir);
}

/* A removed spool file is reused for a later push (no new inode) once its
 * removal is durable, and then holds exactly the new push. */
static void test_spool_reuses_removed_files_only_once_durable(void) {
  int dfd = setup();
  close(dfd);
  spool *s = jspool();
  PP_CHECK(s != NULL);
  if (!s)
    return;
  size_t l1, l3;
  uint8_t *f1 = btu_frame("a-rather-long-service-name-for-a-longer-frame", 7, &l1);
  uint8_t *f3 = btu_frame("s", 9, &l3);
  PP_CHECK(f1 && f3 && l3 < l1);
  char id1[SPOOL_ID_MAX], id2[SPOOL_ID_MAX], id3[SPOOL_ID_MAX], p[512];
  struct stat st1, st2, st3;
  PP_CHECK_INT(spool_put(s, f1, l1, id1), ==, SPOOL_OK);
  snprintf(p, sizeof p, "%s/%s", dir, id1);
  PP_CHECK_INT(stat(p, &st1), ==, 0);
  PP_CHECK_INT(spool_remove(s, id1), ==, SPOOL_OK);
  PP_CHECK_INT(access(p, F_OK), ==, -1);
  PP_CHECK_INT(spool_files(s), ==, 0);
  /* Its removal is not durable yet: the next push gets a new file... */
  PP_CHECK_INT(spool_put(s, f1, l1, id2), ==, SPOOL_OK);
  snprintf(p, sizeof p, "%s/%s", dir, id2);
  PP_CHECK_INT(stat(p, &st2), ==, 0);
  PP_CHECK(st2.st_ino != st1.st_ino);
  /* ...whose directory fsync made it durable: the one after reuses it. */
  PP_CHECK_INT(spool_put(s, f3, l3, id3), ==, SPOOL_OK);
  snprintf(p, sizeof p, "%s/%s", dir, id3);
  PP_CHECK_INT(stat(p, &st3), ==, 0);
  /* Only where the file system has room to spare (1 GiB and a tenth). */
  struct statvfs v;
  PP_CHECK_INT(statvfs(dir, &v), ==, 0);
  uint64_t avail = (uint64_t)v.f_bavail * v.f_frsize;
  if (avail >= (1ull << 30) && avail >= (uint64_t)v.f_blocks * v.f_frsize / 10)
    PP_CHECK_INT(st3.st_ino, ==, st1.st_ino);
  else
    PP_CHECK(st3.st_ino != st1.st_ino);
  PP_CHECK_INT(st3.st_size, ==, l3);
  uint8_t *back = malloc(l1);
  FILE *fh = fopen(p, "rb");
  PP_CHECK(fh != NULL && back != NULL);
  if (fh && back) {
    PP_CHECK_INT(fread(back, 1, l1, fh), ==, l3);
    PP_CHECK(memcmp(back, f3, l3) == 0);
  }
  if (fh)
    fclose(fh);
  free(back);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 2);
  handed h = {0};
  spool_close(s);
  /* A restart hands over the two pending pushes and no recycled file. */
  s = jspool();
  PP_CHECK(s != NULL);
  if (s) {
    PP_CHECK_INT(spool_scan(s, collect, &h), ==, 2);
    spool_close(s);
  }
  free(f1);
  free(f3);
  btu_rmtree(dir);
}

/* Held pushes that fill the ring (a batch window longer than the ring
 * lasts) do not keep later pushes out of it: the oldest move to files of
 * their own (released from the journal), the new push is journaled. A
 * spilled push is removed as a file, a held one moves to failed/ through
 * a file, and a restart hands over every push left exactly once. */
static void test_full_ring_spills_the_oldest_held_pushes(void) {
  int dfd = setup();
  close(dfd);
  spool *s = jspool();
  PP_CHECK(s != NULL);
  if (!s)
    return;
  size_t len;
  uint8_t *f = btu_frame("svc", 11, &len);
  enum { N = 400 }; /* a record takes a 4 KiB block: ~255 fill the 1 MiB ring */
  static char ids[N][SPOOL_ID_MAX];
  int journaled = 0;
  for (int i = 0; i < N; i++) {
    spool_txn t;
    PP_CHECK_INT(spool_begin(s, f, len, &t), ==, SPOOL_OK);
    journaled += t.jrec.rseq != 0;
    PP_CHECK_INT(spool_commit(s, &t, ids[i]), ==, SPOOL_OK);
  }
  PP_CHECK_INT(journaled, ==, N); /* every one, though the ring holds ~255 */
  int files = btu_count(dir, ".push");
  PP_CHECK_INT(files, >=, N - 255);
  PP_CHECK_INT(files, <, N);
  PP_CHECK_INT(spool_files(s), ==, N);
  PP_CHECK_INT(spool_bytes(s), ==, (uint64_t)N * len);
  char p[512];
  struct stat st;
  /* The oldest was spilled: its file goes on release. */
  snprintf(p, sizeof p, "%s/%s", dir, ids[0]);
  PP_CHECK_INT(stat(p, &st), ==, 0);
  PP_CHECK_INT(spool_remove(s, ids[0]), ==, SPOOL_OK);
  PP_CHECK_INT(stat(p, &st), ==, -1);
  /* The newest is held: it gets a file in failed/. */
  snprintf(p, sizeof p, "%s/%s", dir, ids[N - 1]);
  PP_CHECK_INT(stat(p, &st), ==, -1);
  PP_CHECK_INT(spool_move_failed(s, ids[N - 1], "test"), ==, SPOOL_OK);
  snprintf(p, sizeof p, "%s/failed/%s", dir, ids[N - 1]);
  PP_CHECK_INT(stat(p, &st), ==, 0);
  PP_CHECK_INT(spool_files(s), ==, N - 2);
  PP_CHECK_INT(spool_bytes(s), ==, (uint64_t)(N - 2) * len);
  spool_close(s);
  s = jspool();
  PP_CHECK(s != NULL);
  handed h = {0};
  PP_CHECK_INT(spool_scan(s, collect, &h), ==, N - 2);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, N - 2);
  spool_close(s);
  free(f);
  btu_rmtree(dir);
}

/* Pushers acking into a spool whose 1 MiB ring the held pushes overfill
 * (spills run on the pushers' threads) while another thread releases them
 * in batches, some of them while they are being spilled, and moves some to
 * failed/: every push is accounted exactly once, nothing is left behind,
 * and a restart replays nothing (TSan runs this too). */
enum { RACE_PUSHERS = 3, RACE_EACH = 150 };
typedef struct race {
  spool *s;
  pthread_mutex_t mu;
  char (*ids)[SPOOL_ID_MAX]; /* acked, not yet released */
  int n, acked, done_pushers, failed;
} race;

static void *race_pusher(void *arg) {
  race *r = arg;
  size_t len;
  uint8_t *f = btu_frame("race", 5, &len);
  for (int i = 0; f && i < RACE_EACH; i++) {
    spool_txn t;
    char id[SPOOL_ID_MAX];
    if (spool_begin(r->s, f, len, &t) != SPOOL_OK || spool_commit(r->s, &t, id) != SPOOL_OK)
      continue;
    pthread_mutex_lock(&r->mu);
    memcpy(r->ids[r->n++], id, SPOOL_ID_MAX);
    r->acked++;
    pthread_mutex_unlock(&r->mu);
  }
  free(f);
  pthread_mutex_lock(&r->mu);
  r->done_pushers++;
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

static void *race_releaser(void *arg) {
  race *r = arg;
  char batch[32][SPOOL_ID_MAX];
  for (int round = 0;; round++) {
    pthread_mutex_lock(&r->mu);
    bool last = r->done_pushers == RACE_PUSHERS;
    /* The oldest first, as batches seal; held back while the pushers run
     * so that the ring fills and spills. */
    int k = r->n > 200 || last ? (r->n < 32 ? r->n : 32) : 0;
    memcpy(batch, r->ids, (size_t)k * SPOOL_ID_MAX);
    memmove(r->ids, r->ids + k, (size_t)(r->n - k) * SPOOL_ID_MAX);
    r->n -= k;
    pthread_mutex_unlock(&r->mu);
    if (k == 0 && last)
      return NULL;
    if (k && round % 7 == 3) {
      spool_move_failed(r->s, batch[0], "race");
      r->failed++;
      spool_release(r->s, (const char(*)[SPOOL_ID_MAX])batch + 1, (size_t)k - 1);
    } else if (k) {
      spool_release(r->s, (const char(*)[SPOOL_ID_MAX])batch, (size_t)k);
    } else {
      usleep(200);
    }
  }
}

static void test_spills_and_releases_race_without_loss(void) {
  int dfd = setup();
  close(dfd);
  race r = {.s = jspool()};
  PP_CHECK(r.s != NULL);
  r.ids = calloc(RACE_PUSHERS * RACE_EACH, SPOOL_ID_MAX);
  if (!r.s || !r.ids)
    return;
  pthread_mutex_init(&r.mu, NULL);
  pthread_t t[RACE_PUSHERS + 1];
  for (int i = 0; i < RACE_PUSHERS; i++)
    PP_CHECK_INT(pthread_create(&t[i], NULL, race_pusher, &r), ==, 0);
  PP_CHECK_INT(pthread_create(&t[RACE_PUSHERS], NULL, race_releaser, &r), ==, 0);
  for (int i = 0; i <= RACE_PUSHERS; i++)
    pthread_join(t[i], NULL);
  PP_CHECK_INT(r.acked, ==, RACE_PUSHERS * RACE_EACH);
  PP_CHECK(r.failed > 0);
  PP_CHECK_INT(spool_files(r.s), ==, 0);
  PP_CHECK_INT(spool_bytes(r.s), ==, 0);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 0);
  char fdir[128];
  snprintf(fdir, sizeof fdir, "%s/failed", dir);
  PP_CHECK_INT(btu_count(fdir, ".push"), ==, r.failed);
  spool_close(r.s);
  r.s = jspool();
  handed h = {0};
  PP_CHECK_INT(spool_scan(r.s, collect, &h), ==, 0);
  spool_close(r.s);
  pthread_mutex_destroy(&r.mu);
  free(r.ids);
  btu_rmtree(dir);
}

int main(void) {
  PP_RUN(test_record_crc_is_zlibs_crc32);
  PP_RUN(test_unreleased_records_are_replayed_in_order_once);
  PP_RUN(test_failed_replay_fails_the_open_and_keeps_the_records);
  PP_RUN(test_replay_stops_at_a_torn_record);
  PP_RUN(test_laps_of_the_ring_replay_only_live_records);
  PP_RUN(test_full_ring_refuses_then_frees_space);
  PP_RUN(test_resize_replays_first);
  PP_RUN(test_concurrent_appends_release_everything);
  PP_RUN(test_spool_held_push_survives_a_crash_release_is_final);
  PP_RUN(test_full_ring_spills_the_oldest_held_pushes);
  PP_RUN(test_spills_and_releases_race_without_loss);
  PP_RUN(test_spool_reuses_removed_files_only_once_durable);
  PP_DONE();
}
