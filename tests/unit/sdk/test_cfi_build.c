/* cfi_build (sdk/cfi_build.c): the unwind-row compiler.
 *  - Oracle: on real objects (libc, libstdc++, this binary, an -O2
 *    -fomit-frame-pointer library) every row range is probed at its first,
 *    middle and last byte and compared with elfutils' libdw, which parses the
 *    same .eh_frame independently; every FDE of .eh_frame_hdr must be covered.
 *  - Hand-written .eh_frame / .debug_frame bytes for each rule cfi.h promises.
 *  - Truncated and corrupted sections build or fail cleanly, in bounded time,
 *    and every table built keeps cfi_invariants.h's invariants. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "cfi.h"
#include "cfi_invariants.h"
#include "pp_test.h"

/* ---- reading sections ---- */

typedef struct obj_file {
  int fd;
  Elf *elf;
  uint8_t *eh, *hdr, *dbg; /* exact-size copies of .eh_frame, its _hdr, .debug_frame */
  size_t eh_len, hdr_len, dbg_len;
  uint64_t eh_addr, hdr_addr;
} obj_file;

static int copy_section(Elf_Scn *scn, uint8_t **out, size_t *len) {
  Elf_Data *d = elf_rawdata(scn, NULL);
  if (!d || !d->d_buf || d->d_size == 0)
    return -1;
  *out = malloc(d->d_size);
  if (!*out)
    return -1;
  memcpy(*out, d->d_buf, d->d_size);
  *len = d->d_size;
  return 0;
}

static int obj_open(const char *path, obj_file *o) {
  memset(o, 0, sizeof *o);
  elf_version(EV_CURRENT);
  o->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (o->fd < 0)
    return -1;
  o->elf = elf_begin(o->fd, ELF_C_READ, NULL);
  size_t shstrndx;
  if (!o->elf || elf_getshdrstrndx(o->elf, &shstrndx) != 0)
    return -1;
  for (Elf_Scn *scn = elf_nextscn(o->elf, NULL); scn; scn = elf_nextscn(o->elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh))
      continue;
    const char *name = elf_strptr(o->elf, shstrndx, sh.sh_name);
    if (name && strcmp(name, ".eh_frame") == 0 && copy_section(scn, &o->eh, &o->eh_len) == 0)
      o->eh_addr = sh.sh_addr;
    else if (name && strcmp(name, ".eh_frame_hdr") == 0 &&
             copy_section(scn, &o->hdr, &o->hdr_len) == 0)
      o->hdr_addr = sh.sh_addr;
    else if (name && strcmp(name, ".debug_frame") == 0)
      copy_section(scn, &o->dbg, &o->dbg_len);
  }
  return o->eh || o->dbg ? 0 : -1;
}

static void obj_close(obj_file *o) {
  if (o->elf)
    elf_end(o->elf);
  if (o->fd >= 0)
    close(o->fd);
  free(o->eh);
  free(o->hdr);
  free(o->dbg);
  memset(o, 0, sizeof *o);
  o->fd = -1;
}

static int find_libc_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  if (strstr(info->dlpi_name, "/libc.so.6")) {
    snprintf(arg, 4096, "%s", info->dlpi_name);
    return 1;
  }
  return 0;
}

static const char *libc_path(void) {
  static char path[4096];
  if (!path[0])
    dl_iterate_phdr(find_libc_cb, path);
  return path[0] ? path : "/lib/x86_64-linux-gnu/libc.so.6";
}

static const char *libstdcxx_path(void) {
#if defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#else
#define MULTIARCH "x86_64-linux-gnu"
#endif
  static const char *const cands[] = {"/usr/lib/" MULTIARCH "/libstdc++.so.6",
                                      "/lib/" MULTIARCH "/libstdc++.so.6",
                                      "/usr/lib64/libstdc++.so.6"};
  for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++)
    if (access(cands[i], R_OK) == 0)
      return cands[i];
  return cands[0];
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void check_invariants(const cfi_table *t, unsigned probes, uint64_t seed, const char *what) {
  char msg[256];
  if (cfi_table_check(t, probes, seed, msg, sizeof msg) != 0) {
    fprintf(stderr, "%s: table invariant broken: %s\n", what, msg);
    pp_test_failures++;
  }
}

/* ---- the libdw oracle ---- */

/* DWARF numbers of the stack and frame pointers, and whether a return
 * address that stays in its register (same value) is a row cfi.h keeps. */
#if defined(__aarch64__)
#define ORACLE_SP 31
#define ORACLE_FP 29
#define ORACLE_RA_IN_LINKREG 1
#else
#define ORACLE_SP 7
#define ORACLE_FP 6
#define ORACLE_RA_IN_LINKREG 0
#endif

/* What a cfi_row at addr should be, from libdw's answer, with cfi.h's limits
 * (offsets that do not fit the row's fields make the row unknown or the FP
 * lost). 1: libdw knows no FDE here; -1: libdw failed otherwise. */
static int offset_rule(const Dwarf_Op *ops, size_t nops, int64_t *off) {
  if (nops == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
    *off = 0;
    return 1;
  }
  if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst) {
    *off = (int64_t)ops[1].number;
    return 1;
  }
  return 0;
}

static int plt_rule(const Dwarf_Op *o, size_t n) {
  if (n != 9 || o[0].atom != DW_OP_breg7 || o[0].number != 8 || o[1].atom != DW_OP_breg16 ||
      o[1].number != 0 || o[2].atom != DW_OP_lit15 || o[3].atom != DW_OP_and ||
      o[4].atom < DW_OP_lit0 || o[4].atom > DW_OP_lit15 || o[5].atom != DW_OP_ge ||
      o[6].atom != DW_OP_lit3 || o[7].atom != DW_OP_shl || o[8].atom != DW_OP_plus)
    return -1;
  return o[4].atom - DW_OP_lit0;
}

static int libdw_expect(Dwarf_CFI *cfi, uint64_t addr, cfi_row *want, const char **err) {
  Dwarf_Frame *fr = NULL;
  *want = (cfi_row){0, 0, CFI_FP_LOST, CFI_UNKNOWN, 0};
  if (dwarf_cfi_addrframe(cfi, addr, &fr) != 0) {
    *err = dwarf_errmsg(-1);
    return strstr(*err, "no matching address range") ? 1 : -1;
  }
  bool signal = false;
  Dwarf_Addr start, end;
  int ra_reg = dwarf_frame_info(fr, &start, &end, &signal);
  Dwarf_Op mem[3], *ops = NULL, *cops = NULL;
  size_t nops = 0, ncops = 0;
  int64_t off;
  if (signal) {
    want->kind = CFI_SIGNAL;
    goto done;
  }
  if (ra_reg < 0 || dwarf_frame_register(fr, ra_reg, mem, &ops, &nops) != 0)
    goto done;
  if (ops == mem && nops == 0) {
    want->kind = CFI_END; /* undefined: the outermost frame */
    goto done;
  }
  int64_t ra_off = 0;
  int ra_saved = offset_rule(ops, nops, &ra_off);
  int ra_same = !ops && nops == 0;
  int ra_ok =
      ra_saved && ra_off != 0 && ra_off % 8 == 0 && ra_off / 8 > INT8_MIN && ra_off / 8 <= INT8_MAX;
  int8_t ra8 = ra_ok ? (int8_t)(ra_off / 8) : 0;
  if (ORACLE_RA_IN_LINKREG && ra_same) {
    ra_ok = 1; /* same value: still in the link register */
    ra8 = CFI_RA_LINKREG;
  }
  if (dwarf_frame_register(fr, ORACLE_FP, mem, &ops, &nops) != 0)
    goto done;
  if (!ops && nops == 0)
    want->fp_off = CFI_FP_SAME;
  else if (offset_rule(ops, nops, &off) && off > CFI_FP_LOST && off <= INT16_MAX)
    want->fp_off = (int16_t)off;
  if (!ra_ok && ra_saved && want->fp_off != CFI_FP_SAME && want->fp_off != CFI_FP_LOST &&
      ra_off == want->fp_off + 8) {
    ra_ok = 1; /* saved beside the caller's FP, too far for ra_off8 */
    ra8 = CFI_RA_BESIDE_FP;
  }
  if (dwarf_frame_cfa(fr, &cops, &ncops) != 0)
    goto done;
  int thr = plt_rule(cops, ncops);
  if (ncops == 1 && cops[0].atom == DW_OP_bregx &&
      (cops[0].number == ORACLE_SP || cops[0].number == ORACLE_FP) &&
      (int64_t)cops[0].number2 >= INT32_MIN && (int64_t)cops[0].number2 <= INT32_MAX && ra_ok) {
    want->kind = cops[0].number == ORACLE_SP ? CFI_CFA_SP : CFI_CFA_FP;
    want->cfa_off = (int32_t)(int64_t)cops[0].number2;
    want->ra_off8 = ra8;
  } else if (thr >= 0 && ra_ok) {
    want->kind = CFI_PLT;
    want->cfa_off = thr;
    want->ra_off8 = ra8;
  }
done:
  free(fr);
  return 0;
}

static const char *const kind_names[] = {"GAP", "SP", "FP", "PLT", "SIGNAL", "END", "UNKNOWN"};

static void fmt_row(char *buf, size_t n, const cfi_row *r) {
  char fp[16];
  if (r->fp_off == CFI_FP_SAME)
    snprintf(fp, sizeof fp, "same");
  else if (r->fp_off == CFI_FP_LOST)
    snprintf(fp, sizeof fp, "lost");
  else
    snprintf(fp, sizeof fp, "%d", r->fp_off);
  snprintf(buf, n, "%s%+d fp %s ra %d", r->kind <= CFI_UNKNOWN ? kind_names[r->kind] : "?",
           r->cfa_off, fp, r->ra_off8 == CFI_RA_BESIDE_FP ? r->fp_off + 8 : r->ra_off8 * 8);
}

typedef struct oracle_count {
  unsigned long addrs, agree, by_kind[7], fdes_hdr, fdes_covered;
} oracle_count;

static int same_row(const cfi_row *a, const cfi_row *b) {
  return a->kind == b->kind && a->cfa_off == b->cfa_off && a->fp_off == b->fp_off &&
         a->ra_off8 == b->ra_off8;
}

static void oracle_probe(Dwarf_CFI *cfi, const cfi_table *t, uint64_t addr, oracle_count *c,
                         const char *name) {
  const cfi_row *got = cfi_lookup(t, addr);
  cfi_row want;
  const char *err = NULL;
  int rc = libdw_expect(cfi, addr, &want, &err);
  int ok;
  if (rc != 0) /* libdw cannot answer: no row, or a GAP */
    ok = !got || got->kind == CFI_GAP;
  else
    ok = got && same_row(got, &want);
  c->addrs++;
  if (ok) {
    c->agree++;
    c->by_kind[got ? got->kind : CFI_GAP]++;
    return;
  }
  if (c->addrs - c->agree <= 5) {
    char g[64] = "no row", w[64];
    if (got)
      fmt_row(g, sizeof g, got);
    if (rc == 0)
      fmt_row(w, sizeof w, &want);
    else
      snprintf(w, sizeof w, "no FDE (%s)", err);
    fprintf(stderr, "%s: %#lx: cfi_build says %s, libdw says %s\n", name, (unsigned long)addr, g,
            w);
  }
}

/* .eh_frame_hdr's search table: every FDE's initial location must be in a
 * row that is not a gap (FDEs of zero length aside, which the table lists). */
static void oracle_hdr(const obj_file *o, const cfi_table *t, oracle_count *c) {
  const uint8_t *h = o->hdr;
  if (!h || o->hdr_len < 12 || h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b)
    return;
  uint32_t count;
  memcpy(&count, h + 8, 4);
  if (12 + (uint64_t)count * 8 > o->hdr_len)
    return;
  for (uint32_t i = 0; i < count; i++) {
    int32_t loc, fde;
    memcpy(&loc, h + 12 + 8 * (size_t)i, 4);
    memcpy(&fde, h + 16 + 8 * (size_t)i, 4);
    uint64_t addr = o->hdr_addr + (uint64_t)(int64_t)loc;
    /* the FDE's address range follows its initial location (pcrel sdata4) */
    uint64_t fde_off = o->hdr_addr + (uint64_t)(int64_t)fde - o->eh_addr;
    uint32_t range = 1;
    if (fde_off + 16 <= o->eh_len)
      memcpy(&range, o->eh + fde_off + 12, 4);
    c->fdes_hdr++;
    const cfi_row *r = cfi_lookup(t, addr);
    if (range == 0 || (r && r->kind != CFI_GAP))
      c->fdes_covered++;
    else if (c->fdes_hdr - c->fdes_covered <= 5)
      fprintf(stderr, "eh_frame_hdr FDE at %#lx (range %u) has no row\n", (unsigned long)addr,
              range);
  }
}

/* .debug_frame has no search table: libdw lists its FDEs (absolute
 * initial location and range, 8 bytes each on x86-64). */
static void oracle_debug_fdes(const obj_file *o, const cfi_table *t, oracle_count *c) {
  Elf_Data d = {.d_buf = o->dbg, .d_size = o->dbg_len, .d_type = ELF_T_BYTE};
  const unsigned char *ident = (const unsigned char *)elf_getident(o->elf, NULL);
  Dwarf_Off off = 0, next;
  Dwarf_CFI_Entry ent;
  int rc;
  while (ident && (rc = dwarf_next_cfi(ident, &d, false, off, &next, &ent)) != 1) {
    if (rc == 0 && !dwarf_cfi_cie_p(&ent) && ent.fde.end - ent.fde.start >= 16) {
      uint64_t loc, range;
      memcpy(&loc, ent.fde.start, 8);
      memcpy(&range, ent.fde.start + 8, 8);
      const cfi_row *r = cfi_lookup(t, loc);
      c->fdes_hdr++;
      if (range == 0 || (r && r->kind != CFI_GAP))
        c->fdes_covered++;
      else if (c->fdes_hdr - c->fdes_covered <= 5)
        fprintf(stderr, ".debug_frame FDE at %#lx has no row\n", (unsigned long)loc);
    }
    if (next == (Dwarf_Off)-1 || next <= off)
      break;
    off = next;
  }
}

/* ---- the per-FDE index against the whole table ---- */

static int rule_at(const cfi_table *t, uintptr_t pc, cfi_row *out) {
  const cfi_row *r = t ? cfi_lookup(t, pc) : NULL;
  static const cfi_row gap = {0, 0, CFI_FP_LOST, CFI_GAP, 0};
  *out = r && r->kind != CFI_GAP ? *r : gap;
  return out->kind != CFI_GAP;
}

static unsigned index_probe(const cfi_index *ix, const cfi_table *t, uintptr_t pc,
                            const char *what) {
  cfi_table *one = NULL;
  cfi_row want, got;
  if (cfi_index_table(ix, pc, &one) != 0) {
    fprintf(stderr, "%s: cfi_index_table failed at %#lx\n", what, (unsigned long)pc);
    return 1;
  }
  rule_at(t, pc, &want);
  rule_at(one, pc, &got);
  free(one);
  if (same_row(&want, &got))
    return 0;
  char a[64], b[64];
  fmt_row(a, sizeof a, &want);
  fmt_row(b, sizeof b, &got);
  fprintf(stderr, "%s: at %#lx the table says %s, the index %s\n", what, (unsigned long)pc, a, b);
  return 1;
}

/* Every row's first, middle and last address (and the table's edges) give
 * the same rule from the index's one-FDE tables as from the whole table. */
static void check_index_matches(const uint8_t *data, size_t len, uintptr_t addr, uintptr_t base,
                                enum cfi_source src, const cfi_table *t, const char *what) {
  uint8_t *copy = malloc(len ? len : 1);
  cfi_index *ix = NULL;
  if (!copy)
    abort();
  memcpy(copy, data, len);
  PP_CHECK_INT(cfi_index_build(copy, len, addr, base, src, &ix), ==, 0);
  if (!ix || !t)
    return;
  unsigned bad = 0, probes = 0;
  for (uint32_t i = 0; i + 1 < t->nrows && bad < 5; i++) {
    uintptr_t a = t->base + t->rows[i].pc, b = t->base + t->rows[i + 1].pc;
    bad += index_probe(ix, t, a, what) + index_probe(ix, t, a + (b - a) / 2, what) +
           index_probe(ix, t, b - 1, what);
    probes += 3;
  }
  if (t->lo > 0)
    bad += index_probe(ix, t, t->lo - 1, what);
  bad += index_probe(ix, t, t->hi, what) + index_probe(ix, t, base, what);
  PP_CHECK_INT(bad, ==, 0);
  PP_CHECK(probes + 1 >= t->nrows);
  cfi_index_free(ix);
}

static void oracle_object(const char *label, const char *path, enum cfi_source src) {
  obj_file o;
  int dbg = src == CFI_DEBUG_FRAME;
  if (obj_open(path, &o) != 0 || !(dbg ? o.dbg : o.eh)) {
    fprintf(stderr, "%s: cannot read %s of %s\n", label, dbg ? ".debug_frame" : ".eh_frame", path);
    pp_test_failures++;
    obj_close(&o);
    return;
  }
  cfi_table *t = NULL;
  cfi_stats st;
  int rc = dbg ? cfi_build(o.dbg, o.dbg_len, 0, 0, CFI_DEBUG_FRAME, NULL, &t, &st)
               : cfi_build(o.eh, o.eh_len, o.eh_addr, 0, CFI_EH_FRAME, NULL, &t, &st);
  PP_CHECK_INT(rc, ==, 0);
  Dwarf *dw = dbg ? dwarf_begin_elf(o.elf, DWARF_C_READ, NULL) : NULL;
  Dwarf_CFI *cfi = dbg ? (dw ? dwarf_getcfi(dw) : NULL) : dwarf_getcfi_elf(o.elf);
  PP_CHECK(cfi != NULL);
  if (rc != 0 || !t || !cfi) {
    if (dw)
      dwarf_end(dw);
    else if (cfi)
      dwarf_cfi_end(cfi);
    free(t);
    obj_close(&o);
    return;
  }
  check_invariants(t, 10000, 42, label);
  if (dbg)
    check_index_matches(o.dbg, o.dbg_len, 0, 0, CFI_DEBUG_FRAME, t, label);
  else
    check_index_matches(o.eh, o.eh_len, o.eh_addr, 0, CFI_EH_FRAME, t, label);
  PP_CHECK_INT(t->nrows, >, 2);
  oracle_count c = {0};
  for (uint32_t i = 0; i + 1 < t->nrows; i++) {
    uint64_t a = t->rows[i].pc, b = t->rows[i + 1].pc;
    oracle_probe(cfi, t, a, &c, label);
    if (b - a > 2)
      oracle_probe(cfi, t, a + (b - a) / 2, &c, label);
    if (b - a > 1)
      oracle_probe(cfi, t, b - 1, &c, label);
  }
  if (t->lo > 0)
    oracle_probe(cfi, t, t->lo - 1, &c, label);
  oracle_probe(cfi, t, t->hi, &c, label);
  if (dbg)
    oracle_debug_fdes(&o, t, &c);
  else
    oracle_hdr(&o, t, &c);
  fprintf(stderr,
          "%s: %u rows from %u FDEs (%u bad entries, %u bad ops, %u overlaps): "
          "%lu/%lu addresses agree with libdw (SP %lu, FP %lu, PLT %lu, SIGNAL %lu, END %lu, "
          "UNKNOWN %lu, GAP %lu); %lu/%lu FDEs of %s covered\n",
          label, t->nrows, st.fdes, st.bad_entries, st.bad_ops, st.overlaps, c.agree, c.addrs,
          c.by_kind[CFI_CFA_SP], c.by_kind[CFI_CFA_FP], c.by_kind[CFI_PLT], c.by_kind[CFI_SIGNAL],
          c.by_kind[CFI_END], c.by_kind[CFI_UNKNOWN], c.by_kind[CFI_GAP], c.fdes_covered,
          c.fdes_hdr, dbg ? "libdw's .debug_frame list" : ".eh_frame_hdr");
  PP_CHECK_INT(c.agree, ==, c.addrs);
  PP_CHECK_INT(c.fdes_covered, ==, c.fdes_hdr);
  PP_CHECK_INT(c.fdes_hdr, >, 0);
  PP_CHECK_INT(st.bad_entries, ==, 0);
  if (dw)
    dwarf_end(dw); /* owns dwarf_getcfi's CFI */
  else
    dwarf_cfi_end(cfi);
  free(t);
  obj_close(&o);
}

static void test_cfi_libc_matches_libdw(void) {
  oracle_object("libc.so.6", libc_path(), CFI_EH_FRAME);
}

static void test_cfi_libstdcxx_matches_libdw(void) {
  oracle_object("libstdc++.so.6", libstdcxx_path(), CFI_EH_FRAME);
}

static void test_cfi_own_binary_matches_libdw(void) {
  oracle_object("test_cfi_build", "/proc/self/exe", CFI_EH_FRAME);
}

static void test_cfi_omit_frame_pointer_object_matches_libdw(void) {
  oracle_object("libcfi_omitfp_obj.so", CFI_OMITFP_OBJ, CFI_EH_FRAME);
}

/* The same code built without unwind tables: gcc writes .debug_frame. */
static void test_cfi_debug_frame_object_matches_libdw(void) {
  oracle_object("libcfi_debugframe_obj.so", CFI_DEBUGFRAME_OBJ, CFI_DEBUG_FRAME);
}

/* ---- hand-written CFI ---- */

typedef struct ehb {
  uint8_t b[1 << 20];
  size_t n;
  uintptr_t addr; /* where the section is (for pc-relative pointers) */
  enum cfi_source src;
} ehb;

static void put8(ehb *e, unsigned v) {
  if (e->n < sizeof e->b)
    e->b[e->n++] = (uint8_t)v;
}

static void put_le(ehb *e, uint64_t v, int n) {
  for (int i = 0; i < n; i++)
    put8(e, (unsigned)(v >> (8 * i)) & 0xff);
}

static void put_uleb(ehb *e, uint64_t v) {
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    put8(e, b | (v ? 0x80 : 0));
  } while (v);
}

static void put_sleb(ehb *e, int64_t v) {
  for (;;) {
    uint8_t b = v & 0x7f;
    v >>= 7; /* arithmetic shift on every compiler we use */
    int done = (v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40));
    put8(e, b | (done ? 0 : 0x80));
    if (done)
      return;
  }
}

static void put_bytes(ehb *e, const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    put8(e, p[i]);
}

static void patch_len(ehb *e, size_t at) {
  uint32_t len = (uint32_t)(e->n - at - 4);
  for (int i = 0; i < 4; i++)
    e->b[at + (size_t)i] = (uint8_t)(len >> (8 * i));
}

/* The usual x86-64 CIE program: CFA = rsp + 8, return address at CFA - 8. */
static const uint8_t std_init[] = {0x0c, 7, 8, 0x90, 1};

/* A CIE; returns its offset. .eh_frame: version 1, aug ("zR", "zRS", "")
 * with pcrel|sdata4 FDE pointers; .debug_frame: version ver (1, 3 or 4). */
static size_t put_cie_v(ehb *e, int ver, const char *aug, uint64_t code_align, int64_t data_align,
                        unsigned ra, const uint8_t *init, size_t ninit) {
  size_t at = e->n;
  put_le(e, 0, 4);
  put_le(e, e->src == CFI_EH_FRAME ? 0 : 0xffffffffu, 4);
  put8(e, (unsigned)ver);
  put_bytes(e, (const uint8_t *)aug, strlen(aug) + 1);
  if (ver == 4) {
    put8(e, 8); /* address size */
    put8(e, 0); /* segment selector size */
  }
  put_uleb(e, code_align);
  put_sleb(e, data_align);
  if (ver == 1)
    put8(e, ra);
  else
    put_uleb(e, ra);
  if (aug[0] == 'z') {
    put_uleb(e, 1);
    put8(e, 0x1b); /* R: DW_EH_PE_pcrel | DW_EH_PE_sdata4 */
  }
  put_bytes(e, init, ninit);
  patch_len(e, at);
  return at;
}

static size_t put_cie(ehb *e, const char *aug, const uint8_t *init, size_t ninit) {
  return put_cie_v(e, e->src == CFI_EH_FRAME ? 1 : 4, aug, 1, -8, 16, init, ninit);
}

/* An FDE for [lo, lo + range) (absolute addresses). */
static void put_fde(ehb *e, size_t cie, uint64_t lo, uint64_t range, const uint8_t *ops,
                    size_t nops) {
  size_t at = e->n;
  put_le(e, 0, 4);
  if (e->src == CFI_EH_FRAME) {
    put_le(e, e->n - cie, 4);
    put_le(e, lo - (e->addr + e->n), 4);
    put_le(e, range, 4);
    put_uleb(e, 0); /* augmentation data length */
  } else {
    put_le(e, cie, 4);
    put_le(e, lo, 8);
    put_le(e, range, 8);
  }
  put_bytes(e, ops, nops);
  patch_len(e, at);
}

#define OPS(...) (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__})

static ehb *ehb_new(enum cfi_source src, uintptr_t addr) {
  ehb *e = calloc(1, sizeof *e);
  if (!e)
    abort();
  e->src = src;
  e->addr = addr;
  return e;
}

/* test_cfi_build --seeds DIR: each hand-written section is also written there, as
 * seed_hand_NN of the fuzz target's corpus (tests/fuzz/corpus/cfi/). */
static const char *seeds_dir;

static void write_seed(const ehb *e) {
  static int n;
  char path[4096];
  snprintf(path, sizeof path, "%s/seed_hand_%02d", seeds_dir, n++);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(e->b, 1, e->n, f) != e->n || fclose(f) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    pp_test_failures++;
  }
}

static cfi_table *ehb_build(ehb *e, uintptr_t base, cfi_stats *st) {
  cfi_table *t = NULL;
  if (seeds_dir && e->n <= 65536) /* tests/fuzz/run.sh's -max_len */
    write_seed(e);
  /* an exact-size copy: ASan sees any read past the section */
  uint8_t *copy = malloc(e->n ? e->n : 1);
  if (!copy)
    abort();
  memcpy(copy, e->b, e->n);
  int rc = cfi_build(copy, e->n, e->addr, base, e->src, NULL, &t, st);
  free(copy);
  PP_CHECK_INT(rc, ==, 0);
  if (t) {
    check_invariants(t, 2000, 7, "hand-written");
    check_index_matches(e->b, e->n, e->addr, base, e->src, t, "hand-written");
  }
  return t;
}

static void expect_row(const cfi_table *t, uintptr_t pc, int kind, int cfa, int fp, int ra,
                       int line) {
  const cfi_row *r = cfi_lookup(t, pc);
  cfi_row want = {0, cfa, (int16_t)fp, (uint8_t)kind, (int8_t)ra};
  if (kind < 0) { /* outside the table */
    if (r) {
      char g[64];
      fmt_row(g, sizeof g, r);
      fprintf(stderr, "test_cfi_build.c:%d: %#lx: want no row, got %s\n", line, (unsigned long)pc,
              g);
      pp_test_failures++;
    }
    return;
  }
  if (!r || !(r->kind == want.kind && (kind == CFI_GAP || same_row(r, &want)))) {
    char g[64] = "no row", w[64];
    if (r)
      fmt_row(g, sizeof g, r);
    fmt_row(w, sizeof w, &want);
    fprintf(stderr, "test_cfi_build.c:%d: %#lx: want %s, got %s\n", line, (unsigned long)pc, w, g);
    pp_test_failures++;
  }
}

#define NONE (-1)
#define LOST CFI_FP_LOST
#define SAME CFI_FP_SAME
#define ROW(t, pc, kind, cfa, fp, ra) expect_row(t, pc, kind, cfa, fp, ra, __LINE__)
#define IS_GAP(t, pc) expect_row(t, pc, CFI_GAP, 0, 0, 0, __LINE__)
#define NO_ROW(t, pc) expect_row(t, pc, NONE, 0, 0, 0, __LINE__)

#define BASE ((uintptr_t)0x7f1200000000)
#define SEC (BASE + 0x200000) /* .eh_frame's address in the hand-written cases */

static void test_cfi_frameless_leaf_is_sp_plus_8(void) {
  ehb *e = ehb_new(CFI_EH_FRAME, SEC);
  size_t cie = put_cie(e, "zR", std_init, sizeof std_init);
  put_fde(e, cie, BASE + 0x1000, 0x20, NULL, 0);
  put_le(e, 0, 4); /* terminator */
  cfi_stats st;
  cfi_table *t = ehb_build(e, BASE, &st);
  if (t) {
    PP_CHECK_INT(t->nrows, ==, 2);
    PP_CHECK_INT(t->lo, ==, BASE + 0x1000);
    PP_CHECK_INT(t->hi, ==, BASE + 0x1020);
    PP_CHECK_INT(t->rows[0].pc, ==, 0x1000);
    NO_ROW(t, BASE + 0xfff);
    ROW(t, BASE + 0x1000, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x1010, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x101f, CFI_CFA_SP, 8, SAME, -1);
    NO_ROW(t, BASE + 0x1020);
    PP_CHECK_INT(st.cies, ==, 1);
    PP_CHECK_INT(st.fdes, ==, 1);
    PP_CHECK_INT(st.bad_entries + st.bad_ops + st.unknown_rows + st.overlaps, ==, 0);
  }
  free(t);
  free(e);
}

static void test_cfi_push_rbp_prologue_moves_cfa_to_rbp(void) {
  ehb *e = ehb_new(CFI_EH_FRAME, SEC);
  size_t cie = put_cie(e, "zR", std_init, sizeof std_init);
  /* push rbp; mov rbp,rsp; ...; leave (pop rbp) at +0x1c; ret */
  put_fde(e, cie, BASE + 0x1000, 0x20,
          OPS(0x41, 0x0e, 16, 0x86, 2,  /* +1: CFA = rsp+16, rbp at CFA-16 */
              0x43, 0x0d, 6,            /* +4: CFA = rbp+16 */
              0x58, 0x0c, 7, 8, 0xc6)); /* +0x1c: CFA = rsp+8, rbp restored */
  cfi_stats st;
  cfi_table *t = ehb_build(e, BASE, &st);
  if (t) {
    ROW(t, BASE + 0x1000, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x1001, CFI_CFA_SP, 16, -16, -1);
    ROW(t, BASE + 0x1003, CFI_CFA_SP, 16, -16, -1);
    ROW(t, BASE + 0x1004, CFI_CFA_FP, 16, -16, -1);
    ROW(t, BASE + 0x101b, CFI_CFA_FP, 16, -16, -1);
    ROW(t, BASE + 0x101c, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x101f, CFI_CFA_SP, 8, SAME, -1);
    NO_ROW(t, BASE + 0x1020);
    PP_CHECK_INT(t->nrows, ==, 5);
    PP_CHECK_INT(st.bad_ops + st.unknown_rows, ==, 0);
  }
  free(t);
  free(e);
}

static void test_cfi_remember_restore_state_around_early_return(void) {
  ehb *e = ehb_new(CFI_EH_FRAME, SEC);
  size_t cie = put_cie(e, "zR", std_init, sizeof std_init);
  /* push rbx (+1); early "pop rbx; ret" at +5/+6; main path from +6 on */
  put_fde(e, cie, BASE + 0x2000, 0x30,
          OPS(0x41, 0x0e, 16, 0x83, 2, 0x44, 0x0a, /* +5: remember */
              0x0e, 8, 0x41, 0x0b,                 /* +6: restore: CFA rsp+16 again */
              0x50, 0x0e, 8));                     /* +0x16: CFA = rsp+8 */
  /* frame pointer function, an epilogue inside remember/restore: the CFA
   * register and rbp's rule come back with restore_state */
  put_fde(e, cie, BASE + 0x3000, 0x20,
          OPS(0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6, 0x44, 0x0a, /* +8: remember */
              0x0c, 7, 8, 0xc6, 0x41, 0x0b));                     /* +9: restore */
  /* restore_state without remember_state: the rest of the FDE is unknown */
  put_fde(e, cie, BASE + 0x4000, 0x10, OPS(0x41, 0x0e, 16, 0x42, 0x0b, 0x41, 0x0e, 8));
  cfi_stats st;
  cfi_table *t = ehb_build(e, BASE, &st);
  if (t) {
    ROW(t, BASE + 0x2000, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x2004, CFI_CFA_SP, 16, SAME, -1);
    ROW(t, BASE + 0x2005, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x2006, CFI_CFA_SP, 16, SAME, -1);
    ROW(t, BASE + 0x2015, CFI_CFA_SP, 16, SAME, -1);
    ROW(t, BASE + 0x2016, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x202f, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x3004, CFI_CFA_FP, 16, -16, -1);
    ROW(t, BASE + 0x3008, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x3009, CFI_CFA_FP, 16, -16, -1);
    ROW(t, BASE + 0x301f, CFI_CFA_FP, 16, -16, -1);
    ROW(t, BASE + 0x4000, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x4002, CFI_CFA_SP, 16, SAME, -1);
    ROW(t, BASE + 0x4003, CFI_UNKNOWN, 0, LOST, 0);
    ROW(t, BASE + 0x400f, CFI_UNKNOWN, 0, LOST, 0);
    PP_CHECK_INT(st.bad_ops, ==, 1);
    PP_CHECK_INT(st.fdes, ==, 3);
  }
  free(t);
  free(e);
}

static void test_cfi_plt_expression_is_a_plt_row(void) {
  ehb *e = ehb_new(CFI_EH_FRAME, SEC);
  size_t cie = put_cie(e, "zR", std_init, sizeof std_init);
  /* binutils' .plt FDE: PLT0 pushes once, then the lazy stubs' rule */
  put_fde(e, cie, BASE + 0x1000, 0x40,
          OPS(0x0e, 16, 0x46, 0x0e, 24, 0x4a, 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a,
              0x33, 0x24, 0x22));
  /* the same expression with const1u 11 instead of lit11: not recognised */
  put_fde(e, cie, BASE + 0x2000, 0x10,
          OPS(0x0f, 12, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x08, 11, 0x2a, 0x33, 0x24, 0x22));
  /* a PLT rule followed by def_cfa_offset: no longer a rule we follow */
  put_fde(
      e, cie, BASE + 0x3000, 0x10,
      OPS(0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3a, 0x2a, 0x33, 0x24, 0x22, 0x44, 0x0e, 16));
  cfi_stats st;
  cfi_table *t = ehb_build(e, BASE, &st);
  if (t) {
    ROW(t, BASE + 0x1000, CFI_CFA_SP, 16, SAME, -1);
    ROW(t, BASE + 0x1006, CFI_CFA_SP, 24, SAME, -1);
    ROW(t, BASE + 0x100f, CFI_CFA_SP, 24, SAME, -1);
    ROW(t, BASE + 0x1010, CFI_PLT, 11, SAME, -1);
    ROW(t, BASE + 0x103f, CFI_PLT, 11, SAME, -1);
    ROW(t, BASE + 0x2000, CFI_UNKNOWN, 0, SAME, 0);
    ROW(t, BASE + 0x3000, CFI_PLT, 10, SAME, -1);
    ROW(t, BASE + 0x3004, CFI_UNKNOWN, 0, SAME, 0);
    PP_CHECK_INT(st.unknown_rows, ==, 2);
    PP_CHECK_INT(st.bad_ops, ==, 0);
  }
  free(t);
  free(e);
}

static void test_cfi_signal_frame_cie_gives_signal_rows(void) {
  ehb *e = ehb_new(CFI_EH_FRAME, SEC);
  size_t cie = put_cie(e, "zR", std_init, sizeof std_init);
  size_t sig = put_cie(e, "zRS", NULL, 0);
  /* glibc's __restore_rt: CFA = *(rsp + 160), registers by expression */
  put_fde(e, sig, BASE + 0x1fff, 0x10,
          OPS(0x0f, 3, 0x77, 0xa0, 0x01, 0x10, 6, 2, 0x77, 0x78, 0x10, 16, 3, 0x77, 0xa8, 0x01));
  put_fde(e, cie, BASE + 0x2010, 0x10, NULL, 0);
  cfi_stats st;
  cfi_table *t = ehb_build(e, BASE, &st);
  if (t) {
    ROW(t, BASE + 0x1fff, CFI_SIGNAL, 0, LOST, 0);
    ROW(t, BASE + 0x200e, CFI_SIGNAL, 0, LOST, 0);
    IS_GAP(t, BASE + 0x200f);
    ROW(t, BASE + 0x2010, CFI_CFA_SP, 8, SAME, -1);
    PP_CHECK_INT(st.cies, ==, 2);
  }
  free(t);
  free(e);
}

static void test_cfi_undefined_return_address_is_end(void) {
  ehb *e = ehb_new(CFI_EH_FRAME, SEC);
  size_t cie = put_cie(e, "zR", std_init, sizeof std_init);
  /* _start: undefined rip; then (for the test) restored to the CIE's rule */
  put_fde(e, cie, BASE + 0x1000, 0x30, OPS(0x07, 16, 0x50, 0xd0));
  /* a CIE that never says where the return address is */
  size_t bare = put_cie(e, "zR", OPS(0x0c, 7, 8));
  put_fde(e, bare, BASE + 0x2000, 0x10, NULL, 0);
  cfi_stats st;
  cfi_table *t = ehb_build(e, BASE, &st);
  if (t) {
    ROW(t, BASE + 0x1000, CFI_END, 0, LOST, 0);
    ROW(t, BASE + 0x100f, CFI_END, 0, LOST, 0);
    ROW(t, BASE + 0x1010, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x2000, CFI_END, 0, LOST, 0);
  }
  free(t);
  free(e);
}

static void test_cfi_big_frames_without_frame_pointer(void) {
  ehb *e = ehb_new(CFI_EH_FRAME, SEC);
  size_t cie = put_cie(e, "zR", std_init, sizeof std_init);
  /* push rbx; sub rsp,40000; ...; an absurd 2^31 frame; back */
  put_fde(e, cie, BASE + 0x1000, 0x100,
          OPS(0x41, 0x0e, 16, 0x83, 2, 0x47, 0x0e, 0xd0, 0xb8, 0x02, /* 40016 */
              0x60, 0x0e, 0x80, 0x80, 0x80, 0x80, 0x08,              /* 2^31 */
              0x44, 0x0e, 0xd0, 0xb8, 0x02,                          /* 40016 */
              0x02, 0x40, 0x0e, 16));                                /* +0x40 */
  /* rbp saved far from the CFA: the row keeps the CFA, the FP is lost;
   * and rbp saved at the edge of what fp_off holds */
  put_fde(e, cie, BASE + 0x2000, 0x10,
          OPS(0x0e, 0xd0, 0xb8, 0x02, 0x86, 0x88, 0x27, /* rbp at CFA-40000 */
              0x41, 0x86, 0xff, 0xff, 0x01));           /* rbp at CFA-32767*8 */
  /* rbp at CFA-32760 (fits fp_off), then at CFA-32768 (does not) */
  put_fde(e, cie, BASE + 0x3000, 0x10, OPS(0x86, 0xff, 0x1f, 0x41, 0x86, 0x80, 0x20));
  cfi_stats st;
  cfi_table *t = ehb_build(e, BASE, &st);
  if (t) {
    ROW(t, BASE + 0x1001, CFI_CFA_SP, 16, SAME, -1);
    ROW(t, BASE + 0x1008, CFI_CFA_SP, 40016, SAME, -1);
    ROW(t, BASE + 0x1027, CFI_CFA_SP, 40016, SAME, -1);
    ROW(t, BASE + 0x1028, CFI_UNKNOWN, 0, SAME, 0);
    ROW(t, BASE + 0x102c, CFI_CFA_SP, 40016, SAME, -1);
    ROW(t, BASE + 0x106c, CFI_CFA_SP, 16, SAME, -1);
    ROW(t, BASE + 0x2000, CFI_CFA_SP, 40016, LOST, -1);
    ROW(t, BASE + 0x2001, CFI_CFA_SP, 40016, LOST, -1);
    ROW(t, BASE + 0x3000, CFI_CFA_SP, 8, -32760, -1);
    ROW(t, BASE + 0x3001, CFI_CFA_SP, 8, LOST, -1);
  }
  free(t);
  free(e);
}

static void test_cfi_cfa_register_and_return_address_rules(void) {
  ehb *e = ehb_new(CFI_EH_FRAME, SEC);
  size_t cie = put_cie(e, "zR", std_init, sizeof std_init);
  put_fde(e, cie, BASE + 0x1000, 0x10,
          OPS(0x0c, 6, 16, 0x86, 2,   /* CFA = rbp + 16 from the start */
              0x41, 0x0c, 3, 8,       /* +1: CFA = rbx + 8: unknown */
              0x41, 0x12, 7, 0x7e,    /* +2: def_cfa_sf rsp, -2 * -8 = 16 */
              0x41, 0x11, 16, 0x7e,   /* +3: RA at CFA + 16 (offset_extended_sf) */
              0x41, 0x09, 16, 3,      /* +4: RA in rbx: unknown */
              0x41, 0x05, 16, 3,      /* +5: RA at CFA - 24 (offset_extended) */
              0x41, 0x14, 6, 1,       /* +6: rbp val_offset: lost */
              0x41, 0x2f, 6, 1,       /* +7: rbp at CFA + 8 (GNU negative) */
              0x41, 0x13, 0x7d,       /* +8: def_cfa_offset_sf 3 * -8 = 24 */
              0x41, 0x10, 6, 1, 0x9c, /* +9: rbp by expression: lost */
              0x41, 0x08, 6));        /* +10: rbp same value */
  cfi_stats st;
  cfi_table *t = ehb_build(e, BASE, &st);
  if (t) {
    ROW(t, BASE + 0x1000, CFI_CFA_FP, 16, -16, -1);
    ROW(t, BASE + 0x1001, CFI_UNKNOWN, 0, -16, 0);
    ROW(t, BASE + 0x1002, CFI_CFA_SP, 16, -16, -1);
    ROW(t, BASE + 0x1003, CFI_CFA_SP, 16, -16, 2);
    ROW(t, BASE + 0x1004, CFI_UNKNOWN, 0, -16, 0);
    ROW(t, BASE + 0x1005, CFI_CFA_SP, 16, -16, -3);
    ROW(t, BASE + 0x1006, CFI_CFA_SP, 16, LOST, -3);
    ROW(t, BASE + 0x1007, CFI_CFA_SP, 16, 8, -3);
    ROW(t, BASE + 0x1008, CFI_CFA_SP, 24, 8, -3);
    ROW(t, BASE + 0x1009, CFI_CFA_SP, 24, LOST, -3);
    ROW(t, BASE + 0x100a, CFI_CFA_SP, 24, SAME, -3);
    PP_CHECK_INT(st.bad_ops, ==, 0);
  }
  free(t);
  free(e);
}

/* Offsets whose product with the data alignment overflows 64 bits are
 * corrupt: the FDE's rows stop there with an unknown row (no signed
 * overflow: the ASan+UBSan build checks). */
static void test_cfi_overflowing_offsets_are_bad_ops(void) {
  ehb *e = ehb_new(CFI_EH_FRAME, SEC);
  size_t cie = put_cie(e, "zR", std_init, sizeof std_init);
  /* rbp at CFA + 2^61 * -8 (DW_CFA_offset) */
  put_fde(e, cie, BASE + 0x1000, 0x10,
          OPS(0x41, 0x86, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20));
  /* def_cfa_offset_sf -2^62 * -8 */
  put_fde(e, cie, BASE + 0x2000, 0x10,
          OPS(0x42, 0x13, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40));
  /* GNU_negative_offset_extended of 2^60 * -8 = -2^63: negating overflows */
  put_fde(e, cie, BASE + 0x3000, 0x10,
          OPS(0x43, 0x2f, 6, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10));
  cfi_stats st;
  cfi_table *t = ehb_build(e, BASE, &st);
  if (t) {
    ROW(t, BASE + 0x1000, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x1001, CFI_UNKNOWN, 0, LOST, 0);
    ROW(t, BASE + 0x2001, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x2002, CFI_UNKNOWN, 0, LOST, 0);
    ROW(t, BASE + 0x3003, CFI_UNKNOWN, 0, LOST, 0);
    PP_CHECK_INT(st.bad_ops, ==, 3);
  }
  free(t);
  free(e);
}

/* An advance that moves backwards (a code alignment factor of 2^64 - 1
 * wraps every advance_loc) is corrupt: the rows stay sorted and stop there. */
static void test_cfi_backward_advance_keeps_rows_sorted(void) {
  ehb *e = ehb_new(CFI_DEBUG_FRAME, 0);
  size_t cie = put_cie_v(e, 4, "", UINT64_MAX, -8, 16, std_init, sizeof std_init);
  put_fde(e, cie, 0x1000, 0x100,
          OPS(0x01, 0x10, 0x10, 0, 0, 0, 0, 0, 0, /* set_loc 0x1010 */
              0x0e, 16, 0x58,                     /* advance 0x18 * (2^64-1): back to 0xff8 */
              0x0e, 24, 0x01, 0x20, 0x10, 0, 0, 0, 0, 0, 0)); /* set_loc 0x1020 */
  cfi_stats st;
  cfi_table *t = ehb_build(e, 0, &st);
  if (t) {
    NO_ROW(t, 0xff8);
    ROW(t, 0x1000, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, 0x1010, CFI_UNKNOWN, 0, LOST, 0);
    ROW(t, 0x10ff, CFI_UNKNOWN, 0, LOST, 0);
    PP_CHECK_INT(st.bad_ops, ==, 1);
  }
  free(t);
  free(e);
}

/* DW_CFA_restore in a CIE's own instructions brings back the default rule
 * (rbp: same value), never an uninitialised one. */
static void test_cfi_restore_in_cie_gives_the_default_rule(void) {
  ehb *e = ehb_new(CFI_EH_FRAME, SEC);
  size_t cie = put_cie(e, "zR", OPS(0x0c, 7, 8, 0x90, 1, 0x86, 2, 0xc6));
  put_fde(e, cie, BASE + 0x1000, 0x10, NULL, 0);
  cfi_stats st;
  cfi_table *t = ehb_build(e, BASE, &st);
  if (t)
    ROW(t, BASE + 0x1000, CFI_CFA_SP, 8, SAME, -1);
  free(t);
  free(e);
}

/* The return address is the CIE's return address column, not always 16. */
static void test_cfi_return_address_column_comes_from_the_cie(void) {
  ehb *e = ehb_new(CFI_EH_FRAME, SEC);
  /* column 15 at CFA-8; a decoy rule for 16 at CFA-16 */
  size_t c15 = put_cie_v(e, 1, "zR", 1, -8, 15, OPS(0x0c, 7, 8, 0x8f, 1, 0x90, 2));
  /* column 15 without a rule (undefined), 16 at CFA-8 */
  size_t c15u = put_cie_v(e, 3, "zR", 1, -8, 15, std_init, sizeof std_init);
  put_fde(e, c15, BASE + 0x1000, 0x10, OPS(0x41, 0x0e, 16));
  put_fde(e, c15u, BASE + 0x2000, 0x10, NULL, 0);
  cfi_stats st;
  cfi_table *t = ehb_build(e, BASE, &st);
  if (t) {
    ROW(t, BASE + 0x1000, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x1001, CFI_CFA_SP, 16, SAME, -1);
    ROW(t, BASE + 0x2000, CFI_END, 0, LOST, 0);
  }
  free(t);
  free(e);
}

/* A CIE is read once, not once per FDE: a 512 KiB CIE program shared by
 * 25,000 FDEs builds in milliseconds (it took hours when each FDE re-ran it). */
static void test_cfi_long_cie_costs_once(void) {
  ehb *e = ehb_new(CFI_EH_FRAME, SEC);
  static uint8_t init[512 << 10]; /* DW_CFA_nop after the usual program */
  memcpy(init, std_init, sizeof std_init);
  size_t cie = put_cie(e, "zR", init, sizeof init);
  for (uint64_t i = 0; i < 25000; i++)
    put_fde(e, cie, BASE + 0x1000 + 16 * i, 16, NULL, 0);
  cfi_stats st;
  double t0 = now_s();
  cfi_table *t = ehb_build(e, BASE, &st);
  double dt = now_s() - t0;
  fprintf(stderr, "long CIE: %u FDEs in %.1f ms\n", st.fdes, dt * 1e3);
  PP_CHECK_INT(st.fdes, ==, 25000);
  PP_CHECK(dt < 2.0);
  if (t) {
    ROW(t, BASE + 0x1000, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x1000 + 16 * 24999 + 15, CFI_CFA_SP, 8, SAME, -1);
  }
  free(t);
  free(e);
}

static void test_cfi_overlapping_and_unsorted_fdes(void) {
  ehb *e = ehb_new(CFI_EH_FRAME, SEC);
  size_t cie = put_cie(e, "zR", std_init, sizeof std_init);
  put_fde(e, cie, BASE + 0x6000, 0x100, OPS(0x02, 0x80, 0x0e, 16)); /* A: +0x80 rsp+16 */
  put_fde(e, cie, BASE + 0x5000, 0x100, NULL, 0);                   /* B, before A */
  put_fde(e, cie, BASE + 0x6080, 0x180,                             /* C overlaps A */
          OPS(0x0e, 32, 0x02, 0x40, 0x0e, 40, 0x02, 0x60, 0x0e, 48));
  put_fde(e, cie, BASE + 0x5010, 0x10, OPS(0x0e, 64)); /* D inside B */
  put_fde(e, cie, BASE + 0x7000, 0x10, OPS(0x0e, 64)); /* E inside F, same start */
  put_fde(e, cie, BASE + 0x7000, 0x40, OPS(0x0e, 72)); /* F */
  cfi_stats st;
  cfi_table *t = ehb_build(e, BASE, &st);
  if (t) {
    ROW(t, BASE + 0x5000, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x5010, CFI_CFA_SP, 8, SAME, -1); /* B wins over D */
    ROW(t, BASE + 0x50ff, CFI_CFA_SP, 8, SAME, -1);
    IS_GAP(t, BASE + 0x5100);
    IS_GAP(t, BASE + 0x5fff);
    ROW(t, BASE + 0x6000, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x6080, CFI_CFA_SP, 16, SAME, -1); /* A wins where both are */
    ROW(t, BASE + 0x60ff, CFI_CFA_SP, 16, SAME, -1);
    ROW(t, BASE + 0x6100, CFI_CFA_SP, 40, SAME, -1); /* C's rule at A's end */
    ROW(t, BASE + 0x611f, CFI_CFA_SP, 40, SAME, -1);
    ROW(t, BASE + 0x6120, CFI_CFA_SP, 48, SAME, -1);
    ROW(t, BASE + 0x61ff, CFI_CFA_SP, 48, SAME, -1);
    IS_GAP(t, BASE + 0x6200);
    ROW(t, BASE + 0x7000, CFI_CFA_SP, 72, SAME, -1); /* the longer of two at one address */
    ROW(t, BASE + 0x703f, CFI_CFA_SP, 72, SAME, -1);
    NO_ROW(t, BASE + 0x7040);
    PP_CHECK_INT(st.overlaps, ==, 3);
    PP_CHECK_INT(st.bad_entries, ==, 0);
  }
  free(t);
  free(e);
}

static void test_cfi_zero_length_fdes_cover_nothing(void) {
  ehb *e = ehb_new(CFI_EH_FRAME, SEC);
  size_t cie = put_cie(e, "zR", std_init, sizeof std_init);
  put_fde(e, cie, BASE + 0x3000, 0, OPS(0x0e, 16));
  put_fde(e, cie, BASE + 0x1000, 0x10, NULL, 0);
  put_fde(e, cie, BASE + 0x1008, 0, OPS(0x0e, 16)); /* inside another */
  put_fde(e, cie, BASE + 0x1010, 0, OPS(0x0e, 16)); /* at its end */
  cfi_stats st;
  cfi_table *t = ehb_build(e, BASE, &st);
  if (t) {
    PP_CHECK_INT(t->nrows, ==, 2);
    ROW(t, BASE + 0x1008, CFI_CFA_SP, 8, SAME, -1);
    NO_ROW(t, BASE + 0x1010);
    NO_ROW(t, BASE + 0x3000);
    PP_CHECK_INT(st.bad_entries + st.overlaps, ==, 0);
  }
  free(t);
  /* only empty FDEs: a table without rows */
  ehb *z = ehb_new(CFI_EH_FRAME, SEC);
  cie = put_cie(z, "zR", std_init, sizeof std_init);
  put_fde(z, cie, BASE + 0x3000, 0, NULL, 0);
  t = ehb_build(z, BASE, &st);
  if (t) {
    PP_CHECK_INT(t->nrows, ==, 0);
    PP_CHECK(t->lo == t->hi);
    NO_ROW(t, BASE + 0x3000);
  }
  free(t);
  free(z);
  free(e);
}

static void test_cfi_debug_frame_absolute_addresses(void) {
  const uintptr_t base = 0x555500000000;
  ehb *e = ehb_new(CFI_DEBUG_FRAME, base);
  size_t v4 = put_cie_v(e, 4, "", 1, -8, 16, std_init, sizeof std_init);
  size_t v1 = put_cie_v(e, 1, "", 1, -8, 16, std_init, sizeof std_init);
  size_t v3 = put_cie_v(e, 3, "", 4, -8, 16, std_init, sizeof std_init); /* code_align 4 */
  put_fde(e, v4, 0x1000, 0x20, OPS(0x41, 0x0e, 16));
  put_fde(e, v1, 0x2000, 0x10, OPS(0x0c, 6, 16));
  put_fde(e, v3, 0x3000, 0x20, OPS(0x41, 0x0e, 16)); /* +1 unit = 4 bytes */
  put_fde(e, v4 + 1, 0x4000, 0x10, NULL, 0);         /* CIE pointer to no CIE */
  cfi_stats st;
  cfi_table *t = ehb_build(e, base, &st);
  if (t) {
    ROW(t, base + 0x1000, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, base + 0x1001, CFI_CFA_SP, 16, SAME, -1);
    ROW(t, base + 0x2000, CFI_CFA_FP, 16, SAME, -1);
    ROW(t, base + 0x3003, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, base + 0x3004, CFI_CFA_SP, 16, SAME, -1);
    NO_ROW(t, base + 0x4000);
    PP_CHECK_INT(st.cies, ==, 3);
    PP_CHECK_INT(st.fdes, ==, 3);
    PP_CHECK_INT(st.bad_entries, ==, 1);
  }
  free(t);
  /* the same bytes read as .eh_frame: nonsense to that parser, still clean */
  cfi_table *t2 = NULL;
  PP_CHECK_INT(cfi_build(e->b, e->n, base, base, CFI_EH_FRAME, NULL, &t2, &st), ==, 0);
  check_invariants(t2, 100, 3, ".debug_frame read as .eh_frame");
  free(t2);
  free(e);
}

static void test_cfi_lookup_at_boundaries_and_pages(void) {
  ehb *e = ehb_new(CFI_EH_FRAME, SEC);
  size_t cie = put_cie(e, "zR", std_init, sizeof std_init);
  /* [0xff0, 0x3010): rows at 0xff0, 0x1000 (a page start), 0x1fff, 0x2001 */
  put_fde(e, cie, BASE + 0xff0, 0x2020,
          OPS(0x50, 0x0e, 16, 0x03, 0xff, 0x0f, 0x0e, 24, 0x42, 0x0e, 32));
  put_fde(e, cie, BASE + 0x5000, 1, OPS(0x0e, 40)); /* one byte, pages later */
  put_fde(e, cie, BASE + 0x5001, 1, OPS(0x0e, 48)); /* adjacent */
  cfi_stats st;
  cfi_table *t = ehb_build(e, BASE, &st);
  if (t) {
    NO_ROW(t, BASE + 0xfef);
    ROW(t, BASE + 0xff0, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0xfff, CFI_CFA_SP, 8, SAME, -1);
    ROW(t, BASE + 0x1000, CFI_CFA_SP, 16, SAME, -1);
    ROW(t, BASE + 0x1ffe, CFI_CFA_SP, 16, SAME, -1);
    ROW(t, BASE + 0x1fff, CFI_CFA_SP, 24, SAME, -1);
    ROW(t, BASE + 0x2000, CFI_CFA_SP, 24, SAME, -1);
    ROW(t, BASE + 0x2001, CFI_CFA_SP, 32, SAME, -1);
    ROW(t, BASE + 0x300f, CFI_CFA_SP, 32, SAME, -1);
    IS_GAP(t, BASE + 0x3010);
    IS_GAP(t, BASE + 0x4000);
    IS_GAP(t, BASE + 0x4fff);
    ROW(t, BASE + 0x5000, CFI_CFA_SP, 40, SAME, -1);
    ROW(t, BASE + 0x5001, CFI_CFA_SP, 48, SAME, -1);
    NO_ROW(t, BASE + 0x5002);
    PP_CHECK_INT(t->npages, ==, 6);
  }
  free(t);
  free(e);
}

/* A model check: random non-overlapping FDEs with random rows over 1 MiB,
 * every address looked up and compared with what the generator wrote. */
static void test_cfi_random_fdes_match_a_model(void) {
  enum { SPAN = 1 << 20 };
  int32_t *model = calloc(SPAN, sizeof *model); /* CFA offset, 0 = no FDE */
  ehb *e = ehb_new(CFI_EH_FRAME, SEC);
  if (!model) {
    PP_CHECK(model != NULL);
    free(e);
    return;
  }
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  size_t cie = put_cie(e, "zR", std_init, sizeof std_init);
  uint32_t at = 0x40;
  unsigned nfde = 0;
  while (e->n + 2048 < sizeof e->b && at + 11000 < SPAN) {
    uint32_t gap = cfi_inv_rand(&rng) % 3 == 0 ? (uint32_t)(cfi_inv_rand(&rng) % 5000) : 0;
    uint32_t len = 1 + (uint32_t)(cfi_inv_rand(&rng) % 6000);
    uint32_t lo = at + gap;
    uint8_t ops[512];
    size_t n = 0;
    uint32_t pos = 0;
    int32_t cfa = 8;
    while (n + 8 < sizeof ops) {
      uint32_t adv = 1 + (uint32_t)(cfi_inv_rand(&rng) % (cfi_inv_rand(&rng) % 2 ? 60 : 700));
      if (pos + adv >= len)
        break;
      for (uint32_t k = pos; k < pos + adv; k++)
        model[lo + k] = cfa;
      if (adv < 64) {
        ops[n++] = (uint8_t)(0x40 | adv);
      } else if (adv < 256) {
        ops[n++] = 0x02;
        ops[n++] = (uint8_t)adv;
      } else {
        ops[n++] = 0x03;
        ops[n++] = (uint8_t)adv;
        ops[n++] = (uint8_t)(adv >> 8);
      }
      pos += adv;
      cfa = 8 * (1 + (int32_t)(cfi_inv_rand(&rng) % 12));
      ops[n++] = 0x0e;
      ops[n++] = (uint8_t)cfa;
    }
    for (uint32_t k = pos; k < len; k++)
      model[lo + k] = cfa;
    put_fde(e, cie, BASE + lo, len, ops, n);
    at = lo + len;
    nfde++;
  }
  cfi_stats st;
  cfi_table *t = ehb_build(e, BASE, &st);
  unsigned long bad = 0;
  if (t) {
    PP_CHECK_INT(st.fdes, ==, nfde);
    for (uint32_t a = 0; a < SPAN; a++) {
      const cfi_row *r = cfi_lookup(t, BASE + a);
      int ok = model[a] ? r && r->kind == CFI_CFA_SP && r->cfa_off == model[a]
                        : !r || r->kind == CFI_GAP;
      if (!ok && ++bad <= 5)
        fprintf(stderr, "model: %#x: want CFA rsp+%d, got %s %d\n", a, model[a],
                r ? kind_names[r->kind] : "no row", r ? r->cfa_off : 0);
    }
    fprintf(stderr, "model: %u FDEs, %u rows, %u pages, 1 MiB of addresses, %lu wrong\n", nfde,
            t->nrows, t->npages, bad);
    PP_CHECK_INT(bad, ==, 0);
  }
  free(t);
  free(model);
  free(e);
}

static void test_cfi_empty_input_gives_an_empty_table(void) {
  cfi_table *t = NULL;
  cfi_stats st;
  static const uint8_t term[4] = {0};
  PP_CHECK_INT(cfi_build(NULL, 0, 0, 0, CFI_EH_FRAME, NULL, &t, &st), ==, 0);
  if (t) {
    PP_CHECK_INT(t->nrows, ==, 0);
    PP_CHECK(cfi_lookup(t, 0) == NULL);
  }
  free(t);
  t = NULL;
  PP_CHECK_INT(cfi_build(term, sizeof term, 0x1000, 0, CFI_EH_FRAME, NULL, &t, NULL), ==, 0);
  if (t)
    PP_CHECK_INT(t->nrows, ==, 0);
  free(t);
  PP_CHECK(cfi_lookup(NULL, 0x1000) == NULL);
}

static void test_cfi_cancel_stops_the_build(void) {
  obj_file o;
  if (obj_open(libc_path(), &o) != 0) {
    PP_CHECK(!"libc's .eh_frame");
    obj_close(&o);
    return;
  }
  _Atomic int cancel = 1;
  cfi_table *t = (cfi_table *)&o; /* must be reset to NULL */
  PP_CHECK_INT(cfi_build(o.eh, o.eh_len, o.eh_addr, 0, CFI_EH_FRAME, &cancel, &t, NULL), ==, -2);
  PP_CHECK(t == NULL);
  atomic_store(&cancel, 0);
  PP_CHECK_INT(cfi_build(o.eh, o.eh_len, o.eh_addr, 0, CFI_EH_FRAME, &cancel, &t, NULL), ==, 0);
  PP_CHECK(t != NULL && t->nrows > 1000);
  free(t);
  obj_close(&o);
}

/* ---- truncated and corrupted input ---- */

typedef struct robust_count {
  unsigned long builds, ok, failed;
  double max_s;
} robust_count;

static void robust_build(const uint8_t *src, size_t len, uintptr_t addr, enum cfi_source s,
                         robust_count *c, uint64_t seed) {
  uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees overreads */
  if (!copy)
    abort();
  memcpy(copy, src, len);
  cfi_table *t = NULL;
  cfi_stats st;
  double t0 = now_s();
  int rc = cfi_build(copy, len, addr, 0, s, NULL, &t, &st);
  double dt = now_s() - t0;
  c->builds++;
  if (dt > c->max_s)
    c->max_s = dt;
  if (rc == 0) {
    c->ok++;
    char msg[256];
    if (cfi_table_check(t, 64, seed, msg, sizeof msg) != 0) {
      if (++pp_test_failures <= 5)
        fprintf(stderr, "build of %zu bytes (seed %llu): %s\n", len, (unsigned long long)seed, msg);
    }
  } else {
    c->failed++;
    PP_CHECK(t == NULL);
  }
  free(t);
  free(copy);
}

static void test_cfi_truncated_sections_build_or_fail_cleanly(void) {
  obj_file libc, small;
  if (obj_open(libc_path(), &libc) != 0 || obj_open(CFI_OMITFP_OBJ, &small) != 0) {
    PP_CHECK(!"libc's and the test object's .eh_frame");
    obj_close(&libc);
    obj_close(&small);
    return;
  }
  robust_count c = {0};
  for (size_t n = 0; n <= small.eh_len; n++)
    robust_build(small.eh, n, small.eh_addr, CFI_EH_FRAME, &c, n);
  size_t head = libc.eh_len < 8192 ? libc.eh_len : 8192;
  for (size_t n = 0; n <= head; n++)
    robust_build(libc.eh, n, libc.eh_addr, CFI_EH_FRAME, &c, n);
  /* the whole section cut around 300 entry boundaries spread over it */
  size_t off = 0, entries = 0, every = 16;
  while (off + 4 <= libc.eh_len) {
    uint32_t len;
    memcpy(&len, libc.eh + off, 4);
    if (len == 0 || len == 0xffffffffu)
      break;
    if (entries++ % every == 0)
      for (int d = -2; d <= 5; d++)
        if ((ptrdiff_t)off + d >= 0 && off + (size_t)d <= libc.eh_len)
          robust_build(libc.eh, off + (size_t)d, libc.eh_addr, CFI_EH_FRAME, &c, off);
    off += 4 + (size_t)len;
  }
  /* and as .debug_frame: garbage to that parser */
  for (size_t n = 0; n <= small.eh_len; n++)
    robust_build(small.eh, n, 0, CFI_DEBUG_FRAME, &c, n);
  fprintf(stderr, "prefixes: %lu builds (%lu ok, %lu failed), slowest %.1f ms\n", c.builds, c.ok,
          c.failed, c.max_s * 1e3);
  PP_CHECK(c.max_s < 2.0);
  PP_CHECK_INT(c.failed, ==, 0); /* bad input costs entries, never the build */
  obj_close(&libc);
  obj_close(&small);
}

static void test_cfi_random_byte_flips_build_or_fail_cleanly(void) {
  obj_file libc;
  if (obj_open(libc_path(), &libc) != 0) {
    PP_CHECK(!"libc's .eh_frame");
    obj_close(&libc);
    return;
  }
  size_t head = libc.eh_len < 16384 ? libc.eh_len : 16384;
  uint8_t *buf = malloc(libc.eh_len);
  if (!buf)
    abort();
  robust_count c = {0};
  uint64_t rng = 0x1234567887654321ull;
  for (int i = 0; i < 4200; i++) {
    size_t len = i < 4000 ? head : libc.eh_len; /* the last 200 on the whole section */
    memcpy(buf, libc.eh, len);
    int flips = 1 + (int)(cfi_inv_rand(&rng) % 4);
    for (int k = 0; k < flips; k++) {
      size_t at = (size_t)(cfi_inv_rand(&rng) % len);
      uint64_t how = cfi_inv_rand(&rng);
      buf[at] = how & 1 ? (uint8_t)(how >> 8) : (uint8_t)(buf[at] ^ (1u << ((how >> 8) & 7)));
    }
    robust_build(buf, len, libc.eh_addr, i & 1 ? CFI_EH_FRAME : CFI_DEBUG_FRAME, &c, (uint64_t)i);
  }
  fprintf(stderr, "byte flips: %lu builds (%lu ok, %lu failed), slowest %.1f ms\n", c.builds, c.ok,
          c.failed, c.max_s * 1e3);
  PP_CHECK(c.max_s < 2.0);
  PP_CHECK_INT(c.failed, ==, 0);
  free(buf);
  obj_close(&libc);
}

/* cfi_add_range on libc's table: a range in a gap between FDEs gets the
 * row and nothing else changes; a range the CFI covers, even in part, is
 * refused and leaves the table as it was. */
static void test_cfi_add_range_fills_gaps_only(void) {
  obj_file o;
  cfi_table *t = NULL;
  if (obj_open(libc_path(), &o) != 0 || !o.eh ||
      cfi_build(o.eh, o.eh_len, o.eh_addr, 0, CFI_EH_FRAME, NULL, &t, NULL) != 0) {
    PP_CHECK(!"libc's .eh_frame built");
    obj_close(&o);
    return;
  }
  obj_close(&o);
  /* A gap of 16 bytes or more between two FDEs (alignment padding). */
  uint32_t g = 0;
  for (uint32_t i = 1; i + 1 < t->nrows && !g; i++)
    if (t->rows[i].kind == CFI_GAP && t->rows[i + 1].pc - t->rows[i].pc >= 16)
      g = i;
  PP_CHECK(g != 0);
  if (!g) {
    free(t);
    return;
  }
  uintptr_t lo = t->base + t->rows[g].pc + 4, hi = lo + 4;
  uintptr_t before = t->base + t->rows[g - 1].pc, after = t->base + t->rows[g + 1].pc;
  cfi_row was_before = *cfi_lookup(t, before), was_after = *cfi_lookup(t, after);
  uint32_t n0 = t->nrows;
  const cfi_row stub = {0, 0, CFI_FP_SAME, CFI_CFA_SP, CFI_RA_LINKREG};
  /* Refused: a range starting in an FDE, one reaching into the next FDE. */
  PP_CHECK_INT(cfi_add_range(&t, before, before + 4, &stub), ==, -1);
  PP_CHECK_INT(cfi_add_range(&t, after - 8, after + 8, &stub), ==, -1);
  PP_CHECK_INT(t->nrows, ==, n0);
  PP_CHECK_INT(cfi_add_range(&t, lo, hi, &stub), ==, 0);
  PP_CHECK_INT(t->nrows, ==, n0 + 2);
  const cfi_row *r = cfi_lookup(t, lo), *end = cfi_lookup(t, hi - 1);
  PP_CHECK(r && r->kind == CFI_CFA_SP && r->cfa_off == 0 && r->ra_off8 == CFI_RA_LINKREG &&
           r->fp_off == CFI_FP_SAME);
  PP_CHECK(end == r);
  r = cfi_lookup(t, lo - 1);
  PP_CHECK(r && r->kind == CFI_GAP);
  r = cfi_lookup(t, hi);
  PP_CHECK(r && r->kind == CFI_GAP);
  r = cfi_lookup(t, before);
  PP_CHECK(r && r->kind == was_before.kind && r->cfa_off == was_before.cfa_off &&
           r->ra_off8 == was_before.ra_off8);
  r = cfi_lookup(t, after);
  PP_CHECK(r && r->kind == was_after.kind && r->cfa_off == was_after.cfa_off &&
           r->ra_off8 == was_after.ra_off8);
  /* Right against the next FDE: no closing gap row is needed. */
  PP_CHECK_INT(cfi_add_range(&t, hi, after, &stub), ==, 0);
  /* One row from lo to the FDE, the same rule (on aarch64 the FDE's first
   * row may be that rule too, and then one row goes on into it). */
  PP_CHECK_INT(t->nrows, <=, n0 + 1);
  r = cfi_lookup(t, after - 1);
  PP_CHECK(r && r->kind == CFI_CFA_SP && r->ra_off8 == CFI_RA_LINKREG);
  /* Past the table's end. */
  uintptr_t top = t->hi;
  PP_CHECK_INT(cfi_add_range(&t, top + 64, top + 128, &stub), ==, 0);
  r = cfi_lookup(t, top + 100);
  PP_CHECK(r && r->kind == CFI_CFA_SP);
  check_invariants(t, 20000, 7, "libc with added ranges");
  free(t);
}

/* The hand-written sections use x86-64's DWARF register numbers (rsp 7,
 * rbp 6, rip 16); elsewhere the libdw oracle on real objects checks the
 * compiler's own CFI. */
#if defined(__x86_64__)
#define HAND_WRITTEN_X86_64 1
#else
#define HAND_WRITTEN_X86_64 0
#endif

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--seeds") == 0)
    seeds_dir = argv[2];
  else if (argc != 1)
    return fprintf(stderr, "usage: %s [--seeds DIR]\n", argv[0]), 2;
  if (HAND_WRITTEN_X86_64) {
    PP_RUN(test_cfi_frameless_leaf_is_sp_plus_8);
    PP_RUN(test_cfi_push_rbp_prologue_moves_cfa_to_rbp);
    PP_RUN(test_cfi_remember_restore_state_around_early_return);
    PP_RUN(test_cfi_plt_expression_is_a_plt_row);
    PP_RUN(test_cfi_signal_frame_cie_gives_signal_rows);
    PP_RUN(test_cfi_undefined_return_address_is_end);
    PP_RUN(test_cfi_big_frames_without_frame_pointer);
    PP_RUN(test_cfi_cfa_register_and_return_address_rules);
    PP_RUN(test_cfi_overflowing_offsets_are_bad_ops);
    PP_RUN(test_cfi_backward_advance_keeps_rows_sorted);
    PP_RUN(test_cfi_restore_in_cie_gives_the_default_rule);
    PP_RUN(test_cfi_return_address_column_comes_from_the_cie);
    PP_RUN(test_cfi_long_cie_costs_once);
    PP_RUN(test_cfi_overlapping_and_unsorted_fdes);
    PP_RUN(test_cfi_zero_length_fdes_cover_nothing);
    PP_RUN(test_cfi_debug_frame_absolute_addresses);
    PP_RUN(test_cfi_lookup_at_boundaries_and_pages);
    PP_RUN(test_cfi_random_fdes_match_a_model);
  } else {
    fprintf(stderr, "hand-written cases: x86-64 register numbers, not run on this architecture\n");
  }
  if (seeds_dir)
    PP_DONE();
  PP_RUN(test_cfi_empty_input_gives_an_empty_table);
  PP_RUN(test_cfi_cancel_stops_the_build);
  PP_RUN(test_cfi_libc_matches_libdw);
  PP_RUN(test_cfi_add_range_fills_gaps_only);
  PP_RUN(test_cfi_libstdcxx_matches_libdw);
  PP_RUN(test_cfi_own_binary_matches_libdw);
  PP_RUN(test_cfi_omit_frame_pointer_object_matches_libdw);
  PP_RUN(test_cfi_debug_frame_object_matches_libdw);
  PP_RUN(test_cfi_truncated_sections_build_or_fail_cleanly);
  PP_RUN(test_cfi_random_byte_flips_build_or_fail_cleanly);
  PP_DONE();
}
