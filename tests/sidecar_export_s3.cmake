# Tests of the HTTP exporters' shared code, the S3 and GCS exporters.
if(TARGET pushprof_sidecar_lib)
  pushprof_unit_test(NAME test_http_common SOURCES unit/test_http_common.c
    LIBS pushprof_sidecar_lib)
endif()
