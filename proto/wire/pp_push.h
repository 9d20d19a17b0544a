/* Decoding and validating one push frame (PROTOCOL.md), the one place where
 * the PushRequest limits of pp_frame.h are enforced. The sidecar's listener
 * calls it once per frame it reads, the spool rescan once per file it reads
 * back; the result goes to the batcher as it is, so no push is decoded twice.
 * Reader side only (pushprof_proto_read): the SDK never links it.
 * Thread-safe; each pp_push is owned by one thread at a time. */
#ifndef PP_PUSH_H
#define PP_PUSH_H
#include <stddef.h>
#include <stdint.h>

#include "pp_arena.h"
#include "pushprof.pb-c.h"

/* A decoded, validated push. req->pprof is always empty: the profile lives
 * in prof (parsed and validated once), or prof is NULL when the push says
 * no_samples (then it carried no pprof at all). */
typedef struct pp_push {
  Pushprof__V1__PushRequest *req;
  pp_pprof *prof;
  size_t frame_bytes; /* the whole frame, header included */
} pp_push;

/* Decodes frame[0..len) (header + PushRequest + pprof, gzipped or not) and
 * checks every limit: header (magic, version, type, length == len - header,
 * length <= max_frame), service 1..PP_SERVICE_MAX bytes, hostname, labels,
 * times, and the pprof (pp_pprof_parse, up to 8 * max_frame bytes
 * once gunzipped), parsed where it lies in the frame: the request is
 * unpacked without it, and the result does not point into frame. A
 * no_samples push must carry no pprof. Returns the push (free with
 * pp_push_free), or NULL with *reply_code set to the PushReply code to
 * answer (INVALID_FRAME, INVALID_PUSH, INVALID_PPROF) and a one-line reason
 * in why. */
pp_push *pp_push_decode(const uint8_t *frame, size_t len, uint32_t max_frame, int *reply_code,
                        char *why, size_t whylen);
void pp_push_free(pp_push *p); /* NULL is fine */
/* Calls of pp_push_decode so far, process-wide (tests count decodes with it). */
uint64_t pp_push_decode_count(void);
#endif
