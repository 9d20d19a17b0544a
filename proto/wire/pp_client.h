/* A blocking client for one push: connect to the sidecar's Unix socket, send
 * a PushRequest frame, wait for the PushReply. Every step is bounded by the
 * deadline. Used by the SDK's collector thread and by `pushprof push`; never
 * call it from a signal handler. Thread-safe (no shared state). */
#ifndef PP_CLIENT_H
#define PP_CLIENT_H
#include <stddef.h>
#include <stdint.h>

#include "pushprof.pb-c.h"

enum pp_client_status {
  PP_CLIENT_ACKED = 0,       /* reply code OK */
  PP_CLIENT_REFUSED = 1,     /* a reply with another code: see reply */
  PP_CLIENT_UNAVAILABLE = 2, /* connect failed (no socket, refused) */
  PP_CLIENT_TIMEOUT = 3,     /* the deadline passed */
  PP_CLIENT_IO_ERROR = 4,    /* the connection broke or the reply was malformed */
};

typedef struct pp_client_reply {
  int code; /* Pushprof__V1__PushReply__Code when status is ACKED/REFUSED */
  char reason[256];
  char push_id[128];
} pp_client_reply;

/* Serializes req into a complete frame (header + payload). *out malloc'ed. */
int pp_client_encode_push(const Pushprof__V1__PushRequest *req, uint8_t **out, size_t *len);

/* Sends an already-encoded frame and waits for the reply, at most timeout_ms
 * in all. Returns a pp_client_status; reply is filled as far as known and
 * reply->reason says what happened on failures too. */
int pp_client_push_frame(const char *socket_path, const uint8_t *frame, size_t len, int timeout_ms,
                         pp_client_reply *reply);

/* Sends a small frame that needs no answer (a no_samples push) and closes:
 * connecting takes at most timeout_ms, the send never waits. 0 when the
 * whole frame went into the socket, else a pp_client_status. */
int pp_client_send_frame_noreply(const char *socket_path, const uint8_t *frame, size_t len,
                                 int timeout_ms);
#endif
