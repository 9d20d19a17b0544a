/* Gauge columns of a batch. A sample type whose name starts with "inuse_"
 * (Go's heap profile: inuse_objects, inuse_space) is the state of its
 * process at the moment of the push, not an amount over the push's window:
 * added over a batch's pushes it would count a process's live heap once
 * per push. So a batch keeps each process's latest push and adds its gauge
 * columns once, when the batch is sealed: the batch's gauge values are the
 * sum over processes of each one's latest. The other columns (alloc_*, and
 * every column of a CPU profile) add up over every push, as they always
 * did; a profile without gauge columns never comes here.
 *
 * A process is its hostname, pid and process_start_time_nanos; a push with
 * pid 0 names no process and counts as one of its own. Its latest push is
 * the one whose window ends last (end_time_nanos), then the one with the
 * highest sequence, then the last to arrive. That order does not depend on
 * the order a restart replays the spool in, and after an exec (which keeps
 * the pid and the start time, and counts sequences from 1 again) the new
 * image's heap wins.
 *
 * Not thread-safe: the batcher calls it under its lock, or on a group it
 * marked busy. */
#ifndef SIDECAR_BATCHER_GAUGE_H
#define SIDECAR_BATCHER_GAUGE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pp_builder.h"
#include "pp_push.h"

/* Which columns of a group's profiles are gauges (the group's key holds
 * its sample types, so one set serves every push of the group). */
typedef struct gauge_cols {
  bool *counter; /* n entries: the columns every push adds */
  bool *gauge;   /* n entries: the others */
  size_t n, ngauge;
} gauge_cols;

/* Fills c from p's sample types; c->ngauge is 0 when p has no gauge column.
 * 0, or -1 on ENOMEM. */
int batcher_gauge_cols(gauge_cols *c, const Perftools__Profiles__Profile *p);
void batcher_gauge_cols_free(gauge_cols *c);

typedef struct gauge_proc gauge_proc;

/* The latest push of each process of one group, as a packed pprof of its
 * gauge columns. Zeroed memory is empty. */
typedef struct gauge_latest {
  gauge_proc *procs;
  size_t n, cap;
  size_t mem; /* heap bytes it holds: the packed profiles and its table */
} gauge_latest;

/* Offers push (a profile with c's columns; its counter columns merged into
 * the batch by the caller) as its process's latest: when it is, its gauge
 * columns are packed and kept, replacing the process's earlier ones. 0 (kept,
 * or older than what is kept), or -1 with why when out of memory (s is then
 * as it was: the batch shows this process's heap as of its previous push). */
int batcher_gauge_offer(gauge_latest *s, const gauge_cols *c, const pp_push *push, char *why,
                        size_t whylen);
/* Adds each kept process's gauge columns to b and frees them. 0, or -1 with
 * why (out of memory): the processes not added yet stay kept, and the one
 * being added may be in b in part. */
int batcher_gauge_merge(gauge_latest *s, pp_builder *b, char *why, size_t whylen);
void batcher_gauge_free(gauge_latest *s);
#endif
