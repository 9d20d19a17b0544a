/* A remapping pprof merge into a builder: every string, mapping, function and
 * location of the source is re-interned in the builder (so ids and string
 * indices of different inputs never mix), and samples with the same stack
 * and labels are summed by the builder's sample dedup. */
#include "pp_merge.h"

#include "pp_builder_int.h"
#include "pp_hash.h"
#include "pp_varint.h"
#include "pp_why.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *src_str(const Perftools__Profiles__Profile *p, int64_t ix) {
  return ix >= 0 && (uint64_t)ix < p->n_string_table && p->string_table[ix] ? p->string_table[ix]
                                                                            : "?";
}

/* Writes "type/unit,..." of the builder's sample types into buf. */
static void describe_builder_types(const pp_builder *b, const pp_builder_meta *m, char *buf,
                                   size_t len) {
  size_t off = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < m->nsample_types && off < len; i++)
    off += (size_t)snprintf(buf + off, len - off, "%s%s/%s", i ? "," : "",
                            pp_builder_string_at(b, m->sample_types[2 * i]),
                            pp_builder_string_at(b, m->sample_types[2 * i + 1]));
}

static void describe_src_types(const Perftools__Profiles__Profile *p, char *buf, size_t len) {
  size_t off = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < p->n_sample_type && off < len; i++)
    off +=
        (size_t)snprintf(buf + off, len - off, "%s%s/%s", i ? "," : "",
                         src_str(p, p->sample_type[i]->type), src_str(p, p->sample_type[i]->unit));
}

/* Compares by content: the builder and src have different string tables. */
static int check_compatible(pp_builder *b, const Perftools__Profiles__Profile *src, char *why,
                            size_t whylen) {
  pp_builder_meta m;
  pp_builder_get_meta(b, &m);
  bool same = m.nsample_types == src->n_sample_type;
  for (size_t i = 0; same && i < m.nsample_types; i++)
    same = strcmp(pp_builder_string_at(b, m.sample_types[2 * i]),
                  src_str(src, src->sample_type[i]->type)) == 0 &&
           strcmp(pp_builder_string_at(b, m.sample_types[2 * i + 1]),
                  src_str(src, src->sample_type[i]->unit)) == 0;
  if (!same) {
    char have[256], got[256];
    describe_builder_types(b, &m, have, sizeof have);
    describe_src_types(src, got, sizeof got);
    pp_say(why, whylen, "sample types differ: merging [%s] into [%s]", got, have);
    return -1;
  }
  const char *bt = m.has_period_type ? pp_builder_string_at(b, m.period_type) : "";
  const char *bu = m.has_period_type ? pp_builder_string_at(b, m.period_unit) : "";
  const char *st = src->period_type ? src_str(src, src->period_type->type) : "";
  const char *su = src->period_type ? src_str(src, src->period_type->unit) : "";
  if (strcmp(bt, st) != 0 || strcmp(bu, su) != 0 || m.period != src->period) {
    pp_say(why, whylen, "periods differ: merging %" PRId64 " %s/%s into %" PRId64 " %s/%s",
           src->period, st, su, m.period, bt, bu);
    return -1;
  }
  return 0;
}

/* Takes src's sample types and period: the first add. */
static int adopt_types(pp_builder *b, const Perftools__Profiles__Profile *src, const int64_t *sx) {
  for (size_t i = 0; i < src->n_sample_type; i++)
    if (pp_builder_add_sample_type_ix(b, sx[src->sample_type[i]->type],
                                      sx[src->sample_type[i]->unit]) != 0)
      return -1;
  if (src->period_type)
    pp_builder_set_period_ix(b, sx[src->period_type->type], sx[src->period_type->unit],
                             src->period);
  else if (src->period)
    pp_builder_set_period_ix(b, 0, 0, src->period);
  return 0;
}

/* a + b, clamped to int64_t (times come from untrusted profiles). */
static int64_t add_clamped(int64_t a, int64_t b) {
  if (b > 0 && a > INT64_MAX - b)
    return INT64_MAX;
  if (b < 0 && a < INT64_MIN - b)
    return INT64_MIN;
  return a + b;
}

/* a - b, clamped to int64_t. */
static int64_t sub_clamped(int64_t a, int64_t b) {
  if (b < 0 && a > INT64_MAX + b)
    return INT64_MAX;
  if (b > 0 && a < INT64_MIN + b)
    return INT64_MIN;
  return a - b;
}

static void merge_time(pp_builder *b, const Perftools__Profiles__Profile *src) {
  if (src->time_nanos == 0 && src->duration_nanos == 0)
    return; /* unknown: does not widen the window */
  pp_builder_meta m;
  pp_builder_get_meta(b, &m);
  int64_t s_start = src->time_nanos;
  int64_t s_end = add_clamped(s_start, src->duration_nanos > 0 ? src->duration_nanos : 0);
  if (m.time_nanos == 0 && m.duration_nanos == 0) {
    pp_builder_set_time(b, s_start, sub_clamped(s_end, s_start));
    return;
  }
  int64_t end = add_clamped(m.time_nanos, m.duration_nanos);
  int64_t start = s_start < m.time_nanos ? s_start : m.time_nanos;
  if (s_end > end)
    end = s_end;
  pp_builder_set_time(b, start, sub_clamped(end, start));
}

static bool in_range(const Perftools__Profiles__Profile *p, int64_t ix) {
  return ix >= 0 && (uint64_t)ix < p->n_string_table;
}

/* One merge: src's string, mapping, function and location of each position
 * interned in b at most once (the memos), each on first use. The whole
 * profile (pp_merge_add) interns every one in order first, so unused
 * mappings and strings stay; a range of samples (pp_merge_add_samples)
 * takes only what its samples use. */
typedef struct merge_ctx {
  pp_builder *b;
  const Perftools__Profiles__Profile *src;
  int64_t *sx;  /* src string index -> builder string index, -1 = not yet */
  uint64_t *mx; /* src mapping position -> builder id, 0 = not yet */
  uint64_t *fx; /* src function position -> builder id */
  /* src location position -> builder id as the varint a sample stores:
   * its bytes first, its length in the last byte (0 = not yet) */
  uint8_t (*lx)[8];
  uint64_t *ftmp;
  int64_t *lines;
  pp_idmap maps, funcs, locs;
  char *why;
  size_t whylen;
} merge_ctx;

static int oom(merge_ctx *c) {
  pp_say(c->why, c->whylen, "out of memory merging a profile");
  return -1;
}

/* m_str's first use of ix, or ix out of range. */
static __attribute__((noinline)) int64_t m_str_slow(merge_ctx *c, int64_t ix, const char *what) {
  if (!in_range(c->src, ix)) {
    pp_say(c->why, c->whylen, "cannot merge: %s string index %" PRId64 " out of range", what, ix);
    return -1;
  }
  if ((c->sx[ix] = pp_builder_string(c->b, c->src->string_table[ix])) < 0)
    return oom(c);
  return c->sx[ix];
}

/* The builder index of src string ix; -1 with why set. Inline where the
 * memo has it: samples' labels look up three strings each. */
static inline int64_t m_str(merge_ctx *c, int64_t ix, const char *what) {
  if (in_range(c->src, ix) && c->sx[ix] >= 0)
    return c->sx[ix];
  return m_str_slow(c, ix, what);
}

/* Builder ids of src's entries at pos; 0 with why set. */
static uint64_t m_mapping(merge_ctx *c, size_t pos) {
  if (c->mx[pos])
    return c->mx[pos];
  const Perftools__Profiles__Mapping *m = c->src->mapping[pos];
  int64_t file = m_str(c, m->filename, "mapping filename");
  int64_t bid = file < 0 ? -1 : m_str(c, m->build_id, "mapping build_id");
  if (bid < 0)
    return 0;
  unsigned flags = (m->has_functions ? PP_MAPPING_HAS_FUNCTIONS : 0) |
                   (m->has_filenames ? PP_MAPPING_HAS_FILENAMES : 0) |
                   (m->has_line_numbers ? PP_MAPPING_HAS_LINE_NUMBERS : 0) |
                   (m->has_inline_frames ? PP_MAPPING_HAS_INLINE_FRAMES : 0);
  c->mx[pos] = pp_builder_mapping_ix(c->b, m->memory_start, m->memory_limit, m->file_offset, file,
                                     bid, flags);
  if (!c->mx[pos])
    oom(c);
  return c->mx[pos];
}

static uint64_t m_function(merge_ctx *c, size_t pos) {
  if (c->fx[pos])
    return c->fx[pos];
  const Perftools__Profiles__Function *f = c->src->function[pos];
  int64_t name = m_str(c, f->name, "function name");
  int64_t sys = name < 0 ? -1 : m_str(c, f->system_name, "function system_name");
  int64_t file = sys < 0 ? -1 : m_str(c, f->filename, "function filename");
  if (file < 0)
    return 0;
  if (!(c->fx[pos] = pp_builder_function_ix(c->b, name, sys, file, f->start_line)))
    oom(c);
  return c->fx[pos];
}

/* The location's entry in c->lx, NULL on failure. */
static const uint8_t *m_location(merge_ctx *c, size_t pos) {
  if (c->lx[pos][7])
    return c->lx[pos];
  const Perftools__Profiles__Location *l = c->src->location[pos];
  uint64_t mid = 0;
  if (l->mapping_id) {
    int64_t mpos = pp_idmap_find(&c->maps, l->mapping_id);
    if (mpos < 0) {
      pp_say(c->why, c->whylen,
             "cannot merge: location %" PRIu64 " refers to missing mapping %" PRIu64, l->id,
             l->mapping_id);
      return 0;
    }
    if (!(mid = m_mapping(c, (size_t)mpos)))
      return 0;
  }
  for (size_t j = 0; j < l->n_line; j++) {
    uint64_t fid = l->line[j]->function_id;
    int64_t fpos = fid ? pp_idmap_find(&c->funcs, fid) : -1;
    if (fpos < 0) {
      pp_say(c->why, c->whylen,
             "cannot merge: location %" PRIu64 " refers to missing function %" PRIu64, l->id, fid);
      return 0;
    }
    if (!(c->ftmp[j] = m_function(c, (size_t)fpos)))
      return 0;
    c->lines[j] = l->line[j]->line;
  }
  uint64_t id = pp_builder_location(c->b, mid, l->address, c->ftmp, c->lines, l->n_line);
  if (!id) {
    oom(c);
    return NULL;
  }
  c->lx[pos][7] = (uint8_t)(pp_put_varint(c->lx[pos], id) - c->lx[pos]); /* ids < 2^32: 5 bytes */
  return c->lx[pos];
}

/* Profile-level fields: sample types and period (first add), extras,
 * comments. 0 or -1. */
static int merge_header(merge_ctx *c, bool adopt) {
  const Perftools__Profiles__Profile *src = c->src;
  pp_builder *b = c->b;
  if (adopt) {
    for (size_t i = 0; i < src->n_sample_type; i++)
      if (m_str(c, src->sample_type[i]->type, "sample_type") < 0 ||
          m_str(c, src->sample_type[i]->unit, "sample_type") < 0)
        return -1;
    if (src->period_type && (m_str(c, src->period_type->type, "period_type") < 0 ||
                             m_str(c, src->period_type->unit, "period_type") < 0))
      return -1;
    if (adopt_types(b, src, c->sx) != 0)
      return oom(c);
  }
  /* From here on b holds src's types, even if a later step fails. */
  pp_builder_set_merge_started(b);
  int64_t extra[4] = {src->drop_frames, src->keep_frames, src->default_sample_type, src->doc_url};
  static const char *const names[4] = {"drop_frames", "keep_frames", "default_sample_type",
                                       "doc_url"};
  for (int i = 0; i < 4; i++)
    if (extra[i] && (extra[i] = m_str(c, extra[i], names[i])) < 0)
      return -1;
  pp_builder_set_extras_ix(b, extra[0], extra[1], extra[2], extra[3]);
  for (size_t i = 0; i < src->n_comment; i++) {
    int64_t ix = m_str(c, src->comment[i], "comment");
    if (ix < 0)
      return -1;
    if (pp_builder_add_comment_ix(b, ix) != 0)
      return oom(c);
  }
  return 0;
}

/* Merges samples [lo, hi) of src into b; with all, every string, mapping,
 * function and location of src first. keep (NULL: every column) zeroes the
 * other columns and leaves out the samples it leaves all zero. */
static int merge(pp_builder *b, const Perftools__Profiles__Profile *src, size_t lo, size_t hi,
                 bool all, const bool *keep, char *why, size_t whylen) {
  int rc = -1;
  merge_ctx c = {.b = b, .src = src, .why = why, .whylen = whylen};
  uint8_t *stmp = NULL; /* a sample's location ids, encoded (pp_builder_sample_prep) */
  pp_ilabel *labels = NULL;
  /* keep's values of the sample being readied and of the one before it,
   * which stay valid until its commit */
  int64_t *kept = NULL;
  size_t maxtmp = 1, maxlab = 1;
  pp_sample_prep prep[2] = {{0}};
  int cur = 0;
  bool pending = false;

  if (src->n_string_table == 0) {
    pp_say(why, whylen, "cannot merge: the profile has an empty string_table");
    return -1;
  }
  pp_builder_meta meta;
  pp_builder_get_meta(b, &meta);
  bool adopt = !pp_builder_merge_started(b) && meta.nsample_types == 0 && !meta.has_period_type;
  if (!adopt && check_compatible(b, src, why, whylen) != 0)
    return -1;
  uint64_t bad;
  if (pp_idmap_of(&c.maps, (const void *const *)src->mapping, src->n_mapping,
                  offsetof(Perftools__Profiles__Mapping, id), &bad) != 0 ||
      pp_idmap_of(&c.funcs, (const void *const *)src->function, src->n_function,
                  offsetof(Perftools__Profiles__Function, id), &bad) != 0 ||
      pp_idmap_of(&c.locs, (const void *const *)src->location, src->n_location,
                  offsetof(Perftools__Profiles__Location, id), &bad) != 0) {
    pp_say(why, whylen, "cannot merge: zero or repeated ids (validate the profile first)");
    goto fail;
  }
  for (size_t i = 0; i < src->n_location; i++)
    if (src->location[i]->n_line > maxtmp)
      maxtmp = src->location[i]->n_line;
  for (size_t i = lo; i < hi; i++) {
    if (src->sample[i]->n_location_id > maxtmp)
      maxtmp = src->sample[i]->n_location_id;
    if (src->sample[i]->n_label > maxlab)
      maxlab = src->sample[i]->n_label;
  }
  c.sx = malloc(src->n_string_table * sizeof *c.sx);
  c.mx = calloc(src->n_mapping + 1, sizeof *c.mx);
  c.fx = calloc(src->n_function + 1, sizeof *c.fx);
  c.lx = calloc(src->n_location + 1, sizeof *c.lx);
  c.ftmp = malloc(maxtmp * sizeof *c.ftmp);
  c.lines = malloc(maxtmp * sizeof *c.lines);
  /* Builder ids are below UINT32_MAX; each is stored as 8 bytes, the last
   * 3 (its length and zeros) overwritten by the next. */
  stmp = malloc(maxtmp * PP_VARINT32_MAX + 8);
  labels = malloc(maxlab * sizeof *labels);
  if (keep)
    kept = malloc(2 * (src->n_sample_type + 1) * sizeof *kept);
  if (!c.sx || !c.mx || !c.fx || !c.lx || !c.ftmp || !c.lines || !stmp || !labels ||
      (keep && !kept)) {
    oom(&c);
    goto fail;
  }
  memset(c.sx, 0xff, src->n_string_table * sizeof *c.sx);
  /* in order, so a whole merge lays out the builder as before */
  if (all && pp_builder_strings(b, (const char *const *)src->string_table, src->n_string_table,
                                c.sx) != 0) {
    oom(&c);
    goto fail;
  }
  if (merge_header(&c, adopt) != 0)
    goto fail;
  if (all) {
    for (size_t i = 0; i < src->n_mapping; i++)
      if (!m_mapping(&c, i))
        goto fail;
    for (size_t i = 0; i < src->n_function; i++)
      if (!m_function(&c, i))
        goto fail;
    for (size_t i = 0; i < src->n_location; i++)
      if (!m_location(&c, i))
        goto fail;
  }
  for (size_t i = lo; i < hi; i++) {
    const Perftools__Profiles__Sample *s = src->sample[i];
    const int64_t *values = s->value;
    if (s->n_value != src->n_sample_type) {
      pp_say(why, whylen, "cannot merge: sample %zu has %zu values, want %zu", i, s->n_value,
             src->n_sample_type);
      goto fail;
    }
    if (keep) {
      int64_t *v = kept + (size_t)cur * (src->n_sample_type + 1);
      bool any = false;
      for (size_t j = 0; j < s->n_value; j++) {
        v[j] = keep[j] ? s->value[j] : 0;
        any |= v[j] != 0;
      }
      if (!any)
        continue;
      values = v;
    }
    uint8_t *q = stmp;
    for (size_t j = 0; j < s->n_location_id; j++) {
      int64_t pos = pp_idmap_find(&c.locs, s->location_id[j]);
      if (pos < 0) {
        pp_say(why, whylen, "cannot merge: sample %zu refers to missing location %" PRIu64, i,
               s->location_id[j]);
        goto fail;
      }
      /* The memo inline, as the varint it becomes: samples look up ~30
       * locations each, nearly all known. */
      const uint8_t *e = c.lx[pos];
      if (!e[7] && !(e = m_location(&c, (size_t)pos)))
        goto fail;
      memcpy(q, e, 8);
      q += e[7];
    }
    for (size_t j = 0; j < s->n_label; j++) {
      const Perftools__Profiles__Label *l = s->label[j];
      int64_t key = m_str(&c, l->key, "label key");
      int64_t str = key < 0 ? -1 : m_str(&c, l->str, "label str");
      int64_t unit = str < 0 ? -1 : m_str(&c, l->num_unit, "label num_unit");
      if (unit < 0)
        goto fail;
      labels[j] = (pp_ilabel){key, str, l->num, unit};
    }
    /* Ready this sample, then add the one before (see pp_sample_prep). */
    if (pp_builder_sample_prep(b, &prep[cur], stmp, (size_t)(q - stmp), values, s->n_value, labels,
                               s->n_label) != 0 ||
        (pending && pp_builder_sample_commit(b, &prep[cur ^ 1]) != 0)) {
      oom(&c);
      goto fail;
    }
    pending = true;
    cur ^= 1;
  }
  if (pending && pp_builder_sample_commit(b, &prep[cur ^ 1]) != 0) {
    oom(&c);
    goto fail;
  }
  merge_time(b, src);
  rc = 0;
fail:
  free(c.sx);
  free(c.mx);
  free(c.fx);
  free(c.lx);
  free(c.ftmp);
  free(c.lines);
  free(stmp);
  free(labels);
  free(kept);
  pp_sample_prep_free(&prep[0]);
  pp_sample_prep_free(&prep[1]);
  pp_idmap_free(&c.maps);
  pp_idmap_free(&c.funcs);
  pp_idmap_free(&c.locs);
  return rc;
}

int pp_merge_add(pp_builder *b, const Perftools__Profiles__Profile *src, char *why, size_t whylen) {
  return merge(b, src, 0, src->n_sample, true, NULL, why, whylen);
}

int pp_merge_add_columns(pp_builder *b, const Perftools__Profiles__Profile *src, const bool *keep,
                         char *why, size_t whylen) {
  return merge(b, src, 0, src->n_sample, true, keep, why, whylen);
}

int pp_merge_add_samples(pp_builder *b, const Perftools__Profiles__Profile *src, size_t lo,
                         size_t hi, char *why, size_t whylen) {
  if (lo > hi || hi > src->n_sample) {
    pp_say(why, whylen, "cannot merge samples [%zu, %zu) of %zu", lo, hi, src->n_sample);
    return -1;
  }
  return merge(b, src, lo, hi, false, NULL, why, whylen);
}
