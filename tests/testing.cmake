# Helpers of every test folder's CMakeLists.txt. PP_TESTS_SRC and
# PP_TESTS_BIN are tests/ in the source and build trees.
set(PP_TESTS_SRC ${CMAKE_CURRENT_LIST_DIR})

# The module folder a test belongs to, as its label: the name of the
# folder its CMakeLists.txt is in (unit/sidecar -> sidecar).
function(pp_folder_label out)
  get_filename_component(f ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  set(${out} ${f} PARENT_SCOPE)
endfunction()

# A profile read back with protobuf-c (unit/pp_parse_ref.h): the tests'
# independent reader of what the code under test wrote.
add_library(pushprof_test_ref STATIC ${CMAKE_CURRENT_LIST_DIR}/unit/pp_parse_ref.c)
target_include_directories(pushprof_test_ref PUBLIC ${CMAKE_CURRENT_LIST_DIR}/unit)
target_link_libraries(pushprof_test_ref PUBLIC pushprof_proto_read pushprof_proto)

# pushprof_unit_test(NAME test_ring SOURCES test_ring.c LIBS pushprof_sdk_objs
#                    [LABELS tsan] [TIMEOUT s]): labels unit, the folder, LABELS.
# Exit 77 is a skip (every case PP_SKIPped, unit/pp_test.h), as for scripts.
function(pushprof_unit_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_include_directories(${T_NAME} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PP_TESTS_SRC}/unit)
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS})
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  pp_folder_label(folder)
  set_tests_properties(${T_NAME} PROPERTIES LABELS "unit;${folder};${T_LABELS}"
    TIMEOUT ${T_TIMEOUT} SKIP_RETURN_CODE 77)
endfunction()

# What a script test needs to load the SDK into a process the build did not
# instrument (bash, python3, xz, /bin/true, a consumer built outside this
# tree): in a sanitizer build the SDK's libraries need the sanitizer runtime,
# and ASan's must come first in the initial library list, so it is preloaded
# ahead of them. (UBSan's runtime is the libraries' DT_NEEDED: no order rule.)
#   PUSHPROF_TEST_PRELOAD      LD_PRELOAD value for libpushprof_preload.so
#   PUSHPROF_TEST_SAN_RUNTIME  the runtime alone ("" in a normal build)
#   PUSHPROF_TEST_SAN_FLAGS    compile/link flags of a consumer built by a test
set(PP_TEST_PRELOAD_LIB ${CMAKE_BINARY_DIR}/sdk/libpushprof_preload.so)
set(PP_TEST_SAN_RUNTIME "")
set(PP_TEST_SAN_FLAGS "")
if(PUSHPROF_SANITIZE STREQUAL "address")
  set(PP_TEST_SAN_LIB libasan.so)
  set(PP_TEST_SAN_FLAGS "-fsanitize=address,undefined")
elseif(PUSHPROF_SANITIZE STREQUAL "thread")
  set(PP_TEST_SAN_LIB libtsan.so)
  set(PP_TEST_SAN_FLAGS "-fsanitize=thread")
endif()
if(PP_TEST_SAN_FLAGS)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=${PP_TEST_SAN_LIB}
    OUTPUT_VARIABLE PP_TEST_SAN_RUNTIME OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT IS_ABSOLUTE "${PP_TEST_SAN_RUNTIME}")
    message(WARNING "${CMAKE_C_COMPILER} does not know where ${PP_TEST_SAN_LIB} is: "
      "tests that preload the SDK into uninstrumented programs will fail (use gcc)")
  endif()
  set(PP_TEST_PRELOAD_LIB "${PP_TEST_SAN_RUNTIME}:${PP_TEST_PRELOAD_LIB}")
endif()

# pushprof_script_test(NAME it_x COMMAND bash script args... LABELS integration)
# A script that cannot check what it means here prints one line saying why
# and exits 77: ctest reports it as skipped ("Not Run"), never as passed.
function(pushprof_script_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "COMMAND;LABELS;ENVIRONMENT" ${ARGN})
  # Output also lands in build/test-logs/NAME/ (run_logged.sh), which
  # it_sec_log_scan reads after every other test (fixture pushprof_test_logs).
  add_test(NAME ${T_NAME} COMMAND bash ${PP_TESTS_SRC}/integration/run_logged.sh ${T_COMMAND})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  if(NOT T_LABELS)
    set(T_LABELS integration)
  endif()
  pp_folder_label(folder)
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS};${folder}" TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "PUSHPROF_BUILD_DIR=${CMAKE_BINARY_DIR};PUSHPROF_SOURCE_DIR=${CMAKE_SOURCE_DIR};PUSHPROF_TEST_LOG_DIR=${CMAKE_BINARY_DIR}/test-logs;PUSHPROF_TEST_NAME=${T_NAME};PUSHPROF_TEST_PRELOAD=${PP_TEST_PRELOAD_LIB};PUSHPROF_TEST_SAN_RUNTIME=${PP_TEST_SAN_RUNTIME};PUSHPROF_TEST_SAN_FLAGS=${PP_TEST_SAN_FLAGS};${T_ENVIRONMENT}"
    FIXTURES_REQUIRED pushprof_test_logs SKIP_RETURN_CODE 77)
endfunction()

# pp_stat_tests(NAME...): labels tests whose checks are statistical or
# timed (a share, a total, a rate, a delay against the run's own truth), so
# tests/repeat.sh --label stat runs exactly them in a flake census.
function(pp_stat_tests)
  foreach(t ${ARGN})
    set_property(TEST ${t} APPEND PROPERTY LABELS stat)
  endforeach()
endfunction()
