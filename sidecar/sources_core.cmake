# Owned by listener/config/metrics/main/client. Set PUSHPROF_SIDECAR_MAIN_SOURCES (main.c) and PUSHPROF_CLIENT_SOURCES.
list(APPEND PUSHPROF_SIDECAR_CORE_SOURCES)
