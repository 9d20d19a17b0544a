# Symbolization: /proc/self/maps parsing, ELF symbols, pprof building.
# The modules are compiled into each test directly so the tests do not depend
# on the rest of the SDK.
set(PP_SYM_DIR ${CMAKE_SOURCE_DIR}/sdk)

pushprof_unit_test(NAME test_procmaps
  SOURCES unit/test_procmaps.c ${PP_SYM_DIR}/procmaps_linux.c)
target_include_directories(test_procmaps PRIVATE ${PP_SYM_DIR})

pushprof_unit_test(NAME test_elfsym
  SOURCES unit/test_elfsym.c ${PP_SYM_DIR}/elfsym.c ${PP_SYM_DIR}/procmaps_linux.c
  LIBS PkgConfig::LIBELF ZLIB::ZLIB ${CMAKE_DL_LIBS})
target_include_directories(test_elfsym PRIVATE ${PP_SYM_DIR})
# zlibVersion must be resolvable with dlsym(RTLD_DEFAULT) even under --as-needed
target_link_options(test_elfsym PRIVATE -Wl,--no-as-needed)
