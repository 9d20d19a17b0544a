# The sampler: ring, unwinder, timers + handler + collector, and the handler
# benchmark (a program that prints figures, not a test).
set(PP_CORE_DIR ${CMAKE_SOURCE_DIR}/sdk)

pushprof_unit_test(NAME test_ring SOURCES unit/test_ring.c ${PP_CORE_DIR}/ring.c
  LIBS Threads::Threads LABELS "unit;tsan")
target_include_directories(test_ring PRIVATE ${PP_CORE_DIR})

pushprof_unit_test(NAME test_unwind SOURCES unit/test_unwind.c ${PP_CORE_DIR}/unwind.c
  ${PP_CORE_DIR}/cfi_build.c ${PP_CORE_DIR}/unwind_tables.c ${PP_CORE_DIR}/cfi_elf.c ${PP_CORE_DIR}/dlphdr.c
  LIBS PkgConfig::LIBELF Threads::Threads)
target_include_directories(test_unwind PRIVATE ${PP_CORE_DIR})

if(TARGET pushprof_sdk_objs)
  # Signals under TSan are deferred to the next intercepted call, so a pure
  # CPU loop is sampled once at its end: this test is not labelled tsan.
  pushprof_unit_test(NAME test_sampler SOURCES unit/test_sampler.c
    LIBS pushprof_sdk_objs pushprof_proto pushprof_test_ref PkgConfig::PROTOBUFC PkgConfig::LIBELF ZLIB::ZLIB
    Threads::Threads ${CMAKE_DL_LIBS} rt)

  add_executable(bench_handler bench/bench_handler.c)
  target_link_libraries(bench_handler PRIVATE pushprof_sdk_objs pushprof_proto pushprof_test_ref
    PkgConfig::PROTOBUFC PkgConfig::LIBELF ZLIB::ZLIB Threads::Threads ${CMAKE_DL_LIBS} rt)
endif()


# What the SDK's signal handlers can reach: the SDK compiled again with a
# section per function and datum, and every relocation followed from the
# handlers (the sampling handler, the SIGTERM flush, the collector's wake-up,
# pushprof_strerror): each call that leaves the SDK must be async-signal-safe.
get_target_property(PP_SIG_SRCS pushprof_sdk_objs SOURCES)
add_library(pushprof_sdk_sections OBJECT ${PP_SIG_SRCS} ${PP_CORE_DIR}/interpose.c)
target_compile_options(pushprof_sdk_sections PRIVATE -ffunction-sections -fdata-sections)
target_link_libraries(pushprof_sdk_sections PRIVATE pushprof_sdk_objs)
add_test(NAME test_signal_path COMMAND python3
  ${CMAKE_CURRENT_SOURCE_DIR}/integration/sdk/signal_reach.py --root sampler_handle_signal
  --root term_handler --root sampler_wake_from_signal --root pushprof_strerror
  $<TARGET_OBJECTS:pushprof_sdk_sections> COMMAND_EXPAND_LISTS)
set_tests_properties(test_signal_path PROPERTIES LABELS "unit;sdk")

# Per-thread labels (pushprof_label_set): unit test, the label-set cost
# benchmark, and a linked workload whose requests carry trace ids.
if(TARGET pushprof_sdk_objs)
  pushprof_unit_test(NAME test_labels SOURCES unit/test_labels.c
    LIBS pushprof_sdk_objs pushprof_proto pushprof_test_ref PkgConfig::PROTOBUFC PkgConfig::LIBELF ZLIB::ZLIB
    Threads::Threads ${CMAKE_DL_LIBS} rt LABELS "unit;tsan")

  add_executable(bench_labels bench/bench_labels.c)
  target_link_libraries(bench_labels PRIVATE pushprof_static)
endif()
if(TARGET pushprof)
  set(PP_LABELS_WL ${CMAKE_CURRENT_SOURCE_DIR}/integration/sdk/wl_labels.c)
  add_executable(wl_labels_linked ${PP_LABELS_WL})
  target_compile_definitions(wl_labels_linked PRIVATE WL_LINKED)
  target_link_libraries(wl_labels_linked PRIVATE pushprof Threads::Threads)
  # Static: threads exist before pushprof_start (found by the scan) and never
  # call pushprof_thread_register: their first label registers them.
  add_executable(wl_labels_static ${PP_LABELS_WL})
  target_compile_definitions(wl_labels_static PRIVATE WL_LINKED WL_STATIC)
  target_link_libraries(wl_labels_static PRIVATE pushprof_static)
  set_target_properties(wl_labels_linked wl_labels_static PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/sdk_workloads)
  foreach(mode linked static)
    pushprof_script_test(NAME it_sdk_labels_${mode}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/sdk/it_sdk_labels.sh ${mode})
  endforeach()
endif()

# The DWARF unwinder in a real SIGPROF handler on code without frame pointers.
# Two copies of a library without .eh_frame: one keeps its .debug_frame, one
# is stripped with its debug file under a test root by (fixed) build id.
set(UDF_FLAGS -O2 -fomit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables -g)
set(UDF_ID 5eedcf1d0000000000000000000000000000abcd)
add_library(unwind_df_own MODULE unit/unwind_df_lib.c)
target_compile_options(unwind_df_own PRIVATE ${UDF_FLAGS})
add_library(unwind_df_split MODULE unit/unwind_df_lib.c)
target_compile_options(unwind_df_split PRIVATE ${UDF_FLAGS})
target_link_options(unwind_df_split PRIVATE -Wl,--build-id=0x${UDF_ID})
string(SUBSTRING ${UDF_ID} 0 2 UDF_ID_DIR)
string(SUBSTRING ${UDF_ID} 2 -1 UDF_ID_FILE)
set(UDF_ROOT ${CMAKE_CURRENT_BINARY_DIR}/unwind_df_root)
add_custom_command(TARGET unwind_df_split POST_BUILD
  COMMAND ${CMAKE_COMMAND} -E make_directory ${UDF_ROOT}/.build-id/${UDF_ID_DIR}
  COMMAND objcopy --only-keep-debug $<TARGET_FILE:unwind_df_split>
    ${UDF_ROOT}/.build-id/${UDF_ID_DIR}/${UDF_ID_FILE}.debug
  COMMAND objcopy --strip-debug $<TARGET_FILE:unwind_df_split>
  VERBATIM)
pushprof_unit_test(NAME test_unwind_dwarf SOURCES unit/test_unwind_dwarf.c ${PP_CORE_DIR}/unwind.c
  ${PP_CORE_DIR}/deferred.c ${PP_CORE_DIR}/cfi_build.c ${PP_CORE_DIR}/unwind_tables.c ${PP_CORE_DIR}/cfi_elf.c ${PP_CORE_DIR}/dlphdr.c
  LIBS PkgConfig::LIBELF Threads::Threads ${CMAKE_DL_LIBS})
target_include_directories(test_unwind_dwarf PRIVATE ${PP_CORE_DIR})
add_dependencies(test_unwind_dwarf unwind_df_own unwind_df_split)
target_compile_definitions(test_unwind_dwarf PRIVATE
  UDF_OWN="$<TARGET_FILE:unwind_df_own>" UDF_SPLIT="$<TARGET_FILE:unwind_df_split>"
  UDF_ROOT="${UDF_ROOT}")
target_link_options(test_unwind_dwarf PRIVATE -rdynamic)
set_source_files_properties(unit/test_unwind_dwarf.c PROPERTIES
  COMPILE_OPTIONS "-O2;-fomit-frame-pointer")

# fork() never splits one of the SDK's dl_iterate_phdr calls (glibc would
# leave the child's loader lock held).
pushprof_unit_test(NAME test_dlphdr SOURCES unit/test_dlphdr.c ${PP_CORE_DIR}/dlphdr.c
  LIBS Threads::Threads)
target_include_directories(test_dlphdr PRIVATE ${PP_CORE_DIR})
