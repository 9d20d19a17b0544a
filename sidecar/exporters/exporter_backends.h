/* Constructors of the built-in exporters, dispatched by exporter_create() on
 * the --export URL's scheme. Internal to sidecar/exporters/. */
#ifndef SIDECAR_EXPORTER_BACKENDS_H
#define SIDECAR_EXPORTER_BACKENDS_H
#include "exporter.h"

/* file:///ABSOLUTE/DIR (exporter_file.c). */
exporter *exporter_file_create(const char *url, const exporter_options *opts, char *err,
                               size_t errlen);
/* pyroscope+http(s)://HOST:PORT[/PREFIX] (exporter_pyroscope.c). */
exporter *exporter_pyroscope_create(const char *url, const exporter_options *opts, char *err,
                                    size_t errlen);
#endif
