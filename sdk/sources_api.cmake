# Owned by the public API: pushprof_start/stop, environment, standalone output, preload.
list(APPEND PUSHPROF_SDK_API_SOURCES)
