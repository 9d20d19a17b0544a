/* The HTTP endpoint: GET /metrics, GET /healthz, and POST/GET/DELETE
 * /profile/cpu and /profile/heap (ondemand.h). */
#include "http_metrics.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
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
  ondemand *od;
  bool has_token, loopback;
  unsigned char token_sha[SHA256_DIGEST_LENGTH];
};

/* A request's body as it arrives (POST /profile/...). */
typedef struct req_state {
  char body[HTTP_BODY_MAX];
  size_t len;
  bool too_large;
} req_state;

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

static enum MHD_Result respond_answer(struct MHD_Connection *conn, od_answer *a) {
  struct MHD_Response *r = MHD_create_response_from_buffer(a->len, a->body, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(a->body);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a->ctype);
  if (a->filename) {
    char cd[96];
    snprintf(cd, sizeof cd, "attachment; filename=\"%s\"", a->filename);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION, cd);
  }
  enum MHD_Result ret = MHD_queue_response(conn, a->status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result respond_json_error(struct MHD_Connection *conn, unsigned status,
                                          const char *msg) {
  char *body = NULL;
  size_t n = strlen(msg) * 2 + 16;
  if (!(body = malloc(n)))
    return MHD_NO;
  /* msg holds no quote or backslash (all are literals of this file). */
  snprintf(body, n, "{\"error\":\"%s\"}\n", msg);
  return respond(conn, status, "application/json", body, MHD_RESPMEM_MUST_FREE);
}

/* Bearer token check, in constant time over the token's SHA-256. */
static bool authorized(const http_metrics *h, struct MHD_Connection *conn) {
  const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  if (!v || strncmp(v, "Bearer ", 7) != 0)
    return false;
  unsigned char got[SHA256_DIGEST_LENGTH];
  SHA256((const unsigned char *)v + 7, strlen(v + 7), got);
  return CRYPTO_memcmp(got, h->token_sha, sizeof got) == 0;
}

static enum MHD_Result handle_profile(http_metrics *h, struct MHD_Connection *conn,
                                      enum od_type type, const char *method, req_state *rs) {
  if (!h->od)
    return respond_json_error(conn, MHD_HTTP_NOT_FOUND, "on-demand profiles are off here");
  if (h->has_token ? !authorized(h, conn) : !h->loopback) {
    if (h->has_token)
      return respond_json_error(conn, MHD_HTTP_UNAUTHORIZED,
                                "missing or wrong bearer token (Authorization: Bearer TOKEN, the "
                                "content of the sidecar's --http-token-file)");
    return respond_json_error(conn, MHD_HTTP_FORBIDDEN,
                              "on-demand profiles on a non-loopback --metrics-addr need "
                              "--http-token-file: profiles reveal code and labels");
  }
  od_answer a;
  if (strcmp(method, "GET") == 0) {
    ondemand_status(h->od, type, &a);
  } else if (strcmp(method, "DELETE") == 0) {
    ondemand_stop(h->od, type, &a);
  } else if (strcmp(method, "POST") == 0) {
    if (rs->too_large)
      return respond_json_error(conn, 413, "request body over 16384 bytes");
    od_request rq;
    char why[512];
    if (od_request_parse(rs->body, rs->len, type, &rq, why, sizeof why) != 0) {
      /* why may quote the client's input: encode it properly. */
      memset(&a, 0, sizeof a);
      od_answer_error(&a, MHD_HTTP_BAD_REQUEST, why);
      return respond_answer(conn, &a);
    }
    ondemand_run(h->od, &rq, &a);
    od_request_free(&rq);
  } else {
    return respond_json_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                              "use POST (start and wait), GET (status) or DELETE (stop)");
  }
  return respond_answer(conn, &a);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls) {
  http_metrics *h = cls;
  (void)version;
  int ptype = strcmp(url, "/profile/cpu") == 0    ? OD_CPU
              : strcmp(url, "/profile/heap") == 0 ? OD_HEAP
                                                  : -1;
  if (ptype >= 0 && strcmp(method, "POST") == 0) {
    req_state *rs = *con_cls;
    if (!rs) { /* the first call: headers only */
      if (!(rs = calloc(1, sizeof *rs)))
        return MHD_NO;
      *con_cls = rs;
      return MHD_YES;
    }
    if (*upload_data_size) {
      if (rs->len + *upload_data_size > sizeof rs->body)
        rs->too_large = true; /* the rest is read and dropped, then 413 */
      else
        memcpy(rs->body + rs->len, upload_data, *upload_data_size);
      if (!rs->too_large)
        rs->len += *upload_data_size;
      *upload_data_size = 0;
      return MHD_YES;
    }
    return handle_profile(h, conn, (enum od_type)ptype, method, rs);
  }
  if (*upload_data_size != 0)
    return MHD_NO; /* no request bodies here */
  if (ptype >= 0)
    return handle_profile(h, conn, (enum od_type)ptype, method, NULL);
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
  return respond(conn, MHD_HTTP_NOT_FOUND, "text/plain",
                 "not found: try /metrics, /healthz, /profile/cpu or /profile/heap\n",
                 MHD_RESPMEM_PERSISTENT);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)conn;
  (void)toe;
  free(*con_cls);
  *con_cls = NULL;
}

int http_addr_is_loopback(const char *addr) {
  const char *colon = strrchr(addr, ':');
  char host[256];
  size_t hl = colon ? (size_t)(colon - addr) : strlen(addr);
  if (hl >= sizeof host)
    return 0;
  memcpy(host, addr, hl);
  host[hl] = 0;
  char *hp = host;
  if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
    host[hl - 1] = 0;
    hp = host + 1;
  }
  struct in_addr a4;
  struct in6_addr a6;
  if (!*hp || strcmp(hp, "localhost") == 0)
    return 1; /* ":PORT" binds 127.0.0.1 */
  if (inet_pton(AF_INET, hp, &a4) == 1)
    return (ntohl(a4.s_addr) >> 24) == 127;
  if (inet_pton(AF_INET6, hp, &a6) == 1)
    return IN6_IS_ADDR_LOOPBACK(&a6);
  return 0;
}

http_metrics *http_metrics_start(const char *addr, char *err, size_t errlen) {
  return http_metrics_start_with(addr, NULL, err, errlen);
}

http_metrics *http_metrics_start_with(const char *addr, const http_serve_options *o, char *err,
                                      size_t errlen) {
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
    h0 = "127.0.0.1"; /* ":PORT": loopback; other hosts only when named */
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
  if (o) {
    h->od = o->od;
    h->loopback = http_addr_is_loopback(addr);
    if (o->token) {
      h->has_token = true;
      SHA256((const unsigned char *)o->token, strlen(o->token), h->token_sha);
    }
  }
  unsigned flags =
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG;
  if (ai->ai_family == AF_INET6)
    flags |= MHD_USE_IPv6;
  h->d = MHD_start_daemon(flags, 0, NULL, NULL, handler, h, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                          MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_MAX_CONNECTIONS,
                          MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_TIMEOUT_S,
                          MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
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
