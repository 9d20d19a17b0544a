/* wl_fork: spins in parent_work, forks; the child spins in child_work and
 * either exits or (with an argument) execs that program with "0.3". The
 * parent waits for it and spins a little more. Knows nothing of pushprof. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noipa)) static uint64_t spin(double seconds, uint64_t salt) {
  volatile uint64_t acc = salt;
  double end = cpu_now() + seconds;
  while (cpu_now() < end)
    for (int i = 0; i < 100000; i++)
      acc += (uint64_t)i * 2654435761u;
  return acc;
}

/* "^ 1": no tail call, so each keeps a frame of its own above spin. */
__attribute__((noipa)) static uint64_t parent_work(double s) {
  return spin(s, 1) ^ 1;
}

__attribute__((noipa)) static uint64_t child_work(double s) {
  return spin(s, 2) ^ 1;
}

int main(int argc, char **argv) {
  uint64_t sink = parent_work(0.3);
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    return 1;
  }
  if (pid == 0) {
    sink += child_work(0.3);
    if (argc > 1) {
      execl(argv[1], argv[1], "0.3", (char *)NULL);
      perror("execl");
      _exit(127);
    }
    return (int)(sink & 0) + 3; /* a distinctive status the parent checks */
  }
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) {
    perror("waitpid");
    return 1;
  }
  sink += parent_work(0.2);
  int want = argc > 1 ? 0 : 3;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != want) {
    fprintf(stderr, "wl_fork: child status %d, want exit %d\n", st, want);
    return 1;
  }
  printf("wl_fork: parent %d child %d ok (%llu)\n", (int)getpid(), (int)pid,
         (unsigned long long)(sink & 1));
  return 0;
}
