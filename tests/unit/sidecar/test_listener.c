/* Unit tests for sidecar/listener.c: the socket's mode and directory, and
 * what listener_open refuses to replace. Threaded: runs under TSan in CI
 * (labels unit;tsan). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "listener_test_util.h"
#include "pp_test.h"

static void test_listener_socket_is_0660_in_a_0750_dir(void) {
  rig r;
  PP_CHECK_INT(rig_up(&r, NULL, 0, 8, 2000), ==, 0);
  struct stat st;
  PP_CHECK_INT(lstat(sock_path, &st), ==, 0);
  PP_CHECK(S_ISSOCK(st.st_mode));
  PP_CHECK_INT(st.st_mode & 0777, ==, 0660);
  char d[256];
  snprintf(d, sizeof d, "%s/sock", dir);
  PP_CHECK_INT(stat(d, &st), ==, 0);
  PP_CHECK_INT(st.st_mode & 0777, ==, 0750);
  rig_down(&r);
  PP_CHECK_INT(access(sock_path, F_OK), ==, -1); /* unlinked on stop */
}

static void test_listener_refuses_live_socket_and_regular_file(void) {
  rig r;
  PP_CHECK_INT(rig_up(&r, NULL, 0, 4, 1000), ==, 0);
  char err[512] = "";
  listener_config lc = {.socket_path = sock_path,
                        .max_frame_bytes = 1u << 20,
                        .max_connections = 4,
                        .read_timeout_ms = 1000};
  listener *second = listener_open(&lc, err, sizeof err);
  PP_CHECK(second == NULL);
  PP_CHECK(strstr(err, "in use") != NULL);
  char pid[32]; /* the lock names the holder */
  snprintf(pid, sizeof pid, "pid %d", (int)getpid());
  PP_CHECK(strstr(err, pid) != NULL);
  rig_down(&r);
  char file[256];
  snprintf(file, sizeof file, "%s/plain", dir);
  FILE *f = fopen(file, "w");
  PP_CHECK(f != NULL);
  if (f)
    fclose(f);
  lc.socket_path = file;
  PP_CHECK(listener_open(&lc, err, sizeof err) == NULL);
  PP_CHECK(strstr(err, "not a socket") != NULL);
  PP_CHECK_INT(access(file, F_OK), ==, 0);
}

int main(void) {
  if (lt_setup("listener") != 0)
    return 1;
  PP_RUN(test_listener_socket_is_0660_in_a_0750_dir);
  PP_RUN(test_listener_refuses_live_socket_and_regular_file);
  lt_cleanup();
  PP_DONE();
}
