# The SDK's push path through the real sidecar.
if(NOT TARGET pushprof_preload OR NOT TARGET pushprof-sidecar)
  return()
endif()
add_executable(wl_fork ${CMAKE_CURRENT_SOURCE_DIR}/integration/push/wl_fork.c)
set_target_properties(wl_fork PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/push_workloads)
foreach(c short jobs200 empty execfail sigterm fork forkexec spool slow backlog)
  pushprof_script_test(NAME it_push_${c}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/push/it_push.sh ${c})
endforeach()

# Benchmark (not a test): per-period push cost for 1k and 10k unique stacks.
add_executable(bench_push bench/bench_push.c)
target_link_libraries(bench_push PRIVATE pushprof_sdk_objs pushprof_proto PkgConfig::PROTOBUFC
  PkgConfig::LIBELF ZLIB::ZLIB Threads::Threads ${CMAKE_DL_LIBS} rt)
