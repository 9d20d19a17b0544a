/* Unit tests for sidecar/http_metrics.c: /metrics and /healthz over real
 * HTTP on a loopback port, 503 once stopping, and the address parser. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_metrics.h"
#include "metrics.h"
#include "pp_test.h"

static int http_get(int port, const char *path, char *out, size_t outlen) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
    return -1;
  char req[256];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: x\r\n\r\n", path);
  if (write(fd, req, (size_t)n) != n) {
    close(fd);
    return -1;
  }
  size_t got = 0;
  ssize_t r;
  while (got + 1 < outlen && (r = read(fd, out + got, outlen - 1 - got)) > 0)
    got += (size_t)r;
  out[got] = 0;
  close(fd);
  return 0;
}

static void test_http_metrics_serves_metrics_and_healthz(void) {
  char err[256] = "";
  http_metrics *h = http_metrics_start("127.0.0.1:0", err, sizeof err);
  PP_CHECK(h != NULL);
  if (!h) {
    fprintf(stderr, "%s\n", err);
    return;
  }
  int port = http_metrics_port(h);
  PP_CHECK(port > 0);
  static char body[1 << 16];
  metrics_reject("unit_test_reason");
  PP_CHECK_INT(http_get(port, "/metrics", body, sizeof body), ==, 0);
  PP_CHECK(strstr(body, "200 OK") != NULL);
  PP_CHECK(strstr(body, "pushprof_pushes_accepted_total") != NULL);
  PP_CHECK(strstr(body, "reason=\"unit_test_reason\"") != NULL);
  PP_CHECK_INT(http_get(port, "/healthz", body, sizeof body), ==, 0);
  PP_CHECK(strstr(body, "200 OK") != NULL);
  PP_CHECK_INT(http_get(port, "/nope", body, sizeof body), ==, 0);
  PP_CHECK(strstr(body, "404") != NULL);
  http_metrics_set_stopping(h);
  PP_CHECK_INT(http_get(port, "/healthz", body, sizeof body), ==, 0);
  PP_CHECK(strstr(body, "503") != NULL);
  http_metrics_stop(h);
  PP_CHECK(http_metrics_start("127.0.0.1", err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "HOST:PORT") != NULL);
}

static void test_loopback_addresses(void) {
  PP_CHECK(http_addr_is_loopback("127.0.0.1:9464"));
  PP_CHECK(http_addr_is_loopback("127.1.2.3:0"));
  PP_CHECK(http_addr_is_loopback("[::1]:9464"));
  PP_CHECK(http_addr_is_loopback("localhost:9464"));
  PP_CHECK(http_addr_is_loopback(":9464")); /* binds 127.0.0.1 */
  PP_CHECK(!http_addr_is_loopback("0.0.0.0:9464"));
  PP_CHECK(!http_addr_is_loopback("[::]:9464"));
  PP_CHECK(!http_addr_is_loopback("10.0.0.7:9464"));
  PP_CHECK(!http_addr_is_loopback("128.0.0.1:9464"));
}

int main(void) {
  PP_RUN(test_loopback_addresses);
  PP_RUN(test_http_metrics_serves_metrics_and_healthz);
  PP_DONE();
}
