# Owned by the HTTP exporters (shared libcurl plumbing, s3, gs, pyroscope,
# otlp): built into pushprof-sidecar-http.so, which the sidecar loads when an
# --export URL needs it (exporters/http_module.h), and into the unit tests'
# static library.
list(APPEND PUSHPROF_SIDECAR_HTTP_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/exporters/http_common.c
  ${CMAKE_CURRENT_LIST_DIR}/exporters/aws_creds.c
  ${CMAKE_CURRENT_LIST_DIR}/exporters/s3compat.c
  ${CMAKE_CURRENT_LIST_DIR}/exporters/exporter_s3.c
  ${CMAKE_CURRENT_LIST_DIR}/exporters/exporter_gcs.c
  ${CMAKE_CURRENT_LIST_DIR}/exporters/exporter_pyroscope.c
  ${CMAKE_CURRENT_LIST_DIR}/exporters/exporter_otlp.c
  ${CMAKE_CURRENT_LIST_DIR}/exporters/http_module_table.c)
