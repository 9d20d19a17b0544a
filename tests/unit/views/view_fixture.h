/* Profiles for the views' tests (test_view_*.c), from lines
 * "COUNT frame;frame;...[|KEY=VALUE]" (root first), with the sample types
 * samples/count and cpu/nanoseconds (cpu is ten times the count), or an
 * off-CPU or lock profile's contentions/count and delay/nanoseconds, read
 * back or written as files into temporary directories. Static inline so
 * that their checks count in the including test's tally. */
#ifndef VIEW_FIXTURE_H
#define VIEW_FIXTURE_H
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pp_builder.h"
#include "pp_gzip.h"
#include "pp_parse_ref.h"
#include "pp_test.h"
#include "view_model.h"

/* The layouts of the profiles a line set can become: CPU (samples/count,
 * cpu/nanoseconds), off-CPU and lock (Go's block profile: contentions/count,
 * delay/nanoseconds, the lock one with the SDK's comment saying so). */
typedef enum fixture_kind { FIX_CPU, FIX_OFFCPU, FIX_LOCK } fixture_kind;

/* The lines as a profile of kind, COUNT in the count type and COUNT x ns in
 * the nanoseconds type; *len its size. NULL on failure (checked). */
static inline uint8_t *pack_kind_at(const char *const *lines, size_t n, fixture_kind kind,
                                    int64_t ns, int64_t time_nanos, int64_t duration_nanos,
                                    size_t *len) {
  pp_builder *b = pp_builder_new();
  PP_CHECK(b != NULL);
  if (!b)
    return NULL;
  pp_builder_set_time(b, time_nanos, duration_nanos);
  if (kind == FIX_CPU) {
    PP_CHECK_INT(pp_builder_add_sample_type(b, "samples", "count"), ==, 0);
    PP_CHECK_INT(pp_builder_add_sample_type(b, "cpu", "nanoseconds"), ==, 0);
  } else {
    PP_CHECK_INT(pp_builder_add_sample_type(b, "contentions", "count"), ==, 0);
    PP_CHECK_INT(pp_builder_add_sample_type(b, "delay", "nanoseconds"), ==, 0);
    PP_CHECK_INT(pp_builder_set_period(b, "contentions", "count", 1), ==, 0);
    PP_CHECK_INT(pp_builder_set_default_sample_type(b, "delay"), ==, 0);
    PP_CHECK_INT(pp_builder_add_comment(b, kind == FIX_LOCK ? "pushprof: lock waits kept by time"
                                                            : "pushprof: off-CPU waits kept"),
                 ==, 0);
  }
  uint64_t map = pp_builder_mapping(b, 0x1000, 0x9000, 0, "/bin/app", "", true);
  for (size_t i = 0; i < n; i++) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", lines[i]);
    char *bar = strchr(buf, '|');
    pp_label l = {0};
    if (bar) {
      *bar = 0;
      char *eq = strchr(bar + 1, '=');
      *eq = 0;
      l = (pp_label){bar + 1, eq + 1, 0, NULL};
    }
    int64_t count = strtoll(buf, NULL, 10);
    char *stack = strchr(buf, ' ') + 1;
    char *frames[32];
    size_t nf = 0;
    for (char *f = strtok(stack, ";"); f; f = strtok(NULL, ";"))
      frames[nf++] = f;
    uint64_t locs[32];
    for (size_t j = 0; j < nf; j++) {
      uint64_t fn = pp_builder_function(b, frames[nf - 1 - j], NULL, "", 0);
      locs[j] = pp_builder_location(b, map, 0x1000 + 16 * fn, &fn, NULL, 1);
    }
    int64_t v[2] = {count, count * ns};
    PP_CHECK_INT(pp_builder_sample(b, locs, nf, v, 2, bar ? &l : NULL, bar ? 1 : 0), ==, 0);
  }
  uint8_t *raw = NULL;
  *len = 0;
  PP_CHECK_INT(pp_builder_pack(b, &raw, len), ==, 0);
  pp_builder_free(b);
  return raw;
}

/* The lines packed as a CPU profile (cpu ten times the count) of
 * time_nanos and duration_nanos (0: none). */
static inline uint8_t *pack_lines_at(const char *const *lines, size_t n, int64_t time_nanos,
                                     int64_t duration_nanos, size_t *len) {
  return pack_kind_at(lines, n, FIX_CPU, 10, time_nanos, duration_nanos, len);
}

static inline uint8_t *pack_lines(const char *const *lines, size_t n, size_t *len) {
  return pack_lines_at(lines, n, 0, 0, len);
}

/* Writes data to path, making its parent directories. 0 or -1 (checked). */
static inline int write_file(const char *path, const void *data, size_t len) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  for (char *p = strchr(dir + 1, '/'); p; p = strchr(p + 1, '/')) {
    *p = '\0';
    mkdir(dir, 0755);
    *p = '/';
  }
  FILE *f = fopen(path, "wb");
  int rc = f && fwrite(data, 1, len, f) == len ? 0 : -1;
  if (f && fclose(f) != 0)
    rc = -1;
  PP_CHECK_INT(rc, ==, 0);
  return rc;
}

/* The lines as a profile file of kind at path (COUNT x ns nanoseconds each),
 * gzipped if gz. 0 or -1 (checked). */
static inline int write_kind_at(const char *path, const char *const *lines, size_t n,
                                fixture_kind kind, int64_t ns, int64_t time_nanos, bool gz) {
  size_t len = 0, gzlen = 0;
  uint8_t *raw = pack_kind_at(lines, n, kind, ns, time_nanos, time_nanos ? 1000000000 : 0, &len),
          *z = NULL;
  if (!raw)
    return -1;
  if (gz)
    PP_CHECK_INT(pp_gzip(raw, len, &z, &gzlen), ==, 0);
  int rc = gz && !z ? -1 : write_file(path, gz ? z : raw, gz ? gzlen : len);
  free(raw);
  free(z);
  return rc;
}

/* The lines as a CPU profile file at path, gzipped if gz. */
static inline int write_lines_at(const char *path, const char *const *lines, size_t n,
                                 int64_t time_nanos, bool gz) {
  return write_kind_at(path, lines, n, FIX_CPU, 10, time_nanos, gz);
}

static inline int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

/* A new empty directory under /tmp (a fresh one per call), its path in buf. */
static inline char *temp_dir(char *buf, size_t len) {
  snprintf(buf, len, "/tmp/pushprof-test-view-XXXXXX");
  char *d = mkdtemp(buf);
  PP_CHECK(d != NULL);
  return d;
}

/* Removes dir and everything below it. */
static inline void temp_dir_remove(const char *dir) {
  PP_CHECK_INT(nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS), ==, 0);
}

/* The lines as a profile of kind (COUNT x ns nanoseconds each) read back
 * with protobuf-c; free with perftools__profiles__profile__free_unpacked. */
static inline Perftools__Profiles__Profile *make_kind(const char *const *lines, size_t n,
                                                      fixture_kind kind, int64_t ns) {
  size_t len = 0;
  uint8_t *raw = pack_kind_at(lines, n, kind, ns, 0, 0, &len);
  char why[256] = "";
  Perftools__Profiles__Profile *p = raw ? pp_ref_parse(raw, len, 1 << 20, why, sizeof why) : NULL;
  if (!p)
    fprintf(stderr, "parse: %s\n", why);
  PP_CHECK(p != NULL);
  free(raw);
  return p;
}

/* The lines as a CPU profile (cpu ten times the count), read back. */
static inline Perftools__Profiles__Profile *make(const char *const *lines, size_t n) {
  return make_kind(lines, n, FIX_CPU, 10);
}

/* BASE and NEW of the diff views' checks, their trees (samples) sharing one
 * name table. BASE splits a 50/50 between b and c; NEW 80/20 with twice
 * the samples, and d only in NEW. */
typedef struct known_splits {
  Perftools__Profiles__Profile *pb, *pn;
  view_names *names;
  view_tree *base, *new_;
} known_splits;

static inline void known_splits_make(known_splits *k) {
  const char *base_lines[] = {"50 main;a;b", "50 main;a;c"};
  const char *new_lines[] = {"144 main;a;b", "36 main;a;c", "20 main;d"};
  char why[256];
  k->pb = make(base_lines, 2);
  k->pn = make(new_lines, 3);
  k->names = view_names_new();
  k->base = k->pb && k->names ? view_tree_build(k->pb, 0, NULL, k->names, why, sizeof why) : NULL;
  k->new_ = k->pn && k->names ? view_tree_build(k->pn, 0, NULL, k->names, why, sizeof why) : NULL;
  PP_CHECK(k->base && k->new_);
}

static inline void known_splits_free(known_splits *k) {
  view_tree_free(k->base);
  view_tree_free(k->new_);
  view_names_free(k->names);
  perftools__profiles__profile__free_unpacked(k->pb, NULL);
  perftools__profiles__profile__free_unpacked(k->pn, NULL);
}

/* A wall-time tree of known parts, each line's COUNT x ns nanoseconds:
 * CPU "3 main;work", "2 main;wait|route=x"; off-CPU "4 main;wait",
 * "1 main;sleep". So work is 30 on-CPU, wait 20 on + 40 off, sleep 10 off,
 * main (and the root) 50 on + 50 off. f: the filter of both adds. */
typedef struct known_wall {
  Perftools__Profiles__Profile *cpu, *off;
  view_names *names;
  view_tree *t;
  char why[256];
} known_wall;

static inline void known_wall_make(known_wall *k, int64_t ns, const view_filter *f) {
  const char *cpu_lines[] = {"3 main;work", "2 main;wait|route=x"};
  const char *off_lines[] = {"4 main;wait", "1 main;sleep"};
  memset(k, 0, sizeof *k);
  k->cpu = make_kind(cpu_lines, 2, FIX_CPU, ns);
  k->off = make_kind(off_lines, 2, FIX_OFFCPU, ns);
  k->names = view_names_new();
  k->t = k->names ? view_tree_new(k->names, "wall", "nanoseconds") : NULL;
  PP_CHECK(k->cpu && k->off && k->t);
  if (!k->cpu || !k->off || !k->t)
    return;
  /* value 1: cpu and delay, not the counts */
  if (view_tree_add(k->t, k->cpu, 1, f, false, k->why, sizeof k->why) != 0 ||
      view_tree_add(k->t, k->off, 1, f, true, k->why, sizeof k->why) != 0 ||
      view_tree_finish(k->t, k->why, sizeof k->why) != 0) {
    view_tree_free(k->t);
    k->t = NULL;
  }
}

static inline void known_wall_free(known_wall *k) {
  view_tree_free(k->t);
  view_names_free(k->names);
  if (k->cpu)
    perftools__profiles__profile__free_unpacked(k->cpu, NULL);
  if (k->off)
    perftools__profiles__profile__free_unpacked(k->off, NULL);
}
#endif
