/* Unit tests of the HTTP exporters' shared rules (http_common.c): status
 * classification, Retry-After, scrubbing, encoding, hashing,
 * and one real request to a closed loopback port (transport error -> retry). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "exporter.h"
#include "http_common.h"
#include "pp_test.h"

static void test_http_classify_statuses(void) {
  PP_CHECK_INT(http_classify_status(200), ==, EXPORT_OK);
  PP_CHECK_INT(http_classify_status(204), ==, EXPORT_OK);
  PP_CHECK_INT(http_classify_status(408), ==, EXPORT_RETRY);
  PP_CHECK_INT(http_classify_status(429), ==, EXPORT_RETRY);
  PP_CHECK_INT(http_classify_status(500), ==, EXPORT_RETRY);
  PP_CHECK_INT(http_classify_status(503), ==, EXPORT_RETRY);
  PP_CHECK_INT(http_classify_status(400), ==, EXPORT_PERMANENT);
  PP_CHECK_INT(http_classify_status(403), ==, EXPORT_PERMANENT);
  PP_CHECK_INT(http_classify_status(404), ==, EXPORT_PERMANENT);
  PP_CHECK_INT(http_classify_status(412), ==, EXPORT_PERMANENT);
  PP_CHECK_INT(http_classify_status(301), ==, EXPORT_PERMANENT);
  http_response rs = {.transport_error = true};
  PP_CHECK_INT(http_classify(&rs), ==, EXPORT_RETRY);
}

static void test_http_retry_after_forms(void) {
  time_t now = 1700000000; /* 2023-11-14T22:13:20Z */
  PP_CHECK_INT(http_parse_retry_after(" 7\r\n", now), ==, 7);
  PP_CHECK_INT(http_parse_retry_after("0", now), ==, 0);
  PP_CHECK_INT(http_parse_retry_after("99999999999", now), ==, HTTP_MAX_RETRY_AFTER_S);
  PP_CHECK_INT(http_parse_retry_after("Tue, 14 Nov 2023 22:13:50 GMT", now), ==, 30);
  PP_CHECK_INT(http_parse_retry_after("Tue, 14 Nov 2023 22:00:00 GMT", now), ==, 0);
  PP_CHECK_INT(http_parse_retry_after("soon", now), ==, -1);
  PP_CHECK_INT(http_parse_retry_after("-5", now), ==, -1);
  PP_CHECK_INT(http_parse_retry_after("", now), ==, -1);
}

static void test_http_scrub_replaces_every_copy(void) {
  char s[] = "a SENTINEL b SENTINELSENTINEL";
  http_scrub(s, "SENTINEL");
  PP_CHECK(strstr(s, "SENTINEL") == NULL);
  PP_CHECK(strncmp(s, "a ******** b", 12) == 0);
}

static void test_http_uri_encode_rfc3986(void) {
  char out[64];
  PP_CHECK_INT(http_uri_encode("a b/c~d_e.f-g*", true, out, sizeof out), ==, 0);
  PP_CHECK_STR(out, "a%20b/c~d_e.f-g%2A");
  PP_CHECK_INT(http_uri_encode("a/b", false, out, sizeof out), ==, 0);
  PP_CHECK_STR(out, "a%2Fb");
  PP_CHECK_INT(http_uri_encode("abcdef", true, out, 4), ==, -1);
}

static void test_http_sha256_known_values(void) {
  char h[65];
  PP_CHECK_INT(http_sha256_hex("", 0, h), ==, 0);
  PP_CHECK_STR(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  PP_CHECK_INT(http_sha256_hex("abc", 3, h), ==, 0);
  PP_CHECK_STR(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_http_describe_summarizes_bodies(void) {
  char err[512];
  http_response rs = {.status = 403, .retry_after_s = -1};
  char xml[] = "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code>"
               "<Message>Access Denied</Message></Error>";
  rs.body = xml;
  rs.body_len = strlen(xml);
  http_describe("PUT", "https://u:p@h/b/k?x=1", &rs, err, sizeof err);
  PP_CHECK_STR(err, "PUT https://h/b/k: HTTP 403: AccessDenied: Access Denied");
  char json[] = "{\"error\":{\"code\":401,\"message\":\"Invalid Credentials\"}}";
  rs.status = 401;
  rs.body = json;
  rs.body_len = strlen(json);
  http_describe("POST", "http://h/upload", &rs, err, sizeof err);
  PP_CHECK_STR(err, "POST http://h/upload: HTTP 401: Invalid Credentials");
  http_response tr = {.transport_error = true};
  snprintf(tr.detail, sizeof tr.detail, "Timeout was reached");
  http_describe("GET", "http://h/x", &tr, err, sizeof err);
  PP_CHECK_STR(err, "GET http://h/x: Timeout was reached");
}

static void test_http_closed_port_is_a_retry(void) {
  /* Bind then close a loopback port so nothing listens on it. */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  PP_CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
           getsockname(fd, (struct sockaddr *)&a, &al) == 0);
  close(fd);
  char url[64], err[256];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/x", ntohs(a.sin_port));
  http_options o = {.timeout_ms = 2000};
  http_client *c = http_client_new(&o, "test", err, sizeof err);
  PP_CHECK(c != NULL);
  if (!c)
    return;
  http_request rq = {.method = "PUT", .url = url, .body = "x", .body_len = 1};
  http_response rs;
  PP_CHECK_INT(http_perform(c, &rq, &rs), ==, -1);
  PP_CHECK(rs.transport_error);
  PP_CHECK_INT(http_classify(&rs), ==, EXPORT_RETRY);
  http_response_free(&rs);
  http_client_free(c);
}

static void test_http_bad_ca_file_is_refused(void) {
  char err[256] = "";
  http_options o = {.ca_file = "/nonexistent/ca.pem"};
  PP_CHECK(http_client_new(&o, "test", err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "--ca-file") != NULL);
}

int main(void) {
  PP_RUN(test_http_classify_statuses);
  PP_RUN(test_http_retry_after_forms);
  PP_RUN(test_http_scrub_replaces_every_copy);
  PP_RUN(test_http_uri_encode_rfc3986);
  PP_RUN(test_http_sha256_known_values);
  PP_RUN(test_http_describe_summarizes_bodies);
  PP_RUN(test_http_closed_port_is_a_retry);
  PP_RUN(test_http_bad_ca_file_is_refused);
  PP_DONE();
}
