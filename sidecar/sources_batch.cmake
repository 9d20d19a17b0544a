# Owned by spool/batcher/exporters (and the log/metrics modules they share).
list(APPEND PUSHPROF_SIDECAR_BATCH_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/fsutil.c
  ${CMAKE_CURRENT_LIST_DIR}/log.c
  ${CMAKE_CURRENT_LIST_DIR}/metrics.c
  ${CMAKE_CURRENT_LIST_DIR}/membudget.c
  ${CMAKE_CURRENT_LIST_DIR}/journal.c
  ${CMAKE_CURRENT_LIST_DIR}/spool.c
  ${CMAKE_CURRENT_LIST_DIR}/dedup.c
  ${CMAKE_CURRENT_LIST_DIR}/manifest.c
  ${CMAKE_CURRENT_LIST_DIR}/batcher.c)
list(APPEND PUSHPROF_SIDECAR_BATCH_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/exporters/exporter.c
  ${CMAKE_CURRENT_LIST_DIR}/exporters/exporter_file.c
  ${CMAKE_CURRENT_LIST_DIR}/exporters/exporter_names.c)
