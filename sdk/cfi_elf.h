/* CFI from files, for objects loaded without .eh_frame (built with
 * -fno-asynchronous-unwind-tables, or stripped of it): their .debug_frame,
 * from the object's own file or from a separate debug file found by build
 * id (<root>/.build-id/xx/yyyy.debug, Debian's -dbg/-dbgsym layout).
 * Runs on the collector thread (file I/O, libelf); not async-signal-safe. */
#ifndef PUSHPROF_CFI_ELF_H
#define PUSHPROF_CFI_ELF_H
#include "cfi.h"

/* Tries path's .debug_frame, then the debug file of build_id (lower-case
 * hex, may be "") under debug_root (NULL: /usr/lib/debug, "": none).
 * bias: the object's load bias (link-time addresses + bias = runtime).
 * 0 with *out set, or -1 (nothing found, or out of memory). */
int cfi_elf_debug_frame(const char *path, const char *build_id, const char *debug_root,
                        uintptr_t bias, const _Atomic int *cancel, cfi_table **out, cfi_stats *st);

/* path's .plt and .plt.sec as runtime address ranges [r[0], r[1]) (0, 0
 * when absent): how many were found (0..2). For aarch64, whose linker
 * gives its PLT stubs no FDE. */
int cfi_elf_plt(const char *path, uintptr_t bias, uintptr_t plt[2], uintptr_t sec[2]);
#endif
