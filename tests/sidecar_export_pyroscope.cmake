# Tests of the Grafana Pyroscope exporter: the profile splitter and label
# rules (unit), and the real sidecar against a Pyroscope stand-in (integration).
if(TARGET pushprof_sidecar_lib)
  pushprof_unit_test(NAME test_pyroscope_split SOURCES unit/test_pyroscope_split.c
    LIBS pushprof_sidecar_lib pushprof_test_ref)
endif()
if(TARGET pushprof-sidecar)
  add_executable(gen_big_pprof integration/pyroscope/gen_big_pprof.c)
  target_link_libraries(gen_big_pprof PRIVATE pushprof_proto)
  pushprof_script_test(NAME it_pyroscope_push
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/pyroscope/it_pyroscope_push.sh
    TIMEOUT 120)
endif()
if(TARGET pushprof-sidecar)
  pushprof_script_test(NAME it_pyroscope_ingest
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/pyroscope/it_pyroscope_ingest.sh)
  pushprof_script_test(NAME it_pyroscope_faults
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/pyroscope/it_pyroscope_faults.sh)
endif()
