# The sampler: ring, unwinder, timers + handler + collector, and the handler
# benchmark (a program that prints figures, not a test).
set(PP_CORE_DIR ${CMAKE_SOURCE_DIR}/sdk)

pushprof_unit_test(NAME test_ring SOURCES unit/test_ring.c ${PP_CORE_DIR}/ring.c
  LIBS Threads::Threads LABELS "unit;tsan")
target_include_directories(test_ring PRIVATE ${PP_CORE_DIR})

pushprof_unit_test(NAME test_unwind SOURCES unit/test_unwind.c ${PP_CORE_DIR}/unwind.c
  LIBS Threads::Threads)
target_include_directories(test_unwind PRIVATE ${PP_CORE_DIR})

if(TARGET pushprof_sdk_objs)
  # Signals under TSan are deferred to the next intercepted call, so a pure
  # CPU loop is sampled once at its end: this test is not labelled tsan.
  pushprof_unit_test(NAME test_sampler SOURCES unit/test_sampler.c
    LIBS pushprof_sdk_objs pushprof_proto PkgConfig::PROTOBUFC PkgConfig::LIBELF ZLIB::ZLIB
    Threads::Threads ${CMAKE_DL_LIBS} rt)

  add_executable(bench_handler bench/bench_handler.c)
  target_link_libraries(bench_handler PRIVATE pushprof_sdk_objs pushprof_proto
    PkgConfig::PROTOBUFC PkgConfig::LIBELF ZLIB::ZLIB Threads::Threads ${CMAKE_DL_LIBS} rt)
endif()

