/* Internal to the listener: its state and the functions its files share.
 * listener.c opens the socket and starts and stops the threads;
 * listener_accept.c is the accept thread (admission, eviction at
 * --max-connections); listener_conn.c the connection threads (frames read,
 * checked, made durable, handed to the batcher, answered); listener_reply.c
 * the replies and the peeks into a payload's wire bytes. */
#ifndef SIDECAR_LISTENER_INT_H
#define SIDECAR_LISTENER_INT_H

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lockfile.h"
#include "log.h"
#include "membudget.h"
#include "metrics.h"
#include "pp_decode.h"
#include "pp_frame.h"
#include "pp_push.h"
#include "pushprof.pb-c.h"
#include "listener.h"
#include "ondemand.h"

#define CONN_STACK_SIZE (1u << 20)
#define WORKER_IDLE_MS 5000 /* default listener_config.worker_idle_ms */
/* At most this many wait for work; the others exit at once: after a burst of
 * hundreds of connections, idle threads would hold their stacks' pages. */
#define WORKER_IDLE_MAX 8
#define TRIM_STACK_MS 200 /* an idle worker's stack is trimmed after this wait */
#define LINGER_MAX 32
#define LINGER_MS 1000
#define REASON_MAX 400
/* Frames of FRAME_POOL_MIN..FRAME_POOL_BUF bytes are read into buffers of
 * FRAME_POOL_BUF kept in a pool of FRAME_POOL (2 MiB at most, held while the
 * sidecar runs); smaller and larger frames get a buffer of their own. */
#define FRAME_POOL 8
#define FRAME_POOL_MIN (16u << 10)
#define FRAME_POOL_BUF (256u << 10)
#define ROOM_WAIT_MS 500 /* at the memory budget, how long a frame waits for room */

enum {
  RC_OK = PUSHPROF__V1__PUSH_REPLY__CODE__OK,
  RC_INVALID_FRAME = PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_FRAME,
  RC_INVALID_PUSH = PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH,
  RC_INVALID_PPROF = PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PPROF,
  RC_EXHAUSTED = PUSHPROF__V1__PUSH_REPLY__CODE__RESOURCE_EXHAUSTED,
  RC_DENIED = PUSHPROF__V1__PUSH_REPLY__CODE__PERMISSION_DENIED,
  RC_UNAVAILABLE = PUSHPROF__V1__PUSH_REPLY__CODE__UNAVAILABLE,
  RC_INTERNAL = PUSHPROF__V1__PUSH_REPLY__CODE__INTERNAL
};

typedef struct conn conn;
typedef struct uid_count {
  uid_t uid;
  int n;
} uid_count;

struct listener {
  listener_config cfg;
  char *path;
  int lock_fd; /* <socket>.lock, flock'ed while we live */
  uid_t uids[64];
  int fd;
  int wake_fd; /* eventfd, readable once stopping: wakes every poll() */
  dev_t dev;
  ino_t ino;
  spool *sp;
  batcher *b;
  pthread_t accept_thread;
  bool started;
  atomic_bool stopping;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int open;     /* connection threads alive; guarded by mu */
  int active;   /* of those, not evicted: what --max-connections bounds; mu */
  conn **conns; /* the open connections, cap_conns slots; guarded by mu */
  int cap_conns;
  uid_count *uids_scratch;       /* victim choice, accept thread only */
  atomic_uint_fast64_t inflight; /* bytes of frames being read or handled */
  uint64_t inflight_max;
  uint64_t max_memory; /* --max-memory, for messages */
  int handling;        /* frames being decoded, made durable and merged; guarded by mu */
  int slot_waiters;    /* threads waiting on slot_cv for one of those; mu */
  /* A freed slot wakes one waiter (CLOCK_MONOTONIC). Its own condition
   * variable: a broadcast on cv would wake every waiting connection thread
   * to find one slot. */
  pthread_cond_t slot_cv;
  /* Connection threads (workers) and connections admitted but not yet taken
   * by one (FIFO through conn.next); all guarded by mu. */
  int workers; /* alive */
  int idle;    /* of those, waiting on work_cv for a connection */
  conn *queue, **queue_tail;
  int queued;
  pthread_cond_t work_cv; /* CLOCK_MONOTONIC */
  /* Frame buffers kept for the next frame (frame_get): a fresh buffer per
   * push would be a page fault per 4 KiB it holds. */
  _Atomic(uint8_t *) frame_pool[FRAME_POOL];
};

enum conn_state { CS_WAITING, CS_READING, CS_BUSY };

struct conn {
  listener *l;
  int fd;
  struct ucred cred;
  int slot;                 /* index in l->conns; guarded by l->mu */
  atomic_int state;         /* enum conn_state, set by the connection's thread */
  _Atomic int64_t since_ms; /* when the wait for the current frame began */
  atomic_bool evicted;      /* set once, under l->mu, by the accept thread */
  int64_t evicted_wait_ms;  /* how long the frame had been awaited then */
  conn *next;               /* in l->queue until a worker takes it; l->mu */
};

static inline int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sends one reply frame (code, reason, the push's sequence, its id if
 * acked) on fd by deadline_ms; 0 or -1. */
int listener_send_reply(int fd, int code, const char *reason, uint64_t seq, const char *push_id,
                        int64_t deadline);
/* Rate limit of the log line per refused connection or frame. */
bool listener_reject_log_allowed(void);
/* A connection thread (pthread start routine; arg: its first conn). */
void *listener_conn_main(void *arg);
/* Takes c out of the registry; its fd may be closed only after this. */
void listener_conn_end(listener *l, conn *c);
/* The accept thread (pthread start routine; arg: the listener). */
void *listener_accept_main(void *arg);
#endif
