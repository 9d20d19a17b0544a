#include "pp_push.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_frame.h"

static atomic_uint_fast64_t decodes;

uint64_t pp_push_decode_count(void) {
  return (uint64_t)atomic_load_explicit(&decodes, memory_order_relaxed);
}

void pp_push_free(pp_push *p) {
  if (!p)
    return;
  if (p->req)
    pushprof__v1__push_request__free_unpacked(p->req, NULL);
  pp_pprof_free(p->prof);
  free(p);
}

#define FAIL(c, ...)                                                                               \
  do {                                                                                             \
    *reply_code = PUSHPROF__V1__PUSH_REPLY__CODE__##c;                                             \
    snprintf(why, whylen, __VA_ARGS__);                                                            \
    goto fail;                                                                                     \
  } while (0)

/* The PushRequest's own fields against PROTOCOL.md's limits. */
static int check_request(const Pushprof__V1__PushRequest *req, int *reply_code, char *why,
                         size_t whylen) {
  size_t slen = req->service ? strlen(req->service) : 0;
  if (slen == 0)
    FAIL(INVALID_PUSH, "service is empty (set a service name)");
  if (slen > PP_SERVICE_MAX)
    FAIL(INVALID_PUSH, "service is %zu bytes, max %d", slen, PP_SERVICE_MAX);
  if (req->hostname && strlen(req->hostname) > PP_HOSTNAME_MAX)
    FAIL(INVALID_PUSH, "hostname is longer than %d bytes", PP_HOSTNAME_MAX);
  if (req->n_labels > PP_LABELS_MAX)
    FAIL(INVALID_PUSH, "%zu process labels, max %d", req->n_labels, PP_LABELS_MAX);
  for (size_t i = 0; i < req->n_labels; i++) {
    const Pushprof__V1__Label *l = req->labels[i];
    size_t kl = l && l->key ? strlen(l->key) : 0;
    size_t vl = l && l->value ? strlen(l->value) : 0;
    if (kl == 0)
      FAIL(INVALID_PUSH, "process label %zu has an empty key", i);
    if (kl > PP_LABEL_KEY_MAX)
      FAIL(INVALID_PUSH, "process label key is %zu bytes, max %d", kl, PP_LABEL_KEY_MAX);
    if (vl > PP_LABEL_VALUE_MAX)
      FAIL(INVALID_PUSH, "value of process label %.64s is %zu bytes, max %d", l->key, vl,
           PP_LABEL_VALUE_MAX);
  }
  if (req->end_time_nanos < req->start_time_nanos)
    FAIL(INVALID_PUSH, "end_time_nanos %" PRId64 " is before start_time_nanos %" PRId64,
         req->end_time_nanos, req->start_time_nanos);
  if (req->no_samples && req->pprof.len != 0)
    FAIL(INVALID_PUSH, "no_samples is set but pprof holds %zu bytes: send one or the other",
         req->pprof.len);
  if (!req->no_samples && (req->pprof.len == 0 || !req->pprof.data))
    FAIL(INVALID_PUSH, "pprof is missing");
  return 0;
fail:
  return -1;
}

/* A malloc'ed copy of a request (re-encoded: small without its pprof),
 * freed with pushprof__v1__push_request__free_unpacked(r, NULL); NULL on
 * ENOMEM. */
static Pushprof__V1__PushRequest *copy_request(const Pushprof__V1__PushRequest *r) {
  size_t n = pushprof__v1__push_request__get_packed_size(r);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf)
    return NULL;
  Pushprof__V1__PushRequest *c = NULL;
  if (pushprof__v1__push_request__pack(r, buf) == n)
    c = pushprof__v1__push_request__unpack(NULL, n, buf);
  free(buf);
  return c;
}

pp_push *pp_push_decode(const uint8_t *frame, size_t len, uint32_t max_frame, int *reply_code,
                        char *why, size_t whylen) {
  pp_push *p = NULL;
  pp_frame_header h;
  const char *hwhy = NULL;
  char pwhy[256];
  pp_pprof *wire_arena = NULL;
  Pushprof__V1__PushRequest *wire = NULL; /* in wire_arena */

  atomic_fetch_add_explicit(&decodes, 1, memory_order_relaxed);
  *reply_code = PUSHPROF__V1__PUSH_REPLY__CODE__OK;
  if (why && whylen)
    why[0] = '\0';
  if (len < PP_FRAME_HEADER_SIZE)
    FAIL(INVALID_FRAME, "truncated frame: %zu bytes, the header alone is %d", len,
         PP_FRAME_HEADER_SIZE);
  if (pp_frame_header_decode(frame, max_frame, &h, &hwhy) != 0)
    FAIL(INVALID_FRAME, "%s", hwhy ? hwhy : "bad frame header");
  if (h.type != PP_FRAME_PUSH)
    FAIL(INVALID_FRAME, "frame type %u is not a push (1)", (unsigned)h.type);
  if ((uint64_t)h.length != (uint64_t)(len - PP_FRAME_HEADER_SIZE))
    FAIL(INVALID_FRAME, "frame length mismatch: header says %" PRIu32 " payload bytes, have %zu",
         h.length, len - PP_FRAME_HEADER_SIZE);
  p = calloc(1, sizeof *p);
  if (!p)
    FAIL(INTERNAL, "out of memory decoding a push");
  p->frame_bytes = len;
  /* The request is unpacked into an arena of cached chunks: its copy of the
   * pprof bytes would otherwise be a fresh mmap (page faults, munmap) per
   * push. Once the pprof is parsed, the rest of the request is copied out
   * and the arena goes back to the cache. */
  wire_arena = pp_pprof_arena_new(h.length);
  if (!wire_arena)
    FAIL(INTERNAL, "out of memory decoding a push");
  ProtobufCAllocator al = pp_pprof_arena_allocator(wire_arena);
  wire = pushprof__v1__push_request__unpack(&al, h.length, frame + PP_FRAME_HEADER_SIZE);
  if (!wire && pp_pprof_arena_oom(wire_arena))
    FAIL(INTERNAL, "out of memory decoding a push of %" PRIu32 " bytes", h.length);
  if (!wire)
    FAIL(INVALID_PUSH, "payload is not a valid PushRequest protobuf");
  if (check_request(wire, reply_code, why, whylen) != 0)
    goto fail;
  if (!wire->no_samples) {
    /* The pprof is uncompressed on the wire, but a gzipped one is accepted;
     * it may expand, so allow a generous multiple of the frame limit. */
    size_t max_pprof = (size_t)max_frame * 8u;
    if (max_pprof < (size_t)max_frame)
      max_pprof = SIZE_MAX;
    p->prof =
        pp_pprof_parse_pooled(wire->pprof.data, wire->pprof.len, max_pprof, pwhy, sizeof pwhy);
    if (!p->prof)
      FAIL(INVALID_PPROF, "invalid pprof: %s", pwhy);
  }
  /* The parsed profile replaces the encoded bytes: no need to hold both. */
  wire->pprof.data = NULL;
  wire->pprof.len = 0;
  if (!(p->req = copy_request(wire)))
    FAIL(INTERNAL, "out of memory decoding a push");
  pp_pprof_free(wire_arena);
  return p;
fail:
  pp_pprof_free(wire_arena);
  pp_push_free(p);
  return NULL;
}
