# Owned by symbolization: /proc/self/maps, ELF symbols and build ids, pprof building.
list(APPEND PUSHPROF_SDK_SYMBOL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/procmaps_linux.c
  ${CMAKE_CURRENT_LIST_DIR}/elfsym.c
  ${CMAKE_CURRENT_LIST_DIR}/dlphdr.c
  ${CMAKE_CURRENT_LIST_DIR}/profbuild.c)
