/* The metrics endpoint: GET /metrics and GET /healthz, nothing else. */
#include "http_metrics.h"

#include <microhttpd.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "metrics.h"

struct http_metrics {
  struct MHD_Daemon *d;
  int port;
  atomic_bool stopping;
};

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, const char *type,
                               char *body, enum MHD_ResponseMemoryMode mode) {
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, mode);
  if (!r) {
    if (mode == MHD_RESPMEM_MUST_FREE)
      free(body);
    return MHD_NO;
  }
  if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) != MHD_YES) {
    MHD_destroy_response(r);
    return MHD_NO;
  }
  enum MHD_Result ret = MHD_queue_response(conn, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls) {
  http_metrics *h = cls;
  (void)version;
  (void)upload_data;
  (void)con_cls;
  if (*upload_data_size != 0)
    return MHD_NO; /* no request bodies here */
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
    return respond(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "only GET\n",
                   MHD_RESPMEM_PERSISTENT);
  if (strcmp(url, "/metrics") == 0) {
    char *body = metrics_render();
    if (!body)
      return respond(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", "out of memory\n",
                     MHD_RESPMEM_PERSISTENT);
    return respond(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body,
                   MHD_RESPMEM_MUST_FREE);
  }
  if (strcmp(url, "/healthz") == 0) {
    if (atomic_load(&h->stopping))
      return respond(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain", "shutting down\n",
                     MHD_RESPMEM_PERSISTENT);
    return respond(conn, MHD_HTTP_OK, "text/plain", "ok\n", MHD_RESPMEM_PERSISTENT);
  }
  return respond(conn, MHD_HTTP_NOT_FOUND, "text/plain", "not found: try /metrics or /healthz\n",
                 MHD_RESPMEM_PERSISTENT);
}

http_metrics *http_metrics_start(const char *addr, char *err, size_t errlen) {
  char host[256];
  const char *colon = strrchr(addr, ':');
  if (!colon || colon == addr + strlen(addr) - 1 || (size_t)(colon - addr) >= sizeof host) {
    snprintf(err, errlen, "--metrics-addr \"%s\": expected HOST:PORT, e.g. 127.0.0.1:9464", addr);
    return NULL;
  }
  size_t hl = (size_t)(colon - addr);
  memcpy(host, addr, hl);
  host[hl] = 0;
  const char *h0 = host;
  if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
    host[hl - 1] = 0;
    h0 = host + 1;
  }
  if (!*h0)
    h0 = "0.0.0.0";
  struct addrinfo hints = {
      .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV | AI_PASSIVE};
  struct addrinfo *ai = NULL;
  int gai = getaddrinfo(h0, colon + 1, &hints, &ai);
  if (gai != 0) {
    snprintf(err, errlen, "--metrics-addr \"%s\": %s (expected HOST:PORT with a numeric port)",
             addr, gai_strerror(gai));
    return NULL;
  }
  http_metrics *h = calloc(1, sizeof *h);
  if (!h) {
    freeaddrinfo(ai);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  if (ai->ai_family == AF_INET6)
    flags |= MHD_USE_IPv6;
  h->d = MHD_start_daemon(flags, 0, NULL, NULL, handler, h, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                          MHD_OPTION_CONNECTION_LIMIT, (unsigned)16, MHD_OPTION_CONNECTION_TIMEOUT,
                          (unsigned)10, MHD_OPTION_END);
  freeaddrinfo(ai);
  if (!h->d) {
    snprintf(err, errlen,
             "--metrics-addr \"%s\": cannot listen (port in use or address not local?); pick "
             "another HOST:PORT",
             addr);
    free(h);
    return NULL;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
  h->port = info ? info->port : 0;
  return h;
}

int http_metrics_port(const http_metrics *h) {
  return h ? h->port : 0;
}

void http_metrics_set_stopping(http_metrics *h) {
  if (h)
    atomic_store(&h->stopping, true);
}

void http_metrics_stop(http_metrics *h) {
  if (!h)
    return;
  MHD_stop_daemon(h->d);
  free(h);
}
