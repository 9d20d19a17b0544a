# Sidecar core: config, listener, HTTP metrics, main, the `pushprof` client.
if(TARGET pushprof_sidecar_lib)
  pushprof_unit_test(NAME test_config SOURCES unit/test_config.c LIBS pushprof_sidecar_lib)
endif()
