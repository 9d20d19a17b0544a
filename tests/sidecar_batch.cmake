# Unit tests of the sidecar's log, metrics, spool, batcher and file exporter.
if(TARGET pushprof_sidecar_lib)
  pushprof_unit_test(NAME test_log_metrics SOURCES unit/test_log_metrics.c
    LIBS pushprof_sidecar_lib LABELS "unit;tsan")
endif()
if(TARGET pushprof_sidecar_lib)
  pushprof_unit_test(NAME test_exporter_file SOURCES unit/test_exporter_file.c
    LIBS pushprof_sidecar_lib)
  # Faults for the fallbacks of writing past the page cache.
  target_link_options(test_exporter_file PRIVATE -Wl,--wrap=fcntl -Wl,--wrap=write)
endif()
if(TARGET pushprof_sidecar_lib)
  pushprof_unit_test(NAME test_spool SOURCES unit/test_spool.c LIBS pushprof_sidecar_lib
    LABELS "unit;tsan")
endif()
if(TARGET pushprof_sidecar_lib)
  pushprof_unit_test(NAME test_batcher SOURCES unit/test_batcher.c LIBS pushprof_sidecar_lib pushprof_test_ref
    LABELS "unit;tsan")
  # Counts the merge builders the batcher makes (a recovered batch needs none).
  target_link_options(test_batcher PRIVATE -Wl,--wrap=pp_builder_new)
endif()
if(TARGET pushprof_sidecar_lib)
  pushprof_unit_test(NAME test_manifest SOURCES unit/test_manifest.c LIBS pushprof_sidecar_lib
    LABELS "unit;tsan")
endif()
if(TARGET pushprof_sidecar_lib)
  pushprof_unit_test(NAME test_journal SOURCES unit/test_journal.c LIBS pushprof_sidecar_lib
    LABELS "unit;tsan")
endif()
