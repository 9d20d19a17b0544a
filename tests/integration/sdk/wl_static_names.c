/* A program that defines, for its own use, names the SDK uses inside
 * (functions of several modules, a data object, and protobuf-c code as its
 * own generated profile.pb-c.c would define it), linked statically against
 * libpushprof.a. It must link, its own definitions must be the ones it
 * calls, and profiling must work (the SDK calls its own).
 *   wl_static_names OUTPUT   (prints names_ok=N and cpu_seconds=) */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wl_common.h"

/* Deliberately other signatures than the SDK's: only the names are shared. */
#define OWN(name, k)                                                                               \
  int name(int x);                                                                                 \
  int name(int x) {                                                                                \
    return x + k;                                                                                  \
  }
OWN(ring_init, 1)
OWN(push_start, 2)
OWN(labels_copy, 3)
OWN(collector_start, 4)
OWN(sampler_start, 5)
OWN(env_config_resolve, 6)
OWN(utab_find, 7)
OWN(elfsym_lookup, 8)
OWN(api_log, 9)
OWN(pp_gzip, 10)
OWN(pp_client_push_frame, 11)
size_t perftools__profiles__profile__pack(const void *message, uint8_t *out);
size_t pushprof__v1__push_request__pack(const void *message, uint8_t *out);

size_t perftools__profiles__profile__pack(const void *message, uint8_t *out) {
  (void)message;
  out[0] = 0xab;
  return 12;
}
size_t pushprof__v1__push_request__pack(const void *message, uint8_t *out) {
  (void)message;
  out[0] = 0xcd;
  return 13;
}
int threads_table[4] = {14, 15, 16, 17};
const char perftools__profiles__profile__descriptor[] = "the program's own";

WL_SPIN_FN(static_names_spin)

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  int ok = 0;
  uint8_t b[1] = {0};
  ok += ring_init(100) == 101;
  ok += push_start(100) == 102;
  ok += labels_copy(100) == 103;
  ok += collector_start(100) == 104;
  ok += sampler_start(100) == 105;
  ok += env_config_resolve(100) == 106;
  ok += utab_find(100) == 107;
  ok += elfsym_lookup(100) == 108;
  ok += api_log(100) == 109;
  ok += pp_gzip(100) == 110;
  ok += pp_client_push_frame(100) == 111;
  ok += perftools__profiles__profile__pack(NULL, b) == 12 && b[0] == 0xab;
  ok += pushprof__v1__push_request__pack(NULL, b) == 13 && b[0] == 0xcd;
  ok += threads_table[0] == 14 && threads_table[3] == 17;
  ok += strcmp(perftools__profiles__profile__descriptor, "the program's own") == 0;
  pushprof_options o = PUSHPROF_OPTIONS_INIT;
  o.output_path = argv[1];
  int rc = pushprof_start(&o);
  if (rc != 0) {
    fprintf(stderr, "wl_static_names: pushprof_start: %s\n", pushprof_strerror(rc));
    return 3;
  }
  double c0 = wl_thread_cpu(); /* the sampled work; not the SDK's threads */
  static_names_spin(0.4);
  double cpu = wl_thread_cpu() - c0;
  /* The SDK ran on its own ring, threads table and protobuf code: ours are
   * untouched. */
  ok += threads_table[0] == 14 && threads_table[3] == 17;
  rc = pushprof_stop();
  if (rc != 0) {
    fprintf(stderr, "wl_static_names: pushprof_stop: %s\n", pushprof_strerror(rc));
    return 4;
  }
  printf("names_ok=%d\ncpu_seconds=%.3f\n", ok, cpu);
  return ok == 16 ? 0 : 5;
}
