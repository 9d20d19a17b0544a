# The conservation check under faults: short-lived SDK jobs while
# the sidecar is SIGKILLed and restarted and the S3 backend fails at random.
if(TARGET pushprof AND TARGET pushprof-sidecar)
  add_executable(wl_conserve ${CMAKE_CURRENT_SOURCE_DIR}/integration/faults/wl_conserve.c)
  target_link_libraries(wl_conserve PRIVATE pushprof)
  set_target_properties(wl_conserve PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/faults_workloads)
  pushprof_script_test(NAME it_conserve TIMEOUT 240
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/faults/it_conserve.sh)
  # Hundreds of processes and a kill loop: alone, so it neither slows nor is
  # slowed by the timing-sensitive tests.
  set_tests_properties(it_conserve PROPERTIES RUN_SERIAL TRUE)
endif()
