# The SDK's public API: configuration unit test, install/export check, and
# integration tests running real workloads linked and under LD_PRELOAD.
pushprof_unit_test(NAME test_env_config
  SOURCES unit/test_env_config.c ${PROJECT_SOURCE_DIR}/sdk/env_config.c)
target_include_directories(test_env_config PRIVATE ${PROJECT_SOURCE_DIR}/sdk
  ${PROJECT_SOURCE_DIR}/sdk/include ${PROJECT_SOURCE_DIR}/proto/pprof)
pushprof_unit_test(NAME test_options
  SOURCES unit/test_options.c ${PROJECT_SOURCE_DIR}/sdk/options.c)
target_include_directories(test_options PRIVATE ${PROJECT_SOURCE_DIR}/sdk
  ${PROJECT_SOURCE_DIR}/sdk/include)

# pprof_check.py, which every integration test relies on, checked on a
# hand-written profile.
pushprof_script_test(NAME it_pprof_check
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_pprof_check.py)

# Everything below needs the SDK libraries (absent until the sampler lands).
if(NOT TARGET pushprof)
  return()
endif()

pushprof_unit_test(NAME test_api SOURCES unit/test_api.c LIBS pushprof_static LABELS "unit;tsan")
# Allocation failures on demand (see test_api.c).
target_link_options(test_api PRIVATE -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc)

# Workloads: NAME (plain, for LD_PRELOAD) and NAME_linked (libpushprof.so,
# calls pushprof_start). Built into tests/sdk_workloads/.
set(WL_DIR ${CMAKE_CURRENT_SOURCE_DIR}/integration/sdk)
set(WL_OUT ${CMAKE_CURRENT_BINARY_DIR}/sdk_workloads)
function(pushprof_workload name src)
  cmake_parse_arguments(W "" "" "LIBS" ${ARGN})
  add_executable(${name} ${src})
  add_executable(${name}_linked ${src})
  target_compile_definitions(${name}_linked PRIVATE WL_LINKED)
  target_link_libraries(${name} PRIVATE Threads::Threads ${W_LIBS})
  target_link_libraries(${name}_linked PRIVATE pushprof Threads::Threads ${W_LIBS})
  set_target_properties(${name} ${name}_linked PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${WL_OUT})
endfunction()
pushprof_workload(wl_split ${WL_DIR}/wl_split.c)
pushprof_workload(wl_threads8 ${WL_DIR}/wl_threads8.c)
pushprof_workload(wl_short_threads ${WL_DIR}/wl_short_threads.c)
pushprof_workload(wl_exit_probe ${WL_DIR}/wl_exit_probe.c)
pushprof_workload(wl_cxx ${WL_DIR}/wl_cxx.cpp)
add_library(wl_ownsig_init SHARED ${WL_DIR}/wl_ownsig_init.c)
set_target_properties(wl_ownsig_init PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${WL_OUT})
pushprof_workload(wl_ownsig ${WL_DIR}/wl_ownsig.c LIBS wl_ownsig_init)
# The static library: threads register themselves, main calls pushprof_stop.
add_executable(wl_threads8_static ${WL_DIR}/wl_threads8.c)
target_compile_definitions(wl_threads8_static PRIVATE WL_LINKED WL_STATIC)
target_link_libraries(wl_threads8_static PRIVATE pushprof_static)
# Needs libpushprof_preload.so (DT_NEEDED) so a setuid copy still loads it.
add_executable(wl_exit_probe_needs_preload ${WL_DIR}/wl_exit_probe.c)
target_link_libraries(wl_exit_probe_needs_preload PRIVATE -Wl,--no-as-needed pushprof_preload)
set_target_properties(wl_threads8_static wl_exit_probe_needs_preload PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${WL_OUT})

set(IT ${CMAKE_CURRENT_SOURCE_DIR}/integration/sdk)
foreach(mode preload linked)
  pushprof_script_test(NAME it_sdk_split_${mode} COMMAND bash ${IT}/it_sdk_split.sh ${mode})
  pushprof_script_test(NAME it_sdk_threads8_${mode} COMMAND bash ${IT}/it_sdk_threads8.sh ${mode})
  pushprof_script_test(NAME it_sdk_short_threads_${mode}
    COMMAND bash ${IT}/it_sdk_short_threads.sh ${mode})
  pushprof_script_test(NAME it_sdk_ownsig_${mode} COMMAND bash ${IT}/it_sdk_ownsig.sh ${mode})
  pushprof_script_test(NAME it_sdk_ownsig_late_${mode}
    COMMAND bash ${IT}/it_sdk_ownsig.sh ${mode} SIGPROF late)
  pushprof_script_test(NAME it_sdk_cxx_${mode} COMMAND bash ${IT}/it_sdk_cxx.sh ${mode})
  # Share tolerances of +-2 points: run alone, so another test's CPU load
  # does not make the kernel merge timer expiries (seen flaky under -j2).
  set_tests_properties(it_sdk_split_${mode} it_sdk_threads8_${mode} PROPERTIES RUN_SERIAL TRUE)
endforeach()
pushprof_script_test(NAME it_sdk_threads8_static COMMAND bash ${IT}/it_sdk_threads8.sh static)
pushprof_script_test(NAME it_sdk_ownsig_rtsignal
  COMMAND bash ${IT}/it_sdk_ownsig.sh preload SIGRTMIN+3)
pushprof_script_test(NAME it_sdk_debian_sort COMMAND bash ${IT}/it_sdk_debian_sort.sh)
pushprof_script_test(NAME it_sdk_config COMMAND bash ${IT}/it_sdk_config.sh)
pushprof_script_test(NAME it_sdk_install COMMAND bash ${IT}/it_sdk_install.sh)
# What the libraries make visible: only pushprof_* (and the interpositions),
# and a program defining the SDK's internal names links with libpushprof.a.
pushprof_script_test(NAME it_sdk_exports COMMAND bash ${IT}/it_sdk_exports.sh)
pushprof_script_test(NAME it_sdk_static_names COMMAND bash ${IT}/it_sdk_static_names.sh)
if(TARGET demo_work)
  pushprof_script_test(NAME it_sdk_demo_preload COMMAND bash ${IT}/it_sdk_demo.sh)
endif()

# A program built against pushprof.h 0.1 (no struct_size) with the current
# libraries, shared and static.
add_executable(wl_abi_v0_linked ${WL_DIR}/wl_abi_v0.c)
target_link_libraries(wl_abi_v0_linked PRIVATE pushprof)
add_executable(wl_abi_v0_static ${WL_DIR}/wl_abi_v0.c)
target_link_libraries(wl_abi_v0_static PRIVATE pushprof_static)
set_target_properties(wl_abi_v0_linked wl_abi_v0_static PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${WL_OUT})
foreach(mode linked static)
  pushprof_script_test(NAME it_sdk_abi_v0_${mode} COMMAND bash ${IT}/it_sdk_abi_v0.sh ${mode})
  if(TARGET pushprof-sidecar)
    pushprof_script_test(NAME it_sdk_abi_v0_push_${mode}
      COMMAND bash ${IT}/it_sdk_abi_v0_push.sh ${mode})
  endif()
endforeach()
pushprof_script_test(NAME it_sdk_python_options COMMAND bash ${IT}/it_sdk_python_options.sh)
