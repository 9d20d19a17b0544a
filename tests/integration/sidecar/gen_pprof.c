/* Test input generator for the sidecar integration tests.
 *   gen_pprof profile OUT [--seed N] [--samples N] [--functions N] [--gzip]
 *       writes a pprof (sample types samples/count, cpu/nanoseconds) and
 *       prints "<sum of samples> <sum of cpu>" on stdout;
 *   gen_pprof frame OUT KIND [--service NAME] [--seed N] [--samples N]
 *       writes one complete push frame, KIND: ok | badproto | badpprof;
 *   gen_pprof frame OUT heap [--service NAME] [--pid N] [--host H] [--seq N]
 *       [--base-s S] [--alloc BYTES] [--inuse BYTES]
 *       a heap push in Go's layout from process H/N (started at S - 3600),
 *       its window ending at S + seq seconds: main;serve;grow allocated
 *       BYTES in the window (64 KiB objects) and holds --inuse bytes live,
 *       main;init;old holds one 4096-byte object live from before. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pp_client.h"
#include "pp_frame.h"
#include "pp_builder.h"
#include "pp_gzip.h"
#include "profile.pb-c.h"
#include "pushprof.pb-c.h"

static uint64_t rng_state;
static uint64_t rnd(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return rng_state >> 33;
}

static int write_all(const char *path, const uint8_t *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
    fprintf(stderr, "gen_pprof: cannot write %s\n", path);
    return -1;
  }
  return 0;
}

/* Builds a random profile; returns the packed bytes and the value sums. */
static int build_profile(int nsamples, int nfuncs, uint8_t **out, size_t *len, int64_t *sum_n,
                         int64_t *sum_cpu) {
  pp_builder *b = pp_builder_new();
  if (!b)
    return -1;
  int rc = -1;
  if (pp_builder_add_sample_type(b, "samples", "count") != 0 ||
      pp_builder_add_sample_type(b, "cpu", "nanoseconds") != 0 ||
      pp_builder_set_period(b, "cpu", "nanoseconds", 10000000) != 0)
    goto out;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  pp_builder_set_time(b, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec, 1000000000);
  uint64_t map =
      pp_builder_mapping(b, 0x400000, 0x800000, 0, "/usr/bin/testprog", "abcdef12", true);
  if (!map)
    goto out;
  *sum_n = *sum_cpu = 0;
  for (int i = 0; i < nsamples; i++) {
    uint64_t locs[8];
    size_t depth = 2 + rnd() % 6;
    for (size_t d = 0; d < depth; d++) {
      char name[64];
      int fn = (int)(rnd() % (uint64_t)nfuncs);
      snprintf(name, sizeof name, "pushprof_test_function_number_%d", fn);
      uint64_t fid = pp_builder_function(b, name, name, "/src/testprog.c", fn);
      int64_t line = 10 + fn;
      if (!fid)
        goto out;
      locs[d] = pp_builder_location(b, map, 0x401000 + (uint64_t)fn * 16, &fid, &line, 1);
      if (!locs[d])
        goto out;
    }
    int64_t n = 1 + (int64_t)(rnd() % 5);
    int64_t v[2] = {n, n * 10000000};
    char route[32];
    snprintf(route, sizeof route, "/r%d", (int)(rnd() % 3));
    pp_label lab = {.key = "route", .str = route};
    if (pp_builder_sample(b, locs, depth, v, 2, &lab, 1) != 0)
      goto out;
    *sum_n += v[0];
    *sum_cpu += v[1];
  }
  rc = pp_builder_pack(b, out, len);
out:
  pp_builder_free(b);
  return rc;
}

/* Who pushes a heap frame, and what it holds. */
typedef struct heap_push {
  uint32_t pid;
  const char *host;
  uint64_t seq;
  int64_t base_s, alloc, inuse;
} heap_push;

static int build_heap_profile(const heap_push *h, uint8_t **out, size_t *len) {
  pp_builder *b = pp_builder_new();
  if (!b)
    return -1;
  int rc = -1;
  static const char *const types[4][2] = {{"alloc_objects", "count"},
                                          {"alloc_space", "bytes"},
                                          {"inuse_objects", "count"},
                                          {"inuse_space", "bytes"}};
  for (int i = 0; i < 4; i++)
    if (pp_builder_add_sample_type(b, types[i][0], types[i][1]) != 0)
      goto out;
  if (pp_builder_set_period(b, "space", "bytes", 524288) != 0 ||
      pp_builder_set_default_sample_type(b, "inuse_space") != 0)
    goto out;
  int64_t end = (h->base_s + (int64_t)h->seq) * 1000000000;
  pp_builder_set_time(b, end - 1000000000, 1000000000);
  uint64_t map =
      pp_builder_mapping(b, 0x400000, 0x800000, 0, "/usr/bin/heapprog", "abcdef12", true);
  static const char *const names[5] = {"main", "serve", "grow", "init", "old"};
  uint64_t loc[5];
  for (int i = 0; i < 5; i++) {
    uint64_t fid = pp_builder_function(b, names[i], names[i], "/src/heapprog.c", 10 * i);
    int64_t line = 10 * i + 1;
    if (!fid ||
        !(loc[i] = pp_builder_location(b, map, 0x401000 + 16 * (uint64_t)i, &fid, &line, 1)))
      goto out;
  }
  uint64_t grow[3] = {loc[2], loc[1], loc[0]}, old[3] = {loc[4], loc[3], loc[0]};
  int64_t vg[4] = {h->alloc / 65536, h->alloc, h->inuse / 65536, h->inuse};
  int64_t vo[4] = {0, 0, 1, 4096};
  if (pp_builder_sample(b, grow, 3, vg, 4, NULL, 0) != 0 ||
      pp_builder_sample(b, old, 3, vo, 4, NULL, 0) != 0)
    goto out;
  rc = pp_builder_pack(b, out, len);
out:
  pp_builder_free(b);
  return rc;
}

static int build_heap_frame(const char *service, const heap_push *h, const uint8_t *pprof,
                            size_t plen, uint8_t **out, size_t *len) {
  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  req.service = (char *)service;
  req.pid = h->pid;
  req.hostname = (char *)h->host;
  req.process_start_time_nanos = (h->base_s - 3600) * 1000000000;
  req.end_time_nanos = (h->base_s + (int64_t)h->seq) * 1000000000;
  req.start_time_nanos = req.end_time_nanos - 1000000000;
  req.sequence = h->seq;
  req.pprof.data = (uint8_t *)pprof;
  req.pprof.len = plen;
  return pp_client_encode_push(&req, out, len);
}

static int build_frame(const char *service, const uint8_t *pprof, size_t plen, uint8_t **out,
                       size_t *len) {
  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  req.service = (char *)service;
  req.pid = 4242;
  req.hostname = "gen-host";
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  req.start_time_nanos = (int64_t)ts.tv_sec * 1000000000;
  req.end_time_nanos = req.start_time_nanos + 1000000000;
  req.sequence = 7;
  req.pprof.data = (uint8_t *)pprof;
  req.pprof.len = plen;
  return pp_client_encode_push(&req, out, len);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: gen_pprof profile OUT [opts] | gen_pprof frame OUT KIND [opts]\n");
    return 2;
  }
  const char *mode = argv[1], *out_path = argv[2], *kind = NULL, *service = "frame-svc";
  int argi = 3;
  if (!strcmp(mode, "frame")) {
    if (argc < 4)
      return 2;
    kind = argv[3];
    argi = 4;
  }
  int samples = 200, funcs = 40;
  bool gz = false;
  heap_push hp = {.pid = 4242, .host = "gen-host", .seq = 1, .base_s = time(NULL)};
  rng_state = 1;
  for (; argi < argc; argi++) {
    if (!strcmp(argv[argi], "--gzip"))
      gz = true;
    else if (argi + 1 < argc && !strcmp(argv[argi], "--seed"))
      rng_state = strtoull(argv[++argi], NULL, 10);
    else if (argi + 1 < argc && !strcmp(argv[argi], "--samples"))
      samples = atoi(argv[++argi]);
    else if (argi + 1 < argc && !strcmp(argv[argi], "--functions"))
      funcs = atoi(argv[++argi]);
    else if (argi + 1 < argc && !strcmp(argv[argi], "--service"))
      service = argv[++argi];
    else if (argi + 1 < argc && !strcmp(argv[argi], "--pid"))
      hp.pid = (uint32_t)strtoul(argv[++argi], NULL, 10);
    else if (argi + 1 < argc && !strcmp(argv[argi], "--host"))
      hp.host = argv[++argi];
    else if (argi + 1 < argc && !strcmp(argv[argi], "--seq"))
      hp.seq = strtoull(argv[++argi], NULL, 10);
    else if (argi + 1 < argc && !strcmp(argv[argi], "--base-s"))
      hp.base_s = strtoll(argv[++argi], NULL, 10);
    else if (argi + 1 < argc && !strcmp(argv[argi], "--alloc"))
      hp.alloc = strtoll(argv[++argi], NULL, 10);
    else if (argi + 1 < argc && !strcmp(argv[argi], "--inuse"))
      hp.inuse = strtoll(argv[++argi], NULL, 10);
    else {
      fprintf(stderr, "gen_pprof: unknown argument %s\n", argv[argi]);
      return 2;
    }
  }
  if (samples < 1 || funcs < 1)
    return 2;
  uint8_t *prof = NULL, *data = NULL;
  size_t plen = 0, dlen = 0;
  int64_t sn = 0, sc = 0;
  if (!strcmp(mode, "profile")) {
    if (build_profile(samples, funcs, &prof, &plen, &sn, &sc) != 0)
      return 1;
    if (gz) {
      if (pp_gzip(prof, plen, &data, &dlen) != 0)
        return 1;
    } else {
      data = prof;
      dlen = plen;
      prof = NULL;
    }
    if (write_all(out_path, data, dlen) != 0)
      return 1;
    printf("%lld %lld\n", (long long)sn, (long long)sc);
  } else if (!strcmp(mode, "frame")) {
    if (!strcmp(kind, "ok")) {
      if (build_profile(samples, funcs, &prof, &plen, &sn, &sc) != 0)
        return 1;
      if (build_frame(service, prof, plen, &data, &dlen) != 0)
        return 1;
    } else if (!strcmp(kind, "heap")) {
      if (build_heap_profile(&hp, &prof, &plen) != 0 ||
          build_heap_frame(service, &hp, prof, plen, &data, &dlen) != 0)
        return 1;
    } else if (!strcmp(kind, "badpprof")) {
      /* Decodes as protobuf but breaks pprof rules: string_table[0] is not "". */
      Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
      char *strs[] = {"not-empty", "samples", "count"};
      Perftools__Profiles__ValueType vt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
      Perftools__Profiles__ValueType *vts[] = {&vt};
      vt.type = 1;
      vt.unit = 2;
      p.string_table = strs;
      p.n_string_table = 3;
      p.sample_type = vts;
      p.n_sample_type = 1;
      plen = perftools__profiles__profile__get_packed_size(&p);
      prof = malloc(plen + 1);
      if (!prof)
        return 1;
      perftools__profiles__profile__pack(&p, prof);
      if (build_frame(service, prof, plen, &data, &dlen) != 0)
        return 1;
    } else if (!strcmp(kind, "badproto")) {
      dlen = PP_FRAME_HEADER_SIZE + 64;
      data = malloc(dlen);
      if (!data)
        return 1;
      /* Field 1 as a length-delimited string claiming far more bytes than follow. */
      memset(data + PP_FRAME_HEADER_SIZE, 0xff, 64);
      data[PP_FRAME_HEADER_SIZE] = 0x0a;
      pp_frame_header_encode(data, PP_FRAME_PUSH, 64);
    } else {
      fprintf(stderr, "gen_pprof: unknown frame kind %s\n", kind);
      return 2;
    }
    if (write_all(out_path, data, dlen) != 0)
      return 1;
  } else {
    return 2;
  }
  free(prof);
  free(data);
  return 0;
}
