# Owned by spool/batcher/exporters.
list(APPEND PUSHPROF_SIDECAR_BATCH_SOURCES)
