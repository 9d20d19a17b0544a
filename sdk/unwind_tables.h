/* The process's unwind tables: one cfi_table per loaded object, built from
 * the object's .eh_frame (copied out under the loader's lock, compiled
 * outside it) on the SDK's collector thread, never on the host's threads.
 * An object without .eh_frame gets its .debug_frame, from its own file or
 * a separate debug file found by build id (cfi_elf.h).
 *
 * Publication and reclamation (the handler <-> builder contract):
 * - The set of tables is an immutable array sorted by address, published
 *   by one atomic pointer store (release). A new object, or one gone after
 *   dlclose, makes a new array; tables of objects still loaded are shared
 *   between arrays.
 * - The handler brackets its reads with utab_enter/utab_leave, which count
 *   readers in one atomic counter; it loads the pointer after entering.
 * - The builder frees an old array (and the tables of objects no longer in
 *   the new one) only after it has published the new array and then seen
 *   the reader count at zero: every reader that could hold the old pointer
 *   entered before the store and has left. Until then they wait on a retire
 *   list (a reader stopped inside the handler delays frees, never safety).
 * Functions are thread-safe except where marked collector-only. */
#ifndef PUSHPROF_UNWIND_TABLES_H
#define PUSHPROF_UNWIND_TABLES_H
#include <stddef.h>
#include <stdint.h>

#include "cfi.h"

/* Async-signal-safe: the handler's bracket around utab_find calls. */
void utab_enter(void);
void utab_leave(void);

/* UTAB_PENDING: the object is known but its table is not built yet;
 * UTAB_NO_TABLE: it was tried and the object has no CFI. */
enum { UTAB_UNKNOWN = 0, UTAB_NO_TABLE = 1, UTAB_HAS_TABLE = 2, UTAB_PENDING = 3 };

/* The row for pc, or NULL. *known says whether pc lies in an object the
 * builder has seen and whether that object has a table (UTAB_*): unknown
 * is an object loaded since the last refresh, JIT code or garbage. *hint (NULL at the
 * first call of a walk) remembers the last object found, so the next frame
 * in the same object skips the search; it stays valid until utab_leave.
 * Between enter/leave. Async-signal-safe. */
const cfi_row *utab_find(uintptr_t pc, int *known, const void **hint);

/* The handler asks for tables (they are built only once a process has
 * been sampled). Returns 1 for the call that first asked, so that one call
 * wakes the collector. Async-signal-safe. */
int utab_want(void);
/* 1 once asked. Async-signal-safe. */
int utab_wanted(void);

/* 1 once the first refresh has published tables for the main executable
 * and libc. Async-signal-safe. */
int utab_ready(void);

/* Collector only: notices objects loaded or unloaded since the last call
 * (dl_iterate_phdr's adds/subs counters), builds tables for new ones (the
 * main executable and libc first) and drops tables of those gone. *cancel
 * is polled between objects. Returns the number of objects built. */
int utab_refresh(const _Atomic int *cancel);
/* Collector only: as utab_refresh, but builds the main executable's and
 * libc's tables only (what makes utab_ready true), once; the other objects
 * are published as pending (the handler defers samples that meet them) and
 * wait for the next utab_refresh. Returns the number of objects built. */
int utab_refresh_first(const _Atomic int *cancel);
/* Builds the table of the object holding pc, if it has none yet and is
 * still loaded (a sample taken before the tables, unwound later). Returns 1
 * if a table was built. Not on the handler's path. */
int utab_build_for(uintptr_t pc);
/* Rows on demand for a walk of a deferred stack copy (deferred.h), never
 * the handler: for pc in an object with no table yet, the rule of the
 * one FDE that holds it, compiled now (cfi_index); *known becomes
 * UTAB_HAS_TABLE (the row may be NULL: no FDE holds pc, as a gap in a
 * whole table). Objects without .eh_frame get NULL with *known untouched
 * (they need utab_build_for). A returned row stays valid until the next
 * utab_on_demand_trim. One walk at a time (the collector's drain). */
const cfi_row *utab_row_on_demand(uintptr_t pc, int *known);
/* Before a deferred walk: frees the on-demand rows of objects whose whole
 * table is now built, and all of them when the loader's object list
 * changed since (dlopen, dlclose). */
void utab_on_demand_trim(void);
/* Collector only: frees retired memory if no handler is reading. */
void utab_reclaim(void);

typedef struct utab_stats {
  uint32_t objects, tables; /* objects known; of them, with a table */
  uint64_t rows, bytes;     /* in all tables */
  uint64_t build_ns;        /* total time spent building */
  uint32_t bad_entries, bad_ops, unknown_rows;
  uint32_t retired;        /* blocks waiting for readers to leave */
  uint32_t on_demand;      /* objects with rows compiled on demand, not freed yet */
  uint32_t on_demand_fdes; /* FDEs compiled on demand, in all (since start) */
} utab_stats;
void utab_get_stats(utab_stats *st);

/* Tests: where separate debug files are looked up (NULL: /usr/lib/debug). */
void utab_set_debug_root_for_tests(const char *dir);

/* fork child: no other thread exists, so no reader is inside. */
void utab_atfork_child(void);
#endif
