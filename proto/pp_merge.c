/* A remapping pprof merge into a builder: every string, mapping, function and
 * location of the source is re-interned in the builder (so ids and string
 * indices of different inputs never mix), and samples with the same stack
 * and labels are summed by the builder's sample dedup. */
#include "pp_builder_int.h"
#include "pp_hash.h"

#include <inttypes.h>
#include <stdarg.h>
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

static void merge_time(pp_builder *b, const Perftools__Profiles__Profile *src) {
  if (src->time_nanos == 0 && src->duration_nanos == 0)
    return; /* unknown: does not widen the window */
  pp_builder_meta m;
  pp_builder_get_meta(b, &m);
  int64_t s_start = src->time_nanos;
  int64_t s_end = s_start + (src->duration_nanos > 0 ? src->duration_nanos : 0);
  if (m.time_nanos == 0 && m.duration_nanos == 0) {
    pp_builder_set_time(b, s_start, s_end - s_start);
    return;
  }
  int64_t end = m.time_nanos + m.duration_nanos;
  int64_t start = s_start < m.time_nanos ? s_start : m.time_nanos;
  if (s_end > end)
    end = s_end;
  pp_builder_set_time(b, start, end - start);
}

static bool in_range(const Perftools__Profiles__Profile *p, int64_t ix) {
  return ix >= 0 && (uint64_t)ix < p->n_string_table;
}

static uint64_t mapping_id(const Perftools__Profiles__Profile *p, size_t i) {
  return p->mapping[i]->id;
}
static uint64_t function_id(const Perftools__Profiles__Profile *p, size_t i) {
  return p->function[i]->id;
}
static uint64_t location_id(const Perftools__Profiles__Profile *p, size_t i) {
  return p->location[i]->id;
}

static int index_ids(pp_idmap *m, const Perftools__Profiles__Profile *p, size_t n,
                     uint64_t (*get)(const Perftools__Profiles__Profile *, size_t)) {
  if (pp_idmap_init(m, n) != 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    m->keys[i] = get(p, i);
  uint64_t bad;
  return pp_idmap_index(m, &bad) == 0 ? 0 : -1;
}

int pp_merge_add(pp_builder *b, const Perftools__Profiles__Profile *src, char *why, size_t whylen) {
  int rc = -1;
  int64_t *sx = NULL;   /* src string index -> builder string index */
  uint64_t *mx = NULL;  /* src mapping position -> builder id */
  uint64_t *fx = NULL;  /* src function position -> builder id */
  uint64_t *lx = NULL;  /* src location position -> builder id */
  uint64_t *tmp = NULL; /* scratch: function ids, then sample location ids */
  int64_t *lines = NULL;
  pp_ilabel *labels = NULL;
  pp_idmap maps = {0}, funcs = {0}, locs = {0};
  size_t maxtmp = 1, maxlab = 1;

  if (src->n_string_table == 0) {
    pp_say(why, whylen, "cannot merge: the profile has an empty string_table");
    return -1;
  }
  pp_builder_meta meta;
  pp_builder_get_meta(b, &meta);
  bool adopt = !pp_builder_merge_started(b) && meta.nsample_types == 0 && !meta.has_period_type;
  if (!adopt && check_compatible(b, src, why, whylen) != 0)
    return -1;
  if (index_ids(&maps, src, src->n_mapping, mapping_id) != 0 ||
      index_ids(&funcs, src, src->n_function, function_id) != 0 ||
      index_ids(&locs, src, src->n_location, location_id) != 0) {
    pp_say(why, whylen, "cannot merge: zero or repeated ids (validate the profile first)");
    goto fail;
  }
  for (size_t i = 0; i < src->n_location; i++)
    if (src->location[i]->n_line > maxtmp)
      maxtmp = src->location[i]->n_line;
  for (size_t i = 0; i < src->n_sample; i++) {
    if (src->sample[i]->n_location_id > maxtmp)
      maxtmp = src->sample[i]->n_location_id;
    if (src->sample[i]->n_label > maxlab)
      maxlab = src->sample[i]->n_label;
  }
  sx = malloc(src->n_string_table * sizeof *sx);
  mx = malloc((src->n_mapping + 1) * sizeof *mx);
  fx = malloc((src->n_function + 1) * sizeof *fx);
  lx = malloc((src->n_location + 1) * sizeof *lx);
  tmp = malloc(maxtmp * sizeof *tmp);
  lines = malloc(maxtmp * sizeof *lines);
  labels = malloc(maxlab * sizeof *labels);
  if (!sx || !mx || !fx || !lx || !tmp || !lines || !labels) {
    pp_say(why, whylen, "out of memory merging a profile");
    goto fail;
  }
  for (size_t i = 0; i < src->n_string_table; i++) {
    sx[i] = pp_builder_string(b, src->string_table[i]);
    if (sx[i] < 0) {
      pp_say(why, whylen, "out of memory merging a profile");
      goto fail;
    }
  }
#define SX(ix, what)                                                                               \
  do {                                                                                             \
    if (!in_range(src, (ix))) {                                                                    \
      pp_say(why, whylen, "cannot merge: %s string index %" PRId64 " out of range", what,          \
             (int64_t)(ix));                                                                       \
      goto fail;                                                                                   \
    }                                                                                              \
  } while (0)

  if (adopt) {
    for (size_t i = 0; i < src->n_sample_type; i++) {
      SX(src->sample_type[i]->type, "sample_type");
      SX(src->sample_type[i]->unit, "sample_type");
    }
    if (src->period_type) {
      SX(src->period_type->type, "period_type");
      SX(src->period_type->unit, "period_type");
    }
    if (adopt_types(b, src, sx) != 0) {
      pp_say(why, whylen, "out of memory merging a profile");
      goto fail;
    }
  }
  /* From here on b holds src's types, even if a later step fails. */
  pp_builder_set_merge_started(b);
  SX(src->drop_frames, "drop_frames");
  SX(src->keep_frames, "keep_frames");
  SX(src->default_sample_type, "default_sample_type");
  SX(src->doc_url, "doc_url");
  pp_builder_set_extras_ix(b, src->drop_frames ? sx[src->drop_frames] : 0,
                           src->keep_frames ? sx[src->keep_frames] : 0,
                           src->default_sample_type ? sx[src->default_sample_type] : 0,
                           src->doc_url ? sx[src->doc_url] : 0);
  for (size_t i = 0; i < src->n_comment; i++) {
    SX(src->comment[i], "comment");
    if (pp_builder_add_comment_ix(b, sx[src->comment[i]]) != 0) {
      pp_say(why, whylen, "out of memory merging a profile");
      goto fail;
    }
  }

  for (size_t i = 0; i < src->n_mapping; i++) {
    const Perftools__Profiles__Mapping *m = src->mapping[i];
    SX(m->filename, "mapping filename");
    SX(m->build_id, "mapping build_id");
    unsigned flags = (m->has_functions ? PP_MAPPING_HAS_FUNCTIONS : 0) |
                     (m->has_filenames ? PP_MAPPING_HAS_FILENAMES : 0) |
                     (m->has_line_numbers ? PP_MAPPING_HAS_LINE_NUMBERS : 0) |
                     (m->has_inline_frames ? PP_MAPPING_HAS_INLINE_FRAMES : 0);
    mx[i] = pp_builder_mapping_ix(b, m->memory_start, m->memory_limit, m->file_offset,
                                  sx[m->filename], sx[m->build_id], flags);
    if (!mx[i]) {
      pp_say(why, whylen, "out of memory merging a profile");
      goto fail;
    }
  }
  for (size_t i = 0; i < src->n_function; i++) {
    const Perftools__Profiles__Function *f = src->function[i];
    SX(f->name, "function name");
    SX(f->system_name, "function system_name");
    SX(f->filename, "function filename");
    fx[i] =
        pp_builder_function_ix(b, sx[f->name], sx[f->system_name], sx[f->filename], f->start_line);
    if (!fx[i]) {
      pp_say(why, whylen, "out of memory merging a profile");
      goto fail;
    }
  }
  for (size_t i = 0; i < src->n_location; i++) {
    const Perftools__Profiles__Location *l = src->location[i];
    uint64_t mid = 0;
    if (l->mapping_id) {
      int64_t pos = pp_idmap_find(&maps, l->mapping_id);
      if (pos < 0) {
        pp_say(why, whylen, "cannot merge: location %" PRIu64 " refers to missing mapping %" PRIu64,
               l->id, l->mapping_id);
        goto fail;
      }
      mid = mx[pos];
    }
    for (size_t j = 0; j < l->n_line; j++) {
      uint64_t fid = l->line[j]->function_id;
      int64_t pos = fid ? pp_idmap_find(&funcs, fid) : -1;
      if (pos < 0) {
        pp_say(why, whylen,
               "cannot merge: location %" PRIu64 " refers to missing function %" PRIu64, l->id,
               fid);
        goto fail;
      }
      tmp[j] = fx[pos];
      lines[j] = l->line[j]->line;
    }
    lx[i] = pp_builder_location(b, mid, l->address, tmp, lines, l->n_line);
    if (!lx[i]) {
      pp_say(why, whylen, "out of memory merging a profile");
      goto fail;
    }
  }
  for (size_t i = 0; i < src->n_sample; i++) {
    const Perftools__Profiles__Sample *s = src->sample[i];
    for (size_t j = 0; j < s->n_location_id; j++) {
      int64_t pos = pp_idmap_find(&locs, s->location_id[j]);
      if (pos < 0) {
        pp_say(why, whylen, "cannot merge: sample %zu refers to missing location %" PRIu64, i,
               s->location_id[j]);
        goto fail;
      }
      tmp[j] = lx[pos];
    }
    for (size_t j = 0; j < s->n_label; j++) {
      const Perftools__Profiles__Label *l = s->label[j];
      SX(l->key, "label key");
      SX(l->str, "label str");
      SX(l->num_unit, "label num_unit");
      labels[j] = (pp_ilabel){sx[l->key], sx[l->str], l->num, sx[l->num_unit]};
    }
    if (s->n_value != src->n_sample_type) {
      pp_say(why, whylen, "cannot merge: sample %zu has %zu values, want %zu", i, s->n_value,
             src->n_sample_type);
      goto fail;
    }
    if (pp_builder_sample_ix(b, tmp, s->n_location_id, s->value, s->n_value, labels, s->n_label) !=
        0) {
      pp_say(why, whylen, "out of memory merging a profile");
      goto fail;
    }
  }
#undef SX
  merge_time(b, src);
  rc = 0;
fail:
  free(sx);
  free(mx);
  free(fx);
  free(lx);
  free(tmp);
  free(lines);
  free(labels);
  pp_idmap_free(&maps);
  pp_idmap_free(&funcs);
  pp_idmap_free(&locs);
  return rc;
}
