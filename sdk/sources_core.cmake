# Owned by the sampler: timers, signal handler, ring, unwinder, threads, collector.
list(APPEND PUSHPROF_SDK_CORE_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/ring.c
  ${CMAKE_CURRENT_LIST_DIR}/unwind.c
  ${CMAKE_CURRENT_LIST_DIR}/cfi_build.c
  ${CMAKE_CURRENT_LIST_DIR}/unwind_tables.c
  ${CMAKE_CURRENT_LIST_DIR}/cfi_elf.c
  ${CMAKE_CURRENT_LIST_DIR}/deferred.c
  ${CMAKE_CURRENT_LIST_DIR}/threads_linux.c
  ${CMAKE_CURRENT_LIST_DIR}/collector.c
  ${CMAKE_CURRENT_LIST_DIR}/labels.c
  ${CMAKE_CURRENT_LIST_DIR}/sampler_linux.c
  ${CMAKE_CURRENT_LIST_DIR}/sdk_log.c)
# Compiled only into the .so files (interposition of pthread_create etc.).
set(PUSHPROF_SDK_SO_SOURCES ${CMAKE_CURRENT_LIST_DIR}/interpose.c)
# Compiled only into libpushprof_preload.so (constructor).
set(PUSHPROF_SDK_PRELOAD_SOURCES) # preload.c is appended by sources_api.cmake
