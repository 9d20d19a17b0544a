# Owned by listener/config/metrics/main/client.
list(APPEND PUSHPROF_SIDECAR_CORE_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/config.c)
