/* views/view_input.c: the profile files below a directory found by name
 * and merged, gzipped or not; the service, sample type and time filters;
 * each refusal naming the file or directory at fault; times for --since
 * and --until. */
#include "view_fixture.h"
#include "view_input.h"

/* Sum of value[0] over the samples of p. */
static long long total(const Perftools__Profiles__Profile *p) {
  long long sum = 0;
  for (size_t i = 0; p && i < p->n_sample; i++)
    sum += p->sample[i]->value[0];
  return sum;
}

static const char *const A[] = {"3 main;a", "4 main;b"}; /* 7 samples */
static const char *const B[] = {"5 main;a"};             /* 5 samples */

/* A new temporary directory in dir (len bytes), in the file exporter's
 * layout DIR/<node>/<service>/<file>: a gzipped and a plain profile, a file
 * of another name and a hidden one (both garbage, which would fail the load
 * if they were read). false if it cannot be made. */
static bool make_tree(char *dir, size_t len) {
  char path[512];
  if (!temp_dir(dir, len))
    return false;
  snprintf(path, sizeof path, "%s/node1/svc-a/1.pb.gz", dir);
  write_lines_at(path, A, 2, 1000000000000LL, true);
  snprintf(path, sizeof path, "%s/node1/svc-b/2.pprof", dir);
  write_lines_at(path, B, 1, 2000000000000LL, false);
  snprintf(path, sizeof path, "%s/node1/svc-a/notes.txt", dir);
  write_file(path, "not a profile", 13);
  snprintf(path, sizeof path, "%s/node1/svc-a/.partial.pb", dir);
  write_file(path, "not a profile", 13);
  return true;
}

/* Both profiles below the directory (svc-a: 7 samples in [1000 s, 1001 s),
 * svc-b: 5 in [2000 s, 2001 s)) are read; each filter keeps what it names,
 * and one that keeps nothing says why. */
static void test_input_merges_and_filters_the_profiles_below_a_directory(void) {
  static const struct {
    view_input_opts o;
    int rc;
    size_t kept;
    int64_t total; /* -1: not checked */
    const char *err;
  } cases[] = {
      {{0}, 0, 2, 12, ""},
      {{.service = "svc-b"}, 0, 1, 5, ""},
      {{.since_ns = 900000000000LL, .until_ns = 1500000000000LL}, 0, 1, 7, ""},
      {{.since_ns = 1001000000000LL}, 0, 2, -1, ""}, /* svc-a's end: still in */
      {{.since_ns = 3000000000000LL},
       -1,
       0,
       -1,
       "none of the 2 profile files is in the --since/--until window"},
      {{.service = "svc-z"},
       -1,
       0,
       -1,
       "none of the 2 profile files of service \"svc-z\" was found"},
      {{.value = "inuse_space"},
       -1,
       0,
       -1,
       "none of the 2 profile files with sample type \"inuse_space\" was found"},
  };
  char dir[64];
  if (!make_tree(dir, sizeof dir))
    return;
  const char *paths[] = {dir};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    view_input in;
    char err[512] = "";
    PP_CHECK_INT(view_input_load(paths, 1, &cases[i].o, &in, err, sizeof err), ==, cases[i].rc);
    PP_CHECK(cases[i].err[0] ? strstr(err, cases[i].err) != NULL : err[0] == '\0');
    if (cases[i].rc == 0) {
      PP_CHECK_INT(in.nfiles, ==, 2);
      PP_CHECK_INT(in.nkept, ==, cases[i].kept);
    }
    if (cases[i].total >= 0)
      PP_CHECK_INT(total(in.profile), ==, cases[i].total);
    view_input_free(&in);
    PP_CHECK(in.profile == NULL);
    view_input_free(&in); /* idempotent */
  }
  temp_dir_remove(dir);
}

static void test_input_refusals_name_the_path(void) {
  char dir[64], path[512], err[512] = "";
  if (!temp_dir(dir, sizeof dir))
    return;
  view_input in;
  const char *none[] = {NULL};
  PP_CHECK_INT(view_input_load(none, 0, NULL, &in, err, sizeof err), ==, -1);
  PP_CHECK(strstr(err, "no PROFILE given") != NULL);
  const char *empty[] = {dir};
  PP_CHECK_INT(view_input_load(empty, 1, NULL, &in, err, sizeof err), ==, -1);
  PP_CHECK(strncmp(err, dir, strlen(dir)) == 0 && strstr(err, ": no .pb.gz, .pprof") != NULL);
  snprintf(path, sizeof path, "%s/missing.pb", dir);
  const char *missing[] = {path};
  PP_CHECK_INT(view_input_load(missing, 1, NULL, &in, err, sizeof err), ==, -1);
  PP_CHECK(strstr(err, "cannot open ") && strstr(err, path));
  /* A file named itself is read whatever its name. */
  snprintf(path, sizeof path, "%s/junk.txt", dir);
  static const char not_gzip[] = "\x1f\x8b not gzip"; /* gzip's magic, then junk */
  write_file(path, not_gzip, sizeof not_gzip - 1);
  const char *junk[] = {path};
  PP_CHECK_INT(view_input_load(junk, 1, NULL, &in, err, sizeof err), ==, -1);
  PP_CHECK(strncmp(err, path, strlen(path)) == 0 && strlen(err) > strlen(path) + 2);
  temp_dir_remove(dir);
}

static void test_input_parse_time(void) {
  int64_t t = 0, now = 1700000000LL * 1000000000;
  PP_CHECK_INT(view_parse_time("2023-11-14T22:13:20Z", now, &t), ==, 0);
  PP_CHECK_INT(t, ==, now);
  PP_CHECK_INT(view_parse_time("2023-11-14T23:13:20.5+01:00", now, &t), ==, 0);
  PP_CHECK_INT(t, ==, now + 500000000);
  PP_CHECK_INT(view_parse_time("@1700000000", now, &t), ==, 0);
  PP_CHECK_INT(t, ==, now);
  PP_CHECK_INT(view_parse_time("2h", now, &t), ==, 0);
  PP_CHECK_INT(t, ==, now - 7200LL * 1000000000);
  PP_CHECK_INT(view_parse_time("2023-11-14", now, &t), ==, 0);
  PP_CHECK_INT(view_parse_time("2023-11-14T10:00:00", now, &t), ==, -1); /* no zone */
  PP_CHECK_INT(view_parse_time("yesterday", now, &t), ==, -1);
  PP_CHECK_INT(view_parse_time("5x", now, &t), ==, -1);
}

/* CPU and off-CPU profiles merged apart in one pass, a lock profile (same
 * layout as off-CPU, told by its comment) and a heap-like one skipped but
 * counted, named or found in a directory. */
static void test_input_loads_kinds_apart(void) {
  char dir[64], path[512];
  if (!temp_dir(dir, sizeof dir))
    return;
  snprintf(path, sizeof path, "%s/d/1-cpu.pb.gz", dir);
  write_kind_at(path, A, 2, FIX_CPU, 10, 0, true);
  snprintf(path, sizeof path, "%s/d/2-cpu.pb", dir);
  write_kind_at(path, B, 1, FIX_CPU, 10, 0, false);
  snprintf(path, sizeof path, "%s/d/3-offcpu.pb.gz", dir);
  write_kind_at(path, B, 1, FIX_OFFCPU, 10, 0, true);
  snprintf(path, sizeof path, "%s/d/4-lock.pb.gz", dir);
  write_kind_at(path, A, 2, FIX_LOCK, 10, 0, true);
  char d[512], lock[512];
  snprintf(d, sizeof d, "%s/d", dir);
  snprintf(lock, sizeof lock, "%s/d/4-lock.pb.gz", dir);
  const char *paths[] = {d, lock};
  view_input cpu, off, lk;
  view_input *by_kind[VIEW_KINDS] = {NULL};
  by_kind[VIEW_KIND_CPU] = &cpu;
  by_kind[VIEW_KIND_OFFCPU] = &off;
  char err[512] = "";
  PP_CHECK_INT(view_input_load_kinds(paths, 2, NULL, by_kind, err, sizeof err), ==, 0);
  PP_CHECK_INT(cpu.nfiles, ==, 5);
  PP_CHECK_INT(cpu.nkept, ==, 2);
  PP_CHECK_INT(total(cpu.profile), ==, 12);
  PP_CHECK_INT(off.nkept, ==, 1);
  PP_CHECK_INT(total(off.profile), ==, 5);
  PP_CHECK_INT(cpu.nkind[VIEW_KIND_CPU], ==, 2);
  PP_CHECK_INT(cpu.nkind[VIEW_KIND_OFFCPU], ==, 1);
  PP_CHECK_INT(cpu.nkind[VIEW_KIND_LOCK], ==, 2); /* found and named */
  PP_CHECK_INT(cpu.nkind[VIEW_KIND_OTHER], ==, 0);
  view_input_free(&cpu);
  view_input_free(&off);
  /* a kind without files is no error */
  by_kind[VIEW_KIND_OFFCPU] = NULL;
  by_kind[VIEW_KIND_LOCK] = &lk;
  PP_CHECK_INT(view_input_load_kinds(paths + 1, 1, NULL, by_kind, err, sizeof err), ==, 0);
  PP_CHECK_INT(cpu.nkept, ==, 0);
  PP_CHECK(cpu.profile == NULL);
  PP_CHECK_INT(lk.nkept, ==, 1);
  PP_CHECK_INT(total(lk.profile), ==, 7);
  view_input_free(&cpu);
  view_input_free(&lk);
  temp_dir_remove(dir);
}

int main(void) {
  PP_RUN(test_input_merges_and_filters_the_profiles_below_a_directory);
  PP_RUN(test_input_refusals_name_the_path);
  PP_RUN(test_input_parse_time);
  PP_RUN(test_input_loads_kinds_apart);
  PP_DONE();
}
