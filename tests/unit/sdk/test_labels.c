/* Per-thread labels: the set/replace/remove/clear semantics and limits of
 * pushprof_label_set, a reader on another thread copying with the handler's
 * routine while a writer hammers the labels (never a torn value), the
 * handler carrying labels into the profile, and the per-window memory bound
 * for high-cardinality labels. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <ucontext.h>

#include "collector.h"
#include "labels.h"
#include "pp_parse_ref.h"
#include "pp_test.h"
#include "pushprof.h"
#include "sampler.h"
#include "sampler_internal.h"
#include "sigprof_test_util.h"
#include "threads_linux.h"

/* The published set as "k=v,k=v" (what the handler would copy). */
static void published(char *out, size_t outlen) {
  char buf[RING_LABEL_BYTES];
  uint16_t n = 0, len = 0;
  out[0] = '\0';
  labels_block *b = labels_self_block();
  if (!b)
    return;
  if (labels_copy(b, buf, &n, &len) != 0) {
    snprintf(out, outlen, "<copy failed>");
    return;
  }
  size_t off = 0, o = 0;
  for (uint16_t i = 0; i < n && off < len; i++) {
    const char *k = buf + off;
    const char *v = k + strlen(k) + 1;
    o += (size_t)snprintf(out + o, outlen - o, "%s%s=%s", i ? "," : "", k, v);
    off = (size_t)(v - buf) + strlen(v) + 1;
  }
  if (off != len)
    snprintf(out, outlen, "<%u labels but %zu of %u bytes>", n, off, len);
}

static void expect_labels(const char *want, int line) {
  char got[1024];
  published(got, sizeof got);
  if (strcmp(got, want) != 0) {
    fprintf(stderr, "line %d: labels \"%s\", want \"%s\"\n", line, got, want);
    pp_test_failures++;
  }
}
#define EXPECT_LABELS(s) expect_labels(s, __LINE__)

static void test_labels_set_replace_remove_clear(void) {
  pushprof_labels_clear();
  PP_CHECK_INT(pushprof_label_set("trace_id", NULL), ==, 0); /* absent: nothing to do */
  PP_CHECK_INT(pushprof_label_set("trace_id", "abc"), ==, 0);
  PP_CHECK_INT(pushprof_label_set("route", "/a"), ==, 0);
  PP_CHECK_INT(pushprof_label_set("user", "u1"), ==, 0);
  EXPECT_LABELS("trace_id=abc,route=/a,user=u1");
  PP_CHECK_INT(pushprof_label_set("trace_id", "xyz"), ==, 0); /* same length, in place */
  EXPECT_LABELS("trace_id=xyz,route=/a,user=u1");
  PP_CHECK_INT(pushprof_label_set("route", "/longer/route"), ==, 0); /* grows, keeps order */
  EXPECT_LABELS("trace_id=xyz,route=/longer/route,user=u1");
  PP_CHECK_INT(pushprof_label_set("route", "/"), ==, 0); /* shrinks */
  EXPECT_LABELS("trace_id=xyz,route=/,user=u1");
  PP_CHECK_INT(pushprof_label_set("route", NULL), ==, 0);
  EXPECT_LABELS("trace_id=xyz,user=u1");
  PP_CHECK_INT(pushprof_label_set("route", NULL), ==, 0);
  EXPECT_LABELS("trace_id=xyz,user=u1");
  PP_CHECK_INT(pushprof_label_set("trace", "prefix-of-a-key"), ==, 0); /* not trace_id */
  EXPECT_LABELS("trace_id=xyz,user=u1,trace=prefix-of-a-key");
  PP_CHECK_INT(pushprof_labels_clear(), ==, 0);
  EXPECT_LABELS("");
  PP_CHECK_INT(pushprof_label_set("trace_id", "again"), ==, 0);
  EXPECT_LABELS("trace_id=again");
  pushprof_labels_clear();
}

static void test_labels_scope_save_restore_nests(void) {
  pushprof_labels_clear();
  PP_CHECK_INT(pushprof_label_set("route", "/checkout"), ==, 0);
  pushprof_label_scope outer, inner;
  PP_CHECK_INT(pushprof_labels_save(&outer), ==, 0);
  PP_CHECK_INT(pushprof_label_set("step", "price"), ==, 0);
  PP_CHECK_INT(pushprof_label_set("route", "/checkout/price"), ==, 0);
  PP_CHECK_INT(pushprof_labels_save(&inner), ==, 0);
  PP_CHECK_INT(pushprof_labels_clear(), ==, 0);
  PP_CHECK_INT(pushprof_label_set("step", "charge"), ==, 0);
  EXPECT_LABELS("step=charge");
  PP_CHECK_INT(pushprof_labels_restore(&inner), ==, 0);
  EXPECT_LABELS("route=/checkout/price,step=price");
  PP_CHECK_INT(pushprof_labels_restore(&outer), ==, 0);
  EXPECT_LABELS("route=/checkout");
  PP_CHECK_INT(pushprof_labels_restore(&outer), ==, 0); /* again: unchanged */
  EXPECT_LABELS("route=/checkout");
  pushprof_labels_clear();
}

static void test_labels_scope_bad_args_change_nothing(void) {
  pushprof_labels_clear();
  PP_CHECK_INT(pushprof_label_set("k", "v"), ==, 0);
  pushprof_label_scope junk;
  memset(&junk, 0xab, sizeof junk);
  PP_CHECK_INT(pushprof_labels_save(NULL), ==, PUSHPROF_EINVAL);
  PP_CHECK_INT(pushprof_labels_restore(NULL), ==, PUSHPROF_EINVAL);
  PP_CHECK_INT(pushprof_labels_restore(&junk), ==, PUSHPROF_EINVAL);
  EXPECT_LABELS("k=v");
  pushprof_labels_clear();
}

/* A thread that never had a label restores an empty scope without
 * allocating, and a full one by allocating its block once. */
static void *scope_thread(void *arg) {
  const pushprof_label_scope *full = arg;
  pushprof_label_scope empty;
  intptr_t bad = 0;
  bad |= pushprof_labels_save(&empty) != 0;
  bad |= pushprof_labels_restore(&empty) != 0;
  bad |= labels_self_block() != NULL;
  bad |= pushprof_labels_restore(full) != 0;
  bad |= labels_self_block() == NULL;
  return (void *)bad;
}

static void test_labels_scope_moves_to_a_fresh_thread(void) {
  pushprof_labels_clear();
  PP_CHECK_INT(pushprof_label_set("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"), ==, 0);
  pushprof_label_scope full;
  PP_CHECK_INT(pushprof_labels_save(&full), ==, 0);
  pthread_t t;
  void *bad = (void *)1;
  PP_CHECK_INT(pthread_create(&t, NULL, scope_thread, &full), ==, 0);
  pthread_join(t, &bad);
  PP_CHECK(bad == NULL);
  pushprof_labels_clear();
}

static void test_labels_limits_return_elimit_and_change_nothing(void) {
  char key[PUSHPROF_LABEL_KEY_MAX + 2], val[PUSHPROF_LABEL_VALUE_MAX + 2], before[1024];
  pushprof_labels_clear();
  memset(key, 'k', sizeof key);
  key[PUSHPROF_LABEL_KEY_MAX + 1] = '\0';
  memset(val, 'v', sizeof val);
  val[PUSHPROF_LABEL_VALUE_MAX + 1] = '\0';
  PP_CHECK_INT(pushprof_label_set("a", "1"), ==, 0);
  published(before, sizeof before);
  PP_CHECK_INT(pushprof_label_set(key, "1"), ==, PUSHPROF_ELIMIT); /* key 65 bytes */
  PP_CHECK_INT(pushprof_label_set("b", val), ==, PUSHPROF_ELIMIT); /* value 257 bytes */
  PP_CHECK_INT(pushprof_label_set("a", val), ==, PUSHPROF_ELIMIT); /* replace too */
  EXPECT_LABELS(before);
  key[PUSHPROF_LABEL_KEY_MAX] = '\0';
  val[PUSHPROF_LABEL_VALUE_MAX] = '\0';
  PP_CHECK_INT(pushprof_label_set(key, val), ==, 0); /* exactly at the limits: 322 bytes */
  published(before, sizeof before);
  key[0] = 'x';
  PP_CHECK_INT(pushprof_label_set(key, val), ==, PUSHPROF_ELIMIT); /* 4 + 322 + 322 > 512 */
  val[200] = '\0';
  PP_CHECK_INT(pushprof_label_set(key, val), ==, PUSHPROF_ELIMIT); /* 4 + 322 + 266 > 512 */
  EXPECT_LABELS(before);
  pushprof_labels_clear();

  /* Eight labels, then a ninth is refused; replacing one still works. */
  char k[8];
  for (int i = 0; i < PUSHPROF_LABELS_MAX; i++) {
    snprintf(k, sizeof k, "k%d", i);
    PP_CHECK_INT(pushprof_label_set(k, "v"), ==, 0);
  }
  published(before, sizeof before);
  PP_CHECK_INT(pushprof_label_set("k8", "v"), ==, PUSHPROF_ELIMIT);
  EXPECT_LABELS(before);
  PP_CHECK_INT(pushprof_label_set("k3", "w"), ==, 0);
  EXPECT_LABELS("k0=v,k1=v,k2=v,k3=w,k4=v,k5=v,k6=v,k7=v");

  pushprof_labels_clear();
}

static void test_labels_budget_is_exact(void) {
  /* Pairs count key + value + 2 NULs: 2 x 256 = 512 fits, one byte more does not. */
  char v[PUSHPROF_LABEL_VALUE_MAX + 1], before[1024];
  pushprof_labels_clear();
  memset(v, 'v', sizeof v);
  v[252] = '\0'; /* "a" + 252 + 2 = 255 */
  PP_CHECK_INT(pushprof_label_set("a", v), ==, 0);
  v[252] = 'v';
  v[253] = '\0';                                        /* 256 */
  PP_CHECK_INT(pushprof_label_set("bb", v + 1), ==, 0); /* "bb" + 252 + 2 = 256: 511 */
  published(before, sizeof before);
  PP_CHECK_INT(pushprof_label_set("c", "1"), ==, PUSHPROF_ELIMIT); /* 511 + 4 */
  PP_CHECK_INT(pushprof_label_set("a", v), ==, 0);                 /* 255 -> 256: 512 */
  PP_CHECK_INT(pushprof_label_set("a", "1234567890"), ==, 0);      /* shrinks */
  PP_CHECK_INT(pushprof_label_set("a", v), ==, 0);
  published(before, sizeof before);
  v[253] = 'v';
  v[254] = '\0';
  PP_CHECK_INT(pushprof_label_set("a", v), ==, PUSHPROF_ELIMIT); /* 513 */
  EXPECT_LABELS(before);
  pushprof_labels_clear();
}

static void test_labels_bad_args_einval(void) {
  pushprof_labels_clear();
  PP_CHECK_INT(pushprof_label_set("a", "1"), ==, 0);
  PP_CHECK_INT(pushprof_label_set(NULL, "1"), ==, PUSHPROF_EINVAL);
  PP_CHECK_INT(pushprof_label_set("", "1"), ==, PUSHPROF_EINVAL);
  PP_CHECK_INT(pushprof_label_set("a", ""), ==, PUSHPROF_EINVAL);
  PP_CHECK_INT(pushprof_label_set("pushprof_stack", "x"), ==, PUSHPROF_EINVAL);
  EXPECT_LABELS("a=1");
  PP_CHECK_STR(pushprof_strerror(PUSHPROF_ELIMIT), "a documented limit was exceeded");
  pushprof_labels_clear();
}

/* ---- a reader on another thread never sees a torn value ---- */

static _Atomic(labels_block *) g_writer_block;
static atomic_int g_stop;
static const char *const vals1[] = {"aaaa", "bbbb", "cccc"};
static const char *const vals2[] = {"x", "yyyyyyyyyyyyyyyyyyyyyyyyyyyy", "zzzzzzzzz"};

static void *writer(void *arg) {
  (void)arg;
  if (pushprof_label_set("first", "1") != 0)
    return (void *)1;
  atomic_store(&g_writer_block, labels_self_block());
  /* acquire: the reader's last copy happens before this thread's exit frees the block */
  for (unsigned i = 0; !atomic_load_explicit(&g_stop, memory_order_acquire); i++) {
    int rc = pushprof_label_set("trace_id", vals1[i % 3]);
    rc |= pushprof_label_set("span", vals2[i % 3]); /* lengths change: memmove */
    if (i % 7 == 0)
      rc |= pushprof_label_set("first", NULL);
    else if (i % 7 == 3)
      rc |= pushprof_label_set("first", "1");
    if (i % 101 == 0)
      rc |= pushprof_labels_clear();
    if (rc)
      return (void *)1;
  }
  return NULL;
}

static int value_ok(const char *k, const char *v) {
  const char *const *set = strcmp(k, "trace_id") == 0 ? vals1
                           : strcmp(k, "span") == 0   ? vals2
                                                      : NULL;
  if (!set)
    return strcmp(k, "first") == 0 && strcmp(v, "1") == 0;
  for (int i = 0; i < 3; i++)
    if (strcmp(v, set[i]) == 0)
      return 1;
  return 0;
}

static void test_labels_concurrent_copy_never_torn(void) {
  pthread_t t;
  atomic_store(&g_stop, 0);
  atomic_store(&g_writer_block, NULL);
  PP_CHECK_INT(pthread_create(&t, NULL, writer, NULL), ==, 0);
  labels_block *b;
  while (!(b = atomic_load(&g_writer_block)))
    sched_yield();
  long copies = 0, failed = 0, bad = 0, labelled = 0;
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    for (int r = 0; r < 1000; r++) {
      char buf[RING_LABEL_BYTES + 1];
      uint16_t n, len;
      if (labels_copy(b, buf, &n, &len) != 0) {
        failed++;
        continue;
      }
      copies++;
      buf[len] = '\0';
      size_t off = 0;
      uint16_t seen = 0;
      while (off < len) {
        const char *k = buf + off;
        size_t kl = strnlen(k, len - off);
        if (off + kl + 1 >= len) {
          bad++;
          break;
        }
        const char *v = k + kl + 1;
        size_t vl = strnlen(v, len - off - kl - 1);
        if (off + kl + vl + 2 > len || !value_ok(k, v)) {
          if (bad++ < 5)
            fprintf(stderr, "torn copy: %.*s=%.*s\n", (int)kl, k, (int)vl, v);
          break;
        }
        off += kl + vl + 2;
        seen++;
      }
      if (seen != n)
        bad++;
      labelled += n > 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) < 1000000000L);
  atomic_store(&g_stop, 1);
  void *wrc;
  pthread_join(t, &wrc);
  PP_CHECK(wrc == NULL);
  fprintf(stderr, "  %ld consistent copies (%ld with labels), %ld gave up, %ld torn\n", copies,
          labelled, failed, bad);
  PP_CHECK_INT(bad, ==, 0);
  PP_CHECK_INT(copies, >, 1000);
  PP_CHECK_INT(labelled, >, 0);
}

/* ---- through the handler into a profile ---- */

static ucontext_t g_uc;

static void forge_sample(void) {
  siginfo_t si;
  sigprof_forge_self(&si);
  sampler_handle_signal(SIGPROF, &si, &g_uc);
}

static const char *str_at(const Perftools__Profiles__Profile *p, int64_t i) {
  return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "<bad index>";
}

/* Sums the samples whose label key has value (value NULL: lacks key). */
static int64_t count_with(const Perftools__Profiles__Profile *p, const char *key, const char *value,
                          size_t *nsamples) {
  int64_t total = 0;
  *nsamples = 0;
  for (size_t i = 0; i < p->n_sample; i++) {
    const Perftools__Profiles__Sample *s = p->sample[i];
    const char *got = NULL;
    for (size_t j = 0; j < s->n_label; j++)
      if (strcmp(str_at(p, s->label[j]->key), key) == 0)
        got = str_at(p, s->label[j]->str);
    if (value ? got && strcmp(got, value) == 0 : got == NULL) {
      total += s->n_value ? s->value[0] : 0;
      (*nsamples)++;
    }
  }
  return total;
}

static Perftools__Profiles__Profile *cut(void) {
  uint8_t *buf = NULL;
  size_t len = 0;
  int64_t a, b;
  char why[200];
  if (sampler_cut(&buf, &len, &a, &b) != 0)
    return NULL;
  Perftools__Profiles__Profile *p = pp_ref_parse(buf, len, 256 << 20, why, sizeof why);
  if (!p)
    fprintf(stderr, "cannot parse the cut: %s\n", why);
  free(buf);
  return p;
}

static void test_labels_handler_carries_labels_into_profile(void) {
  pushprof_labels_clear();
  Perftools__Profiles__Profile *p = cut(); /* start from an empty window */
  if (p)
    perftools__profiles__profile__free_unpacked(p, NULL);
  PP_CHECK_INT(pushprof_label_set("trace_id", "abc"), ==, 0);
  PP_CHECK_INT(pushprof_label_set("route", "/r"), ==, 0);
  for (int i = 0; i < 3; i++)
    forge_sample();
  PP_CHECK_INT(pushprof_label_set("trace_id", "def"), ==, 0);
  for (int i = 0; i < 2; i++)
    forge_sample();
  pushprof_labels_clear();
  forge_sample();
  p = cut();
  PP_CHECK(p != NULL);
  if (!p)
    return;
  size_t n;
  PP_CHECK_INT(count_with(p, "trace_id", "abc", &n), ==, 3);
  PP_CHECK_INT(count_with(p, "trace_id", "def", &n), ==, 2);
  PP_CHECK_INT(count_with(p, "route", "/r", &n), ==, 5);
  /* The unlabelled one (plus any real 1 Hz timer sample of this thread). */
  PP_CHECK_INT(count_with(p, "trace_id", NULL, &n), >=, 1);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_labels_high_cardinality_memory_is_bounded(void) {
  enum { N = 6000 };
  collector_set_agg_limit_for_tests(64 << 10);
  Perftools__Profiles__Profile *p = cut();
  if (p)
    perftools__profiles__profile__free_unpacked(p, NULL);
  char id[32];
  for (int i = 0; i < N; i++) {
    snprintf(id, sizeof id, "%016x", (unsigned)i * 2654435761u);
    PP_CHECK_INT(pushprof_label_set("trace_id", id), ==, 0);
    forge_sample();
    if (i % 128 == 0)
      collector_drain(); /* keep the 512-cell ring from filling */
  }
  pushprof_labels_clear();
  p = cut();
  collector_set_agg_limit_for_tests(0);
  PP_CHECK(p != NULL);
  if (!p)
    return;
  size_t kept, dropped_n, ring_n;
  int64_t dropped = count_with(p, "pushprof_labels", "dropped", &dropped_n);
  int64_t total = 0;
  for (size_t i = 0; i < p->n_sample; i++)
    total += p->sample[i]->value[0];
  count_with(p, "pushprof_labels", NULL, &kept);
  int64_t ring_full = 0;
  ring_n = 0;
  for (size_t i = 0; i < p->n_function; i++)
    if (strcmp(str_at(p, p->function[i]->name), "[pushprof] ring full") == 0)
      ring_n++;
  fprintf(stderr, "  %zu samples kept with their labels, %lld without (%zu entries), total %lld\n",
          kept, (long long)dropped, dropped_n, (long long)total);
  (void)ring_full;
  PP_CHECK_INT(ring_n, ==, 0);
  PP_CHECK_INT(total, >=, N);     /* nothing lost: every sample counted somewhere */
  PP_CHECK_INT(total, <=, N + 5); /* plus any real 1 Hz timer sample */
  PP_CHECK_INT(dropped, >=, N / 2);
  PP_CHECK_INT(dropped_n, <=, 3);
  PP_CHECK_INT(kept, >, 50);
  PP_CHECK_INT(kept, <, 1000); /* 64 KiB of ~100-byte entries, not 6000 */
  perftools__profiles__profile__free_unpacked(p, NULL);
}

static void *labelled_thread(void *arg) {
  (void)arg;
  /* A thread's first label allocates its block; exit frees it (ASan). */
  if (pushprof_label_set("t", "1") != 0 || !labels_self_block())
    return (void *)1;
  return NULL;
}

static void test_labels_thread_exit_frees_the_block(void) {
  for (int i = 0; i < 50; i++) {
    pthread_t t;
    void *rc = (void *)1;
    PP_CHECK_INT(pthread_create(&t, NULL, labelled_thread, NULL), ==, 0);
    pthread_join(t, &rc);
    PP_CHECK(rc == NULL);
  }
}

int main(void) {
  PP_RUN(test_labels_set_replace_remove_clear);
  PP_RUN(test_labels_scope_save_restore_nests);
  PP_RUN(test_labels_scope_bad_args_change_nothing);
  PP_RUN(test_labels_scope_moves_to_a_fresh_thread);
  PP_RUN(test_labels_limits_return_elimit_and_change_nothing);
  PP_RUN(test_labels_budget_is_exact);
  PP_RUN(test_labels_bad_args_einval);
  PP_RUN(test_labels_concurrent_copy_never_torn);
  PP_RUN(test_labels_thread_exit_frees_the_block);

  char err[200] = "";
  sampler_config cfg = {.hz = 1, .signo = SIGPROF}; /* real timers stay out of the way */
  if (sampler_start(&cfg, err, sizeof err) != 0 || !threads_self) {
    fprintf(stderr, "cannot start the sampler: %s\n", err);
    return 1;
  }
  if (getcontext(&g_uc) != 0)
    return 1;
  PP_RUN(test_labels_handler_carries_labels_into_profile);
  PP_RUN(test_labels_high_cardinality_memory_is_bounded);
  sampler_stop();
  PP_DONE();
}
