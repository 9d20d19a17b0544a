/* Compiles .eh_frame / .debug_frame into cfi.h's unwind rows.
 * Two passes: (1) walk every entry, bounds-checked, and list the FDEs
 * (address range, where their bytes are); (2) sort them by address and run
 * each one's CIE initial instructions then its own, emitting a row at every
 * location advance. Only the rules the unwinder can follow are kept (CFA
 * from SP or FP plus an offset, the caller's FP and the return address
 * saved at CFA + n); everything else becomes an explicit CFI_UNKNOWN row.
 * Every read is checked against the entry's end: bad input costs the entry,
 * never the build. */
#include "cfi.h"

#include <stdlib.h>
#include <string.h>

#if defined(__aarch64__)
#define REG_SP 31u
#define REG_FP 29u
#else /* x86-64 DWARF numbering */
#define REG_SP 7u
#define REG_FP 6u
#endif

#define STATE_STACK 16 /* remember_state depth */

enum { R_UNDEF, R_SAME, R_OFFSET, R_OTHER };                  /* register rules we tell apart */
enum { CFA_REG, CFA_PLT, CFA_OTHER };                         /* CFA rules */
enum { PE_OMIT = 0xff, PE_PCREL = 0x10, PE_INDIRECT = 0x80 }; /* DW_EH_PE_* bits used */

typedef struct reader {
  const uint8_t *p, *end;
  int bad;
} reader;

typedef struct reg_rule {
  uint8_t how;
  int64_t off;
} reg_rule;

typedef struct cfa_state {
  uint8_t how;
  uint32_t reg;
  int64_t off; /* CFA_PLT: the threshold */
  reg_rule fp, ra;
} cfa_state;

typedef struct cie_info {
  uint64_t code_align;
  int64_t data_align;
  uint32_t ra_reg;
  uint8_t fde_enc, signal, has_z, addr_size;
  const uint8_t *init, *init_end;
} cie_info;

typedef struct fde_ref {
  uint64_t lo, hi; /* offsets from base */
  uint32_t off;    /* entry start in the section */
  uint32_t cie;    /* its CIE: an index into the cie_set */
} fde_ref;

/* The rows, written straight into the table's block (after its header):
 * cap is an upper bound on the rows the FDEs can emit, so the vector never
 * grows and finish() only trims the block. */
typedef struct row_vec {
  cfi_table *block;
  cfi_row *v;
  size_t n, cap;
  int oom;
} row_vec;

typedef struct section {
  const uint8_t *data;
  size_t len;
  uintptr_t addr, base;
  enum cfi_source src;
} section;

static uint8_t rd_u8(reader *r) {
  if (r->p >= r->end) {
    r->bad = 1;
    return 0;
  }
  return *r->p++;
}

static uint64_t rd_fixed(reader *r, size_t n) {
  if ((size_t)(r->end - r->p) < n) {
    r->bad = 1;
    r->p = r->end;
    return 0;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) /* little-endian, as on every target we build for */
    v |= (uint64_t)r->p[i] << (8 * i);
  r->p += n;
  return v;
}

static uint64_t rd_uleb(reader *r) {
  uint64_t v = 0;
  for (unsigned shift = 0;; shift += 7) {
    uint8_t b = rd_u8(r);
    if (r->bad)
      return 0;
    if (shift < 64)
      v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80))
      return v;
    if (shift > 70) { /* longer than any 64-bit value */
      r->bad = 1;
      return 0;
    }
  }
}

static int64_t rd_sleb(reader *r) {
  uint64_t v = 0;
  unsigned shift = 0;
  uint8_t b;
  do {
    b = rd_u8(r);
    if (r->bad)
      return 0;
    if (shift < 64)
      v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
    if (shift > 77) {
      r->bad = 1;
      return 0;
    }
  } while (b & 0x80);
  if (shift < 64 && (b & 0x40))
    v |= ~(uint64_t)0 << shift;
  return (int64_t)v;
}

/* v * align (an operand times the CIE's data alignment factor). A product
 * that does not fit is corrupt CFI: the op fails, instead of the undefined
 * behaviour of a signed overflow. */
static int64_t rd_scaled(reader *r, int64_t v, int64_t align) {
  int64_t out;
  if (__builtin_mul_overflow(v, align, &out)) {
    r->bad = 1;
    return 0;
  }
  return out;
}

/* An unsigned LEB128 operand times align. */
static int64_t rd_uleb_scaled(reader *r, int64_t align) {
  uint64_t v = rd_uleb(r);
  if (v > INT64_MAX) {
    r->bad = 1;
    return 0;
  }
  return rd_scaled(r, (int64_t)v, align);
}

/* A DW_EH_PE-encoded pointer. Applications other than absolute and
 * pc-relative (text/data/func-relative, indirect) are refused: .eh_frame
 * FDEs do not use them for addresses. */
static uint64_t rd_ptr(reader *r, uint8_t enc, const section *s, int apply) {
  uintptr_t field = s->addr + (uintptr_t)(r->p - s->data);
  uint64_t v;
  switch (enc & 0x0f) {
  case 0x00:
    v = rd_fixed(r, 8);
    break;
  case 0x01:
    v = rd_uleb(r);
    break;
  case 0x02:
    v = rd_fixed(r, 2);
    break;
  case 0x03:
    v = rd_fixed(r, 4);
    break;
  case 0x04:
    v = rd_fixed(r, 8);
    break;
  case 0x09:
    v = (uint64_t)rd_sleb(r);
    break;
  case 0x0a:
    v = (uint64_t)(int64_t)(int16_t)rd_fixed(r, 2);
    break;
  case 0x0b:
    v = (uint64_t)(int64_t)(int32_t)rd_fixed(r, 4);
    break;
  case 0x0c:
    v = rd_fixed(r, 8);
    break;
  default:
    r->bad = 1;
    return 0;
  }
  if (!apply)
    return v;
  if (enc & PE_INDIRECT) {
    r->bad = 1;
    return 0;
  }
  switch (enc & 0x70) {
  case 0x00:
    return v;
  case PE_PCREL:
    return v + field;
  default:
    r->bad = 1;
    return 0;
  }
}

/* Reads an entry header at off: its length, id and where its body ends.
 * 0 on success, 1 at a terminator, -1 on a malformed header. */
static int entry_header(const section *s, size_t off, reader *body, uint64_t *id, int *is64,
                        size_t *next) {
  reader r = {s->data + off, s->data + s->len, 0};
  uint64_t len = rd_fixed(&r, 4);
  *is64 = 0;
  if (r.bad)
    return -1;
  if (len == 0)
    return 1;
  if (len == 0xffffffffu) {
    len = rd_fixed(&r, 8);
    *is64 = 1;
  }
  if (r.bad || len > (uint64_t)(r.end - r.p))
    return -1;
  body->p = r.p;
  body->end = r.p + len;
  body->bad = 0;
  *next = (size_t)(body->end - s->data);
  *id = rd_fixed(body, *is64 ? 8 : 4);
  return body->bad ? -1 : 0;
}

static int is_cie(const section *s, uint64_t id, int is64) {
  if (s->src == CFI_EH_FRAME)
    return id == 0;
  return is64 ? id == UINT64_MAX : id == 0xffffffffu;
}

static int parse_cie(const section *s, size_t off, cie_info *c) {
  reader r;
  uint64_t id;
  int is64;
  size_t next;
  if (entry_header(s, off, &r, &id, &is64, &next) != 0 || !is_cie(s, id, is64))
    return -1;
  memset(c, 0, sizeof *c);
  c->addr_size = 8;
  uint8_t version = rd_u8(&r);
  if (version != 1 && version != 3 && version != 4)
    return -1;
  const char *aug = (const char *)r.p;
  size_t auglen = strnlen(aug, (size_t)(r.end - r.p));
  if (auglen == (size_t)(r.end - r.p))
    return -1;
  r.p += auglen + 1;
  if (version == 4) {
    c->addr_size = rd_u8(&r);
    if (rd_u8(&r) != 0 || c->addr_size != 8) /* segment selectors, 32-bit: not ours */
      return -1;
  }
  c->code_align = rd_uleb(&r);
  c->data_align = rd_sleb(&r);
  c->ra_reg = version == 1 ? rd_u8(&r) : (uint32_t)rd_uleb(&r);
  c->fde_enc = 0x00; /* absptr unless 'R' says otherwise */
  if (aug[0] == 'z') {
    c->has_z = 1;
    uint64_t zlen = rd_uleb(&r);
    if (r.bad || zlen > (uint64_t)(r.end - r.p))
      return -1;
    reader z = {r.p, r.p + zlen, 0};
    for (size_t i = 1; i < auglen && !z.bad; i++) {
      if (aug[i] == 'R')
        c->fde_enc = rd_u8(&z);
      else if (aug[i] == 'L')
        (void)rd_u8(&z);
      else if (aug[i] == 'P')
        (void)rd_ptr(&z, rd_u8(&z), s, 0);
      else if (aug[i] == 'S')
        c->signal = 1;
      else if (aug[i] != 'B' && aug[i] != 'G')
        break; /* unknown: the length tells where the data ends */
    }
    r.p += zlen;
  } else if (auglen != 0) {
    return -1; /* "eh" and other pre-'z' augmentations: layout unknown */
  }
  if (r.bad || c->code_align == 0)
    return -1;
  c->init = r.p;
  c->init_end = r.end;
  return 0;
}

static void vec_push(row_vec *rv, uint32_t pc, const cfi_row *row, uint32_t floor) {
  if (pc < floor)
    pc = floor; /* trimmed overlap: the state at floor is the last one before it */
  cfi_row nr = *row;
  nr.pc = pc;
  if (rv->n && rv->v[rv->n - 1].pc == pc)
    rv->n--; /* the later state at the same address wins */
  if (rv->n) {
    const cfi_row *l = &rv->v[rv->n - 1];
    if (l->kind == nr.kind && l->cfa_off == nr.cfa_off && l->fp_off == nr.fp_off &&
        l->ra_off8 == nr.ra_off8)
      return; /* same rule: the previous row already covers pc */
  }
  if (rv->n == rv->cap) {
    rv->oom = 1; /* cannot happen: cap bounds the rows (list_fdes) */
    return;
  }
  rv->v[rv->n++] = nr;
}

/* The x86-64 lazy-binding PLT rule gcc/binutils emit:
 * breg7 +8; breg16 +0; lit15; and; litN; ge; lit3; shl; plus. */
static int plt_threshold(const uint8_t *e, uint64_t len) {
#if defined(__x86_64__)
  static const uint8_t pat[11] = {0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x00, 0x2a, 0x33, 0x24, 0x22};
  if (len != sizeof pat)
    return -1;
  for (size_t i = 0; i < sizeof pat; i++)
    if (i != 6 && e[i] != pat[i])
      return -1;
  if (e[6] < 0x30 || e[6] > 0x3f)
    return -1;
  return e[6] - 0x30;
#else
  (void)e;
  (void)len;
  return -1;
#endif
}

static cfi_row make_row(const cfa_state *st, int signal, uint32_t *unknown) {
  cfi_row row = {0, 0, CFI_FP_LOST, CFI_UNKNOWN, 0};
  if (signal) {
    row.kind = CFI_SIGNAL;
    return row;
  }
  if (st->ra.how == R_UNDEF) {
    row.kind = CFI_END;
    return row;
  }
  int ok = 1;
  if (st->how == CFA_PLT) {
    row.kind = CFI_PLT;
    row.cfa_off = (int32_t)st->off;
  } else if (st->how == CFA_REG && (st->reg == REG_SP || st->reg == REG_FP) &&
             st->off >= INT32_MIN && st->off <= INT32_MAX) {
    row.kind = st->reg == REG_SP ? CFI_CFA_SP : CFI_CFA_FP;
    row.cfa_off = (int32_t)st->off;
  } else {
    ok = 0;
  }
  int fp_fits = st->fp.how == R_OFFSET && st->fp.off > CFI_FP_LOST && st->fp.off <= INT16_MAX;
  if (st->ra.how == R_OFFSET && st->ra.off % 8 == 0 && st->ra.off / 8 > INT8_MIN &&
      st->ra.off / 8 <= INT8_MAX && st->ra.off != 0)
    row.ra_off8 = (int8_t)(st->ra.off / 8);
  else if (st->ra.how == R_OFFSET && fp_fits && st->ra.off == st->fp.off + 8)
    row.ra_off8 = CFI_RA_BESIDE_FP;
#if defined(__aarch64__)
  else if (st->ra.how == R_SAME)
    row.ra_off8 = CFI_RA_LINKREG;
#endif
  else
    ok = 0;
  if (st->fp.how == R_SAME)
    row.fp_off = CFI_FP_SAME;
  else if (fp_fits)
    row.fp_off = (int16_t)st->fp.off;
  else
    row.fp_off = CFI_FP_LOST;
  if (!ok) {
    row.kind = CFI_UNKNOWN;
    row.cfa_off = 0;
    row.ra_off8 = 0;
    (*unknown)++;
  }
  return row;
}

/* ra_reg: the CIE's return address column (the rule make_row reads as the
 * return address, whatever its number). */
static reg_rule *rule_for(cfa_state *st, uint64_t reg, uint32_t ra_reg, reg_rule *scratch) {
  if (reg == REG_FP)
    return &st->fp;
  if (reg == ra_reg)
    return &st->ra;
  return scratch; /* a register the unwinder does not restore */
}

typedef struct interp {
  const section *s;
  const cie_info *cie;
  cfa_state st, init;
  cfa_state stack[STATE_STACK];
  int depth;
  uint64_t loc, end; /* offsets from base */
} interp;

/* Runs CFA instructions [p, end). emit != NULL: emits a row before every
 * advance. Returns 0, or -1 at an unknown or truncated instruction. */
static int run_ops(interp *in, const uint8_t *p, const uint8_t *end, row_vec *rv, uint32_t floor,
                   uint32_t *unknown) {
  reader r = {p, end, 0};
  const cie_info *c = in->cie;
  cfa_state *st = &in->st;
  reg_rule scratch;
  while (r.p < r.end) {
    uint8_t op = rd_u8(&r);
    uint64_t reg = 0, adv = 0;
    int advance = 0;
    switch (op & 0xc0) {
    case 0x40:
      adv = (op & 0x3f) * c->code_align;
      advance = 1;
      break;
    case 0x80: {
      reg_rule *rr = rule_for(st, op & 0x3f, c->ra_reg, &scratch);
      rr->how = R_OFFSET;
      rr->off = rd_uleb_scaled(&r, c->data_align);
      break;
    }
    case 0xc0:
      *rule_for(st, op & 0x3f, c->ra_reg, &scratch) =
          *rule_for(&in->init, op & 0x3f, c->ra_reg, &scratch);
      break;
    default:
      switch (op) {
      case 0x00:
        break;     /* nop */
      case 0x01: { /* set_loc */
        uint64_t a = rd_ptr(&r, c->fde_enc, in->s, 1);
        uint64_t rel = in->s->src == CFI_EH_FRAME ? a - in->s->base : a;
        if (rel < in->loc)
          return -1;
        adv = rel - in->loc;
        advance = 1;
        break;
      }
      case 0x02:
        adv = rd_fixed(&r, 1) * c->code_align;
        advance = 1;
        break;
      case 0x03:
        adv = rd_fixed(&r, 2) * c->code_align;
        advance = 1;
        break;
      case 0x04:
        adv = rd_fixed(&r, 4) * c->code_align;
        advance = 1;
        break;
      case 0x05: /* offset_extended */
      case 0x11: /* offset_extended_sf */
      case 0x2f: /* GNU_negative_offset_extended */
      {
        reg = rd_uleb(&r);
        int64_t off = op == 0x11 ? rd_scaled(&r, rd_sleb(&r), c->data_align)
                                 : rd_uleb_scaled(&r, c->data_align);
        reg_rule *rr = rule_for(st, reg, c->ra_reg, &scratch);
        rr->how = R_OFFSET;
        rr->off = op == 0x2f ? rd_scaled(&r, off, -1) : off;
        break;
      }
      case 0x06:
        reg = rd_uleb(&r);
        *rule_for(st, reg, c->ra_reg, &scratch) = *rule_for(&in->init, reg, c->ra_reg, &scratch);
        break;
      case 0x07:
        reg = rd_uleb(&r);
        rule_for(st, reg, c->ra_reg, &scratch)->how = R_UNDEF;
        break;
      case 0x08:
        reg = rd_uleb(&r);
        rule_for(st, reg, c->ra_reg, &scratch)->how = R_SAME;
        break;
      case 0x09: /* register */
        reg = rd_uleb(&r);
        (void)rd_uleb(&r);
        rule_for(st, reg, c->ra_reg, &scratch)->how = R_OTHER;
        break;
      case 0x0a:
        if (in->depth == STATE_STACK)
          return -1;
        in->stack[in->depth++] = *st;
        break;
      case 0x0b: {
        if (in->depth == 0)
          return -1;
        /* DWARF: restore_state brings back the register rules; gcc and
         * every consumer restore the CFA rule with them. */
        *st = in->stack[--in->depth];
        break;
      }
      case 0x0c: /* def_cfa */
        st->how = CFA_REG;
        st->reg = (uint32_t)rd_uleb(&r);
        st->off = (int64_t)rd_uleb(&r);
        break;
      case 0x12: /* def_cfa_sf */
        st->how = CFA_REG;
        st->reg = (uint32_t)rd_uleb(&r);
        st->off = rd_scaled(&r, rd_sleb(&r), c->data_align);
        break;
      case 0x0d: /* def_cfa_register */
        st->reg = (uint32_t)rd_uleb(&r);
        if (st->how != CFA_REG)
          st->how = CFA_OTHER; /* an offset it never had */
        break;
      case 0x0e: /* def_cfa_offset */
        st->off = (int64_t)rd_uleb(&r);
        if (st->how == CFA_PLT)
          st->how = CFA_OTHER;
        break;
      case 0x13: /* def_cfa_offset_sf */
        st->off = rd_scaled(&r, rd_sleb(&r), c->data_align);
        if (st->how == CFA_PLT)
          st->how = CFA_OTHER;
        break;
      case 0x0f: { /* def_cfa_expression */
        uint64_t n = rd_uleb(&r);
        if (r.bad || n > (uint64_t)(r.end - r.p))
          return -1;
        int thr = plt_threshold(r.p, n);
        st->how = thr >= 0 ? CFA_PLT : CFA_OTHER;
        st->off = thr;
        r.p += n;
        break;
      }
      case 0x10: /* expression */
      case 0x16: /* val_expression */
      {
        reg = rd_uleb(&r);
        uint64_t n = rd_uleb(&r);
        if (r.bad || n > (uint64_t)(r.end - r.p))
          return -1;
        r.p += n;
        rule_for(st, reg, c->ra_reg, &scratch)->how = R_OTHER;
        break;
      }
      case 0x14: /* val_offset */
        reg = rd_uleb(&r);
        (void)rd_uleb(&r);
        rule_for(st, reg, c->ra_reg, &scratch)->how = R_OTHER;
        break;
      case 0x15: /* val_offset_sf */
        reg = rd_uleb(&r);
        (void)rd_sleb(&r);
        rule_for(st, reg, c->ra_reg, &scratch)->how = R_OTHER;
        break;
      case 0x2e:
        (void)rd_uleb(&r);
        break; /* GNU_args_size */
      case 0x2d:
        /* aarch64 negate_ra_state: the return address is signed from here
         * (pointer authentication). Where it is saved does not change, and
         * the unwinder strips the signature from every return address. */
        break;
      default:
        return -1;
      }
    }
    if (r.bad)
      return -1;
    if (advance && rv) {
      uint64_t next = in->loc + adv;
      if (next < in->loc)
        return -1; /* wrapped around: rows must not go backwards */
      if (next > in->loc && in->loc < in->end) {
        cfi_row row = make_row(st, c->signal, unknown);
        vec_push(rv, (uint32_t)in->loc, &row, floor);
      }
      in->loc = next;
      if (in->loc >= in->end)
        return 0; /* the rest describes addresses past the FDE */
    }
  }
  return 0;
}

/* The rules before a CIE's instructions. On aarch64 the return address is
 * in x30 at a function's entry and CIEs do not say so (the ABI's default
 * rule is "same value"); x86-64 CIEs always give its rule. */
#if defined(__aarch64__)
static const cfa_state blank = {CFA_OTHER, 0, 0, {R_SAME, 0}, {R_SAME, 0}};
#else
static const cfa_state blank = {CFA_OTHER, 0, 0, {R_SAME, 0}, {R_UNDEF, 0}};
#endif

/* Every CIE of the section, sorted by offset, each parsed and its initial
 * instructions run once however many FDEs use it: re-reading the CIE per
 * FDE made a long CIE cost its length times the FDEs (a 1 MiB CIE program
 * with 100k FDEs never finished). */
typedef struct cie_slot {
  size_t off;
  int8_t state;    /* 0: not read yet, 1: good, -1: malformed */
  int8_t init_bad; /* its initial instructions stopped at a bad op */
  cie_info c;
  cfa_state init; /* the state they leave */
} cie_slot;

typedef struct cie_set {
  cie_slot *v;
  size_t n;
} cie_set;

/* Lists the offsets of the CIEs on the chain of entries; 0, or -1. */
static int list_cies(const section *s, cie_set *cs) {
  size_t cap = 0;
  cs->v = NULL;
  cs->n = 0;
  for (size_t off = 0; off + 4 <= s->len;) {
    reader body;
    uint64_t id;
    int is64;
    size_t next;
    if (entry_header(s, off, &body, &id, &is64, &next) != 0)
      break; /* the terminator or a broken length, as list_fdes */
    if (is_cie(s, id, is64)) {
      if (cs->n == cap) {
        size_t ncap = cap ? cap * 2 : 16;
        cie_slot *nv = realloc(cs->v, ncap * sizeof *nv);
        if (!nv)
          return -1;
        cs->v = nv;
        cap = ncap;
      }
      memset(&cs->v[cs->n], 0, sizeof cs->v[0]);
      cs->v[cs->n++].off = off;
    }
    off = next;
  }
  return 0;
}

/* The CIE at off (read on first use), or NULL if none starts there. */
static cie_slot *cie_get(const section *s, cie_set *cs, size_t off) {
  size_t a = 0, b = cs->n;
  while (a < b) {
    size_t m = a + (b - a) / 2;
    if (cs->v[m].off < off)
      a = m + 1;
    else
      b = m;
  }
  if (a == cs->n || cs->v[a].off != off)
    return NULL;
  cie_slot *c = &cs->v[a];
  if (c->state == 0) {
    c->state = parse_cie(s, off, &c->c) == 0 ? 1 : -1;
    if (c->state == 1) {
      interp in;
      uint32_t unknown = 0;
      in.s = s;
      in.cie = &c->c;
      in.st = blank;
      in.init = blank; /* what DW_CFA_restore in the CIE's own program restores */
      in.depth = 0;
      in.loc = in.end = 0; /* no rows: advances in a CIE mean nothing */
      c->init_bad = run_ops(&in, c->c.init, c->c.init_end, NULL, 0, &unknown) != 0;
      c->init = in.st;
    }
  }
  return c->state == 1 ? c : NULL;
}

static int fde_cmp(const void *a, const void *b) {
  const fde_ref *x = a, *y = b;
  if (x->lo != y->lo)
    return x->lo < y->lo ? -1 : 1;
  if (x->hi != y->hi)
    return x->hi > y->hi ? -1 : 1; /* the longer first: the other is inside it */
  return x->off < y->off ? -1 : x->off > y->off;
}

/* Pass 1: every FDE with a valid CIE and an address range inside the
 * 32-bit offset space above base. *max_rows: a bound on the rows pass 2 can
 * emit: an FDE emits one row per advance op (at least one byte of its entry
 * each), then its last row and its end. */
static int list_fdes(const section *s, cie_set *cs, fde_ref **out, size_t *nout, size_t *max_rows,
                     cfi_stats *st) {
  *max_rows = 0;
  fde_ref *v = NULL;
  size_t n = 0, cap = 0;
  size_t off = 0;
  while (off + 4 <= s->len) {
    reader body;
    uint64_t id;
    int is64;
    size_t next;
    int h = entry_header(s, off, &body, &id, &is64, &next);
    if (h == 1 && s->src == CFI_EH_FRAME)
      break; /* the terminator */
    if (h != 0) {
      st->bad_entries++;
      break; /* a broken length: nothing after it can be trusted */
    }
    if (is_cie(s, id, is64)) {
      st->cies++;
      off = next;
      continue;
    }
    size_t id_pos = off + (is64 ? 12 : 4);
    size_t cie_off;
    if (s->src == CFI_EH_FRAME)
      cie_off = id <= id_pos ? id_pos - (size_t)id : SIZE_MAX;
    else
      cie_off = id < s->len ? (size_t)id : SIZE_MAX;
    const cie_slot *cie = cie_off == SIZE_MAX ? NULL : cie_get(s, cs, cie_off);
    if (!cie) {
      st->bad_entries++;
      off = next;
      continue;
    }
    uint64_t lo = rd_ptr(&body, cie->c.fde_enc, s, 1);
    uint64_t range = rd_ptr(&body, cie->c.fde_enc & 0x0f, s, 0);
    if (s->src == CFI_DEBUG_FRAME)
      lo += s->base;
    if (body.bad || lo < s->base || range > UINT32_MAX || lo - s->base + range > UINT32_MAX) {
      st->bad_entries++;
      off = next;
      continue;
    }
    if (range == 0) { /* an empty FDE (gc'd function): covers nothing */
      off = next;
      continue;
    }
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 256;
      fde_ref *nv = realloc(v, ncap * sizeof *nv);
      if (!nv) {
        free(v);
        return -1;
      }
      v = nv;
      cap = ncap;
    }
    v[n].lo = lo - s->base;
    v[n].hi = v[n].lo + range;
    v[n].off = (uint32_t)off;
    v[n].cie = (uint32_t)(cie - cs->v);
    n++;
    *max_rows += next - off + 2;
    off = next;
  }
  *out = v;
  *nout = n;
  return 0;
}

/* Pass 2 for one FDE: rows for [f->lo, f->hi) above floor. */
static void compile_fde(const section *s, const cie_slot *cie, const fde_ref *f, row_vec *rv,
                        uint32_t floor, cfi_stats *st) {
  reader body;
  uint64_t id;
  int is64;
  size_t next;
  const cie_info *c = &cie->c;
  entry_header(s, f->off, &body, &id, &is64, &next); /* checked in pass 1 */
  (void)rd_ptr(&body, c->fde_enc, s, 1);
  (void)rd_ptr(&body, c->fde_enc & 0x0f, s, 0);
  if (c->has_z) {
    uint64_t zlen = rd_uleb(&body);
    if (body.bad || zlen > (uint64_t)(body.end - body.p))
      body.bad = 1;
    else
      body.p += zlen;
  }
  interp in;
  in.s = s;
  in.cie = c;
  in.st = cie->init;
  in.init = cie->init;
  in.depth = 0;
  in.loc = f->lo;
  in.end = f->hi;
  int bad = body.bad || cie->init_bad;
  if (!bad && run_ops(&in, body.p, body.end, rv, floor, &st->unknown_rows) != 0)
    bad = 1;
  if (bad) {
    st->bad_ops++;
    cfi_row unk = {0, 0, CFI_FP_LOST, CFI_UNKNOWN, 0};
    if (in.loc < in.end) {
      st->unknown_rows++;
      vec_push(rv, (uint32_t)in.loc, &unk, floor);
    }
  } else if (in.loc < in.end) {
    cfi_row row = make_row(&in.st, c->signal, &st->unknown_rows);
    vec_push(rv, (uint32_t)in.loc, &row, floor);
  }
  cfi_row gap = {0, 0, CFI_FP_LOST, CFI_GAP, 0};
  vec_push(rv, (uint32_t)f->hi, &gap, floor);
}

/* Trims rv's block to the table and writes the page index after the rows. */
static cfi_table *finish(row_vec *rv, uintptr_t base) {
  size_t nrows = rv->n;
  uint32_t npages = 0;
  uintptr_t lo = 0, hi = 0;
  if (nrows > 1) {
    lo = base + rv->v[0].pc;
    hi = base + rv->v[nrows - 1].pc;
    uintptr_t pg0 = lo >> CFI_PAGE_SHIFT;
    npages = (uint32_t)(((hi - 1) >> CFI_PAGE_SHIFT) - pg0 + 1);
  } else {
    nrows = 0;
  }
  size_t bytes = sizeof(cfi_table) + nrows * sizeof(cfi_row) + (size_t)npages * sizeof(uint32_t);
  cfi_table *t = realloc(rv->block, bytes); /* the rows stay where they are */
  if (!t)
    return NULL; /* rv->block is still rv's to free */
  rv->block = NULL;
  cfi_row *rows = (cfi_row *)(t + 1);
  uint32_t *pages = (uint32_t *)(rows + nrows);
  /* pages[i]: the last row starting at or below page i's first address */
  uintptr_t pg0 = lo >> CFI_PAGE_SHIFT;
  size_t r = 0;
  for (uint32_t i = 0; i < npages; i++) {
    uintptr_t start = (pg0 + i) << CFI_PAGE_SHIFT;
    while (r + 1 < nrows && base + rows[r + 1].pc <= start)
      r++;
    pages[i] = (uint32_t)r;
  }
  t->base = base;
  t->lo = lo;
  t->hi = hi;
  t->nrows = (uint32_t)nrows;
  t->npages = npages;
  t->rows = rows;
  t->page_first = pages;
  t->bytes = bytes;
  return t;
}

int cfi_add_range(cfi_table **tp, uintptr_t lo, uintptr_t hi, const cfi_row *row) {
  const cfi_table *t = *tp;
  uintptr_t base = t->base;
  if (hi <= lo || lo < base || hi - base > UINT32_MAX)
    return -1;
  uint32_t a = (uint32_t)(lo - base), b = (uint32_t)(hi - base);
  size_t n = t->nrows, i = 0;
  while (i < n && t->rows[i].pc < a)
    i++;
  size_t j = i; /* the first row kept after the range */
  if (j < n && t->rows[j].pc == a) {
    if (t->rows[j].kind != CFI_GAP)
      return -1; /* a row of the CFI's own starts at lo */
    j++;
  } else if (i > 0 && t->rows[i - 1].kind != CFI_GAP) {
    return -1; /* a row of the CFI's own holds lo */
  }
  if (j < n && t->rows[j].pc < b)
    return -1; /* the CFI covers part of the range */
  row_vec rv = {0};
  rv.cap = n + 2;
  rv.block = malloc(sizeof(cfi_table) + rv.cap * sizeof(cfi_row));
  if (!rv.block)
    return -1;
  rv.v = (cfi_row *)(rv.block + 1);
  for (size_t k = 0; k < i; k++)
    vec_push(&rv, t->rows[k].pc, &t->rows[k], 0);
  vec_push(&rv, a, row, 0);
  if (j >= n || t->rows[j].pc != b) {
    cfi_row gap = {0, 0, CFI_FP_LOST, CFI_GAP, 0};
    vec_push(&rv, b, &gap, 0);
  }
  for (size_t k = j; k < n; k++)
    vec_push(&rv, t->rows[k].pc, &t->rows[k], 0);
  cfi_table *out = rv.oom ? NULL : finish(&rv, base);
  free(rv.block);
  if (!out)
    return -1;
  free(*tp);
  *tp = out;
  return 0;
}

int cfi_build(const uint8_t *data, size_t len, uintptr_t data_addr, uintptr_t base,
              enum cfi_source src, const _Atomic int *cancel, cfi_table **out, cfi_stats *st) {
  cfi_stats dummy;
  if (!st)
    st = &dummy;
  memset(st, 0, sizeof *st);
  *out = NULL;
  section s = {data, data ? len : 0, data_addr, base, src};
  fde_ref *fdes = NULL;
  size_t nfdes = 0;
  size_t max_rows;
  cie_set cies;
  if (list_cies(&s, &cies) != 0 || list_fdes(&s, &cies, &fdes, &nfdes, &max_rows, st) != 0) {
    free(cies.v);
    return -1;
  }
  if (nfdes > 1) /* qsort's base must not be NULL, even for 0 elements */
    qsort(fdes, nfdes, sizeof *fdes, fde_cmp);
  row_vec rv = {0};
  rv.block = malloc(sizeof(cfi_table) + max_rows * sizeof(cfi_row));
  if (!rv.block) {
    free(fdes);
    free(cies.v);
    return -1;
  }
  rv.v = (cfi_row *)(rv.block + 1);
  rv.cap = max_rows;
  uint32_t floor = 0;
  for (size_t i = 0; i < nfdes && !rv.oom; i++) {
    if ((i & 255) == 255 && cancel && atomic_load_explicit(cancel, memory_order_relaxed)) {
      free(fdes);
      free(cies.v);
      free(rv.block);
      return -2;
    }
    if (fdes[i].hi <= floor) {
      st->overlaps++; /* wholly inside an earlier FDE */
      continue;
    }
    if (fdes[i].lo < floor)
      st->overlaps++;
    compile_fde(&s, &cies.v[fdes[i].cie], &fdes[i], &rv, floor, st);
    st->fdes++;
    floor = (uint32_t)fdes[i].hi;
  }
  free(fdes);
  free(cies.v);
  if (rv.oom) {
    free(rv.block);
    return -1;
  }
  *out = finish(&rv, base);
  free(rv.block);
  return *out ? 0 : -1;
}

struct cfi_index {
  section s;
  uint8_t *data; /* owned: s.data */
  cie_set cies;
  fde_ref *fdes; /* those cfi_build compiles, sorted, with lo raised to its floor */
  uint32_t *floor;
  size_t n;
};

void cfi_index_free(cfi_index *ix) {
  if (!ix)
    return;
  free(ix->data);
  free(ix->cies.v);
  free(ix->fdes);
  free(ix->floor);
  free(ix);
}

int cfi_index_build(uint8_t *data, size_t len, uintptr_t data_addr, uintptr_t base,
                    enum cfi_source src, cfi_index **out) {
  cfi_stats st;
  size_t max_rows;
  memset(&st, 0, sizeof st);
  *out = NULL;
  cfi_index *ix = calloc(1, sizeof *ix);
  if (!ix) {
    free(data);
    return -1;
  }
  ix->data = data;
  ix->s = (section){data, data ? len : 0, data_addr, base, src};
  if (list_cies(&ix->s, &ix->cies) != 0 ||
      list_fdes(&ix->s, &ix->cies, &ix->fdes, &ix->n, &max_rows, &st) != 0)
    goto fail;
  if (ix->n > 1)
    qsort(ix->fdes, ix->n, sizeof *ix->fdes, fde_cmp);
  ix->floor = malloc((ix->n ? ix->n : 1) * sizeof *ix->floor);
  if (!ix->floor)
    goto fail;
  /* cfi_build's loop without the compiling: which FDEs, above which floor */
  size_t k = 0;
  uint32_t floor = 0;
  for (size_t i = 0; i < ix->n; i++) {
    if (ix->fdes[i].hi <= floor)
      continue;
    ix->floor[k] = floor;
    ix->fdes[k++] = ix->fdes[i];
    floor = (uint32_t)ix->fdes[i].hi;
  }
  ix->n = k;
  *out = ix;
  return 0;
fail:
  cfi_index_free(ix);
  return -1;
}

int cfi_index_table(const cfi_index *ix, uintptr_t pc, cfi_table **out) {
  *out = NULL;
  if (pc < ix->s.base || pc - ix->s.base >= UINT32_MAX)
    return 0;
  uint64_t off = pc - ix->s.base;
  size_t a = 0, b = ix->n; /* the first FDE ending above off */
  while (a < b) {
    size_t m = a + (b - a) / 2;
    if (ix->fdes[m].hi <= off)
      a = m + 1;
    else
      b = m;
  }
  if (a == ix->n)
    return 0;
  const fde_ref *f = &ix->fdes[a];
  uint32_t floor = ix->floor[a];
  if (off < f->lo || off < floor)
    return 0; /* between FDEs */
  reader body;
  uint64_t id;
  int is64;
  size_t next;
  if (entry_header(&ix->s, f->off, &body, &id, &is64, &next) != 0)
    return 0;                          /* checked when listed */
  size_t max_rows = next - f->off + 2; /* as list_fdes bounds it */
  row_vec rv = {0};
  rv.block = malloc(sizeof(cfi_table) + max_rows * sizeof(cfi_row));
  if (!rv.block)
    return -1;
  rv.v = (cfi_row *)(rv.block + 1);
  rv.cap = max_rows;
  cfi_stats st;
  memset(&st, 0, sizeof st);
  compile_fde(&ix->s, &ix->cies.v[f->cie], f, &rv, floor, &st);
  if (rv.oom) {
    free(rv.block);
    return -1;
  }
  *out = finish(&rv, ix->s.base);
  free(rv.block);
  return *out ? 0 : -1;
}

const cfi_row *cfi_lookup(const cfi_table *t, uintptr_t pc) {
  if (!t || pc < t->lo || pc >= t->hi)
    return NULL;
  uint32_t pg = (uint32_t)((pc >> CFI_PAGE_SHIFT) - (t->lo >> CFI_PAGE_SHIFT));
  uint32_t a = t->page_first[pg];
  uint32_t b = pg + 1 < t->npages ? t->page_first[pg + 1] : t->nrows - 1;
  uint32_t off = (uint32_t)(pc - t->base);
  /* Invariant: rows[a].pc <= off < rows[b + 1].pc (or the table's end). */
  while (a < b) {
    uint32_t m = a + (b - a + 1) / 2;
    if (t->rows[m].pc <= off)
      a = m;
    else
      b = m - 1;
  }
  return &t->rows[a];
}
