# Tests of the HTTP exporters' shared code, the S3 and GCS exporters.
if(TARGET pushprof_sidecar_lib)
  pushprof_unit_test(NAME test_http_common SOURCES unit/test_http_common.c
    LIBS pushprof_sidecar_lib)
endif()
if(TARGET pushprof_sidecar_lib)
  pushprof_unit_test(NAME test_s3sign SOURCES unit/test_s3sign.c LIBS pushprof_sidecar_lib)
  # The test tools' own SigV4 verifier against AWS's published example.
  pushprof_script_test(NAME test_sigv4_verifier
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/s3/sigv4.py --selftest LABELS unit)
  foreach(t upload creds faults tls)
    pushprof_script_test(NAME it_s3_${t}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/s3/it_s3_${t}.sh)
  endforeach()
  if(TARGET bench_sidecar)
    # An outage with a SIGKILL in it: memory bound, restart time, exactly once.
    pushprof_script_test(NAME it_s3_outage
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/s3/it_s3_outage.sh TIMEOUT 600)
  endif()
  foreach(t upload)
    pushprof_script_test(NAME it_gcs_${t}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/s3/it_gcs_${t}.sh)
  endforeach()
endif()
