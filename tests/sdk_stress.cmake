# The SDK under stress: workloads that try to break the sampler
# (thread churn, fork storms, vfork/posix_spawn, deep recursion, code without
# frame pointers, blocked signals, dlopen/dlclose, malloc, work inside signal
# handlers on a sigaltstack and on the normal stack), each run under
# LD_PRELOAD by tests/integration/stress/it_stress.sh CASE; and the host's
# signals during the collector's work (it_stress_collector.sh, real sidecar).
# The ASan stage of tests/ci.sh runs them all in the ASan+UBSan build.
if(NOT TARGET pushprof_preload)
  return()
endif()

set(ST_DIR ${CMAKE_CURRENT_SOURCE_DIR}/integration/stress)
set(ST_OUT ${CMAKE_CURRENT_BINARY_DIR}/stress_workloads)
function(pushprof_stress_workload name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${ST_OUT})
endfunction()
pushprof_stress_workload(st_threads2000 ${ST_DIR}/st_threads2000.c)
pushprof_stress_workload(st_forkstorm ${ST_DIR}/st_forkstorm.c)
pushprof_stress_workload(st_spawn ${ST_DIR}/st_spawn.c)
pushprof_stress_workload(st_recursion ${ST_DIR}/st_recursion.c)
pushprof_stress_workload(st_nofp ${ST_DIR}/st_nofp.c ${ST_DIR}/st_nofp_hot.c)
set_source_files_properties(${ST_DIR}/st_nofp_hot.c PROPERTIES
  COMPILE_OPTIONS "-O2;-fomit-frame-pointer")
pushprof_stress_workload(st_blocked ${ST_DIR}/st_blocked.c)
pushprof_stress_workload(st_dlopen ${ST_DIR}/st_dlopen.c)
add_library(st_dlburn MODULE ${ST_DIR}/st_dlburn.c)
set_target_properties(st_dlburn PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ST_OUT})
# Its code is unwound by its CFI only (the leaf keeps rbp busy).
set_source_files_properties(${ST_DIR}/st_dlburn.c PROPERTIES
  COMPILE_OPTIONS "-O2;-fomit-frame-pointer")
add_dependencies(st_dlopen st_dlburn)
pushprof_stress_workload(st_malloc ${ST_DIR}/st_malloc.c)
pushprof_stress_workload(st_sigalt ${ST_DIR}/st_sigalt.c)

# TIMEOUT: above the script's own watchdog (60 s per run, two runs), so a hang
# ends in its stack dump, not in ctest's kill.
foreach(case threads2000 forkstorm spawn recursion nofp blocked dlopen malloc sigalt)
  pushprof_script_test(NAME it_stress_${case} TIMEOUT 150
    COMMAND bash ${ST_DIR}/it_stress.sh ${case})
endforeach()

# Signals (the host's own, at high rate) while the collector builds and
# pushes big profiles to the real sidecar: tests/integration/stress/it_stress_collector.sh.
if(TARGET pushprof-sidecar)
  pushprof_stress_workload(st_collector ${ST_DIR}/st_collector.c)
  pushprof_script_test(NAME it_stress_collector TIMEOUT 150
    COMMAND bash ${ST_DIR}/it_stress_collector.sh)
endif()
