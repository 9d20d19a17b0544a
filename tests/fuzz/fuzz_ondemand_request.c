/* The body of POST /profile/cpu and /profile/heap (od_request_parse): any
 * bytes either parse into a request inside the documented bounds or are
 * refused with a reason; nothing leaks either way (the replay runs under
 * ASan in CI). */
#include <string.h>

#include "fuzz_target.h"
#include "ondemand.h"
#include "pp_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (int t = 0; t < OD_NTYPES; t++) {
    od_request rq;
    char why[512] = "";
    if (od_request_parse((const char *)data, size, (enum od_type)t, &rq, why, sizeof why) != 0) {
      FUZZ_CHECK(why[0] != 0, "refused without a reason");
      continue;
    }
    FUZZ_CHECK(rq.type == (enum od_type)t, "type %d", (int)rq.type);
    FUZZ_CHECK(rq.hz >= 1 && rq.hz <= OD_HZ_MAX, "hz %d", rq.hz);
    FUZZ_CHECK(rq.seconds >= 1 && rq.seconds <= OD_SECONDS_MAX, "seconds %d", rq.seconds);
    FUZZ_CHECK(!rq.service || (strlen(rq.service) >= 1 && strlen(rq.service) <= PP_SERVICE_MAX),
               "service length");
    FUZZ_CHECK(rq.nlabels <= OD_SELECT_LABELS_MAX, "%zu labels", rq.nlabels);
    for (size_t i = 0; i < rq.nlabels; i++)
      FUZZ_CHECK(rq.keys[i] && rq.values[i] && strlen(rq.keys[i]) >= 1 &&
                     strlen(rq.keys[i]) <= PP_LABEL_KEY_MAX &&
                     strlen(rq.values[i]) <= PP_LABEL_VALUE_MAX,
                 "label %zu", i);
    od_request_free(&rq);
  }
  return 0;
}
