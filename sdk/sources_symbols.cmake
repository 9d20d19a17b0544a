# Owned by symbolization: /proc/self/maps, ELF symbols and build ids, pprof building.
list(APPEND PUSHPROF_SDK_SYMBOL_SOURCES)
