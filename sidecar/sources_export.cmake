# Owned by the HTTP exporters (shared libcurl plumbing, s3, gs, pyroscope).
list(APPEND PUSHPROF_SIDECAR_BATCH_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/exporters/http_common.c)
list(APPEND PUSHPROF_SIDECAR_BATCH_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/exporters/aws_creds.c
  ${CMAKE_CURRENT_LIST_DIR}/exporters/s3compat.c
  ${CMAKE_CURRENT_LIST_DIR}/exporters/exporter_s3.c
  ${CMAKE_CURRENT_LIST_DIR}/exporters/exporter_gcs.c
  ${CMAKE_CURRENT_LIST_DIR}/exporters/exporter_pyroscope.c
  ${CMAKE_CURRENT_LIST_DIR}/exporters/exporter_otlp.c)
