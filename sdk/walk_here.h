/* Walking the calling thread's own stack outside a signal handler: the
 * sampled paths of the heap, off-CPU and lock profilers, which run on the
 * thread that allocated or waited. */
#ifndef PUSHPROF_WALK_HERE_H
#define PUSHPROF_WALK_HERE_H
#include <stdint.h>

#include "unwind.h"

/* The calling thread's stack: the bounds its registration published, or
 * the main thread's. 0, or -1 if not known yet (the thread is usually
 * being registered right now: ask again later). Never pthread_getattr_np:
 * it allocates while holding the thread's lock, and the caller may be
 * inside malloc. */
int walk_here_bounds(uintptr_t *lo, uintptr_t *hi);

/* The executable segment of the loaded object that holds code: 0 with
 * [*lo, *hi), or -1. */
int walk_here_code_range(const void *code, uintptr_t *lo, uintptr_t *hi);

/* Copies the n return addresses of raw into pcs without the profiler's own
 * frames on top: those before the first frame in [lo, hi) (an interposer
 * library's code) and the interposer's. A stack with no interposer frame in
 * its first few is copied whole (tests call the profilers directly).
 * Returns how many were copied. */
uint32_t walk_here_strip(const uintptr_t *raw, uint32_t n, uintptr_t lo, uintptr_t hi,
                         uintptr_t *pcs);

/* Sets r (an unwind_regs) to the registers where the macro is used: the
 * walk starts in the function that uses it, which must not be inlined. */
#if defined(__x86_64__)
#define WALK_HERE_REGS(r)                                                                          \
  __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"                            \
                   : "=r"((r).pc), "=r"((r).sp), "=r"((r).fp))
#elif defined(__aarch64__)
#define WALK_HERE_REGS(r)                                                                          \
  __asm__ volatile("adr %0, .\n\tmov %1, sp\n\tmov %2, x29\n\tmov %3, x30"                         \
                   : "=r"((r).pc), "=r"((r).sp), "=r"((r).fp), "=r"((r).lr))
#endif
#endif
