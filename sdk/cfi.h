/* DWARF call frame information (.eh_frame, .debug_frame) compiled into a
 * compact, sorted table of unwind rows that the signal handler can
 * binary-search (unwind.c). Building parses and allocates and runs only on
 * the SDK's own threads; a built table is immutable and is read without
 * locks. Not async-signal-safe except cfi_lookup.
 *
 * A row covers [pc, next row's pc) and says, for a PC there:
 *   CFA = SP + cfa_off or FP + cfa_off (or the PLT / signal-frame rules);
 *   caller's FP at CFA + fp_off (or unchanged, or lost);
 *   return address at CFA + ra_off (or beside the caller's FP, or still in
 *   the link register).
 * Anything the CFI says that is not one of these is an explicit
 * CFI_UNKNOWN row, where the unwinder falls back to frame pointers. */
#ifndef PUSHPROF_CFI_H
#define PUSHPROF_CFI_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum cfi_kind {
  CFI_GAP = 0,    /* no FDE covers this address */
  CFI_CFA_SP = 1, /* CFA = SP + cfa_off */
  CFI_CFA_FP = 2, /* CFA = FP + cfa_off */
  CFI_PLT = 3,    /* x86-64 lazy PLT: CFA = SP + 8 + ((PC & 15) >= cfa_off ? 8 : 0) */
  CFI_SIGNAL = 4, /* signal trampoline: registers are in the ucontext at SP */
  CFI_END = 5,    /* return address undefined: the outermost frame */
  CFI_UNKNOWN = 6 /* a rule we do not follow (expression, other register) */
};

#define CFI_FP_SAME INT16_MIN       /* caller's FP = this frame's FP */
#define CFI_FP_LOST (INT16_MIN + 1) /* caller's FP cannot be recovered */
#define CFI_RA_LINKREG 0            /* ra_off8 == 0: RA still in the link register */
/* ra_off8 == CFI_RA_BESIDE_FP: RA at CFA + fp_off + 8, the caller's FP and
 * RA saved as a pair (aarch64's frame record, at the bottom of a frame that
 * may be too big for ra_off8). */
#define CFI_RA_BESIDE_FP INT8_MIN

typedef struct cfi_row {
  uint32_t pc;     /* offset from the table's base */
  int32_t cfa_off; /* bytes (CFI_PLT: the threshold) */
  int16_t fp_off;  /* bytes from CFA, or CFI_FP_SAME / CFI_FP_LOST */
  uint8_t kind;    /* enum cfi_kind */
  int8_t ra_off8;  /* RA at CFA + 8 * ra_off8; CFI_RA_LINKREG, CFI_RA_BESIDE_FP */
} cfi_row;

/* log2 of the page size of the lookup index: page_first[i] is the first row
 * whose range may hold an address in page i, so a lookup searches a few
 * rows instead of the whole table. */
#define CFI_PAGE_SHIFT 12

typedef struct cfi_table {
  uintptr_t base;      /* row pcs are offsets from here (the object's load bias) */
  uintptr_t lo, hi;    /* addresses covered: [base + first pc, base + end) */
  uint32_t nrows;      /* the last row is a CFI_GAP that ends the table */
  uint32_t npages;     /* pages of the index, from lo rounded down */
  const cfi_row *rows; /* sorted by pc, no two rows with the same pc */
  const uint32_t *page_first;
  size_t bytes; /* memory held by the table, for statistics */
} cfi_table;

/* What one build saw; every skipped entry is counted, never silent. */
typedef struct cfi_stats {
  uint32_t cies, fdes;   /* well-formed entries */
  uint32_t bad_entries;  /* malformed CIE/FDE skipped (length, encoding, CIE pointer) */
  uint32_t bad_ops;      /* FDEs whose instructions stopped at an unknown or truncated op */
  uint32_t unknown_rows; /* rows of kind CFI_UNKNOWN */
  uint32_t overlaps;     /* FDEs overlapping an earlier one (later one trimmed) */
} cfi_stats;

/* Where the bytes come from: .eh_frame (CIE id 0, pc-relative pointers,
 * augmentations) or .debug_frame (CIE id 0xffffffff, absolute addresses). */
enum cfi_source { CFI_EH_FRAME = 0, CFI_DEBUG_FRAME = 1 };

/* Builds a table from one section's bytes. data/len: a private copy of the
 * section; data_addr: the address the section has in the process (for
 * pc-relative pointers; for .debug_frame, the address its link-time
 * addresses are relative to, i.e. base); base: the object's load bias (row
 * pcs are stored relative to it). A table with no rows is still returned
 * (nrows 0, lo == hi). cancel (may be NULL) is polled every few hundred
 * FDEs: once it reads non-zero the build stops and returns -2. 0, or -1 on
 * allocation failure (*out NULL). The table and everything it points to is
 * one allocation: free(*out). Thread-safe (no shared state); not
 * async-signal-safe. */
int cfi_build(const uint8_t *data, size_t len, uintptr_t data_addr, uintptr_t base,
              enum cfi_source src, const _Atomic int *cancel, cfi_table **out, cfi_stats *st);

/* Adds row for [lo, hi) (addresses) to *t where its CFI says nothing: a
 * range no FDE covers, as aarch64's PLT, whose stubs have no FDE. *t is
 * replaced (the old table freed). 0, or -1 when part of the range has a
 * row of its own, the range does not fit the table's offsets, or memory
 * runs out (then *t is unchanged). Not async-signal-safe. */
int cfi_add_range(cfi_table **t, uintptr_t lo, uintptr_t hi, const cfi_row *row);

/* An object's FDEs listed and sorted once (what cfi_build does before it
 * compiles them), so the rows of one FDE can be compiled when a PC needs
 * them: a short process that took a few samples unwinds them without
 * compiling the whole object. Built and used off the signal path. */
typedef struct cfi_index cfi_index;
/* As cfi_build, but takes data (malloc'ed; freed with the index, or here
 * on failure). 0, or -1 on allocation failure (*out NULL). */
int cfi_index_build(uint8_t *data, size_t len, uintptr_t data_addr, uintptr_t base,
                    enum cfi_source src, cfi_index **out);
/* A table of the rows cfi_build gives the FDE that holds pc (its range
 * trimmed as cfi_build trims overlaps), so cfi_lookup on it gives the same
 * rule as on the whole table for every PC of that range; *out NULL when no
 * FDE holds pc. free(*out). 0, or -1 on allocation failure. Not
 * thread-safe with other calls on the same index. */
int cfi_index_table(const cfi_index *ix, uintptr_t pc, cfi_table **out);
void cfi_index_free(cfi_index *ix);

/* The row whose range holds pc, or NULL if pc is outside [lo, hi).
 * Async-signal-safe: bounded search, reads only the table. */
const cfi_row *cfi_lookup(const cfi_table *t, uintptr_t pc);
#endif
