#include "unwind.h"

#include <signal.h>
#include <stddef.h>
#include <ucontext.h>

#include "cfi.h"
#include "unwind_tables.h"

int unwind_regs_from_ucontext(const void *ucv, unwind_regs *out) {
  const ucontext_t *uc = ucv;
#if defined(__x86_64__)
  out->pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  out->fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
  out->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
  out->lr = 0;
  return 0;
#elif defined(__aarch64__)
  out->pc = (uintptr_t)uc->uc_mcontext.pc;
  out->fp = (uintptr_t)uc->uc_mcontext.regs[29];
  out->sp = (uintptr_t)uc->uc_mcontext.sp;
  out->lr = (uintptr_t)uc->uc_mcontext.regs[30];
  return 0;
#else
  (void)uc;
  out->pc = out->fp = out->sp = out->lr = 0;
  return -1;
#endif
}

/* One word of the stack, if 8-aligned and inside [lo, hi). Not instrumented:
 * a slot of another frame may carry a sanitizer's stale poison, and the
 * bounds check is what makes the read safe. */
typedef struct stack_mem {
  uintptr_t lo, hi;    /* the thread's addresses that may be read */
  uintptr_t delta;     /* added to an address to find its bytes (a copy), else 0 */
  unwind_fill_fn fill; /* rows where no table is published yet (copies only) */
  /* The stack a signal frame on [lo, hi) may return to (the thread's own
   * stack below its sigaltstack), 0 if none: the walk moves there once. */
  uintptr_t next_lo, next_hi;
} stack_mem;

__attribute__((no_sanitize_address)) static int load_word(const stack_mem *m, uintptr_t addr,
                                                          uintptr_t *out) {
  if ((addr & (sizeof(uintptr_t) - 1)) || addr < m->lo || addr > m->hi - sizeof(uintptr_t))
    return 0;
  *out = *(const uintptr_t *)(addr + m->delta);
  return 1;
}

/* Whether the frame record (saved FP, RA) sits right below the CFA, so a
 * frame-pointer step knows the caller's SP: x86-64's push rbp does; aarch64
 * puts the record at the bottom of the frame, so there the caller's SP is
 * only known to be above it. */
#if defined(__aarch64__)
#define FRAME_RECORD_AT_CFA 0
#else
#define FRAME_RECORD_AT_CFA 1
#endif

/* The return address without a pointer-authentication signature
 * (aarch64 -mbranch-protection: x30 and the saved copy are signed from
 * negate_ra_state on). XPACLRI is a hint: where the CPU has no pointer
 * authentication it does nothing, and addresses there carry no signature. */
static uintptr_t strip_ra(uintptr_t ra) {
#if defined(__aarch64__)
  register uintptr_t x30 __asm__("x30") = ra;
  __asm__("hint 7" : "+r"(x30)); /* xpaclri */
  return x30;
#else
  return ra;
#endif
}

/* A signal frame: the registers of the interrupted code are in the
 * kernel's ucontext on the stack. x86-64: it sits at sp when the trampoline
 * (__restore_rt) is the return address. aarch64: sp points to the
 * rt_sigframe, a siginfo_t followed by the ucontext, and x29 to the frame
 * record the kernel puts after it, which holds the interrupted x29 and x30. */
typedef struct sig_regs {
  uintptr_t pc, sp, fp, lr;
} sig_regs;

static int signal_frame(const stack_mem *m, uintptr_t sp, sig_regs *out) {
#if defined(__x86_64__)
  uintptr_t g = sp + offsetof(ucontext_t, uc_mcontext.gregs);
  out->lr = 0;
  return load_word(m, g + REG_RIP * sizeof(greg_t), &out->pc) &&
         load_word(m, g + REG_RSP * sizeof(greg_t), &out->sp) &&
         load_word(m, g + REG_RBP * sizeof(greg_t), &out->fp);
#elif defined(__aarch64__)
  uintptr_t mc = sp + sizeof(siginfo_t) + offsetof(ucontext_t, uc_mcontext);
  return load_word(m, mc + offsetof(mcontext_t, pc), &out->pc) &&
         load_word(m, mc + offsetof(mcontext_t, sp), &out->sp) &&
         load_word(m, mc + offsetof(mcontext_t, regs[29]), &out->fp) &&
         load_word(m, mc + offsetof(mcontext_t, regs[30]), &out->lr);
#else
  (void)m, (void)sp, (void)out;
  return 0;
#endif
}

/* aarch64: a return address into a sigreturn trampoline that no CFI
 * covers (qemu-user's, or a vDSO without a table) is recognised by the
 * frame itself: fp points to the kernel's frame record above the
 * ucontext at sp, and that record repeats the ucontext's x29 and x30.
 * Only stack words are read, never the code at the return address. */
static int unlisted_signal_frame(const stack_mem *m, uintptr_t sp, uintptr_t fp) {
#if defined(__aarch64__)
  sig_regs r;
  uintptr_t rec_fp, rec_lr;
  if (fp < sp + sizeof(siginfo_t) + sizeof(ucontext_t) || !signal_frame(m, sp, &r) ||
      !load_word(m, fp, &rec_fp) || !load_word(m, fp + 8, &rec_lr))
    return 0;
  return r.pc != 0 && rec_fp == r.fp && rec_lr == r.lr;
#else
  (void)m, (void)sp, (void)fp;
  return 0;
#endif
}

static uint32_t walk(const unwind_regs *regs, const stack_mem *mem, uintptr_t *pcs, uint32_t max,
                     unsigned *flags, uintptr_t *missing) {
  stack_mem cur = *mem; /* its bounds change at most once, at a signal frame */
  const stack_mem *m = &cur;
  uintptr_t lo = m->lo, hi = m->hi;
  *flags = 0;
  if (max == 0)
    return 0;
  uint32_t depth = 0;
  pcs[depth++] = regs->pc;
  if (lo == 0 || hi <= lo || hi - lo < 2 * sizeof(uintptr_t) || regs->sp < lo || regs->sp >= hi)
    return depth; /* unknown bounds, or running on another stack */
  uintptr_t pc = regs->pc, sp = regs->sp, fp = regs->fp;
  uintptr_t lr = regs->lr; /* known for interrupted frames only, else 0 */
  int sp_known = 1;        /* 0: sp is a lower bound (after a frame-pointer step) */
  int exact = 1;           /* pc is where the thread is, not a return address */
  const void *hint = NULL;
  uintptr_t last_key = 0;
  const cfi_row *last_row = NULL;
  int last_known = UTAB_UNKNOWN;
  utab_enter();
  for (;;) {
    /* Recursion repeats a return address frame after frame: the last
     * lookup is reused, never searched again. */
    uintptr_t key = exact ? pc : pc - 1;
    if (key != last_key) {
      last_row = utab_find(key, &last_known, &hint);
      if (m->fill && last_known != UTAB_HAS_TABLE && last_known != UTAB_NO_TABLE)
        last_row = m->fill(key, &last_known);
      last_key = key;
    }
    const cfi_row *row = last_row;
    int known = last_known;
    unsigned kind = row ? row->kind : CFI_GAP;
    uintptr_t cfa = 0, ra = 0, nfp = fp, nsp;
    if (kind == CFI_END) {
      *flags |= UNWIND_F_END;
      break; /* the outermost frame (_start, clone) */
    }
    if (kind != CFI_SIGNAL && kind != CFI_CFA_SP && kind != CFI_CFA_FP && kind != CFI_PLT &&
        !exact && unlisted_signal_frame(m, sp, fp))
      kind = CFI_SIGNAL;
    if (kind == CFI_CFA_SP && !sp_known)
      kind = CFI_UNKNOWN; /* a CFA from a guessed SP would be garbage: FP step */
    uintptr_t nlr = 0;
    int nsp_known = 1;
    if (kind == CFI_SIGNAL) {
      sig_regs r;
      if (!signal_frame(m, sp, &r))
        break;
      ra = r.pc, nsp = r.sp, nfp = r.fp, nlr = r.lr;
      if (nsp < lo || nsp >= hi) {
        /* A handler on the sigaltstack returns to the interrupted code on
         * the thread's own stack: go on there, with its bounds. */
        if (cur.next_hi <= cur.next_lo || nsp < cur.next_lo || nsp >= cur.next_hi)
          break;
        lo = cur.lo = cur.next_lo;
        hi = cur.hi = cur.next_hi;
        cur.next_lo = cur.next_hi = 0;
      }
      exact = 1;
    } else if (kind == CFI_CFA_SP || kind == CFI_CFA_FP || kind == CFI_PLT) {
      if (kind == CFI_CFA_SP)
        cfa = sp + (uintptr_t)(intptr_t)row->cfa_off;
      else if (kind == CFI_CFA_FP)
        cfa = fp + (uintptr_t)(intptr_t)row->cfa_off;
      else
        cfa = sp + 8 + ((pc & 15) >= (uintptr_t)row->cfa_off ? 8 : 0);
      /* A frameless aarch64 leaf keeps its RA in x30 and CFA = SP: the
       * one step that need not move SP, taken once per interrupted frame. */
      int in_lr = row->ra_off8 == CFI_RA_LINKREG;
      if (cfa < sp || (cfa == sp && !in_lr) || cfa > hi)
        break;
      if (row->ra_off8 == CFI_RA_LINKREG) {
        if (!lr)
          break; /* the link register holds the RA of an interrupted frame only */
        ra = lr;
      } else {
        intptr_t off = row->ra_off8 == CFI_RA_BESIDE_FP ? (intptr_t)row->fp_off + 8
                                                        : (intptr_t)row->ra_off8 * 8;
        if (!load_word(m, cfa + (uintptr_t)off, &ra))
          break;
      }
      ra = strip_ra(ra);
      if (row->fp_off == CFI_FP_LOST)
        nfp = 0;
      else if (row->fp_off != CFI_FP_SAME &&
               !load_word(m, cfa + (uintptr_t)(intptr_t)row->fp_off, &nfp))
        nfp = 0;
      nsp = cfa;
      exact = 0;
    } else {
      /* No row we can follow: one frame-pointer step, if plausible. */
      if (known != UTAB_HAS_TABLE) {
        if (!(*flags & UNWIND_F_NO_TABLE) && missing)
          *missing = exact ? pc : pc - 1;
        *flags |= UNWIND_F_NO_TABLE;
        if (known != UTAB_NO_TABLE)
          *flags |= UNWIND_F_PENDING; /* a table may come: worth deferring */
      }
      if (fp < sp || !load_word(m, fp, &nfp) || !load_word(m, fp + 8, &ra))
        break;
      ra = strip_ra(ra);
      *flags |= UNWIND_F_FP_STEP;
      nsp = fp + 2 * sizeof(uintptr_t);
      nsp_known = FRAME_RECORD_AT_CFA;
      exact = 0;
    }
    if (ra == 0 || (kind != CFI_SIGNAL && nsp <= sp && !(nsp == sp && lr && !nlr)))
      break;
    if (depth == max) {
      *flags |= UNWIND_F_TRUNCATED;
      break;
    }
    pcs[depth++] = ra;
    pc = ra;
    sp = nsp;
    fp = nfp;
    lr = nlr;
    sp_known = nsp_known;
  }
  utab_leave();
  return depth;
}

uint32_t unwind_stack(const unwind_regs *regs, uintptr_t lo, uintptr_t hi, uintptr_t *pcs,
                      uint32_t max, unsigned *flags) {
  stack_mem m = {lo, hi, 0, NULL, 0, 0};
  return walk(regs, &m, pcs, max, flags, NULL);
}

uint32_t unwind_stack_alt(const unwind_regs *regs, uintptr_t alt_lo, uintptr_t alt_hi, uintptr_t lo,
                          uintptr_t hi, uintptr_t *pcs, uint32_t max, unsigned *flags) {
  stack_mem m = {alt_lo, alt_hi, 0, NULL, lo, hi};
  return walk(regs, &m, pcs, max, flags, NULL);
}

uint32_t unwind_stack_copy(const unwind_regs *regs, const void *copy, size_t len, uintptr_t *pcs,
                           uint32_t max, unsigned *flags, uintptr_t *missing, unwind_fill_fn fill) {
  stack_mem m = {regs->sp, regs->sp + len, (uintptr_t)copy - regs->sp, fill, 0, 0};
  if (missing)
    *missing = 0;
  return walk(regs, &m, pcs, max, flags, missing);
}
