/* Unit tests for sidecar/manifest.c (batch manifests on disk, with the
 * push identities of their members; dedup.c itself: test_dedup.c). */
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "batch_test_util.h"
#include "dedup.h"
#include "manifest.h"
#include "pp_test.h"

static void sha_hex(const uint8_t *d, size_t n, char out[65]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int ml = 0;
  EVP_Digest(d, n, md, &ml, EVP_sha256(), NULL);
  for (unsigned i = 0; i < 32; i++)
    snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* A manifest whose strings hold every awkward byte the format escapes. */
static manifest *sample(void) {
  manifest *m = calloc(1, sizeof *m);
  m->service = strdup("api server%");
  m->node = strdup("node\n1");
  m->subdir = strdup("");
  m->nlabels = 2;
  m->labels = calloc(2, sizeof *m->labels);
  for (int i = 0; i < 2; i++)
    pushprof__v1__label__init(&m->labels[i]);
  m->labels[0].key = strdup("env");
  m->labels[0].value = strdup("prod eu");
  m->labels[1].key = strdup("k:%");
  m->labels[1].value = strdup("");
  m->start_ns = 1795341600000000001LL;
  m->end_ns = 1795341601000000000LL;
  m->born_ns = 42;
  m->nmembers = 3;
  m->members = calloc(3, sizeof *m->members);
  snprintf(m->members[0].id, SPOOL_ID_MAX, "00000000000000000001-0000000001.push");
  snprintf(m->members[1].id, SPOOL_ID_MAX, "drop in %%.push");
  snprintf(m->members[2].id, SPOOL_ID_MAX, "x.push");
  for (int i = 0; i < 16; i++)
    m->members[0].pushid.b[i] = (uint8_t)(i * 17);
  m->members[1].pushid.b[3] = 9; /* member 2: no identity */
  m->gzlen = 300;
  m->gz = malloc(m->gzlen);
  for (size_t i = 0; i < m->gzlen; i++)
    m->gz[i] = (uint8_t)(i * 7 + 1); /* holds '\n' bytes too */
  sha_hex(m->gz, m->gzlen, m->hash);
  return m;
}

static void test_manifest_round_trips_every_field(void) {
  manifest *m = sample();
  size_t len = 0, hdr = 0;
  char why[256] = "";
  uint8_t *enc = manifest_encode(m, &len, &hdr);
  PP_CHECK(enc != NULL);
  PP_CHECK_INT(len, ==, hdr + m->gzlen);
  manifest *d = enc ? manifest_decode(enc, len, true, why, sizeof why) : NULL;
  PP_CHECK(d != NULL);
  if (!d)
    fprintf(stderr, "decode: %s\n", why);
  if (d) {
    PP_CHECK_STR(d->service, m->service);
    PP_CHECK_STR(d->node, m->node);
    PP_CHECK_STR(d->subdir, "");
    PP_CHECK_INT(d->nlabels, ==, 2);
    if (d->nlabels == 2) {
      PP_CHECK_STR(d->labels[0].value, "prod eu");
      PP_CHECK_STR(d->labels[1].key, "k:%");
      PP_CHECK_STR(d->labels[1].value, "");
    }
    PP_CHECK_INT(d->start_ns, ==, m->start_ns);
    PP_CHECK_INT(d->end_ns, ==, m->end_ns);
    PP_CHECK_INT(d->born_ns, ==, 42);
    PP_CHECK_STR(d->hash, m->hash);
    PP_CHECK_INT(d->nmembers, ==, 3);
    for (size_t i = 0; i < d->nmembers && i < 3; i++) {
      PP_CHECK_STR(d->members[i].id, m->members[i].id);
      PP_CHECK(memcmp(&d->members[i].pushid, &m->members[i].pushid, sizeof(dedup_id)) == 0);
    }
    PP_CHECK(d->gzlen == m->gzlen && memcmp(d->gz, m->gz, m->gzlen) == 0);
  }
  manifest_free(d);
  /* A tombstone: the header alone reads back without the payload. */
  d = enc ? manifest_decode(enc, hdr, false, why, sizeof why) : NULL;
  PP_CHECK(d != NULL);
  if (d) {
    PP_CHECK(d->gz == NULL);
    PP_CHECK_INT(d->nmembers, ==, 3);
  }
  manifest_free(d);
  free(enc);
  manifest_free(m);
}

/* A batch's profile type travels in its manifest (its object name holds
 * it); a CPU batch's manifest has no such line, as before types. */
static void test_manifest_keeps_the_profile_type(void) {
  manifest *m = sample();
  size_t len = 0, hdr = 0;
  char why[256] = "";
  uint8_t *enc = manifest_encode(m, &len, &hdr);
  PP_CHECK(enc && !memmem(enc, hdr, "\ntype ", 6));
  free(enc);
  m->ptype = strdup("heap");
  enc = manifest_encode(m, &len, &hdr);
  PP_CHECK(enc && memmem(enc, hdr, "\ntype :heap\n", 12));
  manifest *d = enc ? manifest_decode(enc, len, true, why, sizeof why) : NULL;
  PP_CHECK(d != NULL);
  if (d)
    PP_CHECK_STR(d->ptype, "heap");
  manifest_free(d);
  free(enc);
  manifest_free(m);
}

static void test_manifest_cut_or_damaged_is_refused(void) {
  manifest *m = sample();
  size_t len = 0, hdr = 0;
  char why[256];
  uint8_t *enc = manifest_encode(m, &len, &hdr);
  PP_CHECK(enc != NULL);
  int accepted = 0;
  for (size_t cut = 0; enc && cut < len; cut++) {
    manifest *d = manifest_decode(enc, cut, true, why, sizeof why);
    if (d)
      accepted++;
    manifest_free(d);
  }
  PP_CHECK_INT(accepted, ==, 0);
  if (enc) {
    enc[len - 1] ^= 1; /* payload no longer matches its hash */
    manifest *d = manifest_decode(enc, len, true, why, sizeof why);
    PP_CHECK(d == NULL);
    PP_CHECK(strstr(why, "SHA-256") != NULL);
    manifest_free(d);
  }
  static const char *const bad[] = {
      "pushprof-batch 2\n",
      "pushprof-batch 1\nservice :a\npayload 0\n",             /* fields missing */
      "pushprof-batch 1\nservice :a\nservice :b\npayload 0\n", /* repeated */
      "pushprof-batch 1\nwhat :a\npayload 0\n",                /* unknown */
      "pushprof-batch 1\nmember :../x.push -\npayload 0\n",    /* path */
      "pushprof-batch 1\nservice a\npayload 0\n",              /* no ':' */
      "pushprof-batch 1\nservice :%0\npayload 0\n",            /* bad escape */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    manifest *d = manifest_decode((const uint8_t *)bad[i], strlen(bad[i]), false, why, sizeof why);
    PP_CHECK(d == NULL);
    manifest_free(d);
  }
  free(enc);
  manifest_free(m);
}

/* Random damage (a fixed seed, so a failure repeats): decoding never
 * crashes or reads out of bounds (the ASan build checks), and whatever it
 * accepts has a service and sane members. */
static void test_manifest_random_damage_never_crashes(void) {
  manifest *m = sample();
  size_t len = 0, hdr = 0;
  uint8_t *enc = manifest_encode(m, &len, &hdr);
  PP_CHECK(enc != NULL);
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  int accepted = 0;
  for (int round = 0; enc && round < 20000; round++) {
    uint8_t *buf = malloc(len);
    memcpy(buf, enc, len);
    int flips = 1 + (int)(rng % 4);
    for (int k = 0; k < flips; k++) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      size_t at = (size_t)(rng >> 33) % hdr; /* the text part, where parsing happens */
      static const uint8_t pick[] = {' ', '\n', '%', ':', '0', 'f', '-', 0, 0xff, 'x'};
      buf[at] = (rng >> 20) & 1 ? pick[(rng >> 24) % sizeof pick] : (uint8_t)(rng >> 40);
    }
    size_t cut = (rng >> 50) % 3 == 0 ? (size_t)(rng >> 13) % (len + 1) : len;
    char why[256];
    manifest *d = manifest_decode(buf, cut, (rng >> 7) & 1, why, sizeof why);
    if (d) {
      accepted++;
      PP_CHECK(d->service && d->service[0]);
      for (size_t i = 0; i < d->nmembers; i++)
        PP_CHECK(d->members[i].id[0] && !strchr(d->members[i].id, '/'));
    }
    manifest_free(d);
    free(buf);
  }
  PP_CHECK(accepted < 20000); /* the damage was seen */
  free(enc);
  manifest_free(m);
}

static int loaded_pending, loaded_done;
static char loaded_name[MANIFEST_NAME_MAX];
static void count_cb(void *arg, manifest *m) {
  (void)arg;
  if (m->done)
    loaded_done++;
  else if (m->gz && m->gzlen == 300)
    loaded_pending++;
  snprintf(loaded_name, sizeof loaded_name, "%s", m->name);
  manifest_free(m);
}

static void test_manifest_files_write_done_prune(void) {
  char dir[64] = "/tmp/pp_test_manifestXXXXXX", err[256], p[256];
  PP_CHECK(mkdtemp(dir) != NULL);
  snprintf(p, sizeof p, "%s/failed", dir);
  mkdir(p, 0750);
  char f[512];
  snprintf(p, sizeof p, "%s/" MANIFEST_DIR, dir);
  mkdir(p, 0750);
  snprintf(f, sizeof f, "%s/.123-1.batch", p); /* a writer died before its rename */
  PP_CHECK_INT(btu_write_file(f, "half", 4), ==, 0);
  manifest_dir *d = manifest_dir_open(dir, err, sizeof err);
  PP_CHECK(d != NULL);
  if (!d)
    return;
  PP_CHECK_INT(btu_count(p, NULL), ==, 0);
  manifest *m = sample();
  PP_CHECK_INT(manifest_write(d, m), ==, 0);
  PP_CHECK(m->name[0] != '\0');
  PP_CHECK_INT(btu_count(p, ".batch"), ==, 1);
  PP_CHECK_INT(manifest_load_all(d, count_cb, NULL), ==, 1);
  PP_CHECK_INT(loaded_pending, ==, 1);
  PP_CHECK_STR(loaded_name, m->name);
  PP_CHECK_INT(manifest_mark_done(d, m->name, m->gzlen), ==, 0);
  PP_CHECK_INT(btu_count(p, ".batch"), ==, 0);
  PP_CHECK_INT(btu_count(p, ".done"), ==, 1);
  struct stat st;
  snprintf(f, sizeof f, "%s/.%s.done", p, m->name);
  size_t elen = 0, ehdr = 0;
  uint8_t *enc = manifest_encode(m, &elen, &ehdr);
  free(enc);
  PP_CHECK_INT(stat(f, &st), ==, 0);
  PP_CHECK_INT(st.st_size, ==, ehdr); /* payload cut off */
  PP_CHECK_INT(manifest_load_all(d, count_cb, NULL), ==, 1);
  PP_CHECK_INT(loaded_done, ==, 1);
  PP_CHECK_INT(manifest_prune_done(d, 0), ==, 0); /* not older than the epoch */
  PP_CHECK_INT(manifest_prune_done(d, INT64_MAX), ==, 1);
  PP_CHECK_INT(btu_count(p, NULL), ==, 0);
  /* A second one to failed/, with its reason. */
  PP_CHECK_INT(manifest_write(d, m), ==, 0);
  PP_CHECK_INT(manifest_move_failed(d, m->name, "HTTP 403"), ==, 0);
  snprintf(f, sizeof f, "%s/failed", dir);
  PP_CHECK_INT(btu_count(f, ".batch"), ==, 1);
  PP_CHECK_INT(btu_count(f, ".reason"), ==, 1);
  /* Garbage is set aside as .bad, never handed over. */
  snprintf(f, sizeof f, "%s/junk.batch", p);
  PP_CHECK_INT(btu_write_file(f, "not a manifest\n", 15), ==, 0);
  PP_CHECK_INT(manifest_load_all(d, count_cb, NULL), ==, 0);
  PP_CHECK_INT(btu_count(p, ".bad"), ==, 1);
  manifest_free(m);
  manifest_dir_close(d);
  btu_rmtree(dir);
}

/* Threads that pack write manifests at the same time (the batcher's and
 * the connection threads helping it): every write succeeds under a name of
 * its own (TSan runs this too). */
enum { MW_THREADS = 4, MW_EACH = 25 };
typedef struct mw_arg {
  manifest_dir *d;
  char names[MW_EACH][MANIFEST_NAME_MAX];
  int ok;
} mw_arg;

static void *write_many(void *arg) {
  mw_arg *a = arg;
  for (int i = 0; i < MW_EACH; i++) {
    manifest *m = sample();
    if (m && manifest_write(a->d, m) == 0) {
      memcpy(a->names[a->ok++], m->name, MANIFEST_NAME_MAX);
    }
    manifest_free(m);
  }
  return NULL;
}

static int cmp_name(const void *x, const void *y) {
  return strcmp(x, y);
}

static void test_concurrent_writes_get_names_of_their_own(void) {
  char dir[64] = "/tmp/pp_test_manifestXXXXXX", err[256], p[256];
  PP_CHECK(mkdtemp(dir) != NULL);
  manifest_dir *d = manifest_dir_open(dir, err, sizeof err);
  PP_CHECK(d != NULL);
  if (!d)
    return;
  static mw_arg args[MW_THREADS];
  pthread_t t[MW_THREADS];
  for (int i = 0; i < MW_THREADS; i++) {
    args[i] = (mw_arg){.d = d};
    PP_CHECK_INT(pthread_create(&t[i], NULL, write_many, &args[i]), ==, 0);
  }
  static char all[MW_THREADS * MW_EACH][MANIFEST_NAME_MAX];
  int n = 0;
  for (int i = 0; i < MW_THREADS; i++) {
    pthread_join(t[i], NULL);
    PP_CHECK_INT(args[i].ok, ==, MW_EACH);
    for (int k = 0; k < args[i].ok; k++)
      memcpy(all[n++], args[i].names[k], MANIFEST_NAME_MAX);
  }
  qsort(all, (size_t)n, MANIFEST_NAME_MAX, cmp_name);
  for (int i = 1; i < n; i++)
    PP_CHECK(strcmp(all[i - 1], all[i]) != 0);
  snprintf(p, sizeof p, "%s/" MANIFEST_DIR, dir);
  PP_CHECK_INT(btu_count(p, ".batch"), ==, MW_THREADS * MW_EACH);
  manifest_dir_close(d);
  btu_rmtree(dir);
}

int main(void) {
  PP_RUN(test_manifest_round_trips_every_field);
  PP_RUN(test_manifest_keeps_the_profile_type);
  PP_RUN(test_manifest_cut_or_damaged_is_refused);
  PP_RUN(test_manifest_random_damage_never_crashes);
  PP_RUN(test_manifest_files_write_done_prune);
  PP_RUN(test_concurrent_writes_get_names_of_their_own);
  PP_DONE();
}
