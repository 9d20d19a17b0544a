# Tests of the OTLP profiles exporter and of several export targets at once:
# the converter (unit), the real sidecar against a strict OTLP receiver
# decoding with Google's protobuf runtime (integration).
if(TARGET pushprof_sidecar_lib)
  pushprof_unit_test(NAME test_otlp SOURCES unit/test_otlp.c LIBS pushprof_sidecar_lib pushprof_test_ref)
  add_executable(gen_otlp_pprof integration/otlp/gen_otlp_pprof.c)
  target_link_libraries(gen_otlp_pprof PRIVATE pushprof_proto)
endif()
if(TARGET pushprof-sidecar)
  pushprof_script_test(NAME it_otlp_export
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/otlp/it_otlp_export.sh TIMEOUT 180)
  pushprof_script_test(NAME it_otlp_faults
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/otlp/it_otlp_faults.sh)
  pushprof_script_test(NAME it_multi_target
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/otlp/it_multi_target.sh)
endif()
