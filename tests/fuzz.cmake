# Fuzz targets, one per parser (tests/fuzz/fuzz_<parser>.c). Each is built
#  - always, linked with tests/fuzz/replay.c as replay_<parser>, and registered
#    in ctest as fuzz_<parser>_corpus (label fuzz): it replays every file of
#    tests/fuzz/corpus/<parser>/ (seeds and past findings) with the normal
#    compiler, so the ASan+UBSan CI build re-checks them;
#  - with -DPUSHPROF_FUZZ=ON (clang), as the libFuzzer binary fuzz_<parser>
#    (-fsanitize=fuzzer,address,undefined). tests/fuzz/run.sh builds and runs those.
# The code under test is compiled into each target, so in the fuzz build it is
# instrumented for coverage without instrumenting the rest of the project.
set(PP_FUZZ_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
set(PP_FUZZ_CORPUS ${PP_FUZZ_DIR}/corpus)

if(PUSHPROF_FUZZ AND NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "PUSHPROF_FUZZ=ON needs clang (libFuzzer): configure a separate build "
    "directory with -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++, or use tests/fuzz/run.sh")
endif()

# The proto library's sources, generated protobuf-c code included (CMP0118
# makes the GENERATED property visible here; add_dependencies orders the build).
get_target_property(PP_FUZZ_PROTO_SRCS pushprof_proto SOURCES)
get_target_property(PP_FUZZ_READ_SRCS pushprof_proto_read SOURCES)
list(APPEND PP_FUZZ_PROTO_SRCS ${PP_FUZZ_READ_SRCS})
get_target_property(PP_FUZZ_PROTO_INCS pushprof_proto INCLUDE_DIRECTORIES)
set(PP_FUZZ_SIDECAR ${CMAKE_SOURCE_DIR}/sidecar)
# sidecar/'s PkgConfig::INIH is local to that directory.
pkg_check_modules(PP_FUZZ_INIH REQUIRED IMPORTED_TARGET inih)
set(PP_FUZZ_SDK ${CMAKE_SOURCE_DIR}/sdk)
# sidecar/'s OpenSSL::Crypto is local to that directory too (manifest.c's SHA-256).
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
# The batch manifest codec and what it links (dedup_id_is_zero, log, fsutil).
set(PP_FUZZ_MANIFEST_SRCS ${PP_FUZZ_SIDECAR}/manifest.c ${PP_FUZZ_SIDECAR}/dedup.c
  ${PP_FUZZ_SIDECAR}/fsutil.c ${PP_FUZZ_SIDECAR}/log.c)

# pushprof_fuzz_target(NAME frame SOURCES <code under test> LIBS <libraries>
#                      INCLUDES <dirs> [DEPENDS <targets>])
function(pushprof_fuzz_target)
  cmake_parse_arguments(F "" "NAME" "SOURCES;LIBS;INCLUDES;DEPENDS" ${ARGN})
  set(variants replay_${F_NAME})
  if(PUSHPROF_FUZZ)
    list(APPEND variants fuzz_${F_NAME})
  endif()
  foreach(exe ${variants})
    if(exe MATCHES "^replay_")
      add_executable(${exe} ${PP_FUZZ_DIR}/fuzz_${F_NAME}.c ${PP_FUZZ_DIR}/replay.c ${F_SOURCES})
    else()
      add_executable(${exe} ${PP_FUZZ_DIR}/fuzz_${F_NAME}.c ${F_SOURCES})
      target_compile_options(${exe} PRIVATE -fsanitize=fuzzer,address,undefined
        -fno-sanitize-recover=undefined)
      target_link_options(${exe} PRIVATE -fsanitize=fuzzer,address,undefined)
    endif()
    target_include_directories(${exe} PRIVATE ${PP_FUZZ_DIR} ${F_INCLUDES})
    target_link_libraries(${exe} PRIVATE ${F_LIBS})
    if(F_DEPENDS)
      add_dependencies(${exe} ${F_DEPENDS})
    endif()
  endforeach()
  add_test(NAME fuzz_${F_NAME}_corpus COMMAND replay_${F_NAME} ${PP_FUZZ_CORPUS}/${F_NAME})
  set_tests_properties(fuzz_${F_NAME}_corpus PROPERTIES LABELS fuzz TIMEOUT 120)
endfunction()

# With the test-only protobuf-c encoder (unit/pp_pack_ref.c) as pp_pack.c's reference.
# And the protobuf-c comparison of the hand-written decoder (unit/pp_decode_ref.c) as built,
# and without its SSE2 path (unit/pp_decode_scalar.c).
pushprof_fuzz_target(NAME pprof SOURCES ${PP_FUZZ_PROTO_SRCS}
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/pp_pack_ref.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/pp_decode_ref.c
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/pp_decode_scalar.c
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/pp_parse_ref.c
  INCLUDES ${PP_FUZZ_PROTO_INCS} ${CMAKE_CURRENT_SOURCE_DIR}/unit
  LIBS PkgConfig::PROTOBUFC ZLIB::ZLIB PkgConfig::LIBISAL Threads::Threads DEPENDS pushprof_proto)

# pprof -> OTLP: the converter (beside its exporter) and its generated code.
get_target_property(PP_FUZZ_EXPORT_GEN_SRCS pushprof_proto_export_gen SOURCES)
pushprof_fuzz_target(NAME otlp SOURCES ${PP_FUZZ_PROTO_SRCS} ${PP_FUZZ_EXPORT_GEN_SRCS}
  ${PP_FUZZ_SIDECAR}/exporters/otlp_convert.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/pp_parse_ref.c
  INCLUDES ${PP_FUZZ_PROTO_INCS} ${PP_FUZZ_SIDECAR}/exporters ${CMAKE_CURRENT_SOURCE_DIR}/unit
  LIBS PkgConfig::PROTOBUFC ZLIB::ZLIB PkgConfig::LIBISAL Threads::Threads
  DEPENDS pushprof_proto pushprof_proto_export_gen)

# The frame codec and the push decoder (wire/pp_push.c, in the reader layer).
pushprof_fuzz_target(NAME frame
  SOURCES ${PP_FUZZ_PROTO_SRCS}
  INCLUDES ${PP_FUZZ_PROTO_INCS}
  LIBS PkgConfig::PROTOBUFC ZLIB::ZLIB PkgConfig::LIBISAL Threads::Threads DEPENDS pushprof_proto)

# DWARF CFI: cfi_build takes a section's bytes (tests/unit/cfi_invariants.h
# holds the table invariants test_cfi checks too).
pushprof_fuzz_target(NAME cfi SOURCES ${PP_FUZZ_SDK}/cfi_build.c
  INCLUDES ${PP_FUZZ_SDK} ${CMAKE_CURRENT_SOURCE_DIR}/unit)

pushprof_fuzz_target(NAME procmaps SOURCES ${PP_FUZZ_SDK}/procmaps_linux.c INCLUDES ${PP_FUZZ_SDK})

pushprof_fuzz_target(NAME elfsym SOURCES ${PP_FUZZ_SDK}/elfsym.c ${PP_FUZZ_SDK}/dlphdr.c INCLUDES ${PP_FUZZ_SDK}
  LIBS PkgConfig::LIBELF ZLIB::ZLIB Threads::Threads)

pushprof_fuzz_target(NAME config SOURCES ${PP_FUZZ_SIDECAR}/config.c ${PP_FUZZ_SIDECAR}/log.c
  INCLUDES ${PP_FUZZ_SIDECAR}
  LIBS PkgConfig::PP_FUZZ_INIH)

pushprof_fuzz_target(NAME env_config SOURCES ${PP_FUZZ_SDK}/env_config.c
  INCLUDES ${PP_FUZZ_SDK} ${PP_FUZZ_SDK}/include ${CMAKE_SOURCE_DIR}/proto/pprof)

pushprof_fuzz_target(NAME manifest SOURCES ${PP_FUZZ_MANIFEST_SRCS}
  INCLUDES ${PP_FUZZ_PROTO_INCS} ${PP_FUZZ_SIDECAR}
  LIBS pushprof_proto pushprof_proto_read OpenSSL::Crypto Threads::Threads DEPENDS pushprof_proto)

pushprof_fuzz_target(NAME journal SOURCES ${PP_FUZZ_SIDECAR}/journal.c ${PP_FUZZ_SIDECAR}/fsutil.c ${PP_FUZZ_SIDECAR}/log.c
  INCLUDES ${PP_FUZZ_SIDECAR} LIBS ZLIB::ZLIB PkgConfig::LIBISAL Threads::Threads)

# The sidecar library supplies log.c and the libraries (curl, jansson, libxml2).
pushprof_fuzz_target(NAME aws_creds SOURCES ${PP_FUZZ_SIDECAR}/exporters/aws_creds.c
  ${PP_FUZZ_SIDECAR}/exporters/http_common.c
  INCLUDES ${PP_FUZZ_SIDECAR} ${PP_FUZZ_SIDECAR}/exporters LIBS pushprof_sidecar_lib)

pushprof_fuzz_target(NAME otlp_settings SOURCES ${PP_FUZZ_SIDECAR}/exporters/exporter_otlp.c
  INCLUDES ${PP_FUZZ_SIDECAR} ${PP_FUZZ_SIDECAR}/exporters ${PP_FUZZ_PROTO_INCS}
  LIBS pushprof_sidecar_lib DEPENDS pushprof_proto pushprof_proto_export_gen)

pushprof_fuzz_target(NAME pyroscope SOURCES ${PP_FUZZ_SIDECAR}/exporters/exporter_pyroscope.c
  ${PP_FUZZ_SIDECAR}/exporters/pyroscope_split.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/pp_parse_ref.c
  INCLUDES ${PP_FUZZ_SIDECAR} ${PP_FUZZ_SIDECAR}/exporters ${PP_FUZZ_PROTO_INCS}
    ${CMAKE_CURRENT_SOURCE_DIR}/unit
  LIBS pushprof_sidecar_lib DEPENDS pushprof_proto pushprof_proto_export_gen)

# Writes the seed corpus (tests/fuzz/corpus/*/seed_*): make_seeds DIR.
# Links the manifest codec: the manifest seeds are made by manifest_encode.
add_executable(fuzz_make_seeds ${PP_FUZZ_DIR}/make_seeds.c ${PP_FUZZ_MANIFEST_SRCS})
target_include_directories(fuzz_make_seeds PRIVATE ${PP_FUZZ_SIDECAR})
target_link_libraries(fuzz_make_seeds PRIVATE pushprof_proto pushprof_proto_read OpenSSL::Crypto
  Threads::Threads)
