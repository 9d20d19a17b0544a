#include "unwind.h"

#include <stddef.h>
#include <ucontext.h>

int unwind_regs_from_ucontext(const void *ucv, unwind_regs *out) {
  const ucontext_t *uc = ucv;
#if defined(__x86_64__)
  out->pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  out->fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
  out->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
  return 0;
#elif defined(__aarch64__)
  out->pc = (uintptr_t)uc->uc_mcontext.pc;
  out->fp = (uintptr_t)uc->uc_mcontext.regs[29];
  out->sp = (uintptr_t)uc->uc_mcontext.sp;
  return 0;
#else
  (void)uc;
  out->pc = out->fp = out->sp = 0;
  return -1;
#endif
}

uint32_t unwind_fp(const unwind_regs *regs, uintptr_t lo, uintptr_t hi, uintptr_t *pcs,
                   uint32_t max, int *truncated) {
  uint32_t depth = 0;
  *truncated = 0;
  if (max == 0)
    return 0;
  pcs[depth++] = regs->pc;
  if (lo == 0 || hi <= lo || hi - lo < 2 * sizeof(uintptr_t) || regs->sp < lo || regs->sp >= hi)
    return depth; /* unknown bounds, or running on another stack */
  uintptr_t fp = regs->fp;
  uintptr_t floor = regs->sp; /* the first frame may sit exactly at sp */
  /* Both words of a frame record ([fp] = caller's fp, [fp+8] = return
   * address, on x86_64 and aarch64 alike) must lie inside the stack. */
  while ((fp & (sizeof(uintptr_t) - 1)) == 0 && fp >= floor && fp <= hi - 2 * sizeof(uintptr_t)) {
    const uintptr_t *frame = (const uintptr_t *)fp;
    uintptr_t next = frame[0], ret = frame[1];
    if (ret == 0)
      break;
    if (depth == max) {
      *truncated = 1;
      break;
    }
    pcs[depth++] = ret;
    floor = fp + 2 * sizeof(uintptr_t); /* strictly upwards: no loops */
    fp = next;
  }
  return depth;
}
