/* Vyukov-style bounded queue: cell i starts with seq == i. A producer owns
 * position p once seq == p and its CAS on head succeeds, and publishes with
 * seq = p + 1; the consumer reads when seq == tail + 1 and hands the cell
 * back for lap p + ncells with seq = tail + ncells. */
#include "ring.h"

#include <errno.h>

#define RING_MAX_TRIES 16

int ring_init(ring *r, ring_cell *cells, size_t ncells) {
  if (!r || !cells || ncells < 2 || (ncells & (ncells - 1)) != 0)
    return -EINVAL;
  for (size_t i = 0; i < ncells; i++)
    atomic_store_explicit(&cells[i].seq, i, memory_order_relaxed);
  r->cells = cells;
  r->mask = ncells - 1;
  r->tail = 0;
  atomic_store_explicit(&r->drops, 0, memory_order_relaxed);
  atomic_store_explicit(&r->head, 0, memory_order_release);
  return 0;
}

ring_record *ring_reserve(ring *r, uint64_t *pos) {
  uint64_t p = atomic_load_explicit(&r->head, memory_order_relaxed);
  for (int tries = 0; tries < RING_MAX_TRIES; tries++) {
    ring_cell *c = &r->cells[p & r->mask];
    uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
    int64_t dif = (int64_t)(seq - p);
    if (dif == 0) {
      if (atomic_compare_exchange_weak_explicit(&r->head, &p, p + 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        *pos = p;
        return &c->rec;
      }
    } else if (dif < 0) {
      break; /* the consumer has not freed this cell yet: full */
    } else {
      p = atomic_load_explicit(&r->head, memory_order_relaxed);
    }
  }
  atomic_fetch_add_explicit(&r->drops, 1, memory_order_relaxed);
  return NULL;
}

void ring_commit(ring *r, uint64_t pos) {
  atomic_store_explicit(&r->cells[pos & r->mask].seq, pos + 1, memory_order_release);
}

const ring_record *ring_peek(ring *r) {
  ring_cell *c = &r->cells[r->tail & r->mask];
  uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
  if (seq != r->tail + 1)
    return NULL;
  return &c->rec;
}

void ring_release(ring *r) {
  ring_cell *c = &r->cells[r->tail & r->mask];
  atomic_store_explicit(&c->seq, r->tail + r->mask + 1, memory_order_release);
  r->tail++;
}

uint64_t ring_drops(const ring *r) {
  return atomic_load_explicit(&((ring *)r)->drops, memory_order_relaxed);
}
