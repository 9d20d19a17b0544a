/* The sidecar's user-space work per push, without the socket and the disk
 * (a benchmark, not a test): decodes a push frame holding FILE's pprof
 * (pp_push_decode: frame, PushRequest, pprof, validation) and merges it into
 * a batch (pp_merge_add), N times, a new batch every BATCH pushes (packed and
 * gzipped as the batcher does). Prints CPU microseconds per push for each
 * step as key=value (pack_us: the pack alone, within pack_gzip_us).
 *
 *   bench_sidecar --dump /tmp/p.pb --size 102400
 *   bench_ingest [--fresh] /tmp/p.pb [N (300)] [BATCH (10)]
 *
 * One file repeated dedups a batch to one push's samples. The sidecar bench
 * sends distinct payloads (every sample with its own trace_id), so a batch
 * grows by every push: give several files, comma-separated, and push i is
 * file i % count:
 *
 *   bench_sidecar --dump /tmp/v --dump-count 32 --size 102400
 *   bench_ingest $(ls /tmp/v.* | paste -sd,) 300 10
 *
 * malloc is tuned as the sidecar's main tunes it (two arenas, blocks from
 * 1 MiB mmap'ed), and batch after batch the builder (pp_builder_reset), the
 * encoder's buffer and gzip's output buffer are kept, as the sidecar's
 * batcher keeps them while a load lasts (it trims only once idle). With
 * --fresh every batch gets new ones and the heap is trimmed after it (the
 * sidecar before it kept them; figures quoted before 2026-11-26 08:30 were
 * taken that way).
 */
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pp_deflate.h"
#include "pp_frame.h"
#include "pp_builder.h"
#include "pp_parse.h"
#include "pp_merge.h"
#include "pp_push.h"
#include "pushprof.pb-c.h"

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint8_t *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf = NULL;
  long n;
  if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) != 0 ||
      !(buf = malloc((size_t)n)) || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  } else {
    *len = (size_t)n;
  }
  if (f)
    fclose(f);
  return buf;
}

/* A push frame holding the pprof at path; NULL on error. */
static uint8_t *make_frame(const char *path, size_t *flen, size_t *plen) {
  uint8_t *pprof = read_file(path, plen);
  if (!pprof)
    return NULL;
  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  Pushprof__V1__Label lab = PUSHPROF__V1__LABEL__INIT, *labs[1] = {&lab};
  lab.key = "env";
  lab.value = "prod";
  req.service = "bench";
  req.labels = labs;
  req.n_labels = 1;
  req.pid = 1;
  req.pprof.data = pprof;
  req.pprof.len = *plen;
  size_t body = pushprof__v1__push_request__get_packed_size(&req);
  uint8_t *frame = malloc(PP_FRAME_HEADER_SIZE + body);
  if (frame) {
    pp_frame_header_encode(frame, PP_FRAME_PUSH, (uint32_t)body);
    pushprof__v1__push_request__pack(&req, frame + PP_FRAME_HEADER_SIZE);
    *flen = PP_FRAME_HEADER_SIZE + body;
  }
  free(pprof);
  return frame;
}

#define MAX_FILES 1024

int main(int argc, char **argv) {
  static uint8_t *frames[MAX_FILES];
  static size_t flens[MAX_FILES];
  size_t nfiles = 0, plen_sum = 0;
  bool fresh = argc >= 2 && strcmp(argv[1], "--fresh") == 0;
  if (fresh) {
    argc--;
    argv++;
  }
  int n = argc >= 3 ? atoi(argv[2]) : 300, batch = argc >= 4 ? atoi(argv[3]) : 10;
  if (mallopt(M_ARENA_MAX, 2) != 1 || mallopt(M_MMAP_THRESHOLD, 1 << 20) != 1)
    fprintf(stderr, "bench_ingest: mallopt failed; figures may differ from the sidecar's\n");
  char *list = argc >= 2 ? strdup(argv[1]) : NULL;
  for (char *save = NULL, *f = list ? strtok_r(list, ",", &save) : NULL; f;
       f = strtok_r(NULL, ",", &save)) {
    size_t plen = 0;
    if (nfiles == MAX_FILES || !(frames[nfiles] = make_frame(f, &flens[nfiles], &plen))) {
      fprintf(stderr, "bench_ingest: cannot read %s (or more than %d files)\n", f, MAX_FILES);
      return 2;
    }
    plen_sum += plen;
    nfiles++;
  }
  free(list);
  if (nfiles == 0 || n < 1 || batch < 1) {
    fprintf(stderr, "usage: bench_ingest [--fresh] PPROF_FILE[,PPROF_FILE...] [N] [BATCH]\n");
    return 2;
  }

  double t_dec = 0, t_merge = 0, t_pack = 0, t_pack_only = 0;
  size_t raw_sum = 0, gz_sum = 0; /* batch bytes before and after gzip */
  pp_builder *b = pp_builder_new();
  uint8_t *raw = NULL, *gz = NULL; /* kept from batch to batch unless fresh */
  size_t rawcap = 0, gzcap = 0;
  int in_batch = 0;
  for (int i = 0; i < n && b; i++) {
    char why[256];
    int code;
    double t0 = cpu_s();
    pp_push *p = pp_push_decode(frames[(size_t)i % nfiles], flens[(size_t)i % nfiles],
                                PP_FRAME_MAX_DEFAULT, &code, why, sizeof why);
    double t1 = cpu_s();
    if (!p || !p->prof) {
      fprintf(stderr, "bench_ingest: the push does not decode: %s\n", why);
      return 2;
    }
    if (pp_merge_add(b, pp_pprof_profile(p->prof), why, sizeof why) != 0) {
      fprintf(stderr, "bench_ingest: merge failed: %s\n", why);
      return 2;
    }
    double t2 = cpu_s();
    pp_push_free(p);
    t_dec += t1 - t0;
    t_merge += t2 - t1;
    if (++in_batch == batch || i == n - 1) {
      size_t rawlen = 0, gzlen = 0;
      double t3 = cpu_s();
      int rc = pp_builder_pack_reuse(b, &raw, &rawcap, &rawlen);
      double t4 = cpu_s();
      if (rc != 0 || pp_gzip_fast_into(raw, rawlen, &gz, &gzcap, &gzlen) != 0) {
        fprintf(stderr, "bench_ingest: pack or gzip failed\n");
        return 2;
      }
      t_pack += cpu_s() - t3;
      t_pack_only += t4 - t3;
      raw_sum += rawlen;
      gz_sum += gzlen;
      in_batch = 0;
      if (!fresh) {
        if (pp_builder_reset(b) != 0) {
          fprintf(stderr, "bench_ingest: out of memory\n");
          return 2;
        }
        continue;
      }
      free(raw);
      free(gz);
      raw = gz = NULL;
      rawcap = gzcap = 0;
      pp_builder_free(b);
      pp_pprof_cache_trim();
      malloc_trim(0);
      b = pp_builder_new();
    }
  }
  pp_builder_free(b);
  free(raw);
  free(gz);
  printf("bench_ingest pprof_bytes=%zu files=%zu pushes=%d batch=%d decode_us=%.0f "
         "merge_us=%.0f pack_gzip_us=%.0f pack_us=%.0f gzip_ratio=%.3f\n",
         plen_sum / nfiles, nfiles, n, batch, t_dec / n * 1e6, t_merge / n * 1e6, t_pack / n * 1e6,
         t_pack_only / n * 1e6, raw_sum ? (double)gz_sum / (double)raw_sum : 0.0);
  for (size_t i = 0; i < nfiles; i++)
    free(frames[i]);
  return 0;
}
