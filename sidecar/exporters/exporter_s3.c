/* s3://BUCKET/PREFIX: resolves the bucket URL, region (--s3-region, else
 * AWS_REGION, AWS_DEFAULT_REGION, us-east-1), endpoint (--s3-endpoint,
 * else AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else AWS's regional one) and
 * credentials (aws_creds.c), then hands over to the S3-compatible core
 * (s3compat.c), which GCS's HMAC path shares. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws_creds.h"
#include "exporter.h"
#include "exporter_backends.h"
#include "http_common.h"

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

exporter *exporter_s3_create(const char *url, const exporter_options *opts, char *err,
                             size_t errlen) {
  char *bucket = NULL, *prefix = NULL, ep[512], why[700];
  aws_creds *creds = NULL;
  exporter *ex = NULL;
  if (exporter_parse_bucket_url(url, "s3", &bucket, &prefix, err, errlen) != 0)
    return NULL;
  const char *region = opts->s3_region && *opts->s3_region ? opts->s3_region
                       : env("AWS_REGION")                 ? env("AWS_REGION")
                       : env("AWS_DEFAULT_REGION")         ? env("AWS_DEFAULT_REGION")
                                                           : "us-east-1";
  const char *endpoint = opts->s3_endpoint && *opts->s3_endpoint ? opts->s3_endpoint
                         : env("AWS_ENDPOINT_URL_S3")            ? env("AWS_ENDPOINT_URL_S3")
                                                                 : env("AWS_ENDPOINT_URL");
  if (!endpoint) {
    snprintf(ep, sizeof ep, "https://s3.%s.amazonaws.com", region);
    endpoint = ep;
  }
  http_options ho = {.ca_file = opts->ca_file,
                     .insecure_skip_verify = opts->tls_insecure_skip_verify,
                     .timeout_ms = opts->http_timeout_ms};
  creds = aws_creds_new(&ho, region, why, sizeof why);
  if (!creds) {
    snprintf(err, errlen, "%s", why);
    goto out;
  }
  ex = s3compat_exporter_new("s3", bucket, prefix, endpoint, region, opts->s3_path_style, creds,
                             false, opts, why, sizeof why);
  if (!ex) {
    snprintf(err, errlen, "%s (set --s3-endpoint / --s3-region)", why);
    aws_creds_free(creds);
  }
out:
  free(bucket);
  free(prefix);
  return ex;
}
