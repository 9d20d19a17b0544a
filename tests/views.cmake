# pushprof top/folded/flame/diff (views/): unit tests, the test profile
# generator, the comparisons with go tool pprof, a real browser on the SVG,
# and the benchmark's generator.
if(TARGET pushprof_views)
  pushprof_unit_test(NAME test_views SOURCES unit/test_views.c LIBS pushprof_views pushprof_test_ref)

  add_executable(gen_views_pprof integration/views/gen_views_pprof.c)
  target_link_libraries(gen_views_pprof PRIVATE pushprof_proto)

  pushprof_script_test(NAME it_views
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/views/it_views.sh
    LABELS integration TIMEOUT 240)
  pushprof_script_test(NAME it_views_browser
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/views/it_views_browser.sh
    LABELS integration TIMEOUT 180)
endif()

# fuzz_views: any bytes as a profile through the views (tests/fuzz/fuzz_views.c);
# the views' sources are compiled into the target (instrumented in the fuzz build).
if(TARGET pushprof_views AND COMMAND pushprof_fuzz_target)
  get_target_property(PP_VIEWS_SRCS pushprof_views SOURCES)
  pushprof_fuzz_target(NAME views SOURCES ${PP_VIEWS_SRCS} ${PP_FUZZ_PROTO_SRCS}
    ${CMAKE_CURRENT_SOURCE_DIR}/unit/pp_parse_ref.c
    INCLUDES ${PP_FUZZ_PROTO_INCS} ${CMAKE_SOURCE_DIR}/views ${CMAKE_BINARY_DIR}/views/gen
      ${CMAKE_CURRENT_SOURCE_DIR}/unit
    LIBS PkgConfig::PROTOBUFC ZLIB::ZLIB PkgConfig::LIBISAL Threads::Threads m DEPENDS pushprof_proto pushprof_views)
endif()
