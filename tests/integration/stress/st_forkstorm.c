/* 100 forks in a loop while sampled: even children exec /bin/true, odd ones
 * _exit(0). The parent spins between forks and checks every child's status. */
#include "st_common.h"
#include <sys/wait.h>
#include <unistd.h>

WL_SPIN_FN(st_fork_parent_spin)

int main(void) {
  int ok = 0;
  fprintf(stderr, "pid=%d\n", (int)getpid());
  for (int i = 0; i < 100; i++) {
    st_fork_parent_spin(0.01);
    pid_t pid = fork();
    ST_CHECK(pid >= 0, "fork");
    if (pid == 0) {
      if (i % 2 == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
      }
      _exit(0);
    }
    ok += st_reap(pid);
  }
  printf("forks=100 ok=%d\n", ok);
  return ok == 100 ? 0 : 1;
}
