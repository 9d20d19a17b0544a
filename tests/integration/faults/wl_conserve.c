/* One short-lived job of the conservation check (it_conserve.sh): labels its
 * samples job=<N>, burns <ms> of CPU in conserve_work, and exits, leaving the
 * push to the SDK's exit flush (libpushprof, configured from PUSHPROF_*).
 *   wl_conserve N MS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pushprof.h"
#include "wl_common.h"

WL_SPIN_FN(conserve_work)

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: wl_conserve JOB_NUMBER CPU_MS\n");
    return 2;
  }
  int rc = pushprof_start(NULL);
  if (rc != 0) {
    fprintf(stderr, "wl_conserve: pushprof_start: %s\n", pushprof_strerror(rc));
    return 3;
  }
  rc = pushprof_label_set("job", argv[1]);
  if (rc != 0) {
    fprintf(stderr, "wl_conserve: pushprof_label_set: %s\n", pushprof_strerror(rc));
    return 4;
  }
  conserve_work(atof(argv[2]) / 1000.0);
  return 0;
}
