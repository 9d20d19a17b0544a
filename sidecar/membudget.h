/* How --max-memory is spent. The sidecar's resident memory is a fixed part
 * (code, the libraries the exporters load, thread stacks, malloc's arenas
 * at rest), measured once the exporters are up, and a dynamic part that the
 * budget hands out (frames being read, profiles being merged, payloads, the
 * index of pending batches). The dynamic budget is what --max-memory leaves
 * after the fixed part; a guard on the measured RSS refuses new pushes when
 * memory nobody accounted for (fragmentation, libraries' own buffers) would
 * otherwise take the process past --max-memory. All functions are
 * thread-safe. */
#ifndef SIDECAR_MEMBUDGET_H
#define SIDECAR_MEMBUDGET_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The smallest dynamic budget that still holds a few default-sized frames
 * and a merge in progress. */
#define MEMBUDGET_MIN_DYNAMIC ((uint64_t)8 << 20)

/* Resident set size of this process in bytes (/proc/self/statm), -1 if it
 * cannot be read. */
int64_t membudget_rss(void);

/* Splits max bytes given a measured fixed part: *dynamic = max - fixed.
 * -1 with a message naming --max-memory and the value that would do when
 * that is under MEMBUDGET_MIN_DYNAMIC. */
int membudget_split(uint64_t max, uint64_t fixed, uint64_t *dynamic, char *err, size_t errlen);

/* Arms the RSS guard: from now on membudget_over() is true while the RSS is
 * above limit (0 disarms it). */
void membudget_guard(uint64_t limit);
/* True while the measured RSS is over the guard's limit. Reads the RSS at
 * most once per 10 ms (callers may ask per frame); when over, first asks
 * malloc to give free memory back (at most once per 100 ms) and measures
 * again. */
bool membudget_over(void);
/* The guard's limit (0: disarmed). */
uint64_t membudget_guard_limit(void);
#endif
