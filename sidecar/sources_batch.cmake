# Owned by spool/batcher/exporters (and the log/metrics modules they share).
list(APPEND PUSHPROF_SIDECAR_BATCH_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/log.c
  ${CMAKE_CURRENT_LIST_DIR}/metrics.c)
