/* ELF symbols and build ids: the input is an ELF image given to
 * elfsym_image_from_memory (the path the vDSO takes; files go through the
 * same libelf reader). Symbols are read, looked up at addresses taken from the
 * image itself (so symbol values in the input get hit), with a demangler that
 * allocates like __cxa_demangle, and file offsets are mapped to addresses.
 * An image without .symtab also has its .gnu_debuglink read. The few path
 * (elfsym_lookup_many on a second image of the same bytes) must give the
 * full table's answers. */
#include <string.h>

#include "elfsym.h"
#include "fuzz_target.h"

/* Stands in for __cxa_demangle: a malloc'ed "demangled:" + name, or a
 * failure for names with a digit right after "_Z". */
static char *fake_demangle(const char *mangled, char *buf, size_t *len, int *status) {
  (void)buf;
  (void)len;
  if (mangled[2] >= '0' && mangled[2] <= '9') {
    *status = -2;
    return NULL;
  }
  size_t n = strlen(mangled);
  char *d = malloc(n + 11);
  if (!d) {
    *status = -1;
    return NULL;
  }
  memcpy(d, "demangled:", 10);
  memcpy(d + 10, mangled, n + 1);
  *status = 0;
  return d;
}

static uint64_t load64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static void probe(elfsym_image *img, uint64_t vaddr, size_t nsyms) {
  elfsym_symbol s;
  if (!elfsym_lookup(img, vaddr, fake_demangle, &s))
    return;
  FUZZ_CHECK(nsyms > 0, "found a symbol in an image without symbols");
  FUZZ_CHECK(s.name != NULL && s.demangled != NULL, "symbol without a name");
  FUZZ_CHECK(s.addr <= vaddr, "symbol at %#llx does not contain %#llx", (unsigned long long)s.addr,
             (unsigned long long)vaddr);
  FUZZ_CHECK(s.size == 0 || vaddr - s.addr < s.size, "address past the symbol's end");
  FUZZ_CHECK(strlen(s.demangled) >= strlen(s.name) || s.demangled == s.name, "demangled form");
}

/* Up to ELFSYM_FEW_MAX addresses from the input, asked of a fresh image in
 * one pass, each compared with elfsym_lookup on the full table of img. */
static void few_matches_full(elfsym_image *img, const uint8_t *data, size_t size) {
  uint64_t v[ELFSYM_FEW_MAX];
  elfsym_symbol got[ELFSYM_FEW_MAX];
  bool found[ELFSYM_FEW_MAX];
  size_t n = 0;
  size_t step = size / 8 > ELFSYM_FEW_MAX / 2 ? (size / 8 / (ELFSYM_FEW_MAX / 2)) * 8 : 8;
  for (size_t off = 0; off + 8 <= size && n + 2 <= ELFSYM_FEW_MAX; off += step) {
    v[n++] = load64(data + off);
    v[n++] = load64(data + off) + 3;
  }
  elfsym_image *few = elfsym_image_from_memory(data, size);
  if (!few)
    return;
  elfsym_lookup_many(few, v, n, fake_demangle, got, found);
  for (size_t i = 0; i < n; i++) {
    elfsym_symbol want;
    bool w = elfsym_lookup(img, v[i], fake_demangle, &want);
    FUZZ_CHECK(w == found[i], "few path %s %#llx, the full table %s", found[i] ? "names" : "misses",
               (unsigned long long)v[i], w ? "names it" : "does not");
    if (w && found[i])
      FUZZ_CHECK(strcmp(want.name, got[i].name) == 0 &&
                     strcmp(want.demangled, got[i].demangled) == 0 && want.addr == got[i].addr &&
                     want.size == got[i].size,
                 "%#llx: few path %s, the full table %s", (unsigned long long)v[i], got[i].name,
                 want.name);
  }
  elfsym_image_free(few);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  elfsym_image *img = elfsym_image_from_memory(data, size);
  if (!img)
    return 0;
  const char *id = elfsym_build_id(img);
  FUZZ_CHECK(id != NULL, "build id NULL");
  size_t idlen = strlen(id);
  FUZZ_CHECK(idlen % 2 == 0, "odd build id length %zu", idlen);
  for (size_t i = 0; i < idlen; i++)
    FUZZ_CHECK((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f'),
               "build id \"%s\" is not lower-case hex", id);

  size_t nsyms = elfsym_symbol_count(img);
  FUZZ_CHECK(elfsym_symbol_count(img) == nsyms, "symbol count changed");
  few_matches_full(img, data, size);
  /* .gnu_debuglink: only a plain file name is ever taken. */
  uint32_t crc;
  const char *link = elfsym_debuglink(img, &crc);
  if (link) {
    size_t len = strlen(link);
    FUZZ_CHECK(len > 0 && len <= 255, "debug link of %zu bytes", len);
    FUZZ_CHECK(!strchr(link, '/') && strcmp(link, ".") != 0 && strcmp(link, "..") != 0,
               "debug link \"%s\" is not a plain file name", link);
  }
  /* Every aligned 8 bytes of the image as an address (at most 512 of them),
   * and its neighbours, so symbol values and sizes in the input are tried. */
  size_t step = size / 8 > 512 ? (size / 8 / 512) * 8 : 8;
  for (size_t off = 0; off + 8 <= size; off += step) {
    uint64_t a = load64(data + off);
    probe(img, a, nsyms);
    probe(img, a + 1, nsyms);
    probe(img, a - 1, nsyms);
  }
  probe(img, 0, nsyms);
  probe(img, UINT64_MAX, nsyms);

  uint64_t vaddr;
  for (size_t off = 0; off < size; off += 1 + size / 64) {
    if (elfsym_pc_to_vaddr(img, 0x400000, 0, 0x400000 + off, &vaddr))
      probe(img, vaddr, nsyms);
    (void)elfsym_pc_to_vaddr(img, 0x7f0000000000, 0x1000, 0x7f0000000000 + off, &vaddr);
  }
  FUZZ_CHECK(!elfsym_pc_to_vaddr(img, 0x400000, 0, 0x3fffff, &vaddr), "pc below the mapping");
  (void)elfsym_pc_to_vaddr(img, 0, UINT64_MAX, UINT64_MAX, &vaddr);
  elfsym_image_free(img);
  return 0;
}
