/* The sidecar's Unix-socket listener. One accept thread checks peer
 * credentials and the connection limit; each admitted connection gets its
 * own thread, which reads frames under a per-frame deadline, decodes and
 * validates each once (pp_push_decode), makes it durable (spool_begin and
 * spool_commit), acks, and hands the decoded push to the batcher. Threads block in fsync
 * concurrently, so a slow disk delays acks but never serializes clients behind one another. */
#ifndef SIDECAR_LISTENER_H
#define SIDECAR_LISTENER_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "batcher.h"
#include "spool.h"

typedef struct listener_config {
  const char *socket_path;
  uint32_t max_frame_bytes; /* header + payload at most this (16 MiB) */
  int max_connections;      /* beyond it: evict an idle/slow one, else RESOURCE_EXHAUSTED */
  int read_timeout_ms;      /* a whole frame must arrive within this */
  const uid_t *allow_uids;  /* NULL/0: any peer; else SO_PEERCRED uid must be listed */
  size_t n_allow_uids;
  /* --max-memory: frames being read may hold a quarter of it (at least one
   * frame of max_frame_bytes); 0 = 48 MiB. */
  uint64_t max_memory;
  /* A connection thread that is done waits this long for the next
   * connection before it exits (at most 8 wait); 0 = 5000 ms. */
  int worker_idle_ms;
  /* On-demand profiles: a connection that opens with a Subscribe frame is
   * handed to it, pushes with a session_id are delivered to it. NULL: a
   * Subscribe is refused as an unknown frame type. */
  struct ondemand *od;
} listener_config;

typedef struct listener listener;

/* Creates the socket: its directory 0750 if missing, a stale socket file
 * removed (never a live one, never a non-socket), bound under umask 0117 so
 * it is 0660 from the start, and listening. The umask is process-wide: call
 * this before other threads start. NULL with err naming the path and fix. */
listener *listener_open(const listener_config *cfg, char *err, size_t errlen);
/* The part of --max-memory left for frames and batches once the sidecar's
 * fixed part is known (membudget.h): frames being read may then hold a
 * quarter of it (at least one frame). Call before listener_start. */
void listener_set_budget(listener *l, uint64_t dynamic);
/* Sets cfg.od after listener_open (the on-demand module starts a thread,
 * which listener_open must precede). Call before listener_start. */
void listener_set_ondemand(listener *l, struct ondemand *od);
/* Starts accepting; frames go to sp and b, which must outlive listener_stop. */
int listener_start(listener *l, spool *sp, batcher *b);
/* Stops accepting, unlinks the socket, lets connections finish the frame they
 * are reading (each bounded by the read timeout), and returns once every
 * connection thread has ended. */
void listener_stop(listener *l);
void listener_free(listener *l);
/* Reads the sequence (field 7) straight from the wire bytes of a PushRequest
 * that failed to decode or validate, so its error reply can still echo it:
 * the fields before the first malformed one count. 0 and *seq set, or -1 if
 * none was found. Thread-safe, no allocation. */
int listener_peek_sequence(const uint8_t *payload, size_t len, uint64_t *seq);
/* The same for any varint field of a PushRequest payload (the last one wins). */
int listener_peek_varint(const uint8_t *payload, size_t len, unsigned field, uint64_t *out);
#endif
