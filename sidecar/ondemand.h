/* On-demand profiles (PROTOCOL.md "On-demand profiles", docs/sidecar.md):
 * the subscriptions of profiled processes and the sessions the HTTP API
 * runs over them.
 *
 * A connection whose first frame is a Subscribe is handed over here by the
 * listener: this module owns its fd from then on, watches it on one thread
 * (epoll) for its close, and writes Control frames to it. A session
 * (ondemand_run, on the HTTP thread that asked) sends START to every
 * matching subscriber and to those that subscribe while it runs, waits for
 * its window (or ondemand_stop), then for their pushes (session_id set,
 * handed over by the listener through ondemand_deliver), and answers with
 * their merged pprof. One session per profile type at a time. Thread-safe. */
#ifndef SIDECAR_ONDEMAND_H
#define SIDECAR_ONDEMAND_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pp_push.h"
#include "pushprof.pb-c.h"

#define OD_MAX_SUBSCRIBERS 4096
#define OD_HZ_MAX 1000
#define OD_SECONDS_MAX 300
#define OD_SELECT_LABELS_MAX 16
/* After the window, how long the answer waits for the pushes of the
 * processes that joined (they push at once; this bounds a stuck one). */
#define OD_GRACE_MS 3000

enum od_type { OD_CPU = 0, OD_HEAP = 1, OD_NTYPES };

typedef struct od_request {
  enum od_type type;
  int hz;         /* CPU: 1..OD_HZ_MAX */
  int seconds;    /* CPU: 1..OD_SECONDS_MAX */
  bool archive;   /* gzip the answer */
  char *service;  /* NULL: any */
  uint32_t pid;   /* 0: any */
  size_t nlabels; /* process labels the subscriber must have */
  char *keys[OD_SELECT_LABELS_MAX], *values[OD_SELECT_LABELS_MAX];
} od_request;

/* Writes a one-line reason into why (whylen bytes); returns -1. */
int od_why(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Parses a POST body (JSON object: sampling_frequency, timeout_seconds,
 * archive, service, pid, labels; neon's defaults 100 Hz and 5 s; an empty
 * body takes them all). 0, or -1 with a one-line reason naming the field.
 * Free with od_request_free. */
int od_request_parse(const char *body, size_t len, enum od_type type, od_request *rq, char *why,
                     size_t whylen);
void od_request_free(od_request *rq);

typedef struct od_answer {
  unsigned status;   /* HTTP status */
  const char *ctype; /* content type */
  uint8_t *body;     /* malloc'ed */
  size_t len;
  const char *filename; /* Content-Disposition name, or NULL */
} od_answer;

/* a = a JSON {"error": msg} answer with status. */
void od_answer_error(od_answer *a, unsigned status, const char *msg);

typedef struct ondemand ondemand;

ondemand *ondemand_new(char *err, size_t errlen);
/* Wakes every session (they answer with what they hold) and refuses new
 * ones: before the HTTP server stops, which waits for their threads. */
void ondemand_close(ondemand *od);
/* Closes, ends every subscription and frees. */
void ondemand_free(ondemand *od);

/* Takes over fd, whose first frame was this Subscribe (payload decoded by
 * the caller): validates it, answers WELCOME (or REFUSED, then closes) and
 * owns fd from then on, whatever it returns. uid: the peer's. */
void ondemand_adopt(ondemand *od, int fd, const Pushprof__V1__Subscribe *sub, uid_t uid);

/* A push with a session_id: merged into that session's answer. 0, or -1
 * with why (no such session running: too late, or never asked). */
int ondemand_deliver(ondemand *od, const pp_push *push, char *why, size_t whylen);
/* Every other push: remembered (service, pid) for the status's list of
 * processes that push but did not subscribe. */
void ondemand_seen(ondemand *od, const Pushprof__V1__PushRequest *req);

/* POST: runs a session for rq and fills a (pprof, or a JSON error). Blocks
 * the calling thread for the session's window and the pushes after it. */
void ondemand_run(ondemand *od, const od_request *rq, od_answer *a);
/* GET: JSON status of type's session. */
void ondemand_status(ondemand *od, enum od_type type, od_answer *a);
/* DELETE: stops type's running session (its POST answers with what was
 * collected); 412 if none runs. */
void ondemand_stop(ondemand *od, enum od_type type, od_answer *a);

/* Open subscriptions (tests and metrics). */
size_t ondemand_subscribers(ondemand *od);
#endif
