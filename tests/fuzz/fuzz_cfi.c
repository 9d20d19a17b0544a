/* cfi_build (sdk/cfi_build.c) on any bytes, read both as .eh_frame and as
 * .debug_frame. A build returns 0 with a table that keeps every invariant of
 * tests/unit/cfi_invariants.h (rows strictly sorted, last row a gap, the
 * page index right, lookups of random addresses landing in the row that
 * holds them), or -1 with no table; with the cancel flag set it may also
 * return -2. Every unknown row in the table was counted. The index
 * (cfi_index) of the same bytes gives, for the table's row boundaries and
 * addresses in between, the same rule from its one-FDE tables. */
#include <stdatomic.h>
#include <string.h>

#include "cfi.h"
#include "cfi_invariants.h"
#include "fuzz_target.h"

/* The rule at pc; a gap where no row (or a gap row) holds it. */
static cfi_row rule_at(const cfi_table *t, uintptr_t pc) {
  const cfi_row *r = t ? cfi_lookup(t, pc) : NULL;
  cfi_row gap = {0, 0, CFI_FP_LOST, CFI_GAP, 0};
  return r && r->kind != CFI_GAP ? *r : gap;
}

static void index_matches(const uint8_t *buf, size_t size, uintptr_t addr, uintptr_t base,
                          enum cfi_source src, const cfi_table *t) {
  uint8_t *copy = malloc(size ? size : 1);
  cfi_index *ix = NULL;
  FUZZ_CHECK(copy != NULL, "out of memory");
  if (size)
    memcpy(copy, buf, size);
  if (cfi_index_build(copy, size, addr, base, src, &ix) != 0)
    return; /* out of memory only */
  for (uint32_t i = 0; i < t->nrows && i < 512; i++) {
    uintptr_t pcs[3] = {t->base + t->rows[i].pc, t->base + t->rows[i].pc - 1,
                        i + 1 < t->nrows ? t->base + t->rows[i + 1].pc - 1 : t->hi};
    for (int k = 0; k < 3; k++) {
      cfi_table *one = NULL;
      FUZZ_CHECK(cfi_index_table(ix, pcs[k], &one) == 0, "cfi_index_table failed");
      cfi_row a = rule_at(t, pcs[k]), b = rule_at(one, pcs[k]);
      FUZZ_CHECK(a.kind == b.kind && a.cfa_off == b.cfa_off && a.fp_off == b.fp_off &&
                     a.ra_off8 == b.ra_off8,
                 "at %#lx: table kind %u cfa %d, index kind %u cfa %d", (unsigned long)pcs[k],
                 a.kind, a.cfa_off, b.kind, b.cfa_off);
      free(one);
    }
  }
  cfi_index_free(ix);
}

static void one(const uint8_t *buf, size_t size, uintptr_t addr, uintptr_t base,
                enum cfi_source src, const _Atomic int *cancel) {
  cfi_table *t = (cfi_table *)&t; /* cfi_build must set it */
  cfi_stats st;
  int rc = cfi_build(buf, size, addr, base, src, cancel, &t, &st);
  FUZZ_CHECK(rc == 0 || rc == -1 || (cancel && rc == -2), "cfi_build returned %d", rc);
  if (rc != 0) {
    FUZZ_CHECK(t == NULL, "a failed build left a table");
    return;
  }
  char msg[256];
  FUZZ_CHECK(cfi_table_check(t, 256, size * 2654435761u + src, msg, sizeof msg) == 0, "%s", msg);
  uint32_t unknown = 0;
  for (uint32_t i = 0; i < t->nrows; i++)
    unknown += t->rows[i].kind == CFI_UNKNOWN;
  FUZZ_CHECK(st.unknown_rows >= unknown, "%u unknown rows, %u counted", unknown, st.unknown_rows);
  FUZZ_CHECK(st.fdes >= (t->nrows ? 1u : 0u), "rows from %u FDEs", st.fdes);
  if (!cancel)
    index_matches(buf, size, addr, base, src, t);
  free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* A copy of exactly size bytes, so ASan sees any read past the end. */
  uint8_t *buf = malloc(size ? size : 1);
  FUZZ_CHECK(buf != NULL, "out of memory");
  if (size)
    memcpy(buf, data, size);
  static _Atomic int cancelled = 1;
  /* a shared object (base 0) and a loaded one (base far above the section) */
  one(buf, size, 0x1a8f40, 0, CFI_EH_FRAME, NULL);
  one(buf, size, 0x7f00001a8f40, 0x7f0000000000, CFI_EH_FRAME, NULL);
  one(buf, size, 0, 0, CFI_DEBUG_FRAME, NULL);
  one(buf, size, 0x555500000000, 0x555500000000, CFI_DEBUG_FRAME, &cancelled);
  free(buf);
  return 0;
}
