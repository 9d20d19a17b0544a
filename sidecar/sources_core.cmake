# Owned by listener/config/metrics/main/client.
list(APPEND PUSHPROF_SIDECAR_CORE_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/config.c
  ${CMAKE_CURRENT_LIST_DIR}/listener.c
  ${CMAKE_CURRENT_LIST_DIR}/lockfile.c
  ${CMAKE_CURRENT_LIST_DIR}/http_metrics.c)
set(PUSHPROF_SIDECAR_MAIN_SOURCES ${CMAKE_CURRENT_LIST_DIR}/main.c)
