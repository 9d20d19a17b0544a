/* Bounded multi-producer, single-consumer ring of fixed-size sample records
 * with a sequence number per cell. Producers are signal handlers on any
 * thread; the consumer is whoever holds the collector's lock.
 * ring_reserve/ring_commit are async-signal-safe and lock-free; a full ring
 * (or too much contention) increments the drop counter instead of waiting. */
#ifndef PUSHPROF_RING_H
#define PUSHPROF_RING_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define RING_MAX_DEPTH 128
/* Room for the thread's labels, copied by value: up to
 * RING_MAX_LABELS pairs encoded as "key\0value\0" within RING_LABEL_BYTES. */
#define RING_MAX_LABELS 8
#define RING_LABEL_BYTES 512

#define RING_F_TRUNCATED 1u /* depth cap reached with frames left */
#define RING_F_LEAF_ONLY 2u /* stack bounds unknown or sp outside them */
#define RING_F_NO_TABLE 4u  /* a frame was in code with no unwind table yet */
#define RING_F_DEFERRED 8u  /* only pcs[0]: the stack is in deferred slot rec->defer */
#define RING_F_ALTSTACK 16u /* interrupted on its sigaltstack: sp says nothing of its bounds */
/* Recorded at thread exit, not by the handler: the thread's CPU timer had
 * expired but the kernel, which checks CPU timers only at its ticks, had not
 * signalled it yet. pcs[0] is the thread's start routine (depth 0 if not
 * known). */
#define RING_F_AT_EXIT 32u

typedef struct ring_record {
  uint32_t slot; /* thread-table slot index */
  uint32_t gen;  /* that slot's generation when sampled */
  uintptr_t sp;  /* interrupted stack pointer */
  uint16_t depth;
  uint16_t flags;
  uint16_t nlabels;
  uint16_t labels_len;
  uint32_t weight;               /* timer periods this sample stands for: 1 + si_overrun */
  int32_t defer;                 /* RING_F_DEFERRED: the deferred.h slot */
  int64_t period_ns;             /* the timer interval a weight stands for; 0: the collector's */
  uintptr_t pcs[RING_MAX_DEPTH]; /* leaf first */
  char labels[RING_LABEL_BYTES];
} ring_record;

typedef struct ring_cell {
  _Atomic uint64_t seq; /* stored as seq - cell index: zero is fresh */
  ring_record rec;
} ring_cell;

typedef struct ring {
  _Alignas(64) _Atomic uint64_t head; /* next position producers claim */
  _Alignas(64) uint64_t tail;         /* next position the consumer reads */
  _Alignas(64) _Atomic uint64_t drops;
  uint64_t mask;
  ring_cell *cells;
} ring;

/* ncells must be a power of two >= 2; cells is owned by the caller, must be
 * zeroed (static storage, calloc) and must outlive every producer. The cells
 * are not touched: their pages stay untouched until samples use them. Not
 * thread-safe (no producer may run). */
int ring_init(ring *r, ring_cell *cells, size_t ncells);

/* Empties an initialised ring, as fresh as ring_init left it, writing only
 * the cells used since. Not thread-safe (no producer may run). */
void ring_reset(ring *r);

/* Claims the next cell; NULL (drop counted) if full or contended. On success
 * the caller fills the record and calls ring_commit(r, *pos). */
ring_record *ring_reserve(ring *r, uint64_t *pos);
void ring_commit(ring *r, uint64_t pos);

/* Consumer only: next committed record in order, or NULL if none is ready
 * (a producer may still be filling it). ring_release frees it. */
const ring_record *ring_peek(ring *r);
void ring_release(ring *r);

/* Consumer only: 1 if a position was claimed that ring_release has not
 * freed yet (a record committed, or still being written). */
int ring_busy(const ring *r);

/* Drops since ring_init. Async-signal-safe. */
uint64_t ring_drops(const ring *r);
#endif
