/* The POST body of an on-demand request (ondemand.h: od_request_parse),
 * with jansson. Apart from ondemand.c so that the fuzz target links only
 * this. */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ondemand.h"
#include "pp_frame.h"

void od_request_free(od_request *rq) {
  free(rq->service);
  for (size_t i = 0; i < rq->nlabels; i++) {
    free(rq->keys[i]);
    free(rq->values[i]);
  }
  memset(rq, 0, sizeof *rq);
}

int od_why(char *why, size_t whylen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, whylen, fmt, ap);
  va_end(ap);
  return -1;
}

static int int_field(json_t *v, const char *name, long long lo, long long hi, long long *out,
                     char *why, size_t whylen) {
  if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
    return od_why(why, whylen, "%s must be an integer %lld..%lld", name, lo, hi);
  *out = json_integer_value(v);
  return 0;
}

int od_request_parse(const char *body, size_t len, enum od_type type, od_request *rq, char *why,
                     size_t whylen) {
  memset(rq, 0, sizeof *rq);
  rq->type = type;
  rq->hz = 100;
  rq->seconds = 5;
  size_t i = 0;
  while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'))
    i++;
  if (i == len)
    return 0; /* no body: the defaults */
  json_error_t je;
  json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
  if (!j)
    return od_why(why, whylen, "the request body is not valid JSON: %s (line %d, column %d)",
                  je.text, je.line, je.column);
  int rc = 0;
  const char *key;
  json_t *v;
  long long n;
  if (!json_is_object(j)) {
    rc = od_why(why, whylen,
                "the request body must be a JSON object, e.g. "
                "{\"sampling_frequency\": 99, \"timeout_seconds\": 5}");
    goto out;
  }
  json_object_foreach(j, key, v) {
    if (strcmp(key, "sampling_frequency") == 0) {
      if ((rc = int_field(v, key, 1, OD_HZ_MAX, &n, why, whylen)) != 0)
        goto out;
      rq->hz = (int)n;
    } else if (strcmp(key, "timeout_seconds") == 0) {
      if ((rc = int_field(v, key, 1, OD_SECONDS_MAX, &n, why, whylen)) != 0)
        goto out;
      rq->seconds = (int)n;
    } else if (strcmp(key, "archive") == 0) {
      if (!json_is_boolean(v)) {
        rc = od_why(why, whylen, "archive must be true or false");
        goto out;
      }
      rq->archive = json_is_true(v);
    } else if (strcmp(key, "service") == 0) {
      if (!json_is_string(v) || json_string_length(v) < 1 ||
          json_string_length(v) > PP_SERVICE_MAX ||
          strlen(json_string_value(v)) != json_string_length(v)) {
        rc = od_why(why, whylen, "service must be a string of 1..%d bytes", PP_SERVICE_MAX);
        goto out;
      }
      free(rq->service);
      if (!(rq->service = strdup(json_string_value(v)))) {
        rc = od_why(why, whylen, "out of memory");
        goto out;
      }
    } else if (strcmp(key, "pid") == 0) {
      if ((rc = int_field(v, key, 1, 4194304, &n, why, whylen)) != 0)
        goto out;
      rq->pid = (uint32_t)n;
    } else if (strcmp(key, "labels") == 0) {
      const char *lk;
      json_t *lv;
      if (!json_is_object(v) || json_object_size(v) > OD_SELECT_LABELS_MAX) {
        rc = od_why(why, whylen,
                    "labels must be an object of at most %d string values, e.g. "
                    "{\"env\": \"prod\"}",
                    OD_SELECT_LABELS_MAX);
        goto out;
      }
      json_object_foreach(v, lk, lv) {
        size_t kl = strlen(lk);
        if (kl < 1 || kl > PP_LABEL_KEY_MAX || !json_is_string(lv) ||
            json_string_length(lv) > PP_LABEL_VALUE_MAX ||
            strlen(json_string_value(lv)) != json_string_length(lv)) {
          rc = od_why(why, whylen, "labels.%.64s must be a string of at most %d bytes (keys 1..%d)",
                      lk, PP_LABEL_VALUE_MAX, PP_LABEL_KEY_MAX);
          goto out;
        }
        rq->keys[rq->nlabels] = strdup(lk);
        rq->values[rq->nlabels] = strdup(json_string_value(lv));
        if (!rq->keys[rq->nlabels] || !rq->values[rq->nlabels++]) {
          rc = od_why(why, whylen, "out of memory");
          goto out;
        }
      }
    } else {
      rc =
          od_why(why, whylen,
                 "unknown field \"%.64s\" (accepted: sampling_frequency, timeout_seconds, archive, "
                 "service, pid, labels)",
                 key);
      goto out;
    }
  }
out:
  json_decref(j);
  if (rc != 0)
    od_request_free(rq);
  return rc;
}
