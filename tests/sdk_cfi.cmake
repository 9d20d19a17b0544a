# DWARF CFI unwind tables: cfi_build's unit test, checked against
# elfutils' libdw on real objects, and the table-build benchmark.
pkg_check_modules(PP_CFI_LIBDW REQUIRED IMPORTED_TARGET libdw)
set(PP_CFI_SDK ${CMAKE_SOURCE_DIR}/sdk)

# A library built without frame pointers, whose CFI test_cfi reads.
add_library(cfi_omitfp_obj SHARED unit/cfi_omitfp_obj.c)
target_compile_options(cfi_omitfp_obj PRIVATE -O2 -fomit-frame-pointer)
# The same code without unwind tables: its CFI is in .debug_frame only.
add_library(cfi_debugframe_obj SHARED unit/cfi_omitfp_obj.c)
target_compile_options(cfi_debugframe_obj PRIVATE -O2 -g -fomit-frame-pointer
  -fno-asynchronous-unwind-tables -fno-unwind-tables -fno-exceptions)

pushprof_unit_test(NAME test_cfi SOURCES unit/test_cfi.c ${PP_CFI_SDK}/cfi_build.c
  LIBS PkgConfig::PP_CFI_LIBDW PkgConfig::LIBELF TIMEOUT 300)
target_include_directories(test_cfi PRIVATE ${PP_CFI_SDK})
target_compile_definitions(test_cfi PRIVATE CFI_OMITFP_OBJ="$<TARGET_FILE:cfi_omitfp_obj>"
  CFI_DEBUGFRAME_OBJ="$<TARGET_FILE:cfi_debugframe_obj>")
add_dependencies(test_cfi cfi_omitfp_obj cfi_debugframe_obj)

# Table build time and memory per object, lookup cost (tests/bench/run).
add_executable(bench_cfi_build bench/bench_cfi_build.c ${PP_CFI_SDK}/cfi_build.c)
target_include_directories(bench_cfi_build PRIVATE ${PP_CFI_SDK})
target_link_libraries(bench_cfi_build PRIVATE PkgConfig::LIBELF)
