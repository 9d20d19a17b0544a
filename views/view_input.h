/* Reading profiles for the views: files and directories (every .pb.gz,
 * .pprof, .pb and .prof file below a directory, in name order), each parsed
 * and validated by the proto library (gzip or not), kept or skipped by
 * service (the file exporter's DIR/.../<node>/<service>/<file> layout: the
 * file's parent directory), by time and by sample type, and merged with
 * pp_merge_add, the sidecar's merge. Not thread-safe. */
#ifndef VIEW_INPUT_H
#define VIEW_INPUT_H
#include <stddef.h>
#include <stdint.h>

#include "pp_parse.h"
#include "pp_merge.h"

/* What a profile measures, told by its layout: CPU time (a cpu/nanoseconds
 * sample type), off-CPU time (delay/nanoseconds, Go's block profile layout),
 * lock waits (that layout with pushprof's lock-waits comment, or Go's mutex
 * profile, told by its samples' innermost frame, an Unlock of package
 * sync), or another type (heap, ...). */
typedef enum view_kind {
  VIEW_KIND_OTHER,
  VIEW_KIND_CPU,
  VIEW_KIND_OFFCPU,
  VIEW_KIND_LOCK,
  VIEW_KINDS
} view_kind;
view_kind view_profile_kind(const Perftools__Profiles__Profile *p);

typedef struct view_input_opts {
  const char *service; /* NULL: any */
  int64_t since_ns;    /* 0: no bound; a profile is kept if its time window */
  int64_t until_ns;    /* overlaps [since, until) */
  /* NULL: any; else a file found in a directory is kept only if it has this
   * sample type (a file named itself always is) */
  const char *value;
} view_input_opts;

typedef struct view_input {
  const Perftools__Profiles__Profile *profile; /* the merge of every kept file */
  pp_pprof *pooled;                            /* owns profile */
  size_t nfiles;                               /* files found */
  size_t nkept;                                /* files merged */
  size_t nkind[VIEW_KINDS];                    /* files read, by kind */
} view_input;

/* Loads paths[0..npaths). 0, or -1 with one line in err naming the file and
 * what is wrong with it (not pprof, truncated gzip, an empty directory,
 * profiles that cannot merge, nothing left after the filters). */
int view_input_load(const char *const *paths, size_t npaths, const view_input_opts *o,
                    view_input *out, char *err, size_t errlen);
/* The same, one pass over the files, each kind of profile merged apart:
 * by_kind[k] (when not NULL) takes the files of kind k, named or found in a
 * directory; files of the kinds left NULL are skipped. A kind without files
 * is not an error (its profile NULL, nkept 0); every by_kind[k] gets the
 * counts of all files (nfiles, nkind). 0, or -1 with err. */
int view_input_load_kinds(const char *const *paths, size_t npaths, const view_input_opts *o,
                          view_input *by_kind[VIEW_KINDS], char *err, size_t errlen);
/* Frees the profile; the counts stay. Idempotent. */
void view_input_free(view_input *in);

/* Parses a time for --since/--until: RFC 3339 ("2026-11-23T10:00:00Z",
 * "...+01:00"), a date ("2026-11-23", UTC midnight), Unix seconds
 * ("@1700000000"), or an age before now_ns ("90s", "15m", "2h", "7d").
 * 0 or -1. */
int view_parse_time(const char *s, int64_t now_ns, int64_t *out_ns);
#endif
