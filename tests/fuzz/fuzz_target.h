/* Shared by the fuzz targets and the replay driver: the libFuzzer entry point
 * and FUZZ_CHECK, which turns a broken invariant into an abort (a crash for
 * libFuzzer, a failed test for the replay driver). */
#ifndef PUSHPROF_FUZZ_TARGET_H
#define PUSHPROF_FUZZ_TARGET_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Called once per input. Returns 0 (libFuzzer's contract); never keeps data. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond, ...)                                                                      \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: invariant failed: %s: ", __FILE__, __LINE__, #cond);                 \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)
#endif
