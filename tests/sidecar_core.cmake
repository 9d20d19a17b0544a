# Sidecar core: config, listener, HTTP metrics, main, the `pushprof` client.
if(TARGET pushprof_sidecar_lib)
  pushprof_unit_test(NAME test_config SOURCES unit/test_config.c LIBS pushprof_sidecar_lib)
  pushprof_unit_test(NAME test_membudget SOURCES unit/test_membudget.c LIBS pushprof_sidecar_lib)
  pushprof_unit_test(NAME test_listener SOURCES unit/test_listener.c LIBS pushprof_sidecar_lib
    LABELS "unit;tsan")
endif()

# Input generator for the integration tests (pprof files and raw frames).
add_executable(gen_pprof integration/sidecar/gen_pprof.c)
target_link_libraries(gen_pprof PRIVATE pushprof_proto)

if(TARGET pushprof-sidecar AND TARGET pushprof_cli)
  foreach(t push bad_input durability security spool_full disk_full lock hostile torn
      unreadable_batch)
    pushprof_script_test(NAME it_sidecar_${t}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/sidecar/it_sidecar_${t}.sh
      TIMEOUT 90)
  endforeach()
  if(TARGET bench_sidecar)
    # 1,000 clients at once: acked or told to retry, none lost, RSS bound.
    pushprof_script_test(NAME it_sidecar_burst
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/sidecar/it_sidecar_burst.sh TIMEOUT 300)
    # 1,000 clients take both cores: beside another test, both time out.
    set_tests_properties(it_sidecar_burst PROPERTIES RUN_SERIAL TRUE)
  endif()
  # file:// maps no HTTP library; s3:// loads pushprof-sidecar-http.so; a
  # sidecar without it refuses HTTP targets with one clear line.
  pushprof_script_test(NAME it_sidecar_http_module
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/sidecar/it_sidecar_http_module.sh)
  # Mounts a tmpfs; without root/CAP_SYS_ADMIN it says why and skips.
  set_tests_properties(it_sidecar_disk_full PROPERTIES SKIP_RETURN_CODE 77)
  # Measures ack latency: alone, or the other tests' load is what it measures.
  set_tests_properties(it_sidecar_hostile PROPERTIES RUN_SERIAL TRUE)
endif()
