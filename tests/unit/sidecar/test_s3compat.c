/* Pins the SigV4 signing path the S3 exporter relies on: libcurl's
 * CURLOPT_AWS_SIGV4 with the provider given explicitly must reproduce AWS's
 * published "GET Object" example signature when fed the example's request
 * (host, Range, x-amz-content-sha256 of the empty body, x-amz-date), and
 * s3compat.c's pure helpers (key layout, bucket URLs, virtual-host or path
 * addressing) behave as documented. */
#include <curl/curl.h>

#include "exporter_backends.h"
#include "http_capture_util.h"
#include "pp_test.h"

static size_t sink(char *p, size_t s, size_t n, void *u) {
  (void)p, (void)u;
  return s * n;
}

static void test_s3sign_curl_reproduces_aws_get_example(void) {
  http_capture c;
  PP_CHECK_INT(http_capture_start(&c, 200, NULL), ==, 0);
  CURL *h = curl_easy_init();
  PP_CHECK(h != NULL);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/test.txt", c.port);
  struct curl_slist *hd = NULL;
  hd = curl_slist_append(hd, "Host: examplebucket.s3.amazonaws.com");
  hd = curl_slist_append(hd, "Range: bytes=0-9");
  hd = curl_slist_append(
      hd, "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  hd = curl_slist_append(hd, "x-amz-date: 20130524T000000Z");
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
  curl_easy_setopt(h, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
  curl_easy_setopt(h, CURLOPT_USERNAME, "AKIAIOSFODNN7EXAMPLE");
  curl_easy_setopt(h, CURLOPT_PASSWORD, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
  CURLcode cc = curl_easy_perform(h);
  PP_CHECK_INT(cc, ==, CURLE_OK);
  http_capture_wait(&c);
  curl_slist_free_all(hd);
  curl_easy_cleanup(h);
  const char *auth = strstr(c.req, "Authorization: ");
  PP_CHECK(auth != NULL);
  if (!auth)
    return;
  char line[512];
  snprintf(line, sizeof line, "%.*s", (int)strcspn(auth, "\r\n"), auth);
  PP_CHECK_STR(line, "Authorization: AWS4-HMAC-SHA256 "
                     "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                     "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                     "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

static void test_s3sign_object_key_layout_and_charset(void) {
  char key[512];
  export_object o = {.service = "my svc/../x",
                     .node = "node-1",
                     .subdir = "team//a b/",
                     .start_ns = 1700000000LL * 1000000000LL,
                     .content_hash = "0123456789abcdef0123456789abcdef"};
  PP_CHECK_INT(exporter_object_key("pre/fix", &o, key, sizeof key), ==, 0);
  PP_CHECK_STR(key, "pre/fix/team/a_b/node-1/my_svc_.._x/20231114T221320Z-0123456789abcdef.pb.gz");
  o.subdir = "..";
  PP_CHECK_INT(exporter_object_key("", &o, key, sizeof key), ==, 0);
  PP_CHECK_STR(key, "_/node-1/my_svc_.._x/20231114T221320Z-0123456789abcdef.pb.gz");
  PP_CHECK_INT(exporter_object_key("", &o, key, 20), ==, -1);
  o.profile_type = "heap";
  PP_CHECK_INT(exporter_object_key("", &o, key, sizeof key), ==, 0);
  PP_CHECK_STR(key, "_/node-1/my_svc_.._x/20231114T221320Z-heap-0123456789abcdef.pb.gz");
}

static void test_s3sign_bucket_urls(void) {
  char *b = NULL, *p = NULL, err[256];
  PP_CHECK_INT(exporter_parse_bucket_url("s3://my.bucket/a/b/", "s3", &b, &p, err, sizeof err), ==,
               0);
  PP_CHECK_STR(b, "my.bucket");
  PP_CHECK_STR(p, "a/b");
  free(b);
  free(p);
  PP_CHECK_INT(exporter_parse_bucket_url("s3://bkt", "s3", &b, &p, err, sizeof err), ==, 0);
  PP_CHECK_STR(p, "");
  free(b);
  free(p);
  PP_CHECK_INT(exporter_parse_bucket_url("s3://BAD/x", "s3", &b, &p, err, sizeof err), ==, -1);
  PP_CHECK_INT(exporter_parse_bucket_url("s3://ok-bucket/x?y", "s3", &b, &p, err, sizeof err), ==,
               -1);
  PP_CHECK_INT(exporter_parse_bucket_url("s3://ok-bucket/a b", "s3", &b, &p, err, sizeof err), ==,
               -1);
  PP_CHECK_INT(exporter_parse_bucket_url("gs://ab", "gs", &b, &p, err, sizeof err), ==, -1);
}

static void test_s3sign_bucket_addressing(void) {
  char u[256];
  PP_CHECK_INT(
      exporter_bucket_base_url("https://s3.eu-west-1.amazonaws.com", "logs", false, u, sizeof u),
      ==, 0);
  PP_CHECK_STR(u, "https://logs.s3.eu-west-1.amazonaws.com");
  PP_CHECK_INT(
      exporter_bucket_base_url("https://s3.eu-west-1.amazonaws.com/", "logs", true, u, sizeof u),
      ==, 0);
  PP_CHECK_STR(u, "https://s3.eu-west-1.amazonaws.com/logs");
  /* Dotted bucket names and IP/localhost endpoints: path style by itself. */
  PP_CHECK_INT(exporter_bucket_base_url("https://s3.amazonaws.com", "a.b", false, u, sizeof u), ==,
               0);
  PP_CHECK_STR(u, "https://s3.amazonaws.com/a.b");
  PP_CHECK_INT(exporter_bucket_base_url("http://127.0.0.1:9000", "logs", false, u, sizeof u), ==,
               0);
  PP_CHECK_STR(u, "http://127.0.0.1:9000/logs");
  PP_CHECK_INT(exporter_bucket_base_url("http://[::1]:9000", "logs", false, u, sizeof u), ==, 0);
  PP_CHECK_STR(u, "http://[::1]:9000/logs");
  PP_CHECK_INT(exporter_bucket_base_url("http://localhost:9000", "logs", false, u, sizeof u), ==,
               0);
  PP_CHECK_STR(u, "http://localhost:9000/logs");
  PP_CHECK_INT(exporter_bucket_base_url("ftp://h", "logs", false, u, sizeof u), ==, -1);
  PP_CHECK_INT(exporter_bucket_base_url("https://u:p@h", "logs", false, u, sizeof u), ==, -1);
  PP_CHECK_INT(exporter_bucket_base_url("https://h/path", "logs", false, u, sizeof u), ==, -1);
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  PP_RUN(test_s3sign_curl_reproduces_aws_get_example);
  PP_RUN(test_s3sign_object_key_layout_and_charset);
  PP_RUN(test_s3sign_bucket_urls);
  PP_RUN(test_s3sign_bucket_addressing);
  curl_global_cleanup();
  PP_DONE();
}
