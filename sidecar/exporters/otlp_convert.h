/* pprof -> OTLP profiles (opentelemetry-proto profiles/v1development): one
 * ExportProfilesServiceRequest whose ProfilesDictionary every added profile
 * shares. A reader-side pprof operation (the sidecar links it, the SDK does
 * not). Rules, from the upstream spec:
 *   - entry 0 of every dictionary table is the zero value and present
 *     (link 0: a 16-byte and an 8-byte zero id);
 *   - one sample type per Profile: a pprof with N sample types becomes N
 *     Profiles, each sample carrying its one value;
 *   - stacks, locations, functions, mappings, strings, attributes and links
 *     de-duplicated; samples with the same (stack, attributes, link) summed;
 *   - a sample's pprof labels become its attributes (numeric ones int values
 *     with their unit), the first of a repeated key only (the rest counted
 *     in dropped_labels); a W3C trace_id (32 hex) plus span_id (16 hex) label
 *     pair also becomes the sample's Link (16- and 8-byte ids);
 *   - a mapping's build id becomes its attribute process.executable.build_id.gnu.
 * Not thread-safe; one owner at a time. Allocates. */
#ifndef SIDECAR_OTLP_CONVERT_H
#define SIDECAR_OTLP_CONVERT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.pb-c.h"

typedef struct pp_otlp pp_otlp;

/* A resource attribute: a string, or an int when is_int. */
typedef struct pp_otlp_attr {
  const char *key;
  const char *str;
  int64_t num;
  bool is_int;
} pp_otlp_attr;

typedef struct pp_otlp_stats {
  size_t resources, profiles, samples; /* samples: over every Profile */
  size_t links;                        /* samples that carry a Link */
  size_t dropped_labels;               /* repeated or empty keys left out */
} pp_otlp_stats;

#define PP_OTLP_ATTR_BUILD_ID "process.executable.build_id.gnu"

pp_otlp *pp_otlp_new(void); /* NULL on ENOMEM */
void pp_otlp_free(pp_otlp *o);
/* Adds validated profile p (pp_pprof_parse) as one ResourceProfiles with
 * attributes res (copied) and one ScopeProfiles named scope_name/version.
 * 0, or -1 with why (ENOMEM, a table past INT32_MAX entries). */
int pp_otlp_add(pp_otlp *o, const Perftools__Profiles__Profile *p, const pp_otlp_attr *res,
                size_t nres, const char *scope_name, const char *scope_version, char *why,
                size_t whylen);
/* Serializes the request (uncompressed). *out malloc'ed. 0 or -1 (ENOMEM). */
int pp_otlp_pack(pp_otlp *o, uint8_t **out, size_t *len);
void pp_otlp_get_stats(const pp_otlp *o, pp_otlp_stats *st);

/* Parses 2*n hex digits (either case) into n bytes; false if s is not
 * exactly that or is all zeros (W3C: an invalid id). */
bool pp_otlp_hex_id(const char *s, uint8_t *out, size_t n);
#endif
