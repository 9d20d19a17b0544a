# Symbolization: /proc/self/maps parsing, ELF symbols, pprof building.
# The modules are compiled into each test directly so the tests do not depend
# on the rest of the SDK.
set(PP_SYM_DIR ${CMAKE_SOURCE_DIR}/sdk)

pushprof_unit_test(NAME test_procmaps
  SOURCES unit/test_procmaps.c ${PP_SYM_DIR}/procmaps_linux.c)
target_include_directories(test_procmaps PRIVATE ${PP_SYM_DIR})

pushprof_unit_test(NAME test_elfsym
  SOURCES unit/test_elfsym.c ${PP_SYM_DIR}/elfsym.c ${PP_SYM_DIR}/dlphdr.c ${PP_SYM_DIR}/procmaps_linux.c
  LIBS PkgConfig::LIBELF ZLIB::ZLIB ${CMAKE_DL_LIBS})
target_include_directories(test_elfsym PRIVATE ${PP_SYM_DIR})
# zlibVersion must be resolvable with dlsym(RTLD_DEFAULT) even under --as-needed
target_link_options(test_elfsym PRIVATE -Wl,--no-as-needed)
# The .gnu_debuglink cases strip copies of this library (no build id: only
# the link can find its debug file).
add_library(elfsym_link_lib MODULE unit/elfsym_link_lib.c)
target_link_options(elfsym_link_lib PRIVATE -Wl,--build-id=none)

# The same checks in a non-PIE executable (ELF vaddr == runtime address).
pushprof_unit_test(NAME test_elfsym_nopie
  SOURCES unit/test_elfsym.c ${PP_SYM_DIR}/elfsym.c ${PP_SYM_DIR}/dlphdr.c ${PP_SYM_DIR}/procmaps_linux.c
  LIBS PkgConfig::LIBELF ZLIB::ZLIB ${CMAKE_DL_LIBS})
target_include_directories(test_elfsym_nopie PRIVATE ${PP_SYM_DIR})
set_target_properties(test_elfsym_nopie PROPERTIES POSITION_INDEPENDENT_CODE OFF)
foreach(t test_elfsym test_elfsym_nopie)
  add_dependencies(${t} elfsym_link_lib)
  target_compile_definitions(${t} PRIVATE ELFSYM_LINK_LIB="$<TARGET_FILE:elfsym_link_lib>")
endforeach()
target_compile_options(test_elfsym_nopie PRIVATE -fno-pie)
target_link_options(test_elfsym_nopie PRIVATE -no-pie -Wl,--no-as-needed)

# C++ helper: a mangled function name, and libstdc++ really linked so
# __cxa_demangle is found with dlsym as in a C++ program.
pushprof_unit_test(NAME test_profbuild
  SOURCES unit/test_profbuild.c unit/profbuild_cxx_helper.cpp ${PP_SYM_DIR}/profbuild.c
    ${PP_SYM_DIR}/elfsym.c ${PP_SYM_DIR}/dlphdr.c ${PP_SYM_DIR}/procmaps_linux.c
  LIBS pushprof_proto pushprof_test_ref PkgConfig::LIBELF ZLIB::ZLIB ${CMAKE_DL_LIBS})
target_include_directories(test_profbuild PRIVATE ${PP_SYM_DIR})
target_link_options(test_profbuild PRIVATE -Wl,--no-as-needed)

pushprof_script_test(NAME it_profbuild_go_pprof
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/profbuild_go_pprof.sh
    $<TARGET_FILE:test_profbuild>)
