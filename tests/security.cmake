# Security checks: setuid programs, permissions, hostile names,
# credentials in logs. Scripts in tests/integration/security/.
set(SEC_IT ${CMAKE_CURRENT_SOURCE_DIR}/integration/security)
set(SEC_OUT ${CMAKE_CURRENT_BINARY_DIR}/security)

if(TARGET pushprof_preload)
  # The same probe twice: plain (LD_PRELOAD, or dlopen of the library), and
  # with libpushprof_preload.so as DT_NEEDED (loaded in secure mode too).
  add_executable(sec_setuid_probe ${SEC_IT}/sec_setuid_probe.c)
  target_link_libraries(sec_setuid_probe PRIVATE ${CMAKE_DL_LIBS})
  add_executable(sec_setuid_probe_needed ${SEC_IT}/sec_setuid_probe.c)
  target_link_libraries(sec_setuid_probe_needed PRIVATE ${CMAKE_DL_LIBS}
    -Wl,--no-as-needed pushprof_preload)
  set_target_properties(sec_setuid_probe sec_setuid_probe_needed PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${SEC_OUT})
  pushprof_script_test(NAME it_sec_setuid_preload
    COMMAND bash ${SEC_IT}/it_sec_setuid_preload.sh TIMEOUT 60)
  set_tests_properties(it_sec_setuid_preload PROPERTIES SKIP_RETURN_CODE 77)
endif()
if(TARGET pushprof)
  # The linked library in a setuid program ignores the caller's environment.
  add_executable(sec_setuid_linked ${SEC_IT}/sec_setuid_linked.c)
  target_link_libraries(sec_setuid_linked PRIVATE pushprof)
  set_target_properties(sec_setuid_linked PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${SEC_OUT})
  pushprof_script_test(NAME it_sec_setuid_linked
    COMMAND bash ${SEC_IT}/it_sec_setuid_linked.sh TIMEOUT 60)
  set_tests_properties(it_sec_setuid_linked PROPERTIES SKIP_RETURN_CODE 77)
endif()

# Credentials never reach logs. Every script test requires the fixture
# pushprof_test_logs (tests/testing.cmake): it_sec_log_setup empties
# build/test-logs before the first of them, it_sec_log_scan reads it after
# the last (ctest orders fixture cleanup after every test requiring it, -j
# or not, and adds both to any selection of script tests).
set(PUSHPROF_TEST_LOG_DIR ${CMAKE_BINARY_DIR}/test-logs)
add_test(NAME it_sec_log_setup COMMAND ${CMAKE_COMMAND} -E rm -rf ${PUSHPROF_TEST_LOG_DIR})
set_tests_properties(it_sec_log_setup PROPERTIES LABELS integration
  FIXTURES_SETUP pushprof_test_logs)
# The tests that hand the sidecar credentials (each secret holds SENTINEL).
set(PUSHPROF_CREDENTIAL_TESTS it_s3_upload it_s3_creds it_s3_faults it_s3_tls it_gcs_upload
  it_pyroscope_push it_pyroscope_ingest it_sec_names it_conserve it_otlp_export it_s3_outage
  it_sidecar_http_module)
add_test(NAME it_sec_log_scan COMMAND python3 ${SEC_IT}/it_sec_log_scan.py
  --log-dir ${PUSHPROF_TEST_LOG_DIR} --credential-tests ${PUSHPROF_CREDENTIAL_TESTS})
set_tests_properties(it_sec_log_scan PROPERTIES LABELS integration TIMEOUT 60
  FIXTURES_CLEANUP pushprof_test_logs SKIP_RETURN_CODE 77)

# Hostile service/node/subdirectory values through the S3/GCS key builder and
# the file exporter (the real sidecar and s3rver: it_sec_names).
if(TARGET pushprof_sidecar_lib)
  pushprof_unit_test(NAME test_sec_names SOURCES unit/test_sec_names.c LIBS pushprof_sidecar_lib)
endif()
if(TARGET pushprof-sidecar AND TARGET pushprof_cli)
  pushprof_script_test(NAME it_sec_names COMMAND bash ${SEC_IT}/it_sec_names.sh TIMEOUT 120)
endif()
