# Correct stacks without frame pointers: a workload with a frameless
# leaf built with and without frame pointers (tests/integration/stacks/
# it_sk_leafmix.sh), linked and under LD_PRELOAD.
if(NOT TARGET pushprof)
  return()
endif()

set(SK_DIR ${CMAKE_CURRENT_SOURCE_DIR}/integration/stacks)
# sk_leafmix_{fp,nofp}[_linked], next to the SDK workloads (sdk_lib.sh runs them).
foreach(fp fp nofp)
  if(fp STREQUAL "fp")
    set(fp_flag -fno-omit-frame-pointer)
  else()
    set(fp_flag -fomit-frame-pointer)
  endif()
  foreach(variant "" _linked)
    set(name sk_leafmix_${fp}${variant})
    add_executable(${name} ${SK_DIR}/sk_leafmix.c ${SK_DIR}/sk_leaf.c)
    # After the tree's -fno-omit-frame-pointer, so it wins; -O2 in every build type.
    target_compile_options(${name} PRIVATE -O2 ${fp_flag})
    target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/integration/sdk)
    target_link_libraries(${name} PRIVATE Threads::Threads)
    if(variant STREQUAL "_linked")
      target_compile_definitions(${name} PRIVATE WL_LINKED)
      target_link_libraries(${name} PRIVATE pushprof)
    endif()
    set_target_properties(${name} PROPERTIES
      RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/sdk_workloads)
  endforeach()
  foreach(mode preload linked)
    pushprof_script_test(NAME it_sk_leafmix_${fp}_${mode} TIMEOUT 90
      COMMAND bash ${SK_DIR}/it_sk_leafmix.sh ${fp} ${mode})
    # Share tolerances of +-2 points: alone, as it_sdk_split.
    set_tests_properties(it_sk_leafmix_${fp}_${mode} PROPERTIES RUN_SERIAL TRUE)
  endforeach()
endforeach()

# Debian's sqlite3 and xz (no frame pointers) under pushprof and under
# `perf record --call-graph dwarf`, same workload, same test. Exit 77 (skip)
# only when perf cannot record on this machine.
foreach(what sqlite3 xz)
  pushprof_script_test(NAME it_sk_vs_perf_${what} TIMEOUT 120
    COMMAND bash ${SK_DIR}/it_sk_vs_perf.sh ${what})
  set_tests_properties(it_sk_vs_perf_${what} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
