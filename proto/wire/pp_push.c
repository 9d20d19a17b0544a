#include "pp_push.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_decode.h"
#include "pp_parse.h"
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

/* The PushRequest's own fields against PROTOCOL.md's limits; its pprof
 * (pprof_len bytes) was taken out of req before it was unpacked. */
static int check_request(const Pushprof__V1__PushRequest *req, size_t pprof_len, int *reply_code,
                         char *why, size_t whylen) {
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
  if (req->profile_type && req->profile_type[0]) {
    size_t tl = strlen(req->profile_type);
    if (tl > PP_PROFILE_TYPE_MAX)
      FAIL(INVALID_PUSH, "profile_type is %zu bytes, max %d", tl, PP_PROFILE_TYPE_MAX);
    if (strspn(req->profile_type, "abcdefghijklmnopqrstuvwxyz0123456789_") != tl)
      FAIL(INVALID_PUSH, "profile_type %.32s holds a character outside [a-z0-9_]",
           req->profile_type);
  }
  if (req->end_time_nanos < req->start_time_nanos)
    FAIL(INVALID_PUSH, "end_time_nanos %" PRId64 " is before start_time_nanos %" PRId64,
         req->end_time_nanos, req->start_time_nanos);
  if (req->no_samples && pprof_len != 0)
    FAIL(INVALID_PUSH, "no_samples is set but pprof holds %zu bytes: send one or the other",
         pprof_len);
  if (!req->no_samples && pprof_len == 0)
    FAIL(INVALID_PUSH, "pprof is missing");
  return 0;
fail:
  return -1;
}

/* malloc for protobuf-c that remembers a failure (ENOMEM is INTERNAL, not a
 * bad push); what it allocates is freed with free_unpacked(r, NULL). */
static void *oom_malloc(void *data, size_t size) {
  void *p = malloc(size);
  if (!p)
    *(bool *)data = true;
  return p;
}

static void oom_free(void *data, void *p) {
  (void)data;
  free(p);
}

/* The request without its pprof (field 8), unpacked by protobuf-c, and
 * where the pprof is in the payload: the last field 8, as protobuf-c takes
 * it, not copied. Every field is framed as protobuf-c frames it, and a
 * field 8 must be length-delimited, so protobuf-c accepts the payload if
 * and only if it accepts it without its field 8s, and has at most
 * PP_WIRE_MAX_FIELDS fields, counting them.
 * 0, -1 if the payload is not a PushRequest, -2 on ENOMEM. */
static int unpack_without_pprof(const uint8_t *payload, size_t len, Pushprof__V1__PushRequest **req,
                                const uint8_t **pprof, size_t *pprof_len) {
  const uint8_t *q = payload, *end = payload + len, *start;
  size_t strip = 0, nf = 0;
  pp_wire_field f;
  *pprof = NULL;
  *pprof_len = 0;
  while (q < end) {
    start = q;
    if (!pp_wire_next(&q, end, &f) || ++nf > PP_WIRE_MAX_FIELDS)
      return -1;
    if (f.num == 8) {
      if (f.wire_type != 2)
        return -1;
      *pprof = f.data;
      *pprof_len = f.len;
      strip += (size_t)(q - start);
    }
  }
  uint8_t *rest = NULL; /* the payload without its field 8s */
  if (strip) {
    if (!(rest = malloc(len - strip + 1)))
      return -2;
    size_t n = 0;
    for (q = payload; q < end;) {
      start = q;
      pp_wire_next(&q, end, &f); /* framed above */
      if (f.num != 8) {
        memcpy(rest + n, start, (size_t)(q - start));
        n += (size_t)(q - start);
      }
    }
    payload = rest;
    len = n;
  }
  bool oom = false;
  ProtobufCAllocator al = {.alloc = oom_malloc, .free = oom_free, .allocator_data = &oom};
  *req = pushprof__v1__push_request__unpack(&al, len, payload);
  free(rest);
  if (!*req)
    return oom ? -2 : -1;
  return 0;
}

pp_push *pp_push_decode(const uint8_t *frame, size_t len, uint32_t max_frame, int *reply_code,
                        char *why, size_t whylen) {
  pp_push *p = NULL;
  pp_frame_header h;
  const char *hwhy = NULL;
  char pwhy[256];
  const uint8_t *pprof = NULL; /* in the frame */
  size_t pprof_len = 0;

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
  /* The pprof is parsed where it is in the frame: no copy of its bytes. */
  switch (
      unpack_without_pprof(frame + PP_FRAME_HEADER_SIZE, h.length, &p->req, &pprof, &pprof_len)) {
  case 0:
    break;
  case -2:
    FAIL(INTERNAL, "out of memory decoding a push of %" PRIu32 " bytes", h.length);
  default:
    FAIL(INVALID_PUSH, "payload is not a valid PushRequest protobuf");
  }
  if (check_request(p->req, pprof_len, reply_code, why, whylen) != 0)
    goto fail;
  if (!p->req->no_samples) {
    /* The pprof is uncompressed on the wire, but a gzipped one is accepted;
     * it may expand, so allow a generous multiple of the frame limit. */
    size_t max_pprof = (size_t)max_frame * 8u;
    if (max_pprof < (size_t)max_frame)
      max_pprof = SIZE_MAX;
    p->prof = pp_pprof_parse(pprof, pprof_len, max_pprof, pwhy, sizeof pwhy);
    if (!p->prof)
      FAIL(INVALID_PPROF, "invalid pprof: %s", pwhy);
  }
  return p;
fail:
  pp_push_free(p);
  return NULL;
}
