/* Helpers shared by the spool and batcher unit tests: valid push frames built
 * with pp_builder, temp spool dirs, file listing. Header-only (static). */
#ifndef BATCH_TEST_UTIL_H
#define BATCH_TEST_UTIL_H
#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pp_frame.h"
#include "pp_builder.h"
#include "profile.pb-c.h"
#include "pushprof.pb-c.h"

/* An uncompressed pprof with one cpu sample type and two stacks; value is
 * added to stack a, 2*value to stack b. */
static inline uint8_t *btu_pprof(int64_t value, const char *leaf, size_t *len) {
  pp_builder *b = pp_builder_new();
  uint8_t *out = NULL;
  if (!b)
    return NULL;
  pp_builder_add_sample_type(b, "cpu", "nanoseconds");
  pp_builder_set_period(b, "cpu", "nanoseconds", 10000000);
  pp_builder_set_time(b, 1795341600LL * 1000000000LL, 1000000000LL);
  uint64_t m = pp_builder_mapping(b, 0x400000, 0x500000, 0, "/bin/app", "abcd", true);
  uint64_t fmain = pp_builder_function(b, "main", "main", "main.c", 1);
  uint64_t fleaf = pp_builder_function(b, leaf, leaf, "leaf.c", 10);
  int64_t line = 3;
  uint64_t lmain = pp_builder_location(b, m, 0x401000, &fmain, &line, 1);
  uint64_t lleaf = pp_builder_location(b, m, 0x402000, &fleaf, &line, 1);
  uint64_t stack_a[2] = {lleaf, lmain};
  uint64_t stack_b[1] = {lmain};
  int64_t va = value, vb = 2 * value;
  pp_label lab = {.key = "route", .str = "/x"};
  if (pp_builder_sample(b, stack_a, 2, &va, 1, &lab, 1) != 0 ||
      pp_builder_sample(b, stack_b, 1, &vb, 1, NULL, 0) != 0 || pp_builder_pack(b, &out, len) != 0)
    out = NULL;
  pp_builder_free(b);
  return out;
}

/* An uncompressed heap pprof in Go's layout (alloc_objects/count,
 * alloc_space/bytes, inuse_objects/count, inuse_space/bytes; period
 * space/bytes 524288, default inuse_space) with two stacks, main->grow and
 * main->old, holding the values va and vb (one per sample type). */
static inline uint8_t *btu_heap_pprof(const int64_t va[4], const int64_t vb[4], size_t *len) {
  pp_builder *b = pp_builder_new();
  uint8_t *out = NULL;
  if (!b)
    return NULL;
  pp_builder_add_sample_type(b, "alloc_objects", "count");
  pp_builder_add_sample_type(b, "alloc_space", "bytes");
  pp_builder_add_sample_type(b, "inuse_objects", "count");
  pp_builder_add_sample_type(b, "inuse_space", "bytes");
  pp_builder_set_period(b, "space", "bytes", 524288);
  pp_builder_set_default_sample_type(b, "inuse_space");
  pp_builder_set_time(b, 1795341600LL * 1000000000LL, 1000000000LL);
  uint64_t m = pp_builder_mapping(b, 0x400000, 0x500000, 0, "/bin/app", "abcd", true);
  uint64_t fmain = pp_builder_function(b, "main", "main", "main.c", 1);
  uint64_t fgrow = pp_builder_function(b, "grow", "grow", "grow.c", 10);
  uint64_t fold = pp_builder_function(b, "old", "old", "old.c", 20);
  int64_t line = 3;
  uint64_t lmain = pp_builder_location(b, m, 0x401000, &fmain, &line, 1);
  uint64_t lgrow = pp_builder_location(b, m, 0x402000, &fgrow, &line, 1);
  uint64_t lold = pp_builder_location(b, m, 0x403000, &fold, &line, 1);
  uint64_t stack_a[2] = {lgrow, lmain}, stack_b[2] = {lold, lmain};
  if (pp_builder_sample(b, stack_a, 2, va, 4, NULL, 0) != 0 ||
      pp_builder_sample(b, stack_b, 2, vb, 4, NULL, 0) != 0 || pp_builder_pack(b, &out, len) != 0)
    out = NULL;
  pp_builder_free(b);
  return out;
}

/* Who pushes: the process identity and the push's place among its pushes. */
typedef struct btu_who {
  uint32_t pid;
  const char *host;
  int64_t process_start_ns;
  uint64_t seq;
  int64_t end_ns;    /* the window ends here; it started a second before */
  const char *ptype; /* the PushRequest's profile_type; NULL: none */
} btu_who;

/* A complete push frame (header + req); NULL on ENOMEM. */
static inline uint8_t *btu_frame_req(const Pushprof__V1__PushRequest *req, size_t *len) {
  size_t n = pushprof__v1__push_request__get_packed_size(req);
  uint8_t *f = malloc(PP_FRAME_HEADER_SIZE + n);
  if (!f)
    return NULL;
  pp_frame_header_encode(f, PP_FRAME_PUSH, (uint32_t)n);
  pushprof__v1__push_request__pack(req, f + PP_FRAME_HEADER_SIZE);
  *len = PP_FRAME_HEADER_SIZE + n;
  return f;
}

/* A push frame of pprof for service from w, labelled env=prod and
 * region=eu. */
static inline uint8_t *btu_frame_who(const char *service, const uint8_t *pprof, size_t plen,
                                     const btu_who *w, size_t *len) {
  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  Pushprof__V1__Label l1 = PUSHPROF__V1__LABEL__INIT, l2 = PUSHPROF__V1__LABEL__INIT;
  Pushprof__V1__Label *labels[2] = {&l1, &l2};
  l1.key = "env";
  l1.value = "prod";
  l2.key = "region";
  l2.value = "eu";
  req.service = (char *)service;
  req.labels = labels;
  req.n_labels = 2;
  req.pid = w->pid;
  req.hostname = (char *)w->host;
  req.process_start_time_nanos = w->process_start_ns;
  req.sequence = w->seq;
  req.end_time_nanos = w->end_ns;
  req.start_time_nanos = w->end_ns - 1000000000LL;
  req.pprof.data = (uint8_t *)pprof;
  req.pprof.len = plen;
  if (w->ptype)
    req.profile_type = (char *)w->ptype;
  return btu_frame_req(&req, len);
}

/* A heap push frame from w whose stack main->grow holds alloc bytes (and
 * alloc/512 objects) and inuse bytes (inuse/512 objects), and whose stack
 * main->old holds 1 object of 4096 bytes live, allocated before. */
static inline uint8_t *btu_heap_frame(const char *service, int64_t alloc, int64_t inuse,
                                      const btu_who *w, size_t *len) {
  const int64_t va[4] = {alloc / 512, alloc, inuse / 512, inuse}, vb[4] = {0, 0, 1, 4096};
  size_t plen;
  uint8_t *p = btu_heap_pprof(va, vb, &plen);
  if (!p)
    return NULL;
  uint8_t *f = btu_frame_who(service, p, plen, w, len);
  free(p);
  return f;
}

/* A push frame for service from pid 42 on "host", its window the second
 * after 1795341600 s. */
static inline uint8_t *btu_frame_raw(const char *service, const uint8_t *pprof, size_t plen,
                                     size_t *len) {
  const btu_who w = {.pid = 42, .host = "host", .end_ns = 1795341601LL * 1000000000LL};
  return btu_frame_who(service, pprof, plen, &w, len);
}

static inline uint8_t *btu_frame(const char *service, int64_t value, size_t *len) {
  size_t plen;
  uint8_t *p = btu_pprof(value, "work", &plen);
  if (!p)
    return NULL;
  uint8_t *f = btu_frame_raw(service, p, plen, len);
  free(p);
  return f;
}

static inline int btu_rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(p);
}

static inline void btu_rmtree(const char *dir) {
  nftw(dir, btu_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* Number of entries in dir whose name ends with suffix (NULL: all but . and ..). */
static inline int btu_count(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d)
    return -1;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    size_t l = strlen(de->d_name);
    if (!suffix || (l >= strlen(suffix) && strcmp(de->d_name + l - strlen(suffix), suffix) == 0))
      n++;
  }
  closedir(d);
  return n;
}

static inline int btu_write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  size_t w = fwrite(data, 1, len, f);
  return fclose(f) == 0 && w == len ? 0 : -1;
}

/* Sum of value vi over the samples whose leaf function is named leaf; -1
 * when no sample has that leaf. */
static inline int64_t btu_leaf_value(const Perftools__Profiles__Profile *p, const char *leaf,
                                     size_t vi) {
  int64_t sum = -1;
  for (size_t i = 0; i < p->n_sample; i++) {
    const Perftools__Profiles__Sample *s = p->sample[i];
    if (!s->n_location_id || vi >= s->n_value)
      continue;
    const char *name = NULL;
    for (size_t l = 0; l < p->n_location && !name; l++)
      if (p->location[l]->id == s->location_id[0] && p->location[l]->n_line)
        for (size_t f = 0; f < p->n_function && !name; f++)
          if (p->function[f]->id == p->location[l]->line[0]->function_id)
            name = p->string_table[p->function[f]->name];
    if (name && strcmp(name, leaf) == 0)
      sum = (sum < 0 ? 0 : sum) + s->value[vi];
  }
  return sum;
}

/* Sum of the first value of every sample. */
static inline int64_t btu_total(const Perftools__Profiles__Profile *p) {
  int64_t t = 0;
  for (size_t i = 0; i < p->n_sample; i++)
    if (p->sample[i]->n_value > 0)
      t += p->sample[i]->value[0];
  return t;
}
#endif
