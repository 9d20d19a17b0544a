/* The HTTP exporters' constructors, as pushprof-sidecar finds them in
 * pushprof-sidecar-http.so (http_module.h). */
#include "http_module.h"

#include "exporter_backends.h"

const http_module http_module_exporters = {
    .abi = HTTP_MODULE_ABI,
    .size = sizeof(http_module),
    .sizeof_exporter = sizeof(exporter),
    .sizeof_exporter_options = sizeof(exporter_options),
    .sizeof_export_object = sizeof(export_object),
    .s3 = exporter_s3_create,
    .gs = exporter_gcs_create,
    .pyroscope = exporter_pyroscope_create,
    .otlp = exporter_otlp_create,
};
