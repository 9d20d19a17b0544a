# pushprof_unit_test(NAME test_ring SOURCES unit/test_ring.c LIBS pushprof_sdk_objs)
function(pushprof_unit_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_include_directories(${T_NAME} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/unit)
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS})
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
endfunction()

# pushprof_script_test(NAME it_x COMMAND bash script args... LABELS integration)
function(pushprof_script_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "COMMAND;LABELS;ENVIRONMENT" ${ARGN})
  # Output also lands in build/test-logs/NAME/ (run_logged.sh), which
  # it_sec_log_scan reads after every other test (fixture pushprof_test_logs).
  add_test(NAME ${T_NAME} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/run_logged.sh
    ${T_COMMAND})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  if(NOT T_LABELS)
    set(T_LABELS integration)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "PUSHPROF_BUILD_DIR=${CMAKE_BINARY_DIR};PUSHPROF_SOURCE_DIR=${CMAKE_SOURCE_DIR};PUSHPROF_TEST_LOG_DIR=${CMAKE_BINARY_DIR}/test-logs;PUSHPROF_TEST_NAME=${T_NAME};${T_ENVIRONMENT}"
    FIXTURES_REQUIRED pushprof_test_logs)
endfunction()
