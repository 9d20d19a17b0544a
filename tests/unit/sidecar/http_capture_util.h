/* A loopback HTTP server for one request, keeping what arrived, for unit
 * tests of code that sends requests. Header-only. */
#ifndef HTTP_CAPTURE_UTIL_H
#define HTTP_CAPTURE_UTIL_H
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct http_capture {
  int lfd, port;
  int status;       /* of the answer */
  const char *body; /* of the answer, "" if NULL */
  pthread_t th;
  char req[8192]; /* the request head and as much of its body as fits */
} http_capture;

/* Accepts one connection, reads the head and its Content-Length body,
 * answers with c->status and c->body, and closes. */
static void *http_capture_serve(void *arg) {
  http_capture *c = arg;
  int fd = accept(c->lfd, NULL, NULL);
  if (fd < 0)
    return NULL;
  size_t n = 0, want = 0;
  const char *end = NULL;
  while (n < sizeof c->req - 1) {
    ssize_t r = read(fd, c->req + n, sizeof c->req - 1 - n);
    if (r <= 0)
      break;
    n += (size_t)r;
    c->req[n] = '\0';
    if (!end && (end = strstr(c->req, "\r\n\r\n")) != NULL) {
      const char *cl = strcasestr(c->req, "\r\nContent-Length:");
      want = (size_t)(end + 4 - c->req) + (cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
    }
    if (end && n >= want)
      break;
  }
  const char *body = c->body ? c->body : "";
  char answer[4096];
  int al = snprintf(answer, sizeof answer,
                    "HTTP/1.1 %d X\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                    c->status, strlen(body), body);
  if (al > 0 && write(fd, answer, (size_t)al) < 0)
    perror("write");
  close(fd);
  return NULL;
}

/* Listens on a free loopback port (c->port) and serves one request on a
 * thread, answering status and body (NULL: none); 0 or -1. */
static inline int http_capture_start(http_capture *c, int status, const char *body) {
  memset(c, 0, sizeof *c);
  c->status = status;
  c->body = body;
  c->lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  if (c->lfd < 0 || bind(c->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(c->lfd, 1) != 0 ||
      getsockname(c->lfd, (struct sockaddr *)&a, &al) != 0 ||
      pthread_create(&c->th, NULL, http_capture_serve, c) != 0) {
    if (c->lfd >= 0)
      close(c->lfd);
    return -1;
  }
  c->port = ntohs(a.sin_port);
  return 0;
}

/* Call once the client is done: c->req then holds what arrived (nothing,
 * if it never connected: the shutdown ends the wait in accept). */
static inline void http_capture_wait(http_capture *c) {
  shutdown(c->lfd, SHUT_RDWR);
  pthread_join(c->th, NULL);
  close(c->lfd);
}
#endif
