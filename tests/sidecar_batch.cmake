# Unit tests of the sidecar's log, metrics, spool, batcher and file exporter.
if(TARGET pushprof_sidecar_lib)
  pushprof_unit_test(NAME test_log_metrics SOURCES unit/test_log_metrics.c
    LIBS pushprof_sidecar_lib LABELS "unit;tsan")
endif()
