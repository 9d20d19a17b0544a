# Owned by the public API: pushprof_start/stop, environment, standalone output, preload.
list(APPEND PUSHPROF_SDK_API_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/api.c
  ${CMAKE_CURRENT_LIST_DIR}/env_config.c
  ${CMAKE_CURRENT_LIST_DIR}/options.c
  ${CMAKE_CURRENT_LIST_DIR}/push.c)
# Compiled only into libpushprof_preload.so (constructor).
list(APPEND PUSHPROF_SDK_PRELOAD_SOURCES ${CMAKE_CURRENT_LIST_DIR}/preload.c
  ${CMAKE_CURRENT_LIST_DIR}/preload_exec.c)
