# Owned by the sampler: timers, signal handler, ring, unwinder, threads, collector.
list(APPEND PUSHPROF_SDK_CORE_SOURCES)
# Compiled only into the .so files (interposition of pthread_create etc.).
set(PUSHPROF_SDK_SO_SOURCES)
# Compiled only into libpushprof_preload.so (constructor).
set(PUSHPROF_SDK_PRELOAD_SOURCES) # preload.c is appended by sources_api.cmake
