/* A listening Unix socket for the SDK tests that stand in for the sidecar
 * (test_control, test_push). */
#ifndef PUSHPROF_SOCK_TEST_UTIL_H
#define PUSHPROF_SOCK_TEST_UTIL_H
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "pp_test.h"

/* Listens at DIR/s.sock; its path goes to path (108 bytes). */
static inline int stu_listen(const char *dir, char path[108]) {
  snprintf(path, 108, "%s/s.sock", dir);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  strcpy(a.sun_path, path);
  PP_CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 8) == 0);
  return fd;
}
#endif
