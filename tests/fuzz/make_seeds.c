/* Writes the seed corpus of every fuzz target:
 *   make_seeds OUTDIR   ->  OUTDIR/<target>/seed_<name>
 * Deterministic (no clock, no host data), so a re-run reproduces the
 * committed files byte for byte. Seeds are small valid inputs plus a few
 * near misses; libFuzzer mutates them from there. */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "journal.h"
#include "manifest.h"
#include "pp_client.h"
#include "pp_frame.h"
#include "pp_builder.h"
#include "pp_gzip.h"
#include "pushprof.pb-c.h"

static const char *outdir;

static void die(const char *what) {
  fprintf(stderr, "make_seeds: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void put(const char *target, const char *name, const void *data, size_t len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", outdir, target);
  if (mkdir(path, 0755) != 0 && errno != EEXIST)
    die(path);
  snprintf(path, sizeof path, "%s/%s/seed_%s", outdir, target, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
    die(path);
}

static void put_str(const char *target, const char *name, const char *s) {
  put(target, name, s, strlen(s));
}

/* ---- pprof ---- */

enum shape { SHAPE_FULL, SHAPE_INLINE, SHAPE_MINIMAL, SHAPE_MANY };

static void pack_profile(enum shape shape, uint8_t **out, size_t *len) {
  pp_builder *b = pp_builder_new();
  if (!b)
    die("pp_builder_new");
  int rc = pp_builder_add_sample_type(b, "samples", "count");
  if (shape != SHAPE_MINIMAL) {
    rc |= pp_builder_add_sample_type(b, "cpu", "nanoseconds");
    rc |= pp_builder_set_period(b, "cpu", "nanoseconds", 10000000);
    pp_builder_set_time(b, 1700000000000000000, 10000000000);
    rc |= pp_builder_add_comment(b, "pushprof fuzz seed");
  }
  if (rc != 0)
    die("builder setup");
  size_t nv = shape == SHAPE_MINIMAL ? 1 : 2;
  if (shape == SHAPE_MINIMAL) {
    uint64_t f = pp_builder_function(b, "main", "main", "", 0);
    uint64_t l = pp_builder_location(b, 0, 0x1000, &f, NULL, 1);
    if (!f || !l || pp_builder_sample(b, &l, 1, (int64_t[]){3}, nv, NULL, 0) != 0)
      die("minimal profile");
  } else {
    uint64_t exe = pp_builder_mapping(b, 0x400000, 0x500000, 0, "/usr/bin/app",
                                      "0123456789abcdef0123456789abcdef01234567", true);
    uint64_t lib = pp_builder_mapping(b, 0x7f0000000000, 0x7f0000100000, 0x1000,
                                      "/lib/x86_64-linux-gnu/libc.so.6", "", false);
    uint64_t fmain = pp_builder_function(b, "main", "main", "app.c", 10);
    uint64_t fwork = pp_builder_function(b, "work(int)", "_Z4worki", "work.cc", 40);
    uint64_t finl = pp_builder_function(b, "inlined_helper", "inlined_helper", "work.cc", 80);
    if (!exe || !lib || !fmain || !fwork || !finl)
      die("profile tables");
    uint64_t lmain = pp_builder_location(b, exe, 0x401234, &fmain, (int64_t[]){12}, 1);
    uint64_t lwork;
    if (shape == SHAPE_INLINE)
      lwork =
          pp_builder_location(b, exe, 0x402000, (uint64_t[]){finl, fwork}, (int64_t[]){81, 42}, 2);
    else
      lwork = pp_builder_location(b, exe, 0x402000, &fwork, (int64_t[]){42}, 1);
    uint64_t llibc = pp_builder_location(b, lib, 0x7f0000001234, NULL, NULL, 0);
    if (!lmain || !lwork || !llibc)
      die("locations");
    pp_label labels[] = {
        {.key = "trace_id", .str = "4bf92f3577b34da6"},
        {.key = "route", .str = "/api/items"},
        {.key = "bytes", .num = 4096, .num_unit = "bytes"},
    };
    rc = pp_builder_sample(b, (uint64_t[]){lwork, lmain}, 2, (int64_t[]){5, 50000000}, nv, labels,
                           3);
    rc |= pp_builder_sample(b, (uint64_t[]){llibc, lwork, lmain}, 3, (int64_t[]){2, 20000000}, nv,
                            labels + 1, 1);
    rc |= pp_builder_sample(b, (uint64_t[]){lmain}, 1, (int64_t[]){1, 10000000}, nv, NULL, 0);
    for (int i = 0; shape == SHAPE_MANY && i < 40; i++) {
      char route[16];
      snprintf(route, sizeof route, "/r%d", i);
      pp_label l = {.key = "route", .str = route};
      rc |=
          pp_builder_sample(b, (uint64_t[]){lwork, lmain}, 2, (int64_t[]){i, i * 1000}, nv, &l, 1);
    }
    if (rc != 0)
      die("samples");
  }
  if (pp_builder_pack(b, out, len) != 0)
    die("pack");
  pp_builder_free(b);
}

static void pprof_seeds(void) {
  static const struct {
    enum shape shape;
    const char *name;
  } shapes[] = {{SHAPE_FULL, "full.pb"}, {SHAPE_INLINE, "inline.pb"}, {SHAPE_MINIMAL, "min.pb"}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    uint8_t *p;
    size_t n;
    pack_profile(shapes[i].shape, &p, &n);
    put("pprof", shapes[i].name, p, n);
    put("otlp", shapes[i].name, p, n); /* fuzz_otlp converts what a pprof parser accepts */
    if (shapes[i].shape == SHAPE_FULL) {
      uint8_t *gz;
      size_t gzlen;
      if (pp_gzip(p, n, &gz, &gzlen) != 0)
        die("gzip");
      put("pprof", "full_gzipped.pb", gz, gzlen); /* not .pb.gz: .gitignore */
      free(gz);
      put("pprof", "full_truncated.pb", p, n / 2); /* a near miss */
    }
    free(p);
  }
}

/* ---- views: the pprof shapes, plus frame names that try to break the SVG ---- */

static void views_seeds(void) {
  static const enum shape shapes[] = {SHAPE_FULL, SHAPE_INLINE, SHAPE_MANY};
  static const char *const names[] = {"full.pb", "inline.pb", "many.pb"};
  for (size_t i = 0; i < 3; i++) {
    uint8_t *p;
    size_t n;
    pack_profile(shapes[i], &p, &n);
    put("views", names[i], p, n);
    free(p);
  }
  pp_builder *b = pp_builder_new();
  if (!b || pp_builder_add_sample_type(b, "samples", "count") != 0)
    die("views builder");
  static const char *const hostile[] = {"<script>alert(1)</script>", "a&b\"c'd;e",
                                        "]]></script><g>",           "\xff\xfe\xc3\x28 bad utf8",
                                        "ctl\x01\x1b[31m",           "&amp;&#0;&lt",
                                        "\xed\xa0\x80 surrogate",    "\xf4\x90\x80\x80 past"};
  uint64_t locs[8];
  for (size_t i = 0; i < 8; i++) {
    uint64_t f = pp_builder_function(b, hostile[i], "", "", 0);
    locs[i] = f ? pp_builder_location(b, 0, 0x1000 + i * 16, &f, NULL, 1) : 0;
    if (!locs[i])
      die("views locations");
  }
  char long_name[3000];
  memset(long_name, 'x', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = 0;
  uint64_t fl = pp_builder_function(b, long_name, "", "", 0);
  uint64_t ll = fl ? pp_builder_location(b, 0, 0x2000, &fl, NULL, 1) : 0;
  if (!ll || pp_builder_sample(b, locs, 4, (int64_t[]){3}, 1, NULL, 0) != 0 ||
      pp_builder_sample(b, locs + 4, 4, (int64_t[]){5}, 1, NULL, 0) != 0 ||
      pp_builder_sample(b, (uint64_t[]){ll, locs[0]}, 2, (int64_t[]){2}, 1, NULL, 0) != 0)
    die("views samples");
  uint8_t *p;
  size_t n;
  if (pp_builder_pack(b, &p, &n) != 0)
    die("views pack");
  put("views", "hostile_names.pb", p, n);
  free(p);
  pp_builder_free(b);
}

/* ---- frames (first byte: fuzz_frame's frame limit and length-fixing flag) ---- */

static void put_frame(const char *name, uint8_t limit_sel, const uint8_t *frame, size_t len) {
  uint8_t *buf = malloc(len + 1);
  if (!buf)
    die("malloc");
  buf[0] = limit_sel;
  memcpy(buf + 1, frame, len);
  put("frame", name, buf, len + 1);
  free(buf);
}

static void frame_seeds(void) {
  uint8_t *pprof, *gz, *frame;
  size_t plen, gzlen, flen;
  pack_profile(SHAPE_MINIMAL, &pprof, &plen);
  if (pp_gzip(pprof, plen, &gz, &gzlen) != 0)
    die("gzip");

  Pushprof__V1__Label l1 = PUSHPROF__V1__LABEL__INIT, l2 = PUSHPROF__V1__LABEL__INIT;
  l1.key = "env";
  l1.value = "prod";
  l2.key = "k8s.pod.name";
  l2.value = "api-7d9c";
  Pushprof__V1__Label *labels[] = {&l1, &l2};
  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  req.service = "checkout";
  req.n_labels = 2;
  req.labels = labels;
  req.pid = 4242;
  req.hostname = "node-1";
  req.start_time_nanos = 1700000000000000000;
  req.end_time_nanos = 1700000010000000000;
  req.sequence = 7;
  req.process_start_time_nanos = 1699999990000000000;
  req.dropped_profiles = 1;
  req.pprof.data = pprof;
  req.pprof.len = plen;
  if (pp_client_encode_push(&req, &frame, &flen) != 0)
    die("encode push");
  put_frame("push.frame", 0, frame, flen);
  put_frame("push_limit4k.frame", 1, frame, flen);
  put_frame("push_fixlen.frame", 4, frame, flen); /* fuzz_frame rewrites the length */
  put_frame("push_truncated.frame", 0, frame, flen - 3);
  free(frame);

  req.n_labels = 0;
  req.hostname = NULL;
  req.pprof.data = gz;
  req.pprof.len = gzlen;
  if (pp_client_encode_push(&req, &frame, &flen) != 0)
    die("encode push");
  put_frame("push_gzip_pprof.frame", 0, frame, flen);
  free(frame);

  Pushprof__V1__PushReply rep = PUSHPROF__V1__PUSH_REPLY__INIT;
  rep.code = PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PPROF;
  rep.reason = "invalid pprof: no sample types";
  rep.sequence = 7;
  size_t rlen = pushprof__v1__push_reply__get_packed_size(&rep);
  uint8_t *r = malloc(PP_FRAME_HEADER_SIZE + rlen);
  if (!r)
    die("malloc");
  pp_frame_header_encode(r, PP_FRAME_REPLY, (uint32_t)rlen);
  pushprof__v1__push_reply__pack(&rep, r + PP_FRAME_HEADER_SIZE);
  put_frame("reply.frame", 0, r, PP_FRAME_HEADER_SIZE + rlen);
  free(r);

  uint8_t hdr[PP_FRAME_HEADER_SIZE];
  pp_frame_header_encode(hdr, PP_FRAME_PUSH, 0);
  put_frame("empty_push.frame", 3, hdr, sizeof hdr);
  free(pprof);
  free(gz);
}

/* ---- /proc/<pid>/maps ---- */

static void procmaps_seeds(void) {
  put_str("procmaps", "typical.maps",
          "55d0c8a00000-55d0c8a02000 r--p 00000000 08:01 1835019                    /usr/bin/app\n"
          "55d0c8a02000-55d0c8a07000 r-xp 00002000 08:01 1835019                    /usr/bin/app\n"
          "55d0ca1c4000-55d0ca1e5000 rw-p 00000000 00:00 0                          [heap]\n"
          "7f3a1c000000-7f3a1c021000 rw-p 00000000 00:00 0 \n"
          "7f3a20028000-7f3a201bd000 r-xp 00028000 fd:00 3412                       "
          "/lib/x86_64-linux-gnu/libc.so.6\n"
          "7f3a20400000-7f3a20401000 r-xs 00000000 00:05 99    /memfd:jit (deleted)\n"
          "7f3a20500000-7f3a20501000 r-xp 00001000 103:02 12 /opt/my app/lib x.so (deleted)\n"
          "7ffc6c5e1000-7ffc6c602000 rw-p 00000000 00:00 0                          [stack]\n"
          "7ffc6c7d4000-7ffc6c7d6000 r-xp 00000000 00:00 0                          [vdso]\n"
          "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  "
          "[vsyscall]\n");
  put_str("procmaps", "malformed.maps",
          "00400000-00300000 r-xp 00000000 08:01 1 /end/before/start\n"
          "00400000-00500000 rwzp 00000000 08:01 1 /bad/perms\n"
          "00400000-00500000 r-xp 00000000 08:01 1x/glued\n"
          "10000000000000000-1 r-xp 0 0:0 0\n"
          "\n"
          "00400000-00500000 r-xp 0 fff:fffff 18446744073709551615 /max\n"
          "00400000-00500000 r-xp 0 1:2 3");
}

/* ---- ELF images ---- */

/* A little ELF64 shared object: two PT_LOADs, a GNU build-id note (PT_NOTE
 * and section), .symtab with sized, unsized, mangled, aliased and ignored
 * symbols, optionally a .dynsym instead. */
/* link (with link_len bytes, at most 36): the contents of a .gnu_debuglink
 * section that takes the build-id note's place; NULL for none. */
static size_t make_elf(uint8_t *img, size_t cap, bool with_note, bool dynsym_only, const char *link,
                       size_t link_len) {
  static const char strtab[] = "\0main\0_ZN3foo3barEv\0_Z3bazv\0unsized_fn\0alias_main\0"
                               "data_obj\0undef_fn";
  static const char shstrtab[] = "\0.text\0.note.gnu.build-id\0.symtab\0.strtab\0.shstrtab\0"
                                 ".dynsym\0.dynstr\0.gnu_debuglink";
  enum { NSEC = 6, NSYM = 8 };
  memset(img, 0, cap);
  size_t off_ph = sizeof(Elf64_Ehdr), nph = 3;
  size_t off_text = off_ph + nph * sizeof(Elf64_Phdr);
  size_t text_len = 0x80;
  size_t off_note = (off_text + text_len + 3) & ~(size_t)3;
  size_t note_len = sizeof(Elf64_Nhdr) + 4 + 20;
  size_t off_sym = (off_note + note_len + 7) & ~(size_t)7;
  size_t sym_len = NSYM * sizeof(Elf64_Sym);
  size_t off_str = off_sym + sym_len;
  size_t off_shstr = off_str + sizeof strtab;
  size_t off_sh = (off_shstr + sizeof shstrtab + 7) & ~(size_t)7;
  size_t total = off_sh + NSEC * sizeof(Elf64_Shdr);
  if (total > cap)
    die("ELF seed too large");
  const uint64_t text_va = 0x1000;

  Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
  memcpy(eh->e_ident, ELFMAG, SELFMAG);
  eh->e_ident[EI_CLASS] = ELFCLASS64;
  eh->e_ident[EI_DATA] = ELFDATA2LSB;
  eh->e_ident[EI_VERSION] = EV_CURRENT;
  eh->e_type = ET_DYN;
  eh->e_machine = EM_X86_64;
  eh->e_version = EV_CURRENT;
  eh->e_entry = text_va;
  eh->e_phoff = off_ph;
  eh->e_shoff = off_sh;
  eh->e_ehsize = sizeof(Elf64_Ehdr);
  eh->e_phentsize = sizeof(Elf64_Phdr);
  eh->e_phnum = (uint16_t)nph;
  eh->e_shentsize = sizeof(Elf64_Shdr);
  eh->e_shnum = NSEC;
  eh->e_shstrndx = NSEC - 1;

  Elf64_Phdr *ph = (Elf64_Phdr *)(img + off_ph);
  ph[0] = (Elf64_Phdr){.p_type = PT_LOAD,
                       .p_flags = PF_R,
                       .p_offset = 0,
                       .p_vaddr = 0,
                       .p_filesz = off_text,
                       .p_memsz = off_text,
                       .p_align = 0x1000};
  ph[1] = (Elf64_Phdr){.p_type = PT_LOAD,
                       .p_flags = PF_R | PF_X,
                       .p_offset = off_text,
                       .p_vaddr = text_va + off_text,
                       .p_filesz = text_len,
                       .p_memsz = text_len,
                       .p_align = 0x1000};
  ph[2] = (Elf64_Phdr){.p_type = with_note ? PT_NOTE : PT_NULL,
                       .p_flags = PF_R,
                       .p_offset = off_note,
                       .p_vaddr = off_note,
                       .p_filesz = note_len,
                       .p_memsz = note_len,
                       .p_align = 4};
  memset(img + off_text, 0xc3, text_len);

  Elf64_Nhdr *nh = (Elf64_Nhdr *)(img + off_note);
  nh->n_namesz = 4;
  nh->n_descsz = 20;
  nh->n_type = NT_GNU_BUILD_ID;
  memcpy(img + off_note + sizeof *nh, "GNU", 4);
  for (int i = 0; i < 20; i++)
    img[off_note + sizeof *nh + 4 + i] = (uint8_t)(0x10 * i + 7);

  uint64_t fn = text_va + off_text;
  Elf64_Sym *sy = (Elf64_Sym *)(img + off_sym);
  /* name offsets into strtab */
  sy[1] = (Elf64_Sym){1, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 0, 1, fn, 0x20};
  sy[2] = (Elf64_Sym){6, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 0, 1, fn + 0x20, 0x10};
  sy[3] = (Elf64_Sym){20, ELF64_ST_INFO(STB_WEAK, STT_FUNC), 0, 1, fn + 0x30, 0x10};
  sy[4] = (Elf64_Sym){28, ELF64_ST_INFO(STB_LOCAL, STT_FUNC), 0, 1, fn + 0x40, 0};
  sy[5] = (Elf64_Sym){39, ELF64_ST_INFO(STB_LOCAL, STT_FUNC), 0, 1, fn, 0x20};
  sy[6] = (Elf64_Sym){50, ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), 0, 1, fn + 0x60, 8};
  sy[7] = (Elf64_Sym){59, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 0, SHN_UNDEF, 0, 0};
  memcpy(img + off_str, strtab, sizeof strtab);
  memcpy(img + off_shstr, shstrtab, sizeof shstrtab);

  Elf64_Shdr *sh = (Elf64_Shdr *)(img + off_sh);
  sh[1] = (Elf64_Shdr){.sh_name = 1,
                       .sh_type = SHT_PROGBITS,
                       .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
                       .sh_addr = fn,
                       .sh_offset = off_text,
                       .sh_size = text_len,
                       .sh_addralign = 16};
  sh[2] = (Elf64_Shdr){.sh_name = 7,
                       .sh_type = SHT_NOTE,
                       .sh_flags = SHF_ALLOC,
                       .sh_addr = off_note,
                       .sh_offset = off_note,
                       .sh_size = note_len,
                       .sh_addralign = 4};
  sh[3] = (Elf64_Shdr){.sh_name = dynsym_only ? 52 : 26,
                       .sh_type = dynsym_only ? SHT_DYNSYM : SHT_SYMTAB,
                       .sh_offset = off_sym,
                       .sh_size = sym_len,
                       .sh_link = 4,
                       .sh_info = 1,
                       .sh_addralign = 8,
                       .sh_entsize = sizeof(Elf64_Sym)};
  sh[4] = (Elf64_Shdr){.sh_name = dynsym_only ? 60 : 34,
                       .sh_type = SHT_STRTAB,
                       .sh_offset = off_str,
                       .sh_size = sizeof strtab,
                       .sh_addralign = 1};
  sh[5] = (Elf64_Shdr){.sh_name = 42,
                       .sh_type = SHT_STRTAB,
                       .sh_offset = off_shstr,
                       .sh_size = sizeof shstrtab,
                       .sh_addralign = 1};
  if (!with_note)
    sh[2].sh_type = SHT_PROGBITS;
  if (link) {
    if (with_note || link_len > note_len)
      die("ELF seed: a debug link replaces the build-id note");
    memset(img + off_note, 0, note_len);
    memcpy(img + off_note, link, link_len);
    sh[2].sh_name = 68; /* .gnu_debuglink */
    sh[2].sh_flags = 0;
    sh[2].sh_size = link_len;
  }
  return total;
}

static void elf_seeds(void) {
  uint8_t img[4096];
  size_t n = make_elf(img, sizeof img, true, false, NULL, 0);
  put("elfsym", "symtab_buildid.elf", img, n);
  n = make_elf(img, sizeof img, false, true, NULL, 0);
  put("elfsym", "dynsym_no_buildid.elf", img, n);
  n = make_elf(img, sizeof img, true, false, NULL, 0);
  put("elfsym", "no_section_headers.elf", img, sizeof(Elf64_Ehdr) + 3 * sizeof(Elf64_Phdr));
  /* .gnu_debuglink: name, NUL, padding to 4, CRC-32 (little-endian here);
   * then a name with no NUL, one with no room for the CRC, and a path. */
  static const char link_ok[] = "libseed.so.debug\0\0\0\0\x78\x56\x34\x12";
  static const char link_unterminated[] = "libseed.so.debug.libseed.so.debug.xx";
  static const char link_short[] = "libseed.so.debug\0\0\0\0\x78\x56";
  static const char link_path[] = "../../etc/seed.debug\0\0\0\0\x78\x56\x34\x12";
  n = make_elf(img, sizeof img, false, true, link_ok, sizeof link_ok - 1);
  put("elfsym", "dynsym_debuglink.elf", img, n);
  n = make_elf(img, sizeof img, false, true, link_unterminated, sizeof link_unterminated - 1);
  put("elfsym", "dynsym_debuglink_unterminated.elf", img, n);
  n = make_elf(img, sizeof img, false, true, link_short, sizeof link_short - 1);
  put("elfsym", "dynsym_debuglink_no_crc.elf", img, n);
  n = make_elf(img, sizeof img, false, true, link_path, sizeof link_path - 1);
  put("elfsym", "dynsym_debuglink_path.elf", img, n);
}

/* ---- sidecar config file ---- */

static void config_seeds(void) {
  put_str("config", "full.ini",
          "; every key once\n"
          "[sidecar]\n"
          "socket = /run/pushprof/pushprof.sock\n"
          "spool = /var/lib/pushprof/spool\n"
          "export_to = file:///var/lib/pushprof/profiles\n"
          "dump_duration_seconds = 2m\n"
          "max_spool_bytes = 256MiB\n"
          "spool_drop_oldest = yes\n"
          "metrics_addr = 127.0.0.1:9464\n"
          "node_name = node-1\n"
          "allow_uid = 0,1000,root\n"
          "shutdown_grace = 10s\n"
          "bucket_subdirectory = team/a\n"
          "max_dumps_retained = 100\n"
          "max_frame_bytes = 16MB\n"
          "max_connections = 256\n"
          "read_timeout = 500ms\n"
          "rescan_interval = 5\n"
          "max_batch_age = 1h\n");
  put_str("config", "aliases.ini",
          "spool_dir=/tmp/spool\nexport=s3://bucket/prefix\nbatch_window=60\n"
          "spool_drop_oldest\nmetrics_addr=\n");
  put_str("config", "errors.ini",
          "max_spool_bytes = 12 GiB\n[other]\nunknown_key = 1\nread_timeout = 99ms\n");
  put_str("config", "values.txt",
          "4096\n1K\n18446744073709551615\n18446744073709551615G\n-1\n9223372036854775807h\n"
          "1,2, 3 ,nobody\n,\n0,\n");
}

/* ---- PUSHPROF_* environment ---- */

static void env_seeds(void) {
  put_str("env_config", "all.env",
          "PUSHPROF_HZ=250\nPUSHPROF_SIGNAL=SIGRTMIN+3\nPUSHPROF_SERVICE=checkout\n"
          "PUSHPROF_OUTPUT=/tmp/prof.%p.pb.gz\nPUSHPROF_SOCKET=/run/pushprof/pushprof.sock\n"
          "PUSHPROF_UPLOAD_PERIOD=10\nPUSHPROF_EXIT_TIMEOUT_MS=2000\n"
          "PUSHPROF_SPOOL_DIR=/var/lib/pushprof/spool\nPUSHPROF_BACKLOG=6\n@prog=app\n");
  put_str("env_config", "otel.env",
          "OTEL_SERVICE_NAME=frontend\nPUSHPROF_SIGNAL=rtmax-2\nPUSHPROF_HZ=+99\n"
          "opt.hz=1000\nopt.service=from-options\nopt.signal_number=12\n");
  put_str("env_config", "bad.env",
          "PUSHPROF_HZ=1001\nPUSHPROF_SIGNAL=SIGSEGV\nPUSHPROF_OUTPUT=/tmp/%x\n"
          "PUSHPROF_SERVICE=a\tb\n@prog=\x01prog\x7f\nopt.backlog=-5\n");
}

/* ---- STS / container credential answers, dates, Retry-After ---- */

static void aws_creds_seeds(void) {
  put_str("aws_creds", "sts.xml",
          "<AssumeRoleWithWebIdentityResponse "
          "xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n"
          "  <AssumeRoleWithWebIdentityResult>\n"
          "    <Credentials>\n"
          "      <AccessKeyId>ASIAFUZZEXAMPLE00001</AccessKeyId>\n"
          "      <SecretAccessKey>fuzzSecretKeyExample/0123456789abcdefghij</SecretAccessKey>\n"
          "      <SessionToken>FwoGZXIvYXdzEFUZZ//////////token==</SessionToken>\n"
          "      <Expiration>2026-11-22T10:00:00Z</Expiration>\n"
          "    </Credentials>\n"
          "  </AssumeRoleWithWebIdentityResult>\n"
          "</AssumeRoleWithWebIdentityResponse>\n");
  put_str("aws_creds", "sts_error.xml",
          "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>"
          "<Message>expired</Message></Error></ErrorResponse>");
  put_str("aws_creds", "container.json",
          "{\"AccessKeyId\":\"ASIAFUZZEXAMPLE00002\",\"SecretAccessKey\":\"c2VjcmV0\","
          "\"Token\":\"dG9rZW4=\",\"AccountId\":\"123456789012\","
          "\"Expiration\":\"2026-11-22T10:00:00.123+01:00\"}");
  put_str("aws_creds", "date.txt", "2026-11-22T10:00:00.5-05:30 ");
  put_str("aws_creds", "retry_http_date.txt", "Wed, 21 Oct 2026 07:28:00 GMT");
  put_str("aws_creds", "retry_seconds.txt", "120");
  put_str("aws_creds", "s3_error.xml",
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code>"
          "<Message>Access\tDenied\n\x01</Message><RequestId>4442587FB7D0A2F9</RequestId></Error>");
  put_str("aws_creds", "gcs_error.json",
          "{\"error\":{\"code\":403,\"message\":\"caller does not have storage.objects.create\"}}");
  put_str("aws_creds", "url_and_secret.txt",
          "https://user:pa@ss@host.example:9000/bucket/key?X-Amz-Credential=AKID#frag\n"
          "SECRETVALUE\nbody with SECRETVALUE and SECRETVALUESECRETVALUE\n");
}

/* ---- Pyroscope: split (first byte even) and series labels (odd) ---- */

/* ---- OTLP settings: HEADERS \0 URL ---- */
static void otlp_settings_seeds(void) {
  static const char ok[] = "Authorization=Bearer%20tok,X-Scope-OrgID=team-a\0otlp+http://c:4318";
  static const char path[] = "a=b\0otlp+https://c:4318/custom/v1development/profiles";
  static const char bad[] = "bad name=v,x\0otlp+http://u:p@c:1/?q#f";
  static const char env[] = "k=%0A\0otlp";
  put("otlp_settings", "ok", ok, sizeof ok - 1);
  put("otlp_settings", "path", path, sizeof path - 1);
  put("otlp_settings", "bad", bad, sizeof bad - 1);
  put("otlp_settings", "env", env, sizeof env - 1);
}

static void pyroscope_seeds(void) {
  static const struct {
    enum shape shape;
    uint8_t limit; /* fuzz_pyroscope: max bytes = 64 + 16 * limit */
    const char *name;
  } splits[] = {{SHAPE_FULL, 22, "split_full"},
                {SHAPE_INLINE, 24, "split_inline"},
                {SHAPE_MANY, 26, "split_many"},
                {SHAPE_FULL, 4, "split_sample_too_big"},
                {SHAPE_FULL, 255, "split_fits"}};
  for (size_t i = 0; i < sizeof splits / sizeof splits[0]; i++) {
    uint8_t *p;
    size_t n;
    pack_profile(splits[i].shape, &p, &n);
    uint8_t *buf = malloc(n + 2);
    if (!buf)
      die("malloc");
    buf[0] = 0;
    buf[1] = splits[i].limit;
    memcpy(buf + 2, p, n);
    put("pyroscope", splits[i].name, buf, n + 2);
    free(buf);
    free(p);
  }
  put_str("pyroscope", "labels",
          "\x01"
          "checkout\nenv=prod\nk8s.pod.name=api-7d9c\n__reserved=x\n9lives=y\n"
          "service_name=shadow\nempty=\n=novalue\nbad=\xff\xfe\xc0\xaf\xed\xa0\x80ok\n"
          "\xc3\xa9t\xc3\xa9=caf\xc3\xa9\n");
}

/* ---- batch manifests (manifest_encode; whole, cut short, without payload) ---- */

static void manifest_seeds(void) {
  static const uint8_t gz[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  Pushprof__V1__Label labels[2];
  pushprof__v1__label__init(&labels[0]);
  pushprof__v1__label__init(&labels[1]);
  labels[0].key = "env";
  labels[0].value = "prod";
  labels[1].key = "k8s pod";
  labels[1].value = "api%7d\n";
  manifest_member members[3];
  memset(members, 0, sizeof members);
  snprintf(members[0].id, sizeof members[0].id, "1700000000000000000-12-1.push");
  snprintf(members[1].id, sizeof members[1].id, "1700000000000000001-12-2.push");
  for (size_t i = 0; i < sizeof members[1].pushid.b; i++)
    members[1].pushid.b[i] = (uint8_t)(0xa0 + i);
  snprintf(members[2].id, sizeof members[2].id, "drop-in with space.push");
  manifest m;
  memset(&m, 0, sizeof m);
  m.service = "checkout";
  m.node = "node-1";
  m.subdir = "2026/11/22";
  m.labels = labels;
  m.nlabels = 2;
  m.start_ns = 1700000000000000000;
  m.end_ns = 1700000010000000000;
  m.born_ns = -5;
  m.members = members;
  m.nmembers = 3;
  m.gz = (uint8_t *)gz;
  m.gzlen = sizeof gz;
  if (manifest_hash_hex(gz, sizeof gz, m.hash) != 0)
    die("manifest_hash_hex");
  size_t len, hdr;
  uint8_t *enc = manifest_encode(&m, &len, &hdr);
  if (!enc)
    die("manifest_encode");
  put("manifest", "full", enc, len);
  put("manifest", "header_only", enc, hdr);
  put("manifest", "cut_payload", enc, len - 3);
  put("manifest", "cut_header", enc, hdr / 2);
  free(enc);

  /* Minimal: no node, subdir, labels, members or payload (empty strings). */
  manifest e;
  memset(&e, 0, sizeof e);
  e.service = "s";
  if (manifest_hash_hex(NULL, 0, e.hash) != 0)
    die("manifest_hash_hex");
  enc = manifest_encode(&e, &len, &hdr);
  if (!enc)
    die("manifest_encode");
  put("manifest", "minimal", enc, len);
  put("manifest", "cut_minimal", enc, len - 1);
  free(enc);
}

/* ---- journal (first byte: fuzz_journal's mode; see there) ---- */

typedef struct seed_rec {
  uint32_t magic, gen, len, crc; /* journal.c's record header; crc fixed by mode bit 1 */
  char id[JOURNAL_ID_MAX];
} seed_rec;

/* Appends a record at the next 4096-byte boundary of ring (from *off). */
static void add_rec(uint8_t *ring, size_t *off, uint32_t magic, uint32_t gen, const char *id,
                    const char *frame) {
  seed_rec r;
  memset(&r, 0, sizeof r);
  r.magic = magic;
  r.gen = gen;
  r.len = (uint32_t)strlen(frame);
  snprintf(r.id, sizeof r.id, "%s", id);
  memcpy(ring + *off, &r, sizeof r);
  memcpy(ring + *off + sizeof r, frame, r.len);
  *off += (sizeof r + r.len + 4095) / 4096 * 4096;
}

static void journal_seeds(void) {
  enum { LIVE = 0x4345524a, DEAD = 0x4445444a };
  size_t cap = 1 + 6 * 4096;
  uint8_t *buf = calloc(1, cap);
  if (!buf)
    die("calloc");
  size_t off = 0;
  uint8_t *ring = buf + 1;
  add_rec(ring, &off, LIVE, 7, "1700000000000000000-1-1.push", "frame one");
  add_rec(ring, &off, DEAD, 7, "1700000000000000001-1-2.push", "released");
  add_rec(ring, &off, LIVE, 7, "1700000000000000002-1-3.push", "frame three");
  add_rec(ring, &off, LIVE, 6, "stale-lap.push", "an earlier lap");
  buf[0] = 1 | 2; /* mode B, crcs fixed, lap 7 from 4096 */
  put("journal", "lap7", buf, 1 + off);
  buf[0] = 1; /* mode B, crcs left zero: the first record is torn */
  put("journal", "torn", buf, 1 + off);
  buf[0] = 1 | 2 | 64; /* the replay callback fails on the second live record */
  put("journal", "cb_fails", buf, 1 + off);
  buf[0] = 1 | 2 | (1 << 3); /* checkpoint at 8192: a wrap into lap 8 */
  memset(buf + 1, 0, cap - 1);
  off = 0;
  add_rec(ring, &off, LIVE, 8, "1700000000000000003-1-4.push", "next lap");
  add_rec(ring, &off, DEAD, 7, "1700000000000000004-1-5.push", "checkpoint");
  add_rec(ring, &off, LIVE, 7, "1700000000000000005-1-6.push", "oldest live");
  put("journal", "wrap", buf, 1 + off);
  buf[0] = 1 | 2 | 4; /* lap UINT32_MAX, wrapping to lap 0 */
  memset(buf + 1, 0, cap - 1);
  off = 0;
  add_rec(ring, &off, LIVE, UINT32_MAX, "last-lap.push", "x");
  add_rec(ring, &off, LIVE, UINT32_MAX, "last-lap-2.push", "");
  put("journal", "gen_wrap", buf, 1 + off);
  buf[0] = 0; /* mode A: header bytes of nothing */
  put("journal", "no_header", buf, 1 + 64);
  free(buf);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_seeds OUTDIR   (writes OUTDIR/<target>/seed_*)\n");
    return 2;
  }
  outdir = argv[1];
  if (mkdir(outdir, 0755) != 0 && errno != EEXIST)
    die(outdir);
  pprof_seeds();
  views_seeds();
  frame_seeds();
  procmaps_seeds();
  elf_seeds();
  config_seeds();
  env_seeds();
  aws_creds_seeds();
  pyroscope_seeds();
  otlp_settings_seeds();
  manifest_seeds();
  journal_seeds();
  return 0;
}
