/* vfork+exec, vfork+_exit and posix_spawn children while sampled; the parent
 * spins between them and checks every child's status. */
#include "st_common.h"
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
WL_SPIN_FN(st_spawn_parent_spin)

/* Globals: locals would be clobbered across vfork. */
static int ok, n;

int main(void) {
  fprintf(stderr, "pid=%d\n", (int)getpid());
  for (int i = 0; i < 15; i++) {
    st_spawn_parent_spin(0.01);
    pid_t pid = vfork();
    ST_CHECK(pid >= 0, "vfork");
    if (pid == 0) {
      execl("/bin/true", "true", (char *)NULL);
      _exit(127);
    }
    ok += st_reap(pid), n++;
    st_spawn_parent_spin(0.01);
    pid = vfork();
    ST_CHECK(pid >= 0, "vfork");
    if (pid == 0)
      _exit(0);
    ok += st_reap(pid), n++;
    st_spawn_parent_spin(0.01);
    char *argv[] = {"true", NULL};
    ST_CHECK(posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ) == 0, "posix_spawn");
    ok += st_reap(pid), n++;
  }
  printf("children=%d ok=%d\n", n, ok);
  return ok == n ? 0 : 1;
}
