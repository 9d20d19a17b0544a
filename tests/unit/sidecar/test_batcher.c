/* Unit tests for sidecar/batcher.c with a fake exporter and a real spool. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include <openssl/evp.h>

#include "batch_test_util.h"
#include "metrics_test_util.h"
#include "batcher.h"
#include "exporter.h"
#include "exporter_backends.h"
#include "manifest.h"
#include "metrics.h"
#include "pp_gzip.h"
#include "pp_merge.h"
#include "pp_push.h"
#include "pp_test.h"
#include "spool.h"
#include "pp_parse_ref.h"

static char dir[64];

/* ---- a scripted exporter that keeps what it is given ---- */

#define FAKE_MAX 128
typedef struct fake {
  exporter base;
  pthread_mutex_t mu;
  int calls;
  int script[16]; /* result of call i; EXPORT_OK after the script ends */
  int nscript;
  int nobj;
  char service[FAKE_MAX][32];
  uint8_t *data[FAKE_MAX];
  size_t len[FAKE_MAX];
  size_t pprof_len[FAKE_MAX];
  char hash[FAKE_MAX][65];
  size_t nlabels[FAKE_MAX];
  size_t spool_files_at_call[16];
  char key[16][512];   /* the object key each call would write */
  bool store_on_retry; /* the answer of a retried call was lost, not the upload */
  spool *sp;
  void (*hook)(struct fake *f, int call); /* run by each call, before it answers */
} fake;

static int fake_put(exporter *ex, const export_object *o, char *err, size_t errlen) {
  fake *f = ex->impl;
  pthread_mutex_lock(&f->mu);
  int i = f->calls++;
  int rc = i < f->nscript ? f->script[i] : EXPORT_OK;
  if (i < 16) {
    f->spool_files_at_call[i] = f->sp ? spool_files(f->sp) : 0;
    if (exporter_object_key("p", o, f->key[i], sizeof f->key[i]) != 0)
      f->key[i][0] = '\0';
  }
  if ((rc == EXPORT_OK || (rc == EXPORT_RETRY && f->store_on_retry)) && f->nobj < FAKE_MAX) {
    int k = f->nobj++;
    snprintf(f->service[k], sizeof f->service[k], "%s", o->service);
    f->data[k] = malloc(o->len);
    memcpy(f->data[k], o->data, o->len);
    f->len[k] = o->len;
    f->pprof_len[k] = o->pprof ? o->pprof_len : 0;
    snprintf(f->hash[k], sizeof f->hash[k], "%s", o->content_hash);
    f->nlabels[k] = o->nlabels;
  }
  pthread_mutex_unlock(&f->mu);
  if (f->hook)
    f->hook(f, i);
  if (rc != EXPORT_OK)
    snprintf(err, errlen, rc == EXPORT_RETRY ? "fake: try later" : "fake: refused for good");
  return rc;
}

static void fake_init(fake *f, spool *sp) {
  memset(f, 0, sizeof *f);
  pthread_mutex_init(&f->mu, NULL);
  f->base.scheme = "fake";
  f->base.put = fake_put;
  f->base.wants_pprof = true; /* checks the batch both ways */
  f->base.impl = f;
  f->sp = sp;
}

static void fake_free(fake *f) {
  for (int i = 0; i < f->nobj; i++)
    free(f->data[i]);
  pthread_mutex_destroy(&f->mu);
}

static int fake_calls(fake *f) {
  pthread_mutex_lock(&f->mu);
  int n = f->calls;
  pthread_mutex_unlock(&f->mu);
  return n;
}

/* ---- builders the batcher makes (linked with --wrap=pp_builder_new) ---- */

pp_builder *__real_pp_builder_new(void);
pp_builder *__wrap_pp_builder_new(void);
static atomic_int builders_made;
pp_builder *__wrap_pp_builder_new(void) {
  atomic_fetch_add(&builders_made, 1);
  return __real_pp_builder_new();
}

/* ---- helpers ---- */

static spool *setup(void) {
  char err[256];
  pp_test_mkdtemp(dir, sizeof dir, "test-batch");
  spool_config c = {.dir = dir, .max_bytes = 1 << 24};
  spool *s = spool_open(&c, err, sizeof err);
  if (!s)
    fprintf(stderr, "spool_open: %s\n", err);
  return s;
}

static void teardown(spool *s) {
  spool_close(s);
  btu_rmtree(dir);
}

/* Makes a push durable in the spool and hands it to the batcher, as the
 * listener does. */
static void push(batcher *b, spool *s, const char *service, int64_t value) {
  size_t len = 0;
  char id[SPOOL_ID_MAX], why[256];
  int code;
  uint8_t *f = btu_frame(service, value, &len);
  PP_CHECK(f != NULL);
  if (!f)
    return;
  PP_CHECK_INT(spool_put(s, f, len, id), ==, SPOOL_OK);
  pp_push *p = pp_push_decode(f, len, PP_FRAME_MAX_DEFAULT, &code, why, sizeof why);
  PP_CHECK(p != NULL);
  free(f);
  if (p)
    batcher_add(b, id, p);
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

#define scan_to_batcher batcher_add_spooled

static const batcher_config cfg60 = {.window_s = 60, .node = "n1", .subdir = "", .max_age_s = 3600};

/* ---- cases ---- */

static void test_merges_pushes_of_one_service_into_one_object(void) {
  spool *s = setup();
  if (!s)
    return;
  fake f;
  fake_init(&f, s);
  uint64_t exported0 = mtu_value("pushprof_batches_exported_total");
  batcher *b = batcher_new(&cfg60, &f.base, s);
  PP_CHECK(b != NULL);
  push(b, s, "api", 100);
  push(b, s, "api", 7);
  PP_CHECK_INT(spool_files(s), ==, 2);
  batcher_shutdown(b, 5); /* never started: exports inline */
  batcher_free(b);
  PP_CHECK_INT(f.calls, ==, 1);
  PP_CHECK_INT(f.nobj, ==, 1);
  if (f.nobj == 1) {
    PP_CHECK_STR(f.service[0], "api");
    PP_CHECK_INT(f.nlabels[0], ==, 2);
    PP_CHECK_INT(strlen(f.hash[0]), ==, 64);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char hex[65] = "";
    PP_CHECK_INT(EVP_Digest(f.data[0], f.len[0], md, &mdlen, EVP_sha256(), NULL), ==, 1);
    for (unsigned i = 0; i < mdlen && i < 32; i++)
      snprintf(hex + 2 * i, 3, "%02x", md[i]);
    PP_CHECK_STR(f.hash[0], hex);
    PP_CHECK(f.pprof_len[0] > 0);
    PP_CHECK(f.len[0] > 2 && f.data[0][0] == 0x1f && f.data[0][1] == 0x8b);
    char why[256] = "";
    Perftools__Profiles__Profile *p = pp_ref_parse(f.data[0], f.len[0], 1 << 24, why, sizeof why);
    PP_CHECK(p != NULL);
    if (!p)
      fprintf(stderr, "parse: %s\n", why);
    if (p) {
      /* each push holds value + 2*value: (100+200) + (7+14) */
      PP_CHECK_INT(btu_total(p), ==, 321);
      PP_CHECK_INT(p->n_sample, ==, 2); /* identical stacks summed, not concatenated */
      perftools__profiles__profile__free_unpacked(p, NULL);
    }
  }
  PP_CHECK_INT(spool_files(s), ==, 0);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 0);
  PP_CHECK_INT(mtu_value("pushprof_batches_exported_total"), ==, exported0 + 1);
  fake_free(&f);
  teardown(s);
}

static void test_window_end_exports_without_shutdown(void) {
  spool *s = setup();
  if (!s)
    return;
  fake f;
  fake_init(&f, s);
  batcher_config c = cfg60;
  c.window_s = 1;
  batcher *b = batcher_new(&c, &f.base, s);
  PP_CHECK_INT(batcher_start(b), ==, 0);
  push(b, s, "api", 1);
  push(b, s, "api", 2);
  PP_CHECK_INT(fake_calls(&f), ==, 0);                      /* the window is still open */
  PP_CHECK(mtu_value("pushprof_memory_batches_bytes") > 0); /* the open batch */
  for (int i = 0; i < 300 && (fake_calls(&f) < 1 || spool_files(s) > 0); i++)
    sleep_ms(10);
  PP_CHECK_INT(fake_calls(&f), ==, 1);
  PP_CHECK_INT(spool_files(s), ==, 0);
  /* What the batch left for the next one (the encoder's buffer, counted in
   * the gauge) goes once nothing is merged: the batcher thread looks at
   * least once a second. */
  uint64_t left = 1;
  for (int i = 0; i < 300 && (left = mtu_value("pushprof_memory_batches_bytes")) != 0; i++)
    sleep_ms(10);
  PP_CHECK_INT(left, ==, 0);
  batcher_shutdown(b, 1);
  batcher_free(b);
  PP_CHECK_INT(f.nobj, ==, 1);
  fake_free(&f);
  teardown(s);
}

static void test_keeps_services_apart(void) {
  spool *s = setup();
  if (!s)
    return;
  fake f;
  fake_init(&f, s);
  f.base.wants_pprof = false; /* as file/s3/gs: the gzip bytes only */
  batcher *b = batcher_new(&cfg60, &f.base, s);
  push(b, s, "api", 1);
  push(b, s, "worker", 2);
  push(b, s, "api", 3);
  PP_CHECK_INT(mtu_value("pushprof_pending_batches"), ==, 2);
  batcher_shutdown(b, 5);
  PP_CHECK_INT(mtu_value("pushprof_pending_batches"), ==, 0);
  batcher_free(b);
  PP_CHECK_INT(f.nobj, ==, 2);
  int64_t api = -1, worker = -1;
  for (int i = 0; i < f.nobj; i++) {
    PP_CHECK_INT(f.pprof_len[i], ==, 0); /* not inflated for it */
    char why[256];
    Perftools__Profiles__Profile *p = pp_ref_parse(f.data[i], f.len[i], 1 << 24, why, sizeof why);
    PP_CHECK(p != NULL);
    if (!p)
      continue;
    if (strcmp(f.service[i], "api") == 0)
      api = btu_total(p);
    else if (strcmp(f.service[i], "worker") == 0)
      worker = btu_total(p);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  PP_CHECK_INT(api, ==, 12);   /* (1+2) + (3+6) */
  PP_CHECK_INT(worker, ==, 6); /* 2+4 */
  PP_CHECK_INT(spool_files(s), ==, 0);
  fake_free(&f);
  teardown(s);
}

static void test_retries_transient_failures_and_deletes_only_after_success(void) {
  spool *s = setup();
  if (!s)
    return;
  fake f;
  fake_init(&f, s);
  f.script[0] = EXPORT_RETRY;
  f.script[1] = EXPORT_RETRY;
  f.nscript = 2;
  uint64_t retries0 = mtu_value("pushprof_export_retries_total");
  uint64_t failures0 = mtu_value("pushprof_export_failures_total");
  setenv("PUSHPROF_TEST_BACKOFF_MS", "20", 1);
  batcher_config c = cfg60;
  c.window_s = 0;
  batcher *b = batcher_new(&c, &f.base, s);
  unsetenv("PUSHPROF_TEST_BACKOFF_MS");
  PP_CHECK_INT(batcher_start(b), ==, 0);
  push(b, s, "api", 5);
  for (int i = 0; i < 500 && fake_calls(&f) < 3; i++)
    sleep_ms(10);
  for (int i = 0; i < 200 && spool_files(s) > 0; i++)
    sleep_ms(10);
  PP_CHECK_INT(fake_calls(&f), ==, 3);
  PP_CHECK_INT(f.spool_files_at_call[0], ==, 1);
  PP_CHECK_INT(f.spool_files_at_call[1], ==, 1);
  PP_CHECK_INT(f.spool_files_at_call[2], ==, 1);
  PP_CHECK_INT(spool_files(s), ==, 0);
  PP_CHECK_INT(f.nobj, ==, 1);
  PP_CHECK_INT(mtu_value("pushprof_export_retries_total"), ==, retries0 + 2);
  PP_CHECK_INT(mtu_value("pushprof_export_failures_total"), ==, failures0 + 2);
  batcher_shutdown(b, 1);
  batcher_free(b);
  fake_free(&f);
  teardown(s);
}

/* Two targets, the second failing a while: the first takes the batch at
 * once, the push stays in the spool until the second has it too, then
 * leaves; each target is counted on its own. */
static void test_two_targets_push_leaves_only_when_both_have_it(void) {
  spool *s = setup();
  if (!s)
    return;
  fake up, flaky;
  fake_init(&up, s);
  fake_init(&flaky, s);
  for (int i = 0; i < 4; i++)
    flaky.script[i] = EXPORT_RETRY;
  flaky.nscript = 4;
  up.base.scheme = "fake-up";
  flaky.base.scheme = "fake-flaky";
  setenv("PUSHPROF_TEST_BACKOFF_MS", "20", 1);
  batcher_config c = cfg60;
  c.window_s = 0;
  const char *names[2] = {"test://up", "test://flaky"};
  c.target_names = names;
  exporter *ex[2] = {&up.base, &flaky.base};
  batcher *b = batcher_new_multi(&c, ex, 2, s);
  unsetenv("PUSHPROF_TEST_BACKOFF_MS");
  PP_CHECK(b != NULL);
  if (!b)
    return;
  uint64_t up0 = metrics_target_value("test://up", MT_BATCHES_EXPORTED);
  uint64_t fl0 = metrics_target_value("test://flaky", MT_EXPORT_RETRIES);
  PP_CHECK_INT(batcher_start(b), ==, 0);
  push(b, s, "api", 5);
  for (int i = 0; i < 500 && fake_calls(&flaky) < 5; i++)
    sleep_ms(10);
  for (int i = 0; i < 200 && spool_files(s) > 0; i++)
    sleep_ms(10);
  PP_CHECK_INT(fake_calls(&up), ==, 1);
  PP_CHECK_INT(fake_calls(&flaky), ==, 5);
  for (int i = 0; i < 5; i++)
    PP_CHECK_INT(flaky.spool_files_at_call[i], ==, 1); /* still held for the flaky target */
  PP_CHECK_INT(spool_files(s), ==, 0);
  PP_CHECK_INT(up.nobj, ==, 1);
  PP_CHECK_INT(flaky.nobj, ==, 1);
  PP_CHECK(up.nobj == 1 && flaky.nobj == 1 && strcmp(up.hash[0], flaky.hash[0]) == 0);
  PP_CHECK_INT(metrics_target_value("test://up", MT_BATCHES_EXPORTED), ==, up0 + 1);
  PP_CHECK_INT(metrics_target_value("test://flaky", MT_EXPORT_RETRIES), ==, fl0 + 4);
  batcher_shutdown(b, 1);
  batcher_free(b);
  fake_free(&up);
  fake_free(&flaky);
  teardown(s);
}

/* Two targets, the second refusing for good: the first still gets the
 * batch; then the pushes go to failed/ with the refusal's reason, counted
 * with the exporter's own drop reason. */
static void test_two_targets_one_refusal_moves_pushes_to_failed(void) {
  spool *s = setup();
  if (!s)
    return;
  fake up, no;
  fake_init(&up, s);
  fake_init(&no, s);
  no.script[0] = EXPORT_PERMANENT;
  no.nscript = 1;
  no.base.drop_reason = NULL;
  exporter *ex[2] = {&no.base, &up.base};
  uint64_t d0 = metrics_reason_value("drops", "export_permanent");
  batcher *b = batcher_new_multi(&cfg60, ex, 2, s);
  push(b, s, "api", 5);
  batcher_shutdown(b, 5);
  batcher_free(b);
  PP_CHECK_INT(fake_calls(&no), ==, 1);
  PP_CHECK_INT(fake_calls(&up), ==, 1);
  PP_CHECK_INT(up.nobj, ==, 1);
  PP_CHECK_INT(spool_files(s), ==, 0);
  /* The manifest, the batch's only copy, goes to failed/ with the reason. */
  char failed[128];
  snprintf(failed, sizeof failed, "%s/failed", dir);
  PP_CHECK_INT(btu_count(failed, ".batch"), ==, 1);
  PP_CHECK_INT(btu_count(failed, ".reason"), ==, 1);
  PP_CHECK_INT(metrics_reason_value("drops", "export_permanent"), ==, d0 + 1);
  fake_free(&up);
  fake_free(&no);
  teardown(s);
}

static void test_permanent_refusal_moves_pushes_to_failed(void) {
  spool *s = setup();
  if (!s)
    return;
  fake f;
  fake_init(&f, s);
  for (int i = 0; i < 16; i++)
    f.script[i] = EXPORT_PERMANENT;
  f.nscript = 16;
  uint64_t d0 = metrics_reason_value("drops", "export_permanent");
  batcher *b = batcher_new(&cfg60, &f.base, s);
  push(b, s, "api", 5);
  push(b, s, "api", 6);
  batcher_shutdown(b, 5);
  batcher_free(b);
  PP_CHECK_INT(f.calls, ==, 1);
  PP_CHECK_INT(spool_files(s), ==, 0);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 0);
  char failed[128];
  snprintf(failed, sizeof failed, "%s/failed", dir);
  PP_CHECK_INT(btu_count(failed, ".batch"), ==, 1); /* both pushes, merged */
  PP_CHECK_INT(btu_count(failed, ".reason"), ==, 1);
  PP_CHECK_INT(metrics_reason_value("drops", "export_permanent"), ==, d0 + 2);
  fake_free(&f);
  teardown(s);
}

static void test_shutdown_leaves_unexported_pushes_in_spool(void) {
  spool *s = setup();
  if (!s)
    return;
  fake f;
  fake_init(&f, s);
  for (int i = 0; i < 16; i++)
    f.script[i] = EXPORT_RETRY;
  f.nscript = 16;
  setenv("PUSHPROF_TEST_BACKOFF_MS", "5000", 1);
  batcher *b = batcher_new(&cfg60, &f.base, s);
  unsetenv("PUSHPROF_TEST_BACKOFF_MS");
  PP_CHECK_INT(batcher_start(b), ==, 0);
  push(b, s, "api", 5);
  push(b, s, "db", 5);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  batcher_shutdown(b, 1);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  batcher_free(b);
  double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  PP_CHECK(took < 3.0);          /* the grace period bounds it */
  PP_CHECK(fake_calls(&f) >= 2); /* each open batch was tried */
  /* Both pushes wait in their batches' manifests for the next start. */
  PP_CHECK_INT(spool_files(s), ==, 2);
  char bdir[128];
  snprintf(bdir, sizeof bdir, "%s/%s", dir, MANIFEST_DIR);
  PP_CHECK_INT(btu_count(bdir, ".batch"), ==, 2);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 0);
  fake_free(&f);
  teardown(s);
}

static void test_batches_older_than_max_age_are_dropped(void) {
  spool *s = setup();
  if (!s)
    return;
  fake f;
  fake_init(&f, s);
  /* A drop-in whose name says it was spooled in 1970. */
  size_t len = 0;
  uint8_t *fr = btu_frame("old", 5, &len);
  char p[128];
  snprintf(p, sizeof p, "%s/00000000000000000001-0000000000.push", dir);
  PP_CHECK_INT(btu_write_file(p, fr, len), ==, 0);
  free(fr);
  uint64_t d0 = metrics_reason_value("drops", "max_age");
  batcher *b = batcher_new(&cfg60, &f.base, s);
  PP_CHECK_INT(spool_scan(s, scan_to_batcher, b), ==, 1);
  batcher_shutdown(b, 5);
  batcher_free(b);
  PP_CHECK_INT(f.calls, ==, 0);
  PP_CHECK_INT(metrics_reason_value("drops", "max_age"), ==, d0 + 1);
  PP_CHECK_INT(spool_files(s), ==, 0);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 0);
  fake_free(&f);
  teardown(s);
}

static void test_different_sample_types_are_not_merged(void) {
  spool *s = setup();
  if (!s)
    return;
  fake f;
  fake_init(&f, s);
  batcher *b = batcher_new(&cfg60, &f.base, s);
  push(b, s, "api", 5);
  /* Same service, but a pprof with a different sample type. */
  pp_builder *pb = pp_builder_new();
  pp_builder_add_sample_type(pb, "alloc", "bytes");
  uint64_t fn = pp_builder_function(pb, "f", "f", "f.c", 1);
  int64_t line = 1, v = 1000;
  uint64_t loc = pp_builder_location(pb, 0, 0x10, &fn, &line, 1);
  PP_CHECK_INT(pp_builder_sample(pb, &loc, 1, &v, 1, NULL, 0), ==, 0);
  uint8_t *pp;
  size_t plen = 0, len = 0;
  PP_CHECK_INT(pp_builder_pack(pb, &pp, &plen), ==, 0);
  pp_builder_free(pb);
  uint8_t *fr = btu_frame_raw("api", pp, plen, &len);
  free(pp);
  char id[SPOOL_ID_MAX], why[256];
  int code;
  PP_CHECK_INT(spool_put(s, fr, len, id), ==, SPOOL_OK);
  batcher_add(b, id, pp_push_decode(fr, len, PP_FRAME_MAX_DEFAULT, &code, why, sizeof why));
  free(fr);
  batcher_shutdown(b, 5);
  batcher_free(b);
  PP_CHECK_INT(f.nobj, ==, 2);
  PP_CHECK_INT(spool_files(s), ==, 0);
  fake_free(&f);
  teardown(s);
}

/* Batcher + the real file exporter: the object on disk is a gzipped pprof
 * holding the sum of both pushes. */
static void test_exports_through_file_exporter(void) {
  spool *s = setup();
  if (!s)
    return;
  char url[128], err[512] = "", out[128];
  snprintf(url, sizeof url, "file://%s/out", dir);
  exporter *ex = exporter_create(url, NULL, err, sizeof err);
  PP_CHECK(ex != NULL);
  if (!ex) {
    fprintf(stderr, "%s\n", err);
    teardown(s);
    return;
  }
  batcher_config c = cfg60;
  c.subdir = "profiles";
  batcher *b = batcher_new(&c, ex, s);
  push(b, s, "../../etc", 40);
  push(b, s, "../../etc", 2);
  batcher_shutdown(b, 5);
  batcher_free(b);
  exporter_destroy(ex);
  snprintf(out, sizeof out, "%s/out/profiles/n1/.._.._etc", dir);
  PP_CHECK_INT(btu_count(out, ".pb.gz"), ==, 1);
  DIR *d = opendir(out);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (de->d_name[0] == '.')
      continue;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", out, de->d_name);
    FILE *fp = fopen(path, "rb");
    uint8_t buf[65536];
    size_t n = fp ? fread(buf, 1, sizeof buf, fp) : 0;
    if (fp)
      fclose(fp);
    char why[256];
    Perftools__Profiles__Profile *p = pp_ref_parse(buf, n, 1 << 24, why, sizeof why);
    PP_CHECK(p != NULL);
    if (p) {
      PP_CHECK_INT(btu_total(p), ==, 126);
      /* The batch's process labels, as its first comments. */
      PP_CHECK(p->n_comment >= 2);
      if (p->n_comment >= 2) {
        PP_CHECK_STR(p->string_table[p->comment[0]], "pushprof label env=prod");
        PP_CHECK_STR(p->string_table[p->comment[1]], "pushprof label region=eu");
      }
      perftools__profiles__profile__free_unpacked(p, NULL);
    }
    if (getenv("PUSHPROF_TEST_KEEP")) {
      char cmd[PATH_MAX + 64];
      snprintf(cmd, sizeof cmd, "cp '%s' /tmp/pushprof_batcher_out.pb.gz", path);
      PP_CHECK_INT(system(cmd), ==, 0);
    }
  }
  if (d)
    closedir(d);
  PP_CHECK_INT(spool_files(s), ==, 0);
  teardown(s);
}

typedef struct adder_arg {
  batcher *b;
  spool *s;
  const char *service;
} adder_arg;

static void *adder(void *arg) {
  adder_arg *a = arg;
  for (int i = 0; i < 20; i++)
    push(a->b, a->s, a->service, 1);
  return NULL;
}

static void test_concurrent_adds_lose_nothing(void) {
  spool *s = setup();
  if (!s)
    return;
  fake f;
  fake_init(&f, s);
  batcher_config c = cfg60;
  c.window_s = 0; /* export continuously while adds arrive */
  batcher *b = batcher_new(&c, &f.base, s);
  PP_CHECK_INT(batcher_start(b), ==, 0);
  pthread_t t[3];
  adder_arg args[3] = {{b, s, "a"}, {b, s, "b"}, {b, s, "a"}};
  for (int i = 0; i < 3; i++)
    PP_CHECK_INT(pthread_create(&t[i], NULL, adder, &args[i]), ==, 0);
  for (int i = 0; i < 3; i++)
    pthread_join(t[i], NULL);
  batcher_shutdown(b, 10);
  batcher_free(b);
  /* Every push ended up in exactly one exported object (each push is 1+2). */
  int64_t total = 0;
  pthread_mutex_lock(&f.mu);
  int nobj = f.nobj < FAKE_MAX ? f.nobj : FAKE_MAX;
  pthread_mutex_unlock(&f.mu);
  PP_CHECK_INT(spool_files(s), ==, 0);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 0);
  if (f.calls <= FAKE_MAX) {
    for (int i = 0; i < nobj; i++) {
      char why[256];
      Perftools__Profiles__Profile *p = pp_ref_parse(f.data[i], f.len[i], 1 << 24, why, sizeof why);
      PP_CHECK(p != NULL);
      if (p) {
        total += btu_total(p);
        perftools__profiles__profile__free_unpacked(p, NULL);
      }
    }
    PP_CHECK_INT(total, ==, 60 * 3);
  }
  fake_free(&f);
  teardown(s);
}

/* ---- exactly-once across restarts (manifests, duplicate pushes) ---- */

static char *path_in(const char *sub, char *out, size_t outlen) {
  snprintf(out, outlen, "%s/%s", dir, sub);
  return out;
}

/* A push as the C SDK sends it: with a process start time and a sequence
 * number, so the sidecar can tell a second copy of it. Returns its spool id
 * in id_out if given. */
static void push_seq(batcher *b, spool *s, const char *service, int64_t value, uint64_t seq,
                     char *id_out) {
  size_t len = 0;
  char id[SPOOL_ID_MAX], why[256];
  int code;
  uint8_t *f = btu_frame(service, value, &len);
  PP_CHECK(f != NULL);
  if (!f)
    return;
  Pushprof__V1__PushRequest *req = pushprof__v1__push_request__unpack(
      NULL, len - PP_FRAME_HEADER_SIZE, f + PP_FRAME_HEADER_SIZE);
  free(f);
  PP_CHECK(req != NULL);
  if (!req)
    return;
  req->sequence = seq;
  req->process_start_time_nanos = 1795341000LL * 1000000000LL;
  size_t n = pushprof__v1__push_request__get_packed_size(req);
  uint8_t *fr = malloc(PP_FRAME_HEADER_SIZE + n);
  PP_CHECK(fr != NULL);
  if (!fr) {
    pushprof__v1__push_request__free_unpacked(req, NULL);
    return;
  }
  pp_frame_header_encode(fr, PP_FRAME_PUSH, (uint32_t)n);
  pushprof__v1__push_request__pack(req, fr + PP_FRAME_HEADER_SIZE);
  pushprof__v1__push_request__free_unpacked(req, NULL);
  PP_CHECK_INT(spool_put(s, fr, PP_FRAME_HEADER_SIZE + n, id), ==, SPOOL_OK);
  pp_push *p =
      pp_push_decode(fr, PP_FRAME_HEADER_SIZE + n, PP_FRAME_MAX_DEFAULT, &code, why, sizeof why);
  PP_CHECK(p != NULL);
  free(fr);
  if (id_out)
    snprintf(id_out, SPOOL_ID_MAX, "%s", id);
  if (p)
    batcher_add(b, id, p);
}

/* The sidecar restarts on the same directory: a new spool object. */
static spool *reopen(spool *s) {
  char err[256];
  spool_close(s);
  spool_config c = {.dir = dir, .max_bytes = 1 << 24};
  s = spool_open(&c, err, sizeof err);
  PP_CHECK(s != NULL);
  if (!s)
    fprintf(stderr, "spool_open: %s\n", err);
  return s;
}

/* A batcher whose every export fails (the upload stored or not), pushes
 * of values 100 and 7 (seq 1 and 2), shut down after at least one attempt:
 * as if killed, its manifest and spool files stay. */
static void crash_with_pending_batch(spool *s, fake *f, bool stored) {
  fake_init(f, s);
  for (int i = 0; i < 16; i++)
    f->script[i] = EXPORT_RETRY;
  f->nscript = 16;
  f->store_on_retry = stored;
  setenv("PUSHPROF_TEST_BACKOFF_MS", "5000", 1);
  batcher *b = batcher_new(&cfg60, &f->base, s);
  unsetenv("PUSHPROF_TEST_BACKOFF_MS");
  push_seq(b, s, "api", 100, 1, NULL);
  push_seq(b, s, "api", 7, 2, NULL);
  batcher_shutdown(b, 1);
  batcher_free(b);
  PP_CHECK(f->calls >= 1);
}

static int64_t obj_total(const fake *f, int i) {
  char why[256];
  int64_t t = -1;
  Perftools__Profiles__Profile *p = pp_ref_parse(f->data[i], f->len[i], 1 << 24, why, sizeof why);
  if (p) {
    t = btu_total(p);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  return t;
}

/* A batch whose upload was stored but whose answer was lost, then the
 * sidecar dies: the next start sends the same bytes under the same key
 * (one object in an object store), and does not batch the members again. */
static void test_restart_exports_pending_manifest_again_under_same_key(void) {
  spool *s = setup();
  if (!s)
    return;
  char bdir[128], id3[SPOOL_ID_MAX];
  path_in(MANIFEST_DIR, bdir, sizeof bdir);
  fake f1;
  crash_with_pending_batch(s, &f1, true); /* every upload stored, every answer lost */
  PP_CHECK_INT(btu_count(bdir, ".batch"), ==, 1);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 0); /* the manifest holds them */

  /* Restart: a new spool object, a new batcher, the scan as main does it,
   * and a push that arrived after the crash (seq 3). */
  s = reopen(s);
  if (!s) {
    fake_free(&f1);
    return;
  }
  fake f2;
  fake_init(&f2, s);
  int made0 = atomic_load(&builders_made);
  batcher *b = batcher_new(&cfg60, &f2.base, s);
  /* The recovered batch has its payload: nothing to merge, no builder. */
  PP_CHECK_INT(atomic_load(&builders_made), ==, made0);
  /* Its members are in it, not in the spool: the scan finds nothing. */
  PP_CHECK_INT(spool_scan(s, scan_to_batcher, b), ==, 0);
  push_seq(b, s, "api", 1000, 3, id3);
  batcher_shutdown(b, 5);
  batcher_free(b);
  PP_CHECK_INT(f2.calls, ==, 2);
  PP_CHECK_INT(f2.nobj, ==, 2);
  int again = -1, fresh = -1;
  for (int i = 0; i < f2.nobj && i < 2; i++) {
    if (strcmp(f2.key[i], f1.key[0]) == 0)
      again = i;
    else
      fresh = i;
  }
  PP_CHECK(again >= 0 && fresh >= 0);
  if (again >= 0 && fresh >= 0 && f1.nobj > 0) {
    /* Byte for byte the first upload, so the same key means the same object. */
    PP_CHECK_INT(f2.len[again], ==, f1.len[0]);
    PP_CHECK(f2.len[again] == f1.len[0] && memcmp(f2.data[again], f1.data[0], f1.len[0]) == 0);
    PP_CHECK_STR(f2.hash[again], f1.hash[0]);
    PP_CHECK_INT(obj_total(&f2, again), ==, 321);
    PP_CHECK_INT(obj_total(&f2, fresh), ==, 3000); /* the new push alone */
  }
  PP_CHECK_INT(spool_files(s), ==, 0);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 0);
  PP_CHECK_INT(btu_count(bdir, ".batch"), ==, 0);
  PP_CHECK_INT(btu_count(bdir, ".done"), ==, 2); /* tombstones */
  fake_free(&f1);
  fake_free(&f2);
  teardown(s);
}

/* The SDK did not get the ack and pushed the same profile again (or wrote
 * it into the spool): exported once, the second file deleted and counted. */
static void test_second_copy_of_a_push_is_exported_once(void) {
  spool *s = setup();
  if (!s)
    return;
  fake f;
  fake_init(&f, s);
  uint64_t d0 = mtu_value("pushprof_pushes_deduplicated_total");
  batcher *b = batcher_new(&cfg60, &f.base, s);
  push_seq(b, s, "api", 100, 1, NULL);
  push_seq(b, s, "api", 100, 1, NULL); /* the copy */
  push_seq(b, s, "api", 7, 2, NULL);
  PP_CHECK_INT(spool_files(s), ==, 2);
  batcher_shutdown(b, 5);
  batcher_free(b);
  PP_CHECK_INT(f.nobj, ==, 1);
  if (f.nobj == 1)
    PP_CHECK_INT(obj_total(&f, 0), ==, 321);
  PP_CHECK_INT(mtu_value("pushprof_pushes_deduplicated_total"), ==, d0 + 1);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 0);
  fake_free(&f);
  teardown(s);
}

/* A copy that arrives after the first one was exported, even across a
 * restart (the tombstone remembers it), and a member file a crash left
 * behind after its batch was exported: neither is exported again. */
static void test_copies_after_export_are_not_exported_again(void) {
  spool *s = setup();
  if (!s)
    return;
  char id1[SPOOL_ID_MAX] = "", idplain[SPOOL_ID_MAX] = "", p1[256], pp[256];
  fake f1;
  fake_init(&f1, s);
  batcher *b = batcher_new(&cfg60, &f1.base, s);
  push_seq(b, s, "api", 100, 1, id1);
  /* A push without an identity: only its file name tells it apart. */
  size_t len = 0;
  uint8_t *plain = btu_frame("api", 7, &len);
  PP_CHECK(plain != NULL);
  if (plain) {
    int code;
    char why[256];
    PP_CHECK_INT(spool_put(s, plain, len, idplain), ==, SPOOL_OK);
    pp_push *p = pp_push_decode(plain, len, PP_FRAME_MAX_DEFAULT, &code, why, sizeof why);
    PP_CHECK(p != NULL);
    if (p)
      batcher_add(b, idplain, p);
  }
  /* Keep the member files' bytes to put them back as a crash would. */
  uint8_t *keep1 = NULL;
  size_t klen1 = 0;
  snprintf(p1, sizeof p1, "%s/%s", dir, id1);
  FILE *fh = fopen(p1, "rb");
  PP_CHECK(fh != NULL);
  if (fh) {
    keep1 = malloc(1 << 16);
    klen1 = keep1 ? fread(keep1, 1, 1 << 16, fh) : 0;
    fclose(fh);
  }
  batcher_shutdown(b, 5);
  batcher_free(b);
  PP_CHECK_INT(f1.nobj, ==, 1);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 0);

  /* Crash leftovers: both member files back under their own names; and a
   * drop-in copy of the first push under another name. */
  snprintf(pp, sizeof pp, "%s/%s", dir, idplain);
  PP_CHECK_INT(btu_write_file(p1, keep1, klen1), ==, 0);
  PP_CHECK_INT(btu_write_file(pp, plain, len), ==, 0);
  char dropin[256];
  snprintf(dropin, sizeof dropin, "%s/00000000000000000001-4242-1.push", dir);
  PP_CHECK_INT(btu_write_file(dropin, keep1, klen1), ==, 0);
  free(keep1);
  free(plain);

  s = reopen(s);
  if (!s) {
    fake_free(&f1);
    return;
  }
  fake f2;
  fake_init(&f2, s);
  uint64_t d0 = mtu_value("pushprof_pushes_deduplicated_total");
  b = batcher_new(&cfg60, &f2.base, s);
  PP_CHECK_INT(spool_scan(s, scan_to_batcher, b), ==, 3);
  batcher_shutdown(b, 5);
  batcher_free(b);
  PP_CHECK_INT(f2.calls, ==, 0);
  PP_CHECK_INT(mtu_value("pushprof_pushes_deduplicated_total"), ==, d0 + 3);
  PP_CHECK_INT(spool_files(s), ==, 0);
  PP_CHECK_INT(btu_count(dir, ".push"), ==, 0);
  fake_free(&f1);
  fake_free(&f2);
  teardown(s);
}

/* A restart's scan decodes each spooled push exactly once (the spool hands
 * bytes over; batcher_add_spooled decodes them and the batcher merges the
 * decoded push) and a file that does not decode is quarantined, not
 * batched. */
static void test_rescan_decodes_each_push_once(void) {
  spool *s = setup();
  if (!s)
    return;
  enum { N = 5 };
  for (int i = 0; i < N; i++) {
    size_t len = 0;
    char id[SPOOL_ID_MAX];
    uint8_t *f = btu_frame("api", 10 + i, &len);
    PP_CHECK(f != NULL);
    if (f)
      PP_CHECK_INT(spool_put(s, f, len, id), ==, SPOOL_OK);
    free(f);
  }
  char bad[256];
  snprintf(bad, sizeof bad, "%s/99999999999999999999-0000000000.push", dir);
  PP_CHECK_INT(btu_write_file(bad, "PPRF garbage", 12), ==, 0);
  s = reopen(s);
  if (!s)
    return;
  fake f;
  fake_init(&f, s);
  batcher *b = batcher_new(&cfg60, &f.base, s);
  uint64_t n0 = pp_push_decode_count();
  PP_CHECK_INT(spool_scan(s, batcher_add_spooled, b), ==, N);
  PP_CHECK_INT(pp_push_decode_count(), ==, n0 + N + 1); /* the bad file once too */
  batcher_shutdown(b, 5);
  batcher_free(b);
  PP_CHECK_INT(f.nobj, ==, 1);
  if (f.nobj == 1) {
    char why[256] = "";
    Perftools__Profiles__Profile *p = pp_ref_parse(f.data[0], f.len[0], 1 << 24, why, sizeof why);
    PP_CHECK(p != NULL);
    /* btu_frame(v) holds v + 2v: the five pushes 10..14, merged once each. */
    if (p)
      PP_CHECK_INT(btu_total(p), ==, 3 * (10 + 11 + 12 + 13 + 14));
    if (p)
      perftools__profiles__profile__free_unpacked(p, NULL);
  }
  char q[256];
  snprintf(q, sizeof q, "%s/quarantine", dir);
  PP_CHECK_INT(btu_count(q, ".push"), ==, 1);
  PP_CHECK_INT(spool_files(s), ==, 0);
  fake_free(&f);
  teardown(s);
}

/* A manifest that cannot be read at start is set aside (counted): it was
 * its batch's only copy, so nothing of it is exported, and nothing of it is
 * left pending. */
static void test_corrupt_manifest_is_set_aside_at_start(void) {
  spool *s = setup();
  if (!s)
    return;
  char bdir[128];
  path_in(MANIFEST_DIR, bdir, sizeof bdir);
  fake f1;
  crash_with_pending_batch(s, &f1, false);
  /* Cut the manifest short by one byte. */
  DIR *d = opendir(bdir);
  struct dirent *de;
  int cut = 0;
  while (d && (de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l > 6 && strcmp(de->d_name + l - 6, ".batch") == 0) {
      char p[512];
      struct stat st;
      snprintf(p, sizeof p, "%s/%s", bdir, de->d_name);
      if (stat(p, &st) == 0 && truncate(p, st.st_size - 1) == 0)
        cut++;
    }
  }
  if (d)
    closedir(d);
  PP_CHECK_INT(cut, ==, 1);
  s = reopen(s);
  if (!s) {
    fake_free(&f1);
    return;
  }
  fake f2;
  fake_init(&f2, s);
  uint64_t a0 = mtu_value("pushprof_batch_manifests_set_aside_total");
  batcher *b = batcher_new(&cfg60, &f2.base, s);
  PP_CHECK_INT(btu_count(bdir, ".bad"), ==, 1);
  PP_CHECK_INT(mtu_value("pushprof_batch_manifests_set_aside_total"), ==, a0 + 1);
  PP_CHECK_INT(spool_scan(s, scan_to_batcher, b), ==, 0);
  batcher_shutdown(b, 5);
  batcher_free(b);
  PP_CHECK_INT(f2.nobj, ==, 0);
  PP_CHECK_INT(spool_files(s), ==, 0);
  fake_free(&f1);
  fake_free(&f2);
  teardown(s);
}

/* A recovered batch refused for good: its manifest (the only copy of its
 * pushes) goes to failed/, nothing stays pending. */
static void test_recovered_batch_refused_for_good_goes_to_failed(void) {
  spool *s = setup();
  if (!s)
    return;
  char bdir[128], fdir[128];
  path_in(MANIFEST_DIR, bdir, sizeof bdir);
  path_in("failed", fdir, sizeof fdir);
  fake f1;
  crash_with_pending_batch(s, &f1, false);
  s = reopen(s);
  if (!s) {
    fake_free(&f1);
    return;
  }
  fake f2;
  fake_init(&f2, s);
  for (int i = 0; i < 16; i++)
    f2.script[i] = EXPORT_PERMANENT;
  f2.nscript = 16;
  batcher *b = batcher_new(&cfg60, &f2.base, s);
  PP_CHECK_INT(spool_scan(s, scan_to_batcher, b), ==, 0);
  batcher_shutdown(b, 5);
  batcher_free(b);
  PP_CHECK_INT(f2.calls, ==, 1); /* the recovered batch only: members not batched again */
  PP_CHECK_INT(btu_count(bdir, ".batch"), ==, 0);
  PP_CHECK_INT(btu_count(fdir, ".batch"), ==, 1);
  PP_CHECK_INT(btu_count(fdir, ".reason"), ==, 1);
  PP_CHECK_INT(spool_files(s), ==, 0);
  fake_free(&f1);
  fake_free(&f2);
  teardown(s);
}

/* ---- a payload that becomes unreadable after sealing ---- */

/* Cuts every pending manifest of the spool short (one byte off its end).
 * Returns how many it cut. */
static int spoil_manifests(void) {
  char bdir[128];
  snprintf(bdir, sizeof bdir, "%s/%s", dir, MANIFEST_DIR);
  DIR *d = opendir(bdir);
  struct dirent *de;
  int n = 0;
  while (d && (de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (de->d_name[0] == '.' || l <= 6 || strcmp(de->d_name + l - 6, ".batch") != 0)
      continue;
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", bdir, de->d_name);
    if (stat(p, &st) == 0 && truncate(p, st.st_size - 1) == 0)
      n++;
  }
  if (d)
    closedir(d);
  return n;
}

static int spoiled;
static void cut_on_first_call(fake *f, int call) {
  (void)f;
  if (call == 0)
    spoiled += spoil_manifests();
}
/* Two pushes (values 100 and 7) in one batch exported to the targets
 * until wait_calls(call counts) holds and the spool is empty, or 5 s. */
static batcher *start_with_two_pushes(exporter *const *ex, size_t nex, spool *s, char *id2) {
  setenv("PUSHPROF_TEST_BACKOFF_MS", "20", 1);
  batcher_config c = cfg60;
  c.window_s = 0;
  batcher *b = batcher_new_multi(&c, ex, nex, s);
  unsetenv("PUSHPROF_TEST_BACKOFF_MS");
  PP_CHECK(b != NULL);
  if (!b)
    return NULL;
  push_seq(b, s, "api", 100, 1, NULL); /* before the thread starts: one batch */
  push_seq(b, s, "api", 7, 2, id2);
  PP_CHECK_INT(batcher_start(b), ==, 0);
  return b;
}

static void wait_drained(spool *s, fake *f, int calls) {
  for (int i = 0; i < 500 && (fake_calls(f) < calls || spool_files(s) > 0); i++)
    sleep_ms(10);
}

/* Two targets: the first takes the batch, the second fails its first
 * attempt, during which the manifest is cut short. The manifest was the
 * batch's only copy (its pushes left the spool when it was written), so the
 * retry finds it unreadable: it is set aside (counted), the batch is
 * dropped, its two pushes counted (batch_unreadable), and nothing stays
 * pending; the second target is not charged another attempt. */
static void test_unreadable_payload_drops_its_batch_counted(void) {
  spool *s = setup();
  if (!s)
    return;
  char bdir[128];
  path_in(MANIFEST_DIR, bdir, sizeof bdir);
  fake up, flaky;
  fake_init(&up, s);
  fake_init(&flaky, s);
  flaky.script[0] = EXPORT_RETRY;
  flaky.nscript = 1;
  flaky.hook = cut_on_first_call;
  spoiled = 0;
  uint64_t a0 = mtu_value("pushprof_batch_manifests_set_aside_total");
  uint64_t d0 = metrics_reason_value("drops", "batch_unreadable");
  exporter *ex[2] = {&up.base, &flaky.base};
  batcher *b = start_with_two_pushes(ex, 2, s, NULL);
  wait_drained(s, &flaky, 1);
  PP_CHECK_INT(spoiled, ==, 1);
  PP_CHECK_INT(spool_files(s), ==, 0);
  PP_CHECK_INT(fake_calls(&up), ==, 1);
  PP_CHECK_INT(fake_calls(&flaky), ==, 1);
  PP_CHECK_INT(up.nobj, ==, 1);
  PP_CHECK_INT(flaky.nobj, ==, 0);
  PP_CHECK_INT(metrics_reason_value("drops", "batch_unreadable"), ==, d0 + 2);
  PP_CHECK_INT(mtu_value("pushprof_batch_manifests_set_aside_total"), ==, a0 + 1);
  PP_CHECK_INT(btu_count(bdir, ".bad"), ==, 1);
  PP_CHECK_INT(btu_count(bdir, ".batch"), ==, 0);
  batcher_shutdown(b, 1);
  batcher_free(b);
  fake_free(&up);
  fake_free(&flaky);
  teardown(s);
}

/* A batch's first attempt at each target uses the payload still in memory
 * (a copy of its manifest's): the manifest cut during the first target's
 * call is not read by the second target's first attempt, so nothing is
 * set aside and both get the same bytes; the copy goes at the first failure
 * (test_unreadable_payload_drops_its_batch_counted reads the cut manifest
 * on its retry). */
static void test_first_attempts_use_the_payload_in_memory(void) {
  spool *s = setup();
  if (!s)
    return;
  char bdir[128];
  path_in(MANIFEST_DIR, bdir, sizeof bdir);
  fake first, second;
  fake_init(&first, s);
  fake_init(&second, s);
  first.hook = cut_on_first_call;
  spoiled = 0;
  uint64_t a0 = mtu_value("pushprof_batch_manifests_set_aside_total");
  exporter *ex[2] = {&first.base, &second.base};
  batcher *b = start_with_two_pushes(ex, 2, s, NULL);
  wait_drained(s, &second, 1);
  PP_CHECK_INT(spoiled, ==, 1);
  PP_CHECK_INT(fake_calls(&first), ==, 1);
  PP_CHECK_INT(fake_calls(&second), ==, 1);
  PP_CHECK_INT(first.nobj, ==, 1);
  PP_CHECK_INT(second.nobj, ==, 1);
  if (first.nobj == 1 && second.nobj == 1) {
    PP_CHECK_STR(second.hash[0], first.hash[0]);
    PP_CHECK(second.len[0] == first.len[0] &&
             memcmp(second.data[0], first.data[0], first.len[0]) == 0);
    PP_CHECK_INT(obj_total(&second, 0), ==, 321);
  }
  PP_CHECK_INT(mtu_value("pushprof_batch_manifests_set_aside_total"), ==, a0);
  PP_CHECK_INT(btu_count(bdir, ".bad"), ==, 0);
  PP_CHECK_INT(spool_files(s), ==, 0);
  batcher_shutdown(b, 1);
  batcher_free(b);
  fake_free(&first);
  fake_free(&second);
  teardown(s);
}

/* ---- heap profiles: gauges per process ---- */

#define SEC 1000000000LL
#define T0 (1795341600LL * SEC)

/* A heap push from w (btu_heap_frame: main->grow holds alloc and inuse
 * bytes, main->old 4096 bytes live) made durable and added. Its frame is
 * copied to frame_out (malloc'ed) when given. */
static void heap_push_to(batcher *b, spool *s, int64_t alloc, int64_t inuse, const btu_who *w,
                         uint8_t **frame_out, size_t *len_out) {
  size_t len = 0;
  char id[SPOOL_ID_MAX], why[256];
  int code;
  uint8_t *f = btu_heap_frame("api", alloc, inuse, w, &len);
  PP_CHECK(f != NULL);
  if (!f)
    return;
  PP_CHECK_INT(spool_put(s, f, len, id), ==, SPOOL_OK);
  pp_push *p = pp_push_decode(f, len, PP_FRAME_MAX_DEFAULT, &code, why, sizeof why);
  PP_CHECK(p != NULL);
  if (p && b)
    batcher_add(b, id, p);
  else
    pp_push_free(p);
  if (frame_out) {
    *frame_out = f;
    *len_out = len;
  } else {
    free(f);
  }
}

/* Process A pushes six times (seq 1..6, inuse 1000 * seq, 1024 bytes
 * allocated each time) and process B twice (inuse 700 then 500); A's push
 * 3 arrives a second time (a retry whose ack was lost). With b NULL the
 * pushes only go to the spool. A's sixth frame goes to a6 when given. */
static void heap_pushes(batcher *b, spool *s, uint8_t **a6, size_t *a6len) {
  btu_who a = {.pid = 100, .host = "node-a", .process_start_ns = T0 - 3600 * SEC};
  btu_who bw = {.pid = 200, .host = "node-a", .process_start_ns = T0 - 60 * SEC};
  for (int k = 1; k <= 6; k++) {
    a.seq = (uint64_t)k;
    a.end_ns = T0 + k * SEC;
    heap_push_to(b, s, 1024, 1000 * k, &a, k == 6 ? a6 : NULL, a6len);
    if (k == 3)
      heap_push_to(b, s, 1024, 1000 * k, &a, NULL, NULL);
    if (k == 2 || k == 5) {
      bw.seq++;
      bw.end_ns = T0 + k * SEC;
      heap_push_to(b, s, 1024, k == 2 ? 700 : 500, &bw, NULL, NULL);
    }
  }
}

/* What heap_pushes must export as one batch: alloc_* adds over the eight
 * distinct pushes, inuse_* is A's latest plus B's latest. */
static void check_heap_batch(const fake *f, int i) {
  char why[256] = "";
  Perftools__Profiles__Profile *p = pp_ref_parse(f->data[i], f->len[i], 1 << 24, why, sizeof why);
  PP_CHECK(p != NULL);
  if (!p) {
    fprintf(stderr, "parse: %s\n", why);
    return;
  }
  PP_CHECK_INT(p->n_sample_type, ==, 4);
  if (p->n_sample_type == 4) {
    PP_CHECK_STR(p->string_table[p->sample_type[0]->type], "alloc_objects");
    PP_CHECK_STR(p->string_table[p->sample_type[3]->type], "inuse_space");
    PP_CHECK_STR(p->string_table[p->sample_type[3]->unit], "bytes");
  }
  PP_CHECK(p->period_type != NULL);
  if (p->period_type)
    PP_CHECK_STR(p->string_table[p->period_type->type], "space");
  PP_CHECK_INT(p->period, ==, 524288);
  PP_CHECK_STR(p->string_table[p->default_sample_type], "inuse_space");
  PP_CHECK_INT(btu_leaf_value(p, "grow", 0), ==, 8 * 2);    /* alloc_objects */
  PP_CHECK_INT(btu_leaf_value(p, "grow", 1), ==, 8 * 1024); /* alloc_space */
  PP_CHECK_INT(btu_leaf_value(p, "grow", 2), ==, 6000 / 512 + 500 / 512);
  PP_CHECK_INT(btu_leaf_value(p, "grow", 3), ==, 6000 + 500); /* not 21000 + 1200 */
  PP_CHECK_INT(btu_leaf_value(p, "old", 1), ==, 0);
  PP_CHECK_INT(btu_leaf_value(p, "old", 2), ==, 2);        /* one object per process */
  PP_CHECK_INT(btu_leaf_value(p, "old", 3), ==, 2 * 4096); /* not eight times */
  PP_CHECK_INT(p->n_sample, ==, 2);                        /* one per stack */
  perftools__profiles__profile__free_unpacked(p, NULL);
}

/* A batch of heap pushes shows each process's heap once: its latest push's
 * inuse_* (a gauge), summed over processes, while alloc_* adds up over
 * every push; a second copy of a push counts in neither. */
static void test_heap_batch_counts_each_process_latest_heap_once(void) {
  spool *s = setup();
  if (!s)
    return;
  fake f;
  fake_init(&f, s);
  batcher *b = batcher_new(&cfg60, &f.base, s);
  uint64_t d0 = mtu_value("pushprof_pushes_deduplicated_total");
  heap_pushes(b, s, NULL, NULL);
  PP_CHECK_INT(mtu_value("pushprof_pushes_deduplicated_total"), ==, d0 + 1);
  /* the two kept profiles count in the memory the batches hold */
  PP_CHECK(mtu_value("pushprof_memory_batches_bytes") > 0);
  batcher_shutdown(b, 5);
  batcher_free(b);
  PP_CHECK_INT(f.nobj, ==, 1);
  if (f.nobj == 1)
    check_heap_batch(&f, 0);
  PP_CHECK(strstr(f.key[0], "Z-heap-") != NULL); /* apart from the service's CPU batches */
  PP_CHECK_INT(spool_files(s), ==, 0);
  fake_free(&f);
  teardown(s);
}

/* A heap batch whose manifest is written but whose export was cut short
 * goes out under the same name after a restart: the manifest holds its
 * profile type. */
static void test_recovered_heap_batch_keeps_its_name(void) {
  spool *s = setup();
  if (!s)
    return;
  fake f1;
  fake_init(&f1, s);
  for (int i = 0; i < 16; i++)
    f1.script[i] = EXPORT_RETRY;
  f1.nscript = 16;
  setenv("PUSHPROF_TEST_BACKOFF_MS", "5000", 1);
  batcher *b = batcher_new(&cfg60, &f1.base, s);
  unsetenv("PUSHPROF_TEST_BACKOFF_MS");
  heap_pushes(b, s, NULL, NULL);
  batcher_shutdown(b, 1);
  batcher_free(b);
  PP_CHECK(f1.calls >= 1);
  s = reopen(s);
  if (!s) {
    fake_free(&f1);
    return;
  }
  fake f2;
  fake_init(&f2, s);
  b = batcher_new(&cfg60, &f2.base, s);
  PP_CHECK_INT(spool_scan(s, scan_to_batcher, b), ==, 0);
  batcher_shutdown(b, 5);
  batcher_free(b);
  PP_CHECK_INT(f2.nobj, ==, 1);
  PP_CHECK(strstr(f1.key[0], "Z-heap-") != NULL);
  PP_CHECK_STR(f2.key[0], f1.key[0]);
  if (f2.nobj == 1)
    check_heap_batch(&f2, 0);
  fake_free(&f1);
  fake_free(&f2);
  teardown(s);
}

/* The sidecar dies with the batch open: the next start rebuilds it from the
 * spool (the scan, as main does it) and exports what it would have, even
 * with a drop-in copy of A's last push beside the original. */
static void test_heap_batch_rebuilt_after_a_restart_is_the_same(void) {
  spool *s = setup();
  if (!s)
    return;
  fake f1;
  fake_init(&f1, s);
  batcher *b = batcher_new(&cfg60, &f1.base, s);
  uint8_t *a6 = NULL;
  size_t a6len = 0;
  heap_pushes(b, s, &a6, &a6len);
  batcher_free(b); /* never started, never shut down: as if killed */
  PP_CHECK_INT(f1.calls, ==, 0);
  PP_CHECK_INT(spool_files(s), ==, 8);
  /* An SDK's drop-in is named for the time it was written (the batch's
   * age starts there). */
  char dropin[256];
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  snprintf(dropin, sizeof dropin, "%s/%020lld-4242-1.push", dir,
           (long long)now.tv_sec * SEC + now.tv_nsec);
  PP_CHECK_INT(btu_write_file(dropin, a6, a6len), ==, 0);
  free(a6);
  s = reopen(s);
  if (!s) {
    fake_free(&f1);
    return;
  }
  fake f2;
  fake_init(&f2, s);
  b = batcher_new(&cfg60, &f2.base, s);
  PP_CHECK_INT(spool_scan(s, scan_to_batcher, b), ==, 9);
  batcher_shutdown(b, 5);
  batcher_free(b);
  PP_CHECK_INT(f2.nobj, ==, 1);
  if (f2.nobj == 1)
    check_heap_batch(&f2, 0);
  PP_CHECK_INT(spool_files(s), ==, 0);
  fake_free(&f1);
  fake_free(&f2);
  teardown(s);
}

/* CPU profiles have no gauge column: their batch is, byte for byte, the
 * label comments and a pp_merge_add of each push. */
/* Off-CPU and lock profiles have the same sample types; the type each push
 * declares keeps them apart and names their batches. A type outside
 * [a-z0-9_] or over 16 bytes does not decode. */
static void test_declared_profile_types_are_batched_apart(void) {
  spool *s = setup();
  if (!s)
    return;
  fake f;
  fake_init(&f, s);
  batcher *b = batcher_new(&cfg60, &f.base, s);
  const char *types[] = {"offcpu", "lock", "offcpu", "lock"};
  for (int i = 0; i < 4; i++) {
    btu_who w = {.pid = 7,
                 .host = "h",
                 .process_start_ns = 1,
                 .seq = (uint64_t)i + 1,
                 .end_ns = 1795341601LL * 1000000000LL + i,
                 .ptype = types[i]};
    size_t plen, len;
    uint8_t *p = btu_pprof(100, "wait_here", &plen);
    uint8_t *fr = p ? btu_frame_who("api", p, plen, &w, &len) : NULL;
    free(p);
    char id[SPOOL_ID_MAX], why[256];
    int code;
    PP_CHECK(fr != NULL);
    if (!fr)
      continue;
    PP_CHECK_INT(spool_put(s, fr, len, id), ==, SPOOL_OK);
    batcher_add(b, id, pp_push_decode(fr, len, PP_FRAME_MAX_DEFAULT, &code, why, sizeof why));
    free(fr);
  }
  batcher_shutdown(b, 5);
  batcher_free(b);
  PP_CHECK_INT(f.nobj, ==, 2);
  int off = 0, lock = 0;
  for (int i = 0; i < f.nobj; i++) {
    off += strstr(f.key[i], "Z-offcpu-") != NULL;
    lock += strstr(f.key[i], "Z-lock-") != NULL;
  }
  PP_CHECK_INT(off, ==, 1);
  PP_CHECK_INT(lock, ==, 1);
  PP_CHECK_INT(spool_files(s), ==, 0);
  fake_free(&f);
  teardown(s);

  const char *bad[] = {"Off-CPU", "offcpu/../x", "a_profile_type_of_17"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    btu_who w = {
        .pid = 7, .host = "h", .seq = 1, .end_ns = 1795341601LL * 1000000000LL, .ptype = bad[i]};
    size_t plen, len;
    uint8_t *p = btu_pprof(100, "wait_here", &plen);
    uint8_t *fr = p ? btu_frame_who("api", p, plen, &w, &len) : NULL;
    free(p);
    char why[256] = "";
    int code = 0;
    pp_push *pu = fr ? pp_push_decode(fr, len, PP_FRAME_MAX_DEFAULT, &code, why, sizeof why) : NULL;
    PP_CHECK(pu == NULL);
    PP_CHECK_INT(code, ==, PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH);
    PP_CHECK(strstr(why, "profile_type") != NULL);
    pp_push_free(pu);
    free(fr);
  }
}

static void test_cpu_batch_is_a_plain_merge(void) {
  spool *s = setup();
  if (!s)
    return;
  fake f;
  fake_init(&f, s);
  batcher *b = batcher_new(&cfg60, &f.base, s);
  push(b, s, "api", 100);
  push(b, s, "api", 7);
  batcher_shutdown(b, 5);
  batcher_free(b);
  PP_CHECK_INT(f.nobj, ==, 1);
  pp_builder *want = pp_builder_new();
  PP_CHECK(want != NULL);
  PP_CHECK_INT(pp_builder_add_comment(want, "pushprof label env=prod"), ==, 0);
  PP_CHECK_INT(pp_builder_add_comment(want, "pushprof label region=eu"), ==, 0);
  char why[256] = "";
  const int64_t values[2] = {100, 7};
  for (int i = 0; i < 2; i++) {
    size_t len = 0;
    uint8_t *raw = btu_pprof(values[i], "work", &len);
    Perftools__Profiles__Profile *p = pp_ref_parse(raw, len, 1 << 20, why, sizeof why);
    PP_CHECK(p != NULL);
    if (p)
      PP_CHECK_INT(pp_merge_add(want, p, why, sizeof why), ==, 0);
    if (p)
      perftools__profiles__profile__free_unpacked(p, NULL);
    free(raw);
  }
  uint8_t *wbuf = NULL, *got = NULL;
  size_t wlen = 0, glen = 0;
  PP_CHECK_INT(pp_builder_pack(want, &wbuf, &wlen), ==, 0);
  if (f.nobj == 1) {
    PP_CHECK_INT(pp_gunzip(f.data[0], f.len[0], 1 << 24, &got, &glen), ==, 0);
    PP_CHECK_INT(glen, ==, wlen);
    PP_CHECK(got && wbuf && glen == wlen && memcmp(got, wbuf, wlen) == 0);
    PP_CHECK(strstr(f.key[0], "heap") == NULL); /* CPU names as they always were */
  }
  free(got);
  free(wbuf);
  pp_builder_free(want);
  fake_free(&f);
  teardown(s);
}

int main(void) {
  PP_RUN(test_merges_pushes_of_one_service_into_one_object);
  PP_RUN(test_window_end_exports_without_shutdown);
  PP_RUN(test_keeps_services_apart);
  PP_RUN(test_retries_transient_failures_and_deletes_only_after_success);
  PP_RUN(test_permanent_refusal_moves_pushes_to_failed);
  PP_RUN(test_two_targets_push_leaves_only_when_both_have_it);
  PP_RUN(test_two_targets_one_refusal_moves_pushes_to_failed);
  PP_RUN(test_shutdown_leaves_unexported_pushes_in_spool);
  PP_RUN(test_batches_older_than_max_age_are_dropped);
  PP_RUN(test_different_sample_types_are_not_merged);
  PP_RUN(test_exports_through_file_exporter);
  PP_RUN(test_concurrent_adds_lose_nothing);
  PP_RUN(test_restart_exports_pending_manifest_again_under_same_key);
  PP_RUN(test_second_copy_of_a_push_is_exported_once);
  PP_RUN(test_copies_after_export_are_not_exported_again);
  PP_RUN(test_corrupt_manifest_is_set_aside_at_start);
  PP_RUN(test_recovered_batch_refused_for_good_goes_to_failed);
  PP_RUN(test_rescan_decodes_each_push_once);
  PP_RUN(test_unreadable_payload_drops_its_batch_counted);
  PP_RUN(test_first_attempts_use_the_payload_in_memory);
  PP_RUN(test_heap_batch_counts_each_process_latest_heap_once);
  PP_RUN(test_heap_batch_rebuilt_after_a_restart_is_the_same);
  PP_RUN(test_recovered_heap_batch_keeps_its_name);
  PP_RUN(test_cpu_batch_is_a_plain_merge);
  PP_RUN(test_declared_profile_types_are_batched_apart);
  PP_DONE();
}
