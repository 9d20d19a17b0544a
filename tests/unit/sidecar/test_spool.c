/* Unit tests for sidecar/spool.c: puts, removes, limits, the two-step put
 * and recycled files. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#include "batch_test_util.h"
#include "metrics.h"
#include "pp_push.h"
#include "pp_test.h"
#include "spool.h"
#include "spool_test_util.h"

static void test_put_then_scan_after_reopen_hands_over_oldest_first(void) {
  setup();
  spool *s = open_spool(1 << 20, false);
  PP_CHECK(s != NULL);
  if (!s)
    return;
  struct stat st;
  PP_CHECK_INT(stat(sub("quarantine"), &st), ==, 0);
  PP_CHECK_INT(stat(sub("failed"), &st), ==, 0);
  PP_CHECK_INT(st.st_mode & 0777, ==, 0750);
  char ids[3][SPOOL_ID_MAX];
  size_t lens[3], total = 0;
  const char *svc[3] = {"a", "b", "c"};
  for (int i = 0; i < 3; i++) {
    uint8_t *f = btu_frame(svc[i], 10 + i, &lens[i]);
    PP_CHECK(f != NULL);
    PP_CHECK_INT(spool_put(s, f, lens[i], ids[i]), ==, SPOOL_OK);
    PP_CHECK(strstr(ids[i], PP_SPOOL_SUFFIX) != NULL);
    /* The file holds the frame exactly as received. */
    uint8_t buf[4096];
    FILE *fp = fopen(sub(ids[i]), "rb");
    PP_CHECK(fp != NULL);
    size_t got = fp ? fread(buf, 1, sizeof buf, fp) : 0;
    if (fp)
      fclose(fp);
    PP_CHECK_INT(got, ==, lens[i]);
    PP_CHECK(memcmp(buf, f, lens[i]) == 0);
    total += lens[i];
    free(f);
  }
  PP_CHECK(strcmp(ids[0], ids[1]) < 0 && strcmp(ids[1], ids[2]) < 0);
  PP_CHECK_INT(spool_bytes(s), ==, total);
  PP_CHECK_INT(spool_files(s), ==, 3);
  /* put files are known: a scan of the same spool hands nothing over twice */
  seen none = {0};
  PP_CHECK_INT(spool_rescan_new(s, collect, &none), ==, 0);
  spool_close(s);

  s = open_spool(1 << 20, false);
  PP_CHECK(s != NULL);
  if (!s)
    return;
  PP_CHECK_INT(spool_files(s), ==, 0);
  seen got = {0};
  PP_CHECK_INT(spool_scan(s, collect, &got), ==, 3);
  PP_CHECK_INT(got.n, ==, 3);
  for (int i = 0; i < 3 && i < got.n; i++) {
    PP_CHECK_STR(got.ids[i], ids[i]);
    PP_CHECK_STR(got.services[i], svc[i]);
    PP_CHECK_INT(got.bytes[i], ==, lens[i]);
  }
  PP_CHECK_INT(spool_bytes(s), ==, total);
  PP_CHECK_INT(spool_files(s), ==, 3);
  char *m = metrics_render();
  char want[64];
  snprintf(want, sizeof want, "\npushprof_spool_bytes %zu\n", total);
  PP_CHECK(m && strstr(m, want));
  PP_CHECK(m && strstr(m, "\npushprof_spool_files 3\n"));
  free(m);

  PP_CHECK_INT(spool_remove(s, ids[1]), ==, SPOOL_OK);
  PP_CHECK_INT(access(sub(ids[1]), F_OK), ==, -1);
  PP_CHECK_INT(spool_bytes(s), ==, total - lens[1]);
  PP_CHECK_INT(spool_files(s), ==, 2);
  /* removing twice, or a hostile id, touches nothing */
  PP_CHECK_INT(spool_remove(s, ids[1]), ==, SPOOL_OK);
  PP_CHECK(spool_remove(s, "../x.push") != SPOOL_OK);

  PP_CHECK_INT(spool_move_failed(s, ids[2], "refused: bad credentials"), ==, SPOOL_OK);
  PP_CHECK_INT(access(sub(ids[2]), F_OK), ==, -1);
  char fp_path[PATH_MAX + 80];
  snprintf(fp_path, sizeof fp_path, "%s/failed/%s", dir, ids[2]);
  PP_CHECK_INT(access(fp_path, F_OK), ==, 0);
  snprintf(fp_path, sizeof fp_path, "%s/failed/%s.reason", dir, ids[2]);
  char reason[128] = "";
  FILE *rf = fopen(fp_path, "r");
  PP_CHECK(rf != NULL);
  if (rf) {
    PP_CHECK(fgets(reason, sizeof reason, rf) != NULL);
    fclose(rf);
  }
  PP_CHECK_STR(reason, "refused: bad credentials\n");
  PP_CHECK_INT(spool_files(s), ==, 1);
  PP_CHECK_INT(spool_bytes(s), ==, lens[0]);
  spool_close(s);
  btu_rmtree(dir);
}

static void test_open_removes_stale_temps_and_scan_ignores_dotfiles(void) {
  setup();
  size_t len = 0;
  uint8_t *f = btu_frame("svc", 5, &len);
  PP_CHECK(f != NULL);
  if (!f)
    return;
  PP_CHECK_INT(btu_write_file(sub(".00000000000000000001-0000000000.push"), f, len), ==, 0);
  struct timespec old[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
  PP_CHECK_INT(utimensat(AT_FDCWD, sub(".00000000000000000001-0000000000.push"), old, 0), ==, 0);
  /* A fresh one may be a client's drop-in in progress: kept, but ignored. */
  PP_CHECK_INT(btu_write_file(sub(".sdk-in-progress.push"), f, len), ==, 0);
  PP_CHECK_INT(btu_write_file(sub("notes.txt"), "x", 1), ==, 0);
  free(f);
  spool *s = open_spool(1 << 20, false);
  PP_CHECK(s != NULL);
  if (!s)
    return;
  PP_CHECK_INT(access(sub(".00000000000000000001-0000000000.push"), F_OK), ==, -1);
  PP_CHECK_INT(access(sub(".sdk-in-progress.push"), F_OK), ==, 0);
  seen got = {0};
  PP_CHECK_INT(spool_scan(s, collect, &got), ==, 0);
  PP_CHECK_INT(access(sub("notes.txt"), F_OK), ==, 0); /* not ours: untouched */
  PP_CHECK_INT(access(sub(".sdk-in-progress.push"), F_OK), ==, 0);
  /* Once abandoned for long, later scans remove it too. */
  PP_CHECK_INT(utimensat(AT_FDCWD, sub(".sdk-in-progress.push"), old, 0), ==, 0);
  PP_CHECK_INT(spool_rescan_new(s, collect, &got), ==, 0);
  PP_CHECK_INT(access(sub(".sdk-in-progress.push"), F_OK), ==, -1);
  PP_CHECK_INT(spool_files(s), ==, 0);
  spool_close(s);
  btu_rmtree(dir);
}

static void test_full_spool_refuses_then_accepts_after_remove(void) {
  setup();
  size_t len = 0;
  uint8_t *f = btu_frame("svc", 5, &len);
  PP_CHECK(f != NULL);
  if (!f)
    return;
  spool *s = open_spool(len * 2 + len / 2, false);
  PP_CHECK(s != NULL);
  if (!s) {
    free(f);
    return;
  }
  char id1[SPOOL_ID_MAX], id2[SPOOL_ID_MAX], id3[SPOOL_ID_MAX];
  PP_CHECK_INT(spool_put(s, f, len, id1), ==, SPOOL_OK);
  PP_CHECK_INT(spool_put(s, f, len, id2), ==, SPOOL_OK);
  PP_CHECK_INT(spool_put(s, f, len, id3), ==, SPOOL_FULL);
  PP_CHECK_INT(spool_files(s), ==, 2);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 2);
  PP_CHECK_INT(spool_remove(s, id1), ==, SPOOL_OK);
  PP_CHECK_INT(spool_put(s, f, len, id3), ==, SPOOL_OK);
  /* A frame bigger than the whole spool never fits. */
  uint8_t *big = calloc(1, len * 3);
  PP_CHECK_INT(spool_put(s, big, len * 3, id1), ==, SPOOL_FULL);
  free(big);
  spool_close(s);
  free(f);
  btu_rmtree(dir);
}

static void test_drop_oldest_makes_room_and_counts(void) {
  setup();
  size_t len = 0;
  uint8_t *f = btu_frame("svc", 5, &len);
  PP_CHECK(f != NULL);
  if (!f)
    return;
  spool *s = open_spool(len * 2 + len / 2, true);
  PP_CHECK(s != NULL);
  if (!s) {
    free(f);
    return;
  }
  uint64_t d0 = metrics_reason_value("drops", "spool_full_drop_oldest");
  char id1[SPOOL_ID_MAX], id2[SPOOL_ID_MAX], id3[SPOOL_ID_MAX];
  PP_CHECK_INT(spool_put(s, f, len, id1), ==, SPOOL_OK);
  PP_CHECK_INT(spool_put(s, f, len, id2), ==, SPOOL_OK);
  PP_CHECK_INT(spool_put(s, f, len, id3), ==, SPOOL_OK);
  PP_CHECK_INT(access(sub(id1), F_OK), ==, -1);
  PP_CHECK_INT(access(sub(id2), F_OK), ==, 0);
  PP_CHECK_INT(access(sub(id3), F_OK), ==, 0);
  PP_CHECK_INT(metrics_reason_value("drops", "spool_full_drop_oldest"), ==, d0 + 1);
  PP_CHECK_INT(spool_files(s), ==, 2);
  PP_CHECK_INT(spool_bytes(s), ==, 2 * len);
  /* The batcher may still remove the vanished id: harmless. */
  PP_CHECK_INT(spool_remove(s, id1), ==, SPOOL_OK);
  PP_CHECK_INT(spool_bytes(s), ==, 2 * len);
  spool_close(s);
  free(f);
  btu_rmtree(dir);
}

static void test_disk_error_is_eio_and_leaves_nothing(void) {
  setup();
  spool *s = open_spool(1 << 24, false);
  PP_CHECK(s != NULL);
  if (!s)
    return;
  /* RLIMIT_FSIZE makes the write fail with EFBIG, like a full disk. */
  struct rlimit old, lim = {.rlim_cur = 1024, .rlim_max = RLIM_INFINITY};
  PP_CHECK_INT(getrlimit(RLIMIT_FSIZE, &old), ==, 0);
  lim.rlim_max = old.rlim_max;
  signal(SIGXFSZ, SIG_IGN);
  PP_CHECK_INT(setrlimit(RLIMIT_FSIZE, &lim), ==, 0);
  uint8_t *big = calloc(1, 8192);
  char id[SPOOL_ID_MAX];
  PP_CHECK_INT(spool_put(s, big, 8192, id), ==, SPOOL_EIO);
  PP_CHECK_INT(setrlimit(RLIMIT_FSIZE, &old), ==, 0);
  free(big);
  PP_CHECK_INT(btu_count(dir, NULL), ==, 2); /* quarantine/ and failed/ only */
  PP_CHECK_INT(spool_bytes(s), ==, 0);
  PP_CHECK_INT(spool_files(s), ==, 0);
  spool_close(s);
  btu_rmtree(dir);
}

static void test_open_reports_unusable_dir(void) {
  char err[512] = "";
  spool_config c = {.dir = "/dev/null/spool", .max_bytes = 1};
  PP_CHECK(spool_open(&c, err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "/dev/null/spool") != NULL);
  spool_config none = {0};
  PP_CHECK(spool_open(&none, err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "--spool") != NULL);
}

typedef struct group_arg {
  spool *s;
  int ok;
  char ids[25][SPOOL_ID_MAX];
} group_arg;

static void *group_putter(void *p) {
  group_arg *a = p;
  size_t len = 0;
  uint8_t *f = btu_frame("group", 1, &len);
  for (int i = 0; i < 25 && f; i++)
    if (spool_put(a->s, f, len, a->ids[a->ok]) == SPOOL_OK)
      a->ok++;
  free(f);
  return NULL;
}

/* Concurrent puts share directory fsyncs (group commit): every put that
 * returned OK is a distinct file that a fresh spool finds again. */
static void test_concurrent_puts_all_land_with_shared_dir_fsync(void) {
  setup();
  spool *s = open_spool(1 << 26, false);
  PP_CHECK(s != NULL);
  if (!s)
    return;
  group_arg a[8];
  pthread_t t[8];
  for (int i = 0; i < 8; i++) {
    a[i] = (group_arg){.s = s};
    PP_CHECK_INT(pthread_create(&t[i], NULL, group_putter, &a[i]), ==, 0);
  }
  for (int i = 0; i < 8; i++)
    pthread_join(t[i], NULL);
  int ok = 0;
  for (int i = 0; i < 8; i++) {
    ok += a[i].ok;
    for (int j = 0; j < a[i].ok; j++)
      PP_CHECK_INT(access(sub(a[i].ids[j]), F_OK), ==, 0);
  }
  PP_CHECK_INT(ok, ==, 200);
  PP_CHECK_INT(spool_files(s), ==, 200);
  spool_close(s);
  s = open_spool(1 << 26, false);
  PP_CHECK(s != NULL);
  if (!s)
    return;
  seen got = {0};
  PP_CHECK_INT(spool_scan(s, collect, &got), ==, 200);
  PP_CHECK_INT(got.n, ==, 200);
  spool_close(s);
  btu_rmtree(dir);
}

/* The two-step put: abort leaves nothing and gives the bytes back; commit
 * makes the push pending; begin never drops old pushes to make room, even
 * with drop_oldest (a push not yet validated must not cost a valid one). */
static void test_begin_commit_abort(void) {
  setup();
  size_t len = 0;
  uint8_t *f = btu_frame("txn", 1, &len);
  spool *s = f ? open_spool(len * 2, true) : NULL;
  PP_CHECK(s != NULL);
  if (!s) {
    free(f);
    return;
  }
  spool_txn t;
  char id[SPOOL_ID_MAX];
  PP_CHECK_INT(spool_begin(s, f, len, &t), ==, SPOOL_OK);
  PP_CHECK_INT(spool_bytes(s), ==, len);
  spool_abort(s, &t);
  PP_CHECK_INT(spool_bytes(s), ==, 0);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 0);
  PP_CHECK_INT(spool_begin(s, f, len, &t), ==, SPOOL_OK);
  PP_CHECK_INT(spool_commit(s, &t, id), ==, SPOOL_OK);
  PP_CHECK_INT(access(sub(id), F_OK), ==, 0);
  PP_CHECK_INT(spool_put(s, f, len, id), ==, SPOOL_OK);
  PP_CHECK_INT(spool_files(s), ==, 2);
  /* Full: begin refuses and drops nothing; spool_put drops the oldest. */
  PP_CHECK_INT(spool_begin(s, f, len, &t), ==, SPOOL_FULL);
  PP_CHECK_INT(spool_files(s), ==, 2);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 2);
  PP_CHECK_INT(spool_put(s, f, len, id), ==, SPOOL_OK);
  PP_CHECK_INT(spool_files(s), ==, 2);
  PP_CHECK_INT(spool_bytes(s), ==, 2 * len);
  spool_close(s);
  free(f);
  btu_rmtree(dir);
}

/* ---- recycled files (spool.c, RECYCLE_*) ---- */

/* Recycling needs a file system with room to spare (1 GiB and a tenth
 * free); elsewhere removed files are unlinked and these cases skip. */
static bool room_for_recycling(void) {
  struct statvfs v;
  if (statvfs(dir, &v) != 0)
    return false;
  uint64_t avail = (uint64_t)v.f_bavail * v.f_frsize, total = (uint64_t)v.f_blocks * v.f_frsize;
  return avail >= ((uint64_t)1 << 30) && avail >= total / 10;
}

/* Number and total size of the ".recycled-N" files in dir. */
static int recycled_files(uint64_t *bytes) {
  DIR *d = opendir(dir);
  int n = 0;
  *bytes = 0;
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL) {
    struct stat st;
    if (strncmp(de->d_name, ".recycled-", 10) != 0 || stat(sub(de->d_name), &st) != 0)
      continue;
    n++;
    *bytes += (uint64_t)st.st_size;
  }
  if (d)
    closedir(d);
  return n;
}

static spool *open_journaled(void) {
  char err[512] = "";
  spool_config c = {.dir = dir, .max_bytes = 64u << 20, .journal_bytes = 4u << 20};
  spool *s = spool_open(&c, err, sizeof err);
  if (!s)
    fprintf(stderr, "spool_open: %s\n", err);
  return s;
}

/* A removed push's file is kept as a dot file (never scanned), reused by a
 * later push once its rename is durable (same inode, cut to the new push's
 * length), and kept across a restart. */
static void test_removed_files_are_recycled_and_reused_whole(void) {
  setup();
  spool *s = open_journaled();
  PP_CHECK(s != NULL);
  if (!s || !room_for_recycling()) {
    spool_close(s);
    btu_rmtree(dir);
    if (s)
      PP_SKIP("%s has too little free space for recycling", dir);
    return;
  }
  size_t big_len, small_len;
  uint8_t *big = btu_frame("big-service-with-a-long-name", 1000000007, &big_len);
  uint8_t *small = btu_frame("s", 1, &small_len);
  PP_CHECK(big && small && small_len < big_len);
  char a[SPOOL_ID_MAX], b[SPOOL_ID_MAX], c[SPOOL_ID_MAX];
  struct stat st;
  PP_CHECK_INT(spool_put(s, big, big_len, a), ==, SPOOL_OK);
  PP_CHECK_INT(stat(sub(a), &st), ==, 0);
  ino_t ino_a = st.st_ino;
  PP_CHECK_INT(spool_remove(s, a), ==, SPOOL_OK);
  PP_CHECK_INT(stat(sub(a), &st), ==, -1); /* the name is gone */
  uint64_t rb;
  PP_CHECK_INT(recycled_files(&rb), ==, 1);
  PP_CHECK_INT(rb, ==, big_len);
  PP_CHECK_INT(spool_files(s), ==, 0);
  /* b's put syncs the directory (the recycling rename is then durable), so
   * c at the latest reuses a's inode. */
  PP_CHECK_INT(spool_put(s, small, small_len, b), ==, SPOOL_OK);
  PP_CHECK_INT(spool_put(s, small, small_len, c), ==, SPOOL_OK);
  struct stat sb, sc;
  PP_CHECK_INT(stat(sub(b), &sb), ==, 0);
  PP_CHECK_INT(stat(sub(c), &sc), ==, 0);
  PP_CHECK(sb.st_ino == ino_a || sc.st_ino == ino_a);
  PP_CHECK_INT(sb.st_size, ==, small_len); /* nothing of the old push left */
  PP_CHECK_INT(sc.st_size, ==, small_len);
  PP_CHECK_INT(recycled_files(&rb), ==, 0);
  spool_close(s);
  /* Reopened: both pushes come back whole, no recycled file is handed over. */
  s = open_journaled();
  PP_CHECK(s != NULL);
  seen got = {0};
  if (s)
    PP_CHECK_INT(spool_scan(s, collect, &got), ==, 2);
  PP_CHECK_INT(got.n, ==, 2);
  for (int i = 0; i < got.n && i < 2; i++) {
    PP_CHECK_STR(got.services[i], "s");
    PP_CHECK_INT(got.bytes[i], ==, small_len);
  }
  /* Removed again, then a stop: the recycled files stay for the next start
   * (test_restart_adopts_recycled_files_and_never_scans_them). */
  for (int i = 0; s && i < got.n && i < 2; i++)
    PP_CHECK_INT(spool_remove(s, got.ids[i]), ==, SPOOL_OK);
  PP_CHECK_INT(recycled_files(&rb), ==, 2);
  spool_close(s);
  PP_CHECK_INT(recycled_files(&rb), ==, 2);
  free(big);
  free(small);
  btu_rmtree(dir);
}

/* Inode numbers of the ".recycled-N" files in dir (at most max). */
static int recycled_inodes(ino_t *out, int max) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL && n < max) {
    struct stat st;
    if (strncmp(de->d_name, ".recycled-", 10) == 0 && stat(sub(de->d_name), &st) == 0)
      out[n++] = st.st_ino;
  }
  if (d)
    closedir(d);
  return n;
}

/* A stop leaves the recycled files; the next start adopts them: no scan
 * hands one over as a push, the next pushes reuse their inodes (cut to the
 * new push), and new names never replace an adopted one. A file with an odd
 * name or a symlink under the prefix is deleted, not reused. */
static void test_restart_adopts_recycled_files_and_never_scans_them(void) {
  setup();
  spool *s = open_journaled();
  PP_CHECK(s != NULL);
  if (!s || !room_for_recycling()) {
    spool_close(s);
    btu_rmtree(dir);
    if (s)
      PP_SKIP("%s has too little free space for recycling", dir);
    return;
  }
  size_t len;
  uint8_t *f = btu_frame("adopt", 5, &len);
  PP_CHECK(f != NULL);
  char ids[3][SPOOL_ID_MAX], id[SPOOL_ID_MAX];
  for (int i = 0; i < 3; i++)
    PP_CHECK_INT(spool_put(s, f, len, ids[i]), ==, SPOOL_OK);
  for (int i = 0; i < 3; i++)
    PP_CHECK_INT(spool_remove(s, ids[i]), ==, SPOOL_OK);
  spool_close(s);
  uint64_t rb;
  PP_CHECK_INT(recycled_files(&rb), ==, 3);
  PP_CHECK_INT(rb, ==, 3 * (uint64_t)len);
  ino_t kept[3];
  PP_CHECK_INT(recycled_inodes(kept, 3), ==, 3);
  /* Not ours to reuse: deleted at start. */
  PP_CHECK_INT(btu_write_file(sub(".recycled-x"), "junk", 4), ==, 0);
  PP_CHECK_INT(btu_write_file(sub("target"), "keep", 4), ==, 0);
  PP_CHECK_INT(symlink("target", sub(".recycled-99")), ==, 0);

  s = open_journaled();
  PP_CHECK(s != NULL);
  if (!s) {
    free(f);
    btu_rmtree(dir);
    return;
  }
  struct stat st;
  PP_CHECK_INT(stat(sub(".recycled-x"), &st), ==, -1);
  PP_CHECK_INT(lstat(sub(".recycled-99"), &st), ==, -1);
  PP_CHECK_INT(stat(sub("target"), &st), ==, 0); /* the link went, not what it named */
  seen got = {0};
  PP_CHECK_INT(spool_scan(s, collect, &got), ==, 0);
  PP_CHECK_INT(spool_files(s), ==, 0);
  PP_CHECK_INT(recycled_files(&rb), ==, 3);
  /* The first push after the start already reuses an adopted file. */
  PP_CHECK_INT(spool_put(s, f, len, id), ==, SPOOL_OK);
  PP_CHECK_INT(stat(sub(id), &st), ==, 0);
  PP_CHECK(st.st_ino == kept[0] || st.st_ino == kept[1] || st.st_ino == kept[2]);
  PP_CHECK_INT(st.st_size, ==, len);
  PP_CHECK_INT(recycled_files(&rb), ==, 2);
  /* A new recycling rename takes a fresh name: three files again. */
  PP_CHECK_INT(spool_remove(s, id), ==, SPOOL_OK);
  PP_CHECK_INT(recycled_files(&rb), ==, 3);
  spool_close(s);
  free(f);
  btu_rmtree(dir);
}

/* Recycled files keep their inodes but not their blocks: past 16 MiB of
 * them they are all truncated. */
static void test_recycled_files_are_truncated_past_16_mib(void) {
  setup();
  spool *s = open_spool(256u << 20, false);
  PP_CHECK(s != NULL);
  if (!s || !room_for_recycling()) {
    spool_close(s);
    btu_rmtree(dir);
    if (s)
      PP_SKIP("%s has too little free space for recycling", dir);
    return;
  }
  size_t len = 3u << 20; /* recycled: at most 4 MiB each */
  uint8_t *f = malloc(len);
  PP_CHECK(f != NULL);
  if (!f) {
    spool_close(s);
    return;
  }
  memset(f, 0x5a, len);
  char ids[6][SPOOL_ID_MAX];
  for (int i = 0; i < 6; i++)
    PP_CHECK_INT(spool_put(s, f, len, ids[i]), ==, SPOOL_OK);
  uint64_t rb;
  for (int i = 0; i < 5; i++) /* 15 MiB recycled: kept as they are */
    PP_CHECK_INT(spool_remove(s, ids[i]), ==, SPOOL_OK);
  PP_CHECK_INT(recycled_files(&rb), ==, 5);
  PP_CHECK_INT(rb, ==, 5 * (uint64_t)len);
  PP_CHECK_INT(spool_remove(s, ids[5]), ==, SPOOL_OK); /* 18 MiB: over */
  PP_CHECK_INT(recycled_files(&rb), ==, 6);
  PP_CHECK_INT(rb, ==, 0);
  spool_close(s);
  PP_CHECK_INT(recycled_files(&rb), ==, 6); /* kept for the next start, empty */
  PP_CHECK_INT(rb, ==, 0);
  free(f);
  btu_rmtree(dir);
}

int main(void) {
  PP_RUN(test_put_then_scan_after_reopen_hands_over_oldest_first);
  PP_RUN(test_open_removes_stale_temps_and_scan_ignores_dotfiles);
  PP_RUN(test_full_spool_refuses_then_accepts_after_remove);
  PP_RUN(test_drop_oldest_makes_room_and_counts);
  PP_RUN(test_disk_error_is_eio_and_leaves_nothing);
  PP_RUN(test_open_reports_unusable_dir);
  PP_RUN(test_concurrent_puts_all_land_with_shared_dir_fsync);
  PP_RUN(test_begin_commit_abort);
  PP_RUN(test_removed_files_are_recycled_and_reused_whole);
  PP_RUN(test_recycled_files_are_truncated_past_16_mib);
  PP_RUN(test_restart_adopts_recycled_files_and_never_scans_them);
  PP_DONE();
}
