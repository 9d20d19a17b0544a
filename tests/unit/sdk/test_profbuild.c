/* profbuild: stacks of real function addresses in this binary (and libc, and a
 * C++ helper) become a pprof that pp_pprof_parse accepts, with the right
 * names, values, labels and dense ids. With an argument, also writes the
 * profile of the first case to that path (checked by go tool pprof -raw). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "elfsym.h"
#include "elfsym_test_util.h"
#include "pp_builder.h"
#include "procmaps.h"
#include "profbuild.h"
#include "profile_test_util.h"

void *profbuild_cxx_function(void);
void *profbuild_cxx_demangler(void);

static volatile int g_sink;
static const char *g_out_path;

#define PROBE(name)                                                                                \
  __attribute__((noinline, used)) static int name(int n) {                                         \
    int acc = 0;                                                                                   \
    for (int i = 0; i < n; i++)                                                                    \
      acc += i * g_sink + (acc >> 3) + (int)__LINE__;                                              \
    return acc;                                                                                    \
  }
PROBE(profbuild_probe_leaf)
PROBE(profbuild_probe_mid)
PROBE(profbuild_probe_root)

#define PC(fn, off) ((uintptr_t)(void *)&(fn) + (off))

static Profile *build_and_parse(profbuild *pb, const profbuild_stack *st, size_t n,
                                const profbuild_meta *meta, const char *save_to) {
  uint8_t *out = NULL;
  size_t len = 0;
  char why[256] = "";
  if (profbuild_build(pb, st, n, meta, &out, &len) != 0) {
    fprintf(stderr, "profbuild_build failed\n");
    return NULL;
  }
  if (save_to) {
    FILE *f = fopen(save_to, "wb");
    if (!f || fwrite(out, 1, len, f) != len || fclose(f) != 0)
      fprintf(stderr, "cannot write %s\n", save_to);
  }
  Profile *p = pp_ref_parse(out, len, 64u << 20, why, sizeof why);
  if (!p)
    fprintf(stderr, "pp_pprof_parse: %s\n", why);
  free(out);
  return p;
}

static const Perftools__Profiles__Location *loc(const Profile *p, uint64_t id) {
  return id >= 1 && id <= p->n_location ? p->location[id - 1] : NULL;
}

static const Perftools__Profiles__Function *func_of(const Profile *p,
                                                    const Perftools__Profiles__Location *l) {
  if (!l || l->n_line == 0)
    return NULL;
  uint64_t id = l->line[0]->function_id;
  return id >= 1 && id <= p->n_function ? p->function[id - 1] : NULL;
}

static const char *frame_name(const Profile *p, uint64_t loc_id) {
  const Perftools__Profiles__Function *f = func_of(p, loc(p, loc_id));
  return f ? pt_str(p, f->name) : NULL;
}

static const Perftools__Profiles__Mapping *mapping_of_loc(const Profile *p, uint64_t loc_id) {
  const Perftools__Profiles__Location *l = loc(p, loc_id);
  if (!l || l->mapping_id == 0 || l->mapping_id > p->n_mapping)
    return NULL;
  return p->mapping[l->mapping_id - 1];
}

static void check_dense_ids(const Profile *p) {
  PP_CHECK(pp_ref_ids_dense(p));
  PP_CHECK(p->n_string_table > 0 && p->string_table[0][0] == '\0');
}

/* The sample whose leaf frame has this function name. */
static const Perftools__Profiles__Sample *sample_with_leaf(const Profile *p, const char *name) {
  for (size_t i = 0; i < p->n_sample; i++) {
    const Perftools__Profiles__Sample *s = p->sample[i];
    const char *n = s->n_location_id ? frame_name(p, s->location_id[0]) : NULL;
    if (n && strcmp(n, name) == 0)
      return s;
  }
  return NULL;
}

static void test_profbuild_names_values_labels_and_ids(void) {
  profbuild *pb = profbuild_new();
  PP_CHECK(pb != NULL);
  if (!pb)
    return;
  PP_CHECK_INT(profbuild_refresh_maps(pb), ==, 0);
  uintptr_t s1[] = {PC(profbuild_probe_leaf, 4), PC(profbuild_probe_mid, 9),
                    PC(profbuild_probe_root, 9)};
  uintptr_t s2[] = {PC(profbuild_probe_mid, 4), PC(profbuild_probe_root, 9)};
  pp_label l1[] = {{"trace_id", "abc123", 0, NULL}, {"route", "/checkout", 0, NULL}};
  pp_label l2[] = {{"trace_id", "zzz", 0, NULL}};
  profbuild_stack st[] = {
      {s1, 3, l1, 2, 3, NULL, NULL, 0},
      {s2, 2, l2, 1, 5, NULL, NULL, 0},
      {s2, 2, NULL, 0, 7, NULL, NULL, 0},
  };
  const char *comments[] = {"pushprof test", "effective hz 100"};
  profbuild_meta meta = {10000000, 1700000000123456789, 2000000000, comments, 2, NULL,
                         0,        {NULL, NULL},        0,          NULL};
  Profile *p = build_and_parse(pb, st, 3, &meta, g_out_path);
  PP_CHECK(p != NULL);
  if (!p)
    goto done;
  check_dense_ids(p);
  PP_CHECK_INT(p->n_sample_type, ==, 2);
  if (p->n_sample_type == 2) {
    PP_CHECK_STR(pt_str(p, p->sample_type[0]->type), "samples");
    PP_CHECK_STR(pt_str(p, p->sample_type[0]->unit), "count");
    PP_CHECK_STR(pt_str(p, p->sample_type[1]->type), "cpu");
    PP_CHECK_STR(pt_str(p, p->sample_type[1]->unit), "nanoseconds");
  }
  PP_CHECK(p->period_type != NULL);
  if (p->period_type) {
    PP_CHECK_STR(pt_str(p, p->period_type->type), "cpu");
    PP_CHECK_STR(pt_str(p, p->period_type->unit), "nanoseconds");
  }
  PP_CHECK_INT(p->period, ==, 10000000);
  PP_CHECK_INT(p->time_nanos, ==, 1700000000123456789);
  PP_CHECK_INT(p->duration_nanos, ==, 2000000000);
  PP_CHECK_INT(p->n_comment, ==, 2);
  if (p->n_comment == 2)
    PP_CHECK_STR(pt_str(p, p->comment[1]), "effective hz 100");

  PP_CHECK_INT(p->n_sample, ==, 3);
  const Perftools__Profiles__Sample *a = sample_with_leaf(p, "profbuild_probe_leaf");
  PP_CHECK(a != NULL);
  if (a) {
    PP_CHECK_INT(a->n_location_id, ==, 3);
    if (a->n_location_id == 3) {
      PP_CHECK_STR(frame_name(p, a->location_id[1]), "profbuild_probe_mid");
      PP_CHECK_STR(frame_name(p, a->location_id[2]), "profbuild_probe_root");
      /* the location keeps the real pc (not pc-1) */
      PP_CHECK(loc(p, a->location_id[1])->address == PC(profbuild_probe_mid, 9));
      PP_CHECK(loc(p, a->location_id[0])->address == PC(profbuild_probe_leaf, 4));
      const Perftools__Profiles__Function *f = func_of(p, loc(p, a->location_id[0]));
      PP_CHECK(f != NULL);
      if (f)
        PP_CHECK_STR(pt_str(p, f->system_name), "profbuild_probe_leaf");
    }
    PP_CHECK_INT(a->n_value, ==, 2);
    if (a->n_value == 2) {
      PP_CHECK_INT(a->value[0], ==, 3);
      PP_CHECK_INT(a->value[1], ==, 3 * 10000000);
    }
    PP_CHECK_STR(pt_label(p, a, "trace_id"), "abc123");
    PP_CHECK_STR(pt_label(p, a, "route"), "/checkout");
    const Perftools__Profiles__Mapping *m = mapping_of_loc(p, a->location_id[0]);
    PP_CHECK(m != NULL);
    if (m) {
      char exe[4096];
      self_exe(exe, sizeof exe);
      PP_CHECK_STR(pt_str(p, m->filename), exe);
      PP_CHECK(strlen(pt_str(p, m->build_id)) >= 16);
      PP_CHECK(m->has_functions);
      PP_CHECK_INT(m->id, ==, 1); /* the main executable comes first */
      PP_CHECK(m->memory_start <= PC(profbuild_probe_leaf, 4) &&
               PC(profbuild_probe_leaf, 4) < m->memory_limit);
    }
  }
  /* the same stack with different labels stays two samples */
  int mids = 0;
  for (size_t i = 0; i < p->n_sample; i++) {
    const Perftools__Profiles__Sample *s = p->sample[i];
    if (s->n_location_id == 2 &&
        strcmp(frame_name(p, s->location_id[0]), "profbuild_probe_mid") == 0) {
      mids++;
      const char *t = pt_label(p, s, "trace_id");
      PP_CHECK_INT(s->value[0], ==, t ? 5 : 7);
      PP_CHECK_INT(s->value[1], ==, (t ? 5 : 7) * 10000000ll);
      if (t)
        PP_CHECK_STR(t, "zzz");
    }
  }
  PP_CHECK_INT(mids, ==, 2);
  /* a pc shared between stacks is one location */
  PP_CHECK_INT(p->n_location, ==, 4);
  perftools__profiles__profile__free_unpacked(p, NULL);
done:
  profbuild_free(pb);
}

/* A return address just past a function's last byte (a call to a noreturn
 * function) belongs to that function: frames above the leaf use pc-1. */
/* Only the objects samples touch are opened: with every pc in the program,
 * libc is listed as a mapping without a build id (never read), the program
 * with one; a later profile with a pc in libc opens it then. */
static void test_profbuild_opens_only_the_objects_samples_touch(void) {
  profbuild *pb = profbuild_new();
  PP_CHECK(pb != NULL);
  if (!pb)
    return;
  PP_CHECK_INT(profbuild_refresh_maps(pb), ==, 0);
  uintptr_t s1[] = {PC(profbuild_probe_leaf, 4), PC(profbuild_probe_root, 9)};
  profbuild_stack st[] = {{s1, 2, NULL, 0, 1, NULL, NULL, 0}};
  profbuild_meta meta = {10000000, 1700000000123456789, 1000000000, NULL, 0, NULL,
                         0,        {NULL, NULL},        0,          NULL};
  /* libc's own write: &write is a sanitizer's interceptor in an ASan build. */
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  void *libc_write = libc ? dlsym(libc, "write") : NULL;
  PP_CHECK(libc_write != NULL);
  if (libc)
    dlclose(libc);
  for (int round = 0; round < 2 && libc_write; round++) {
    uintptr_t s2[] = {(uintptr_t)libc_write + 2, PC(profbuild_probe_root, 9)};
    profbuild_stack st2[] = {{s1, 2, NULL, 0, 1, NULL, NULL, 0},
                             {s2, 2, NULL, 0, 1, NULL, NULL, 0}};
    Profile *p = build_and_parse(pb, round ? st2 : st, round ? 2 : 1, &meta, NULL);
    PP_CHECK(p != NULL);
    if (!p)
      break;
    int libc_seen = 0;
    for (size_t i = 0; i < p->n_mapping; i++) {
      const Perftools__Profiles__Mapping *m = p->mapping[i];
      const char *file = pt_str(p, m->filename), *bid = pt_str(p, m->build_id);
      if (m->id == 1)
        PP_CHECK(strlen(bid) >= 16); /* the program: touched */
      if (strstr(file, "/libc.so")) {
        libc_seen = 1;
        if (round == 0)
          PP_CHECK_STR(bid, ""); /* not opened */
        else
          PP_CHECK(strlen(bid) >= 16); /* a pc in it now */
      }
    }
    PP_CHECK(libc_seen);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  profbuild_free(pb);
}

static void test_profbuild_symbolizes_return_addresses_as_pc_minus_one(void) {
  profbuild *pb = profbuild_new();
  elfsym_image *img = NULL;
  procmaps m = {0};
  PP_CHECK(pb != NULL);
  if (!pb)
    return;
  char exe[4096];
  self_exe(exe, sizeof exe);
  img = elfsym_image_open(exe);
  PP_CHECK(img != NULL);
  PP_CHECK_INT(procmaps_read_self(&m), ==, 0);
  uintptr_t mid = PC(profbuild_probe_mid, 0);
  const procmaps_entry *e = NULL;
  for (size_t i = 0; i < m.n; i++)
    if (mid >= m.v[i].start && mid < m.v[i].end)
      e = &m.v[i];
  uint64_t vaddr;
  elfsym_symbol sym;
  PP_CHECK(e != NULL);
  if (!img || !e || !elfsym_pc_to_vaddr(img, e->start, e->offset, mid, &vaddr) ||
      !elfsym_lookup(img, vaddr, NULL, &sym)) {
    PP_CHECK(0);
    goto done;
  }
  uintptr_t end = mid + (uintptr_t)sym.size; /* first byte after profbuild_probe_mid */
  uintptr_t st1[] = {PC(profbuild_probe_leaf, 2), end};
  profbuild_stack st[] = {{st1, 2, NULL, 0, 1, NULL, NULL, 0}};
  profbuild_meta meta = {1000000, 1, 1, NULL, 0, NULL, 0, {NULL, NULL}, 0, NULL};
  Profile *p = build_and_parse(pb, st, 1, &meta, NULL);
  PP_CHECK(p != NULL);
  if (p) {
    PP_CHECK_INT(p->n_sample, ==, 1);
    if (p->n_sample == 1 && p->sample[0]->n_location_id == 2) {
      PP_CHECK_STR(frame_name(p, p->sample[0]->location_id[1]), "profbuild_probe_mid");
      PP_CHECK(loc(p, p->sample[0]->location_id[1])->address == end);
    }
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
done:
  procmaps_free(&m);
  elfsym_image_free(img);
  profbuild_free(pb);
}

static void test_profbuild_demangles_cxx_and_resolves_libc(void) {
  profbuild *pb = profbuild_new();
  PP_CHECK(pb != NULL);
  if (!pb)
    return;
  PP_CHECK(profbuild_cxx_demangler() != NULL);
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  void *w = libc ? dlsym(libc, "write") : NULL;
  if (libc)
    dlclose(libc);
  PP_CHECK(w != NULL);
  uintptr_t s1[] = {(uintptr_t)profbuild_cxx_function() + 2, PC(profbuild_probe_root, 9)};
  uintptr_t s2[] = {(uintptr_t)w + 1, PC(profbuild_probe_root, 9)};
  profbuild_stack st[] = {{s1, 2, NULL, 0, 2, NULL, NULL, 0}, {s2, 2, NULL, 0, 4, NULL, NULL, 0}};
  profbuild_meta meta = {1000000, 1, 1, NULL, 0, NULL, 0, {NULL, NULL}, 0, NULL};
  Profile *p = build_and_parse(pb, st, 2, &meta, NULL);
  PP_CHECK(p != NULL);
  if (!p)
    goto done;
  check_dense_ids(p);
  const Perftools__Profiles__Sample *a = sample_with_leaf(p, "pushprof_test::Widget::spin(int)");
  PP_CHECK(a != NULL);
  if (a) {
    const Perftools__Profiles__Function *f = func_of(p, loc(p, a->location_id[0]));
    PP_CHECK_STR(pt_str(p, f->system_name), "_ZN13pushprof_test6Widget4spinEi");
    PP_CHECK_INT(a->value[0], ==, 2);
  }
  const Perftools__Profiles__Sample *b = sample_with_leaf(p, "write");
  PP_CHECK(b != NULL);
  if (b) {
    const Perftools__Profiles__Mapping *m = mapping_of_loc(p, b->location_id[0]);
    PP_CHECK(m != NULL);
    if (m) {
      PP_CHECK(strstr(pt_str(p, m->filename), "libc") != NULL);
      PP_CHECK(strlen(pt_str(p, m->build_id)) >= 16);
      PP_CHECK(m->id > 1); /* not the main executable */
    }
  }
  perftools__profiles__profile__free_unpacked(p, NULL);
done:
  profbuild_free(pb);
}

/* The name of the location at address pc in p, "" if none, NULL if no
 * such location. */
static const char *name_at(const Profile *p, uint64_t pc) {
  for (size_t i = 0; i < p->n_location; i++)
    if (p->location[i]->address == pc)
      return p->location[i]->n_line ? frame_name(p, p->location[i]->id) : "";
  return NULL;
}

/* A profile of few pcs (each object named by one pass over its symbol
 * table) and one of many (the whole table, sorted) name the same pcs alike:
 * libc (its separate debug file when installed) and this program. */
static void test_profbuild_few_and_many_pcs_name_alike(void) {
  enum { MANY = 400 };
  static const char *const fns[] = {"write", "read",    "qsort",  "strtod",   "getenv",
                                    "fopen", "opendir", "memchr", "strftime", "gmtime_r"};
  uintptr_t base[sizeof fns / sizeof fns[0]];
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  size_t nb = 0;
  for (size_t i = 0; libc && i < sizeof fns / sizeof fns[0]; i++) {
    void *f = dlsym(libc, fns[i]);
    if (f)
      base[nb++] = (uintptr_t)f;
  }
  if (libc)
    dlclose(libc);
  PP_CHECK(nb >= 8);
  uintptr_t few[] = {base[0] + 1,
                     base[1] + 7,
                     base[2] + 40,
                     base[3] + 3,
                     base[4] + 100,
                     PC(profbuild_probe_leaf, 3),
                     PC(profbuild_probe_root, 1)};
  size_t nfew = sizeof few / sizeof few[0];
  uintptr_t many[MANY];
  size_t nmany = 0;
  for (size_t i = 0; i < nfew; i++)
    many[nmany++] = few[i];
  for (size_t i = 0; nmany < MANY; i++) /* across libc's text, inside and between functions */
    many[nmany++] = base[i % nb] + (i / nb) * 211 - 4096;
  profbuild_stack st[MANY];
  for (size_t i = 0; i < MANY; i++)
    st[i] = (profbuild_stack){&many[i], 1, NULL, 0, 1, NULL, NULL, 0};
  profbuild_meta meta = {1000000, 1, 1, NULL, 0, NULL, 0, {NULL, NULL}, 0, NULL};
  profbuild *pa = profbuild_new(), *pb = profbuild_new();
  PP_CHECK(pa && pb);
  Profile *a = pa ? build_and_parse(pa, st, nfew, &meta, NULL) : NULL;
  Profile *b = pb ? build_and_parse(pb, st, MANY, &meta, NULL) : NULL;
  PP_CHECK(a && b);
  if (!a || !b)
    goto done;
  for (size_t i = 0; i < nfew; i++) {
    const char *na = name_at(a, few[i]), *nb_ = name_at(b, few[i]);
    PP_CHECK(na && nb_ && na[0]);
    if (na && nb_)
      PP_CHECK_STR(na, nb_);
  }
  PP_CHECK_STR(name_at(a, few[0]), "write");
  PP_CHECK_STR(name_at(a, few[5]), "profbuild_probe_leaf");
  /* the few path again in the same builder, with new pcs: same names */
  perftools__profiles__profile__free_unpacked(a, NULL);
  a = build_and_parse(pa, st + nfew, 20, &meta, NULL);
  PP_CHECK(a != NULL);
  for (size_t i = nfew; a && i < nfew + 20; i++) {
    const char *na = name_at(a, many[i]), *nb_ = name_at(b, many[i]);
    PP_CHECK(na && nb_);
    if (na && nb_)
      PP_CHECK_STR(na, nb_);
  }
done:
  if (a)
    perftools__profiles__profile__free_unpacked(a, NULL);
  if (b)
    perftools__profiles__profile__free_unpacked(b, NULL);
  profbuild_free(pa);
  profbuild_free(pb);
}

static void test_profbuild_unknown_pcs_and_special_stacks(void) {
  profbuild *pb = profbuild_new();
  PP_CHECK(pb != NULL);
  if (!pb)
    return;
  void *anon = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  PP_CHECK(anon != MAP_FAILED);
  uintptr_t s1[] = {0x10, (uintptr_t)anon + 8, PC(profbuild_probe_root, 9)};
  profbuild_stack st[] = {
      {s1, 3, NULL, 0, 1, NULL, NULL, 0},
      {NULL, 0, NULL, 0, 9, "[pushprof] ring full", NULL, 0},
      {s1, 0, NULL, 0, 2, "[pushprof] truncated", NULL, 0}, /* depth 0: no callers */
      {s1 + 2, 1, NULL, 0, 4, "[pushprof] thread ended before its sample", NULL, 0}, /* a caller */
  };
  profbuild_meta meta = {1000000, 1, 1, NULL, 0, NULL, 0, {NULL, NULL}, 0, NULL};
  PP_CHECK_INT(profbuild_refresh_maps(pb), ==, 0);
  Profile *p = build_and_parse(pb, st, 4, &meta, NULL);
  PP_CHECK(p != NULL);
  if (!p)
    goto done;
  check_dense_ids(p);
  PP_CHECK_INT(p->n_sample, ==, 4);
  const Perftools__Profiles__Sample *a = NULL;
  for (size_t i = 0; i < p->n_sample; i++)
    if (p->sample[i]->n_location_id == 3)
      a = p->sample[i];
  PP_CHECK(a != NULL);
  if (a) {
    PP_CHECK(loc(p, a->location_id[0])->address == 0x10);
    PP_CHECK_INT(loc(p, a->location_id[0])->n_line, ==, 0);
    PP_CHECK_INT(loc(p, a->location_id[0])->mapping_id, ==, 0);
    PP_CHECK(loc(p, a->location_id[1])->address == (uintptr_t)anon + 8);
    PP_CHECK_INT(loc(p, a->location_id[1])->n_line, ==, 0);
    PP_CHECK_STR(frame_name(p, a->location_id[2]), "profbuild_probe_root");
  }
  const Perftools__Profiles__Sample *r = sample_with_leaf(p, "[pushprof] ring full");
  PP_CHECK(r != NULL);
  if (r) {
    PP_CHECK_INT(r->n_location_id, ==, 1);
    PP_CHECK_INT(r->value[0], ==, 9);
    PP_CHECK_INT(r->value[1], ==, 9000000);
  }
  r = sample_with_leaf(p, "[pushprof] truncated");
  PP_CHECK(r != NULL);
  if (r)
    PP_CHECK_INT(r->n_location_id, ==, 1);
  r = sample_with_leaf(p, "[pushprof] thread ended before its sample");
  PP_CHECK(r != NULL);
  if (r) { /* the pseudo-frame is the leaf, the pc its caller */
    PP_CHECK_INT(r->n_location_id, ==, 2);
    PP_CHECK_INT(r->value[0], ==, 4);
    if (r->n_location_id == 2)
      PP_CHECK_STR(frame_name(p, r->location_id[1]), "profbuild_probe_root");
  }
  perftools__profiles__profile__free_unpacked(p, NULL);
done:
  if (anon != MAP_FAILED)
    munmap(anon, 4096);
  profbuild_free(pb);
}

/* A library dlopen'ed after the first build, and the vDSO, are symbolized
 * once the maps are refreshed. */
static void test_profbuild_sees_dlopen_and_vdso(void) {
  profbuild *pb = profbuild_new();
  profbuild_meta meta = {1000000, 1, 1, NULL, 0, NULL, 0, {NULL, NULL}, 0, NULL};
  void *h = NULL;
  char dir[] = "/tmp/pp-profbuild-XXXXXX", copy[64];
  PP_CHECK(pb != NULL);
  if (!pb || !mkdtemp(dir))
    goto done;
  uintptr_t s0[] = {PC(profbuild_probe_root, 9)};
  profbuild_stack st0[] = {{s0, 1, NULL, 0, 1, NULL, NULL, 0}};
  Profile *p = build_and_parse(pb, st0, 1, &meta, NULL);
  PP_CHECK(p != NULL);
  if (p)
    perftools__profiles__profile__free_unpacked(p, NULL);

  void *z = dlsym(RTLD_DEFAULT, "zlibVersion");
  Dl_info info;
  PP_CHECK(z && dladdr(z, &info) && info.dli_fname);
  if (!z)
    goto done;
  h = dlopen_copy(info.dli_fname, dir, "libzcopy.so", copy, sizeof copy);
  void *fn = h ? dlsym(h, "zlibVersion") : NULL;
  PP_CHECK(fn != NULL && fn != z);
  void *vd = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
  void *gt = vd ? dlsym(vd, "__vdso_clock_gettime") : NULL;
  if (!fn)
    goto done;
  uintptr_t s1[] = {(uintptr_t)fn + 1, PC(profbuild_probe_root, 9)};
  uintptr_t s2[] = {(uintptr_t)gt + 1, PC(profbuild_probe_root, 9)};
  profbuild_stack st[] = {{s1, 2, NULL, 0, 1, NULL, NULL, 0}, {s2, 2, NULL, 0, 1, NULL, NULL, 0}};
  PP_CHECK_INT(profbuild_refresh_maps(pb), ==, 0);
  p = build_and_parse(pb, st, gt ? 2 : 1, &meta, NULL);
  PP_CHECK(p != NULL);
  if (p) {
    const Perftools__Profiles__Sample *a = sample_with_leaf(p, "zlibVersion");
    PP_CHECK(a != NULL);
    const Perftools__Profiles__Mapping *m = a ? mapping_of_loc(p, a->location_id[0]) : NULL;
    PP_CHECK(m != NULL);
    if (m)
      PP_CHECK_STR(pt_str(p, m->filename), copy);
    if (gt) {
      int found = 0;
      for (size_t i = 0; i < p->n_sample; i++) {
        const char *n = frame_name(p, p->sample[i]->location_id[0]);
        const Perftools__Profiles__Mapping *vm = mapping_of_loc(p, p->sample[i]->location_id[0]);
        if (n && strstr(n, "clock_gettime") && vm && strcmp(pt_str(p, vm->filename), "[vdso]") == 0)
          found++;
      }
      PP_CHECK_INT(found, ==, 1);
    } else {
      fprintf(stderr, "no vDSO clock_gettime here: vDSO part not checked\n");
    }
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  if (vd)
    dlclose(vd);
done:
  if (h)
    dlclose(h);
  unlink(copy);
  rmdir(dir);
  profbuild_free(pb);
}

static void test_profbuild_empty_profile_is_valid(void) {
  profbuild *pb = profbuild_new();
  PP_CHECK(pb != NULL);
  if (!pb)
    return;
  profbuild_meta meta = {10000000, 5, 6, NULL, 0, NULL, 0, {NULL, NULL}, 0, NULL};
  Profile *p = build_and_parse(pb, NULL, 0, &meta, NULL);
  PP_CHECK(p != NULL);
  if (p) {
    PP_CHECK_INT(p->n_sample, ==, 0);
    PP_CHECK_INT(p->period, ==, 10000000);
    perftools__profiles__profile__free_unpacked(p, NULL);
  }
  profbuild_free(pb);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Thousands of distinct deep stacks: checks the result and prints the time
 * (a figure, not a pass/fail threshold). */
static void test_profbuild_many_distinct_stacks(void) {
  enum { NSTACKS = 5000, DEPTH = 24 };
  profbuild *pb = profbuild_new();
  uintptr_t *pcs = malloc(sizeof(uintptr_t) * NSTACKS * DEPTH);
  profbuild_stack *st = calloc(NSTACKS, sizeof *st);
  PP_CHECK(pb && pcs && st);
  if (!pb || !pcs || !st)
    goto done;
  uintptr_t fns[] = {PC(profbuild_probe_leaf, 0), PC(profbuild_probe_mid, 0),
                     PC(profbuild_probe_root, 0)};
  unsigned seed = 42;
  for (size_t i = 0; i < NSTACKS; i++) {
    for (size_t d = 0; d < DEPTH; d++) {
      seed = seed * 1103515245u + 12345u;
      pcs[i * DEPTH + d] = fns[(seed >> 16) % 3] + 1 + (seed >> 8) % 8;
    }
    pcs[i * DEPTH] = fns[0] + 1 + i % 8;         /* leaf in profbuild_probe_leaf */
    pcs[i * DEPTH + 1] = fns[1] + 1 + i / 8 % 8; /* pairs (i%8, i/8%8): 64 */
    pcs[i * DEPTH + 2] = fns[2] + 1 + i / 64 % 8;
    st[i].pcs = &pcs[i * DEPTH];
    st[i].depth = DEPTH;
    st[i].count = 1;
  }
  profbuild_meta meta = {10000000, 1, 1, NULL, 0, NULL, 0, {NULL, NULL}, 0, NULL};
  double best = 1e9;
  for (int round = 0; round < 3; round++) {
    uint8_t *out = NULL;
    size_t len = 0;
    double t0 = now_s();
    PP_CHECK_INT(profbuild_build(pb, st, NSTACKS, &meta, &out, &len), ==, 0);
    double t = now_s() - t0;
    if (t < best)
      best = t;
    if (round == 0) {
      char why[256];
      Profile *p = pp_ref_parse(out, len, 256u << 20, why, sizeof why);
      PP_CHECK(p != NULL);
      if (p) {
        int64_t total = 0;
        for (size_t i = 0; i < p->n_sample; i++)
          total += p->sample[i]->value[0];
        PP_CHECK_INT(total, ==, NSTACKS);
        PP_CHECK(p->n_location <= 3 * 8 * 2);
        for (size_t i = 0; i < p->n_location; i++)
          PP_CHECK(p->location[i]->n_line == 1);
        perftools__profiles__profile__free_unpacked(p, NULL);
      }
    }
    free(out);
  }
  fprintf(stderr, "figure: %d stacks of depth %d built in %.1f ms (%.0f stacks/s)\n", NSTACKS,
          DEPTH, best * 1e3, NSTACKS / best);
  double t0 = now_s();
  for (int i = 0; i < 20; i++)
    PP_CHECK_INT(profbuild_refresh_maps(pb), ==, 0);
  fprintf(stderr, "figure: profbuild_refresh_maps (cached files) %.0f us\n",
          (now_s() - t0) / 20 * 1e6);
done:
  free(pcs);
  free(st);
  profbuild_free(pb);
}

int main(int argc, char **argv) {
  g_out_path = argc > 1 ? argv[1] : NULL;
  PP_CHECK(profbuild_probe_leaf(2) + profbuild_probe_mid(2) + profbuild_probe_root(2) >= 0);
  PP_RUN(test_profbuild_names_values_labels_and_ids);
  PP_RUN(test_profbuild_opens_only_the_objects_samples_touch);
  PP_RUN(test_profbuild_symbolizes_return_addresses_as_pc_minus_one);
  PP_RUN(test_profbuild_demangles_cxx_and_resolves_libc);
  PP_RUN(test_profbuild_few_and_many_pcs_name_alike);
  PP_RUN(test_profbuild_unknown_pcs_and_special_stacks);
  PP_RUN(test_profbuild_sees_dlopen_and_vdso);
  PP_RUN(test_profbuild_empty_profile_is_valid);
  PP_RUN(test_profbuild_many_distinct_stacks);
  PP_DONE();
}
