/* The Grafana Pyroscope exporter's pure parts, exposed for the unit tests:
 * its per-profile limits (the splitting itself is a pprof operation,
 * pyroscope_split.h) and turning the service and process labels into a
 * valid Pyroscope series label set. Internal to sidecar/exporters/; not
 * thread-safe per call
 * (each call owns its outputs). */
#ifndef SIDECAR_EXPORTER_PYROSCOPE_H
#define SIDECAR_EXPORTER_PYROSCOPE_H
#include <stddef.h>
#include <stdint.h>

#include "pyroscope_split.h"
#include "pushprof.pb-c.h"

/* Pyroscope's default validation.max-profile-size-bytes: the uncompressed
 * size of one profile. */
#define PYROSCOPE_MAX_PROFILE_BYTES ((size_t)4 << 20)
/* Pyroscope's default validation.max-profile-stacktrace-samples: a profile
 * with more samples is rejected (400), not truncated. */
#define PYROSCOPE_MAX_SAMPLES 16000

typedef struct pyroscope_label {
  char *name;
  char *value;
} pyroscope_label;

/* Pyroscope's limits on series labels (validation.max-length-label-name,
 * -label-value, max-label-names-per-series defaults). */
#define PYROSCOPE_MAX_LABEL_NAME 1024
#define PYROSCOPE_MAX_LABEL_VALUE 2048
#define PYROSCOPE_MAX_LABELS 30

/* Builds the series labels, sorted by name: __name__ (the profile's name
 * in Pyroscope, as its own ingestion names Go's profiles: "memory" for a
 * heap batch, profile_type "heap", plus __delta__=false because its alloc_*
 * values are per batch already, not totals since the process started;
 * "process_cpu" for any other), service_name=service, then each process
 * label with its name made valid
 * ([a-zA-Z_][a-zA-Z0-9_]*, dots and other bytes become '_', a leading digit
 * gets a '_' prefix, the reserved "__" prefix becomes "_") and its value
 * made valid UTF-8 of at most PYROSCOPE_MAX_LABEL_VALUE bytes. Labels that
 * cannot be kept (empty, a name taken already, over the count limit) are
 * skipped and described in notes (for the log), never silently.
 * Returns 0 with *out (malloc'ed, *nout entries) or -1 on ENOMEM. */
int pyroscope_series_labels(const char *service, const char *profile_type,
                            Pushprof__V1__Label *const *labels, size_t nlabels,
                            pyroscope_label **out, size_t *nout, char *notes, size_t noteslen);
void pyroscope_labels_free(pyroscope_label *l, size_t n);

/* True if name matches Pyroscope's label-name rule [a-zA-Z_][a-zA-Z0-9_]*. */
int pyroscope_label_name_valid(const char *name);
#endif
