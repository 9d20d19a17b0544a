/* The invariants of a built cfi_table (sdk/cfi.h), checked by test_cfi_build and
 * by the fuzz target fuzz_cfi after every successful build: rows strictly
 * sorted, the last row a CFI_GAP, the page index pointing at the right rows,
 * and cfi_lookup returning, for addresses in [lo, hi), the row whose range
 * holds them (NULL outside). Header-only: both executables include it. */
#ifndef PUSHPROF_CFI_INVARIANTS_H
#define PUSHPROF_CFI_INVARIANTS_H
#include <stdint.h>
#include <stdio.h>

#include "cfi.h"

static inline uint64_t cfi_inv_rand(uint64_t *s) {
  *s ^= *s << 13; /* xorshift64: deterministic, seeded by the caller */
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* 0 when t keeps every invariant; else -1 with the first broken one in msg.
 * probes: how many random addresses to look up (besides every row's edges). */
static inline int cfi_table_check(const cfi_table *t, unsigned probes, uint64_t seed, char *msg,
                                  size_t msglen) {
  msg[0] = 0;
  if (!t)
    return snprintf(msg, msglen, "no table"), -1;
  if (t->nrows == 0) {
    if (t->lo != t->hi || t->npages != 0)
      return snprintf(msg, msglen, "empty table with lo %#lx hi %#lx npages %u",
                      (unsigned long)t->lo, (unsigned long)t->hi, t->npages),
             -1;
    if (cfi_lookup(t, t->lo) != NULL || cfi_lookup(t, 0) != NULL)
      return snprintf(msg, msglen, "lookup in an empty table found a row"), -1;
    return 0;
  }
  const cfi_row *r = t->rows;
  uint32_t n = t->nrows;
  if (n < 2)
    return snprintf(msg, msglen, "%u rows: a table has at least one row and its end", n), -1;
  if (r[n - 1].kind != CFI_GAP)
    return snprintf(msg, msglen, "last row has kind %u, not CFI_GAP", r[n - 1].kind), -1;
  if (r[0].kind == CFI_GAP)
    return snprintf(msg, msglen, "the first row is a CFI_GAP"), -1;
  for (uint32_t i = 0; i < n; i++) {
    if (i && r[i].pc <= r[i - 1].pc)
      return snprintf(msg, msglen, "rows %u and %u not strictly sorted (%#x, %#x)", i - 1, i,
                      r[i - 1].pc, r[i].pc),
             -1;
    if (r[i].kind > CFI_UNKNOWN)
      return snprintf(msg, msglen, "row %u has kind %u", i, r[i].kind), -1;
  }
  if (t->lo != t->base + r[0].pc || t->hi != t->base + r[n - 1].pc)
    return snprintf(msg, msglen, "lo/hi %#lx/%#lx do not match the rows", (unsigned long)t->lo,
                    (unsigned long)t->hi),
           -1;
  uintptr_t pg0 = t->lo >> CFI_PAGE_SHIFT;
  uint32_t want_pages = (uint32_t)(((t->hi - 1) >> CFI_PAGE_SHIFT) - pg0 + 1);
  if (t->npages != want_pages)
    return snprintf(msg, msglen, "npages %u, want %u", t->npages, want_pages), -1;
  size_t min_bytes = sizeof *t + (size_t)n * sizeof *r + (size_t)t->npages * sizeof(uint32_t);
  if (t->bytes < min_bytes)
    return snprintf(msg, msglen, "bytes %zu below the %zu the arrays need", t->bytes, min_bytes),
           -1;
  for (uint32_t i = 0; i < t->npages; i++) {
    uintptr_t start = (pg0 + i) << CFI_PAGE_SHIFT;
    uint32_t f = t->page_first[i];
    if (f >= n - 1)
      return snprintf(msg, msglen, "page %u: first row %u past the last range", i, f), -1;
    if (i && f < t->page_first[i - 1])
      return snprintf(msg, msglen, "page %u: first row %u before page %u's", i, f, i - 1), -1;
    uintptr_t key = start < t->lo ? t->lo : start;
    if (t->base + r[f].pc > key || t->base + r[f + 1].pc <= key)
      return snprintf(msg, msglen, "page %u: row %u does not hold the page's first address", i, f),
             -1;
  }
  if (t->lo > 0 && cfi_lookup(t, t->lo - 1) != NULL)
    return snprintf(msg, msglen, "lookup below lo found a row"), -1;
  if (cfi_lookup(t, t->hi) != NULL)
    return snprintf(msg, msglen, "lookup at hi found a row"), -1;
  uint64_t s = seed | 1;
  uint64_t span = (uint64_t)(t->hi - t->lo);
  for (uint64_t k = 0; k < probes + 2ull * (n - 1); k++) {
    uintptr_t pc;
    if (k < 2ull * (n - 1)) /* every range's first and last byte */
      pc = t->base + (k & 1 ? r[k / 2 + 1].pc - 1u : r[k / 2].pc);
    else
      pc = t->lo + (uintptr_t)(cfi_inv_rand(&s) % span);
    const cfi_row *got = cfi_lookup(t, pc);
    if (!got || got < r || got >= r + n - 1)
      return snprintf(msg, msglen, "lookup(%#lx) returned no row or the end row",
                      (unsigned long)pc),
             -1;
    if (t->base + got->pc > pc || t->base + got[1].pc <= pc)
      return snprintf(msg, msglen, "lookup(%#lx) returned row %ld [%#x, %#x)", (unsigned long)pc,
                      (long)(got - r), got->pc, got[1].pc),
             -1;
  }
  return 0;
}
#endif
