/* Walking the calling thread's own stack (walk_here.h). */
#include "walk_here.h"

#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "threads_linux.h"

/* arg: [0] an address in the object, then its segment's [lo, hi). */
static int find_code(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uintptr_t *slot = arg, here = slot[0];
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
      continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (here >= lo && here < hi) {
      slot[1] = lo;
      slot[2] = hi;
      return 1;
    }
  }
  return 0;
}

int walk_here_code_range(const void *code, uintptr_t *lo, uintptr_t *hi) {
  uintptr_t slot[3] = {(uintptr_t)code, 0, 0};
  if (!code || dl_iterate_phdr(find_code, slot) != 1)
    return -1;
  *lo = slot[1];
  *hi = slot[2];
  return 0;
}

#define OWN_FRAMES_MAX 8

uint32_t walk_here_strip(const uintptr_t *raw, uint32_t n, uintptr_t lo, uintptr_t hi,
                         uintptr_t *pcs) {
  uint32_t k = 0;
  while (k < n && k < OWN_FRAMES_MAX && !(raw[k] >= lo && raw[k] < hi))
    k++;
  if (k == n || k == OWN_FRAMES_MAX)
    k = 0;
  while (k < n && raw[k] >= lo && raw[k] < hi)
    k++;
  memmove(pcs, raw + k, (n - k) * sizeof *pcs);
  return n - k;
}

int walk_here_bounds(uintptr_t *lo, uintptr_t *hi) {
  threads_slot *s = threads_self;
  uintptr_t h = s ? atomic_load_explicit(&s->stack_hi, memory_order_acquire) : 0;
  if (h) {
    *lo = atomic_load_explicit(&s->stack_lo, memory_order_relaxed);
    *hi = h;
    return 0;
  }
  if (gettid() == getpid() && threads_main_stack_bounds(lo, hi) == 0)
    return 0;
  return -1;
}
