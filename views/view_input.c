/* Files and directories -> one merged, validated profile. */
#include "view_input.h"
#include "pp_vec.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define MAX_FILE_BYTES (256u << 20)      /* a profile file, gzipped or not */
#define MAX_UNPACKED_BYTES (1024u << 20) /* one profile, uncompressed */
#define MAX_DIR_DEPTH 32

typedef struct path_list {
  char **v;
  bool *in_dir; /* found below a directory given, not named (set by the caller) */
  size_t n, cap;
} path_list;

static void say(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

static int list_add(path_list *l, const char *dir, const char *name) {
  size_t v_cap = l->cap; /* l->cap: what both arrays hold */
  if (pp_vec_grow(&l->v, &v_cap, l->n + 1, sizeof *l->v, 64) != 0 ||
      pp_vec_grow(&l->in_dir, &l->cap, l->n + 1, sizeof *l->in_dir, 64) != 0)
    return -1;
  char *p;
  if (dir) {
    size_t dl = strlen(dir);
    bool slash = dl && dir[dl - 1] == '/';
    if (asprintf(&p, "%s%s%s", dir, slash ? "" : "/", name) < 0)
      return -1;
  } else {
    p = strdup(name);
    if (!p)
      return -1;
  }
  l->in_dir[l->n] = false;
  l->v[l->n++] = p;
  return 0;
}

static void list_free(path_list *l) {
  for (size_t i = 0; i < l->n; i++)
    free(l->v[i]);
  free(l->v);
  free(l->in_dir);
  memset(l, 0, sizeof *l);
}

static bool ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static bool is_profile_name(const char *name) {
  return name[0] != '.' &&
         (ends_with(name, ".pb.gz") || ends_with(name, ".pprof") || ends_with(name, ".pprof.gz") ||
          ends_with(name, ".pb") || ends_with(name, ".prof"));
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds the profile files below dir, sorted by path. 0 or -1 with err. */
static int walk_dir(const char *dir, int depth, path_list *out, char *err, size_t errlen) {
  if (depth > MAX_DIR_DEPTH) {
    say(err, errlen, "%s: directories nested deeper than %d (a symlink loop?)", dir, MAX_DIR_DEPTH);
    return -1;
  }
  DIR *d = opendir(dir);
  if (!d) {
    say(err, errlen, "cannot open directory %s: %s", dir, strerror(errno));
    return -1;
  }
  path_list files = {0}, subdirs = {0};
  int rc = -1;
  struct dirent *e;
  errno = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue; /* ., .., and the exporter's dot temp files */
    char *full;
    if (asprintf(&full, "%s/%s", dir, e->d_name) < 0)
      goto oom;
    struct stat st;
    int s = stat(full, &st);
    free(full);
    if (s != 0)
      continue; /* vanished, or a dangling symlink */
    if (S_ISDIR(st.st_mode)) {
      if (list_add(&subdirs, dir, e->d_name) != 0)
        goto oom;
    } else if (S_ISREG(st.st_mode) && is_profile_name(e->d_name)) {
      if (list_add(&files, dir, e->d_name) != 0)
        goto oom;
    }
    errno = 0;
  }
  if (errno != 0) {
    say(err, errlen, "cannot read directory %s: %s", dir, strerror(errno));
    goto out;
  }
  if (files.n > 1)
    qsort(files.v, files.n, sizeof *files.v, cmp_str);
  if (subdirs.n > 1)
    qsort(subdirs.v, subdirs.n, sizeof *subdirs.v, cmp_str);
  for (size_t i = 0; i < files.n; i++) {
    if (list_add(out, NULL, files.v[i]) != 0)
      goto oom;
  }
  for (size_t i = 0; i < subdirs.n; i++)
    if (walk_dir(subdirs.v[i], depth + 1, out, err, errlen) != 0)
      goto out;
  rc = 0;
  goto out;
oom:
  say(err, errlen, "out of memory listing %s", dir);
out:
  list_free(&files);
  list_free(&subdirs);
  closedir(d);
  return rc;
}

static int read_whole(const char *path, uint8_t **out, size_t *len, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    say(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    say(err, errlen, "%s is not a regular file", path);
    fclose(f);
    return -1;
  }
  if ((uint64_t)st.st_size > MAX_FILE_BYTES) {
    say(err, errlen, "%s is %lld bytes, over the %u byte limit (not a profile?)", path,
        (long long)st.st_size, MAX_FILE_BYTES);
    fclose(f);
    return -1;
  }
  size_t n = (size_t)st.st_size;
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf || fread(buf, 1, n, f) != n || ferror(f)) {
    say(err, errlen, "cannot read %s: %s", path, buf ? "short read" : "out of memory");
    free(buf);
    fclose(f);
    return -1;
  }
  fclose(f);
  *out = buf;
  *len = n;
  return 0;
}

/* "a/node/svc/x.pb.gz" -> is the parent directory "svc"? */
static bool service_matches(const char *path, const char *service) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    return false; /* a file in the working directory has no service directory */
  const char *end = slash;
  while (end > path && end[-1] == '/')
    end--;
  const char *start = end;
  while (start > path && start[-1] != '/')
    start--;
  size_t n = (size_t)(end - start);
  return n == strlen(service) && memcmp(start, service, n) == 0;
}

static bool has_type(const Perftools__Profiles__Profile *p, const char *type) {
  for (size_t i = 0; i < p->n_sample_type; i++) {
    int64_t t = p->sample_type[i]->type;
    if (t >= 0 && (size_t)t < p->n_string_table && strcmp(p->string_table[t], type) == 0)
      return true;
  }
  return false;
}

static bool has_value(const Perftools__Profiles__Profile *p, const char *type, const char *unit) {
  for (size_t i = 0; i < p->n_sample_type; i++) {
    int64_t t = p->sample_type[i]->type, u = p->sample_type[i]->unit;
    if (t >= 0 && (size_t)t < p->n_string_table && strcmp(p->string_table[t], type) == 0 &&
        u >= 0 && (size_t)u < p->n_string_table && strcmp(p->string_table[u], unit) == 0)
      return true;
  }
  return false;
}

static const Perftools__Profiles__Location *location_of(const Perftools__Profiles__Profile *p,
                                                        uint64_t id) {
  if (id >= 1 && id <= p->n_location && p->location[id - 1]->id == id)
    return p->location[id - 1]; /* ids 1..n in order, as writers make them */
  for (size_t i = 0; i < p->n_location; i++)
    if (p->location[i]->id == id)
      return p->location[i];
  return NULL;
}

/* Go's mutex profile has its block profile's layout, and nothing in the file
 * says which it is; but its samples are charged to the unlocker, so their
 * innermost frame is an Unlock of package sync, which no block profile's
 * blocked stack ends in. */
static bool go_mutex_profile(const Perftools__Profiles__Profile *p) {
  static const char *const unlock[] = {"sync.(*Mutex).Unlock", "sync.(*RWMutex).Unlock",
                                       "sync.(*RWMutex).RUnlock"};
  enum { NUNLOCK = sizeof unlock / sizeof *unlock };
  uint64_t ids[NUNLOCK];
  size_t nids = 0;
  for (size_t i = 0; i < p->n_function && nids < NUNLOCK; i++) {
    int64_t n = p->function[i]->name;
    if (n < 0 || (size_t)n >= p->n_string_table)
      continue;
    for (size_t k = 0; k < NUNLOCK; k++)
      if (strcmp(p->string_table[n], unlock[k]) == 0)
        ids[nids++] = p->function[i]->id;
  }
  for (size_t i = 0; nids && i < p->n_sample; i++) {
    const Perftools__Profiles__Sample *s = p->sample[i];
    const Perftools__Profiles__Location *l =
        s->n_location_id ? location_of(p, s->location_id[0]) : NULL;
    for (size_t k = 0; l && l->n_line && k < nids; k++)
      if (l->line[0]->function_id == ids[k])
        return true;
  }
  return false;
}

view_kind view_profile_kind(const Perftools__Profiles__Profile *p) {
  if (has_value(p, "cpu", "nanoseconds"))
    return VIEW_KIND_CPU;
  if (!has_value(p, "delay", "nanoseconds"))
    return VIEW_KIND_OTHER;
  /* The SDK's lock and off-CPU profiles share Go's layout; its first
   * comment names which waits it kept. */
  static const char lock[] = "pushprof: lock waits";
  for (size_t i = 0; i < p->n_comment; i++) {
    int64_t c = p->comment[i];
    if (c >= 0 && (size_t)c < p->n_string_table &&
        strncmp(p->string_table[c], lock, sizeof lock - 1) == 0)
      return VIEW_KIND_LOCK;
  }
  return go_mutex_profile(p) ? VIEW_KIND_LOCK : VIEW_KIND_OFFCPU;
}

static bool time_matches(const Perftools__Profiles__Profile *p, const view_input_opts *o) {
  if (!o->since_ns && !o->until_ns)
    return true;
  if (p->time_nanos <= 0)
    return false; /* no time: cannot be placed in a window */
  int64_t start = p->time_nanos, end = start + (p->duration_nanos > 0 ? p->duration_nanos : 0);
  if (o->since_ns && end < o->since_ns)
    return false;
  if (o->until_ns && start >= o->until_ns)
    return false;
  return true;
}

/* The profiles of one output, merged as they come: the first kept as it is
 * unless a second one comes. */
typedef struct merger {
  pp_builder *b;
  pp_pprof *one;
  const char *first; /* path of the first file kept */
} merger;

/* Adds pp (taken) from path as out's nkept-th file. 0 or -1 with err. */
static int merger_add(merger *m, pp_pprof *pp, const char *path, size_t nkept,
                      const view_input_opts *o, char *err, size_t errlen) {
  char why[512];
  if (nkept == 1) {
    m->one = pp;
    m->first = path;
    return 0;
  }
  if (!m->b) {
    m->b = pp_builder_new();
    if (!m->b || pp_merge_add(m->b, pp_pprof_profile(m->one), why, sizeof why) != 0) {
      say(err, errlen, "%s: cannot merge: %s", m->first, m->b ? why : "out of memory");
      pp_pprof_free(pp);
      return -1;
    }
    pp_pprof_free(m->one);
    m->one = NULL;
  }
  int rc = pp_merge_add(m->b, pp_pprof_profile(pp), why, sizeof why);
  pp_pprof_free(pp);
  if (rc != 0) {
    say(err, errlen, "%s: cannot merge with %s: %s%s", path, m->first, why,
        strstr(why, "sample types differ") && !(o && o->value)
            ? " (pick the profiles of one type with --value TYPE)"
            : "");
    return -1;
  }
  return 0;
}

/* The merged profile into out (which owns it then). 0 or -1 with err. */
static int merger_finish(merger *m, view_input *out, char *err, size_t errlen) {
  char why[512];
  if (m->b) {
    uint8_t *packed = NULL;
    size_t plen = 0;
    if (pp_builder_pack(m->b, &packed, &plen) != 0) {
      say(err, errlen, "out of memory merging %zu profiles", out->nkept);
      return -1;
    }
    pp_builder_free(m->b);
    m->b = NULL;
    m->one = pp_pprof_parse(packed, plen, SIZE_MAX, why, sizeof why);
    free(packed);
    if (!m->one) {
      say(err, errlen, "the merge of %zu profiles does not validate: %s", out->nkept, why);
      return -1;
    }
  }
  out->pooled = m->one;
  out->profile = m->one ? pp_pprof_profile(m->one) : NULL;
  m->one = NULL;
  return 0;
}

static void merger_free(merger *m) {
  pp_builder_free(m->b);
  pp_pprof_free(m->one);
}

/* The files named and found below the directories named. 0 or -1 with err. */
static int list_inputs(const char *const *paths, size_t npaths, path_list *files, char *err,
                       size_t errlen) {
  if (npaths == 0) {
    say(err, errlen, "no PROFILE given (name files or directories)");
    return -1;
  }
  for (size_t i = 0; i < npaths; i++) {
    struct stat st;
    if (stat(paths[i], &st) != 0) {
      say(err, errlen, "cannot open %s: %s", paths[i], strerror(errno));
      return -1;
    }
    if (S_ISDIR(st.st_mode)) {
      size_t before = files->n;
      if (walk_dir(paths[i], 0, files, err, errlen) != 0)
        return -1;
      if (files->n == before) {
        say(err, errlen, "%s: no .pb.gz, .pprof, .pb or .prof file in this directory", paths[i]);
        return -1;
      }
      for (size_t f = before; f < files->n; f++)
        files->in_dir[f] = true;
    } else if (list_add(files, NULL, paths[i]) != 0) {
      say(err, errlen, "out of memory");
      return -1;
    }
  }
  return 0;
}

/* Reads every file once. by_kind: out[k] takes the files of kind k (for
 * each k with out[k] not NULL), the others are skipped; else out[0] takes
 * every file. */
static int load(const char *const *paths, size_t npaths, const view_input_opts *o, bool by_kind,
                view_input *out[VIEW_KINDS], char *err, size_t errlen) {
  path_list files = {0};
  merger m[VIEW_KINDS] = {{0}};
  int rc = -1;
  char why[512];
  for (int k = 0; k < VIEW_KINDS; k++)
    if (out[k])
      memset(out[k], 0, sizeof *out[k]);
  if (list_inputs(paths, npaths, &files, err, errlen) != 0)
    goto out;
  for (int k = 0; k < VIEW_KINDS; k++)
    if (out[k])
      out[k]->nfiles = files.n;
  for (size_t i = 0; i < files.n; i++) {
    const char *path = files.v[i];
    if (o && o->service && !service_matches(path, o->service))
      continue;
    uint8_t *data = NULL;
    size_t len = 0;
    if (read_whole(path, &data, &len, err, errlen) != 0)
      goto out;
    why[0] = 0;
    pp_pprof *pp = pp_pprof_parse(data, len, MAX_UNPACKED_BYTES, why, sizeof why);
    free(data);
    if (!pp) {
      say(err, errlen, "%s: %s", path, why);
      goto out;
    }
    view_kind kind = view_profile_kind(pp_pprof_profile(pp));
    int slot = by_kind ? (int)kind : 0;
    for (int k = 0; k < VIEW_KINDS; k++)
      if (out[k])
        out[k]->nkind[kind]++;
    /* A directory may hold several profile types of one service (the file
     * exporter's CPU and heap batches): --value picks those that have it. */
    bool other_type = !out[slot] || (o && o->value && files.in_dir[i] &&
                                     !has_type(pp_pprof_profile(pp), o->value));
    if (other_type || (o && !time_matches(pp_pprof_profile(pp), o))) {
      pp_pprof_free(pp);
      continue;
    }
    out[slot]->nkept++;
    if (merger_add(&m[slot], pp, path, out[slot]->nkept, o, err, errlen) != 0)
      goto out;
  }
  if (!by_kind && out[0]->nkept == 0) {
    char what[300] = "";
    if (o && o->service)
      snprintf(what, sizeof what, " of service \"%.200s\"", o->service);
    if (o && o->value)
      snprintf(what + strlen(what), sizeof what - strlen(what), " with sample type \"%.40s\"",
               o->value);
    say(err, errlen, "none of the %zu profile file%s%s%s", files.n, files.n == 1 ? "" : "s", what,
        o && (o->since_ns || o->until_ns)
            ? " is in the --since/--until window"
            : (o && (o->service || o->value) ? " was found" : " was kept"));
    goto out;
  }
  for (int k = 0; k < VIEW_KINDS; k++)
    if (out[k] && merger_finish(&m[k], out[k], err, errlen) != 0)
      goto out;
  rc = 0;
out:
  for (int k = 0; k < VIEW_KINDS; k++) {
    merger_free(&m[k]);
    if (rc != 0 && out[k])
      view_input_free(out[k]);
  }
  list_free(&files);
  return rc;
}

int view_input_load(const char *const *paths, size_t npaths, const view_input_opts *o,
                    view_input *out, char *err, size_t errlen) {
  view_input *outs[VIEW_KINDS] = {out};
  return load(paths, npaths, o, false, outs, err, errlen);
}

int view_input_load_kinds(const char *const *paths, size_t npaths, const view_input_opts *o,
                          view_input *by_kind[VIEW_KINDS], char *err, size_t errlen) {
  return load(paths, npaths, o, true, by_kind, err, errlen);
}

void view_input_free(view_input *in) {
  pp_pprof_free(in->pooled);
  in->pooled = NULL;
  in->profile = NULL;
}

static int parse_age(const char *s, int64_t now_ns, int64_t *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || v < 0 || !*end || end[1])
    return -1;
  double mult;
  switch (*end) {
  case 's':
    mult = 1;
    break;
  case 'm':
    mult = 60;
    break;
  case 'h':
    mult = 3600;
    break;
  case 'd':
    mult = 86400;
    break;
  default:
    return -1;
  }
  double ns = v * mult * 1e9;
  if (ns > 9e18)
    return -1;
  *out = now_ns - (int64_t)ns;
  return 0;
}

int view_parse_time(const char *s, int64_t now_ns, int64_t *out_ns) {
  if (!s || !*s)
    return -1;
  if (s[0] == '@') {
    char *end;
    errno = 0;
    long long v = strtoll(s + 1, &end, 10);
    if (errno || end == s + 1 || *end || v < 0 || v > 9000000000LL)
      return -1;
    *out_ns = (int64_t)v * 1000000000;
    return 0;
  }
  if (isdigit((unsigned char)s[0]) && strchr(s, '-') == NULL)
    return parse_age(s, now_ns, out_ns);
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  int y, mo, d, h = 0, mi = 0, sec = 0, n = 0;
  if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10)
    return -1;
  const char *p = s + n;
  int64_t frac_ns = 0, offset_s = 0;
  if (*p) {
    if (*p != 'T' && *p != 't' && *p != ' ')
      return -1;
    int m = 0;
    if (sscanf(p + 1, "%2d:%2d:%2d%n", &h, &mi, &sec, &m) != 3 || m != 8)
      return -1;
    p += 1 + m;
    if (*p == '.') {
      int64_t scale = 100000000;
      for (p++; isdigit((unsigned char)*p); p++, scale /= 10)
        frac_ns += (*p - '0') * scale;
    }
    if (*p == 'Z' || *p == 'z') {
      p++;
    } else if (*p == '+' || *p == '-') {
      int oh, om, k = 0;
      if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &k) != 2 || k != 5 || oh > 23 || om > 59)
        return -1;
      offset_s = (oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
      p += 1 + k;
    } else {
      return -1; /* a time without a zone is ambiguous */
    }
    if (*p)
      return -1;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || y < 1970)
    return -1;
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  time_t t = timegm(&tm);
  if (t == (time_t)-1)
    return -1;
  *out_ns = ((int64_t)t - offset_s) * 1000000000 + frac_ns;
  return 0;
}
