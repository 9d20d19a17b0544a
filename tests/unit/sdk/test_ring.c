/* The sample ring: order, drops when full, in-order publication, and many
 * producers against one consumer (run under TSan too). */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pp_test.h"
#include "ring.h"

static ring_cell small_cells[8];

/* ring_init wants zeroed cells: each test starts from fresh ones. */
static ring_cell *fresh_cells(void) {
  memset(small_cells, 0, sizeof small_cells);
  return small_cells;
}

static void test_ring_rejects_bad_sizes(void) {
  ring r;
  PP_CHECK_INT(ring_init(&r, small_cells, 6), <, 0);
  PP_CHECK_INT(ring_init(&r, small_cells, 1), <, 0);
  PP_CHECK_INT(ring_init(&r, NULL, 8), <, 0);
  PP_CHECK_INT(ring_init(&r, small_cells, 8), ==, 0);
}

static void test_ring_fill_drain_in_order(void) {
  ring r;
  PP_CHECK_INT(ring_init(&r, fresh_cells(), 8), ==, 0);
  for (int lap = 0; lap < 3; lap++) {
    for (uint32_t i = 0; i < 8; i++) {
      uint64_t pos;
      ring_record *rec = ring_reserve(&r, &pos);
      PP_CHECK(rec != NULL);
      if (!rec)
        return;
      rec->slot = i + 100 * (uint32_t)lap;
      rec->depth = 1;
      rec->pcs[0] = 0x1000 + i;
      ring_commit(&r, pos);
    }
    for (uint32_t i = 0; i < 8; i++) {
      const ring_record *rec = ring_peek(&r);
      PP_CHECK(rec != NULL);
      if (!rec)
        return;
      PP_CHECK_INT(rec->slot, ==, i + 100 * (uint32_t)lap);
      PP_CHECK_INT(rec->pcs[0], ==, 0x1000 + i);
      ring_release(&r);
    }
    PP_CHECK(ring_peek(&r) == NULL);
  }
  PP_CHECK_INT(ring_drops(&r), ==, 0);
}

static void test_ring_counts_drops_when_full(void) {
  ring r;
  uint64_t pos;
  ring_init(&r, fresh_cells(), 8);
  for (int i = 0; i < 8; i++) {
    ring_record *rec = ring_reserve(&r, &pos);
    PP_CHECK(rec != NULL);
    if (rec)
      ring_commit(&r, pos);
  }
  for (int i = 0; i < 5; i++)
    PP_CHECK(ring_reserve(&r, &pos) == NULL);
  PP_CHECK_INT(ring_drops(&r), ==, 5);
  /* Draining one cell makes room for exactly one more. */
  PP_CHECK(ring_peek(&r) != NULL);
  ring_release(&r);
  PP_CHECK(ring_reserve(&r, &pos) != NULL);
  ring_commit(&r, pos);
  PP_CHECK(ring_reserve(&r, &pos) == NULL);
  PP_CHECK_INT(ring_drops(&r), ==, 6);
}

static void test_ring_consumer_waits_for_uncommitted_cell(void) {
  ring r;
  uint64_t pa, pb;
  ring_init(&r, fresh_cells(), 8);
  ring_record *a = ring_reserve(&r, &pa);
  ring_record *b = ring_reserve(&r, &pb);
  PP_CHECK(a && b);
  if (!a || !b)
    return;
  a->slot = 1;
  b->slot = 2;
  ring_commit(&r, pb);
  PP_CHECK(ring_peek(&r) == NULL); /* a is still being written */
  ring_commit(&r, pa);
  const ring_record *x = ring_peek(&r);
  PP_CHECK(x && x->slot == 1);
  ring_release(&r);
  x = ring_peek(&r);
  PP_CHECK(x && x->slot == 2);
  ring_release(&r);
}

/* A process that never samples must not pay for the ring's pages: ring_init
 * leaves them untouched (not resident), and a reset writes only the cells
 * used since, after which the ring behaves as new. */
static void test_ring_init_touches_no_cell(void) {
  enum { N = 512 };
  long page = sysconf(_SC_PAGESIZE);
  size_t bytes = N * sizeof(ring_cell);
  size_t npages = (bytes + (size_t)page - 1) / (size_t)page;
  ring_cell *cells = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  PP_CHECK(cells != MAP_FAILED);
  if (cells == MAP_FAILED)
    return;
  unsigned char vec[1024];
  PP_CHECK(npages <= sizeof vec);
  ring r;
  PP_CHECK_INT(ring_init(&r, cells, N), ==, 0);
  PP_CHECK_INT(mincore(cells, bytes, vec), ==, 0);
  size_t resident = 0;
  for (size_t i = 0; i < npages; i++)
    resident += vec[i] & 1;
  PP_CHECK_INT(resident, ==, 0);
  /* Three records, then a reset: the untouched tail stays untouched. */
  for (int i = 0; i < 3; i++) {
    uint64_t pos;
    ring_record *rec = ring_reserve(&r, &pos);
    PP_CHECK(rec != NULL);
    if (rec)
      ring_commit(&r, pos);
  }
  ring_reset(&r);
  PP_CHECK_INT(mincore(cells, bytes, vec), ==, 0);
  resident = 0;
  for (size_t i = 0; i < npages; i++)
    resident += vec[i] & 1;
  PP_CHECK_INT(resident, <=, (3 * sizeof(ring_cell) + (size_t)page - 1) / (size_t)page + 1);
  PP_CHECK(ring_peek(&r) == NULL); /* the three are gone */
  PP_CHECK_INT(ring_drops(&r), ==, 0);
  for (uint32_t i = 0; i < N; i++) { /* a whole lap, in order */
    uint64_t pos;
    ring_record *rec = ring_reserve(&r, &pos);
    PP_CHECK(rec != NULL);
    if (!rec)
      break;
    PP_CHECK_INT(pos, ==, i);
    rec->slot = i;
    ring_commit(&r, pos);
  }
  for (uint32_t i = 0; i < N; i++) {
    const ring_record *rec = ring_peek(&r);
    PP_CHECK(rec != NULL && rec->slot == i);
    if (!rec)
      break;
    ring_release(&r);
  }
  munmap(cells, bytes);
}

#define NPROD 4
#define PER_PROD 20000
static ring_cell mp_cells[64];
static ring mp;
static atomic_int producers_left;
static uint64_t produced[NPROD];

static void *producer(void *arg) {
  uint32_t id = (uint32_t)(uintptr_t)arg;
  for (uint64_t i = 0; i < PER_PROD; i++) {
    uint64_t pos;
    ring_record *rec = ring_reserve(&mp, &pos);
    if (!rec)
      continue; /* counted as a drop by the ring */
    rec->slot = id;
    rec->sp = i;
    rec->depth = 2;
    rec->pcs[0] = i * 7 + id;
    rec->pcs[1] = ~rec->pcs[0];
    ring_commit(&mp, pos);
    produced[id]++;
  }
  atomic_fetch_sub(&producers_left, 1);
  return NULL;
}

static void test_ring_many_producers_one_consumer(void) {
  pthread_t t[NPROD];
  uint64_t got[NPROD] = {0};
  int64_t last[NPROD];
  int bad_order = 0, bad_payload = 0;
  PP_CHECK_INT(ring_init(&mp, mp_cells, 64), ==, 0);
  atomic_store(&producers_left, NPROD);
  for (int i = 0; i < NPROD; i++) {
    last[i] = -1;
    PP_CHECK_INT(pthread_create(&t[i], NULL, producer, (void *)(uintptr_t)i), ==, 0);
  }
  for (;;) {
    int done = atomic_load(&producers_left) == 0;
    const ring_record *rec;
    while ((rec = ring_peek(&mp)) != NULL) {
      uint32_t id = rec->slot;
      if (id >= NPROD) {
        bad_payload++;
      } else {
        if ((int64_t)rec->sp <= last[id])
          bad_order++; /* one producer's records arrive in its order */
        last[id] = (int64_t)rec->sp;
        if (rec->depth != 2 || rec->pcs[0] != rec->sp * 7 + id || rec->pcs[1] != ~rec->pcs[0])
          bad_payload++;
        got[id]++;
      }
      ring_release(&mp);
    }
    if (done)
      break;
  }
  for (int i = 0; i < NPROD; i++)
    pthread_join(t[i], NULL);
  uint64_t total_got = 0, total_produced = 0;
  for (int i = 0; i < NPROD; i++) {
    PP_CHECK_INT(got[i], ==, produced[i]);
    total_got += got[i];
    total_produced += produced[i];
  }
  PP_CHECK_INT(bad_order, ==, 0);
  PP_CHECK_INT(bad_payload, ==, 0);
  /* Every attempt is either delivered or counted as a drop. */
  PP_CHECK_INT(total_got + ring_drops(&mp), ==, (uint64_t)NPROD * PER_PROD);
  PP_CHECK_INT(total_produced, >, 0);
  fprintf(stderr, "  delivered %llu, dropped %llu\n", (unsigned long long)total_got,
          (unsigned long long)ring_drops(&mp));
}

int main(void) {
  PP_RUN(test_ring_rejects_bad_sizes);
  PP_RUN(test_ring_fill_drain_in_order);
  PP_RUN(test_ring_counts_drops_when_full);
  PP_RUN(test_ring_consumer_waits_for_uncommitted_cell);
  PP_RUN(test_ring_init_touches_no_cell);
  PP_RUN(test_ring_many_producers_one_consumer);
  PP_DONE();
}
