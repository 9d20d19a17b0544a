/* A parent that forks children which each burn CPU in child_work() and
 * end in a given way, as pre-forking servers' workers do:
 *   wl_fork_children HOW [children, default 2] [seconds each, default 0.2]
 * HOW: exit (exit(0) in the child's function), return (main's return,
 * which ends in exit), _exit, quick (exit(0) at once: no CPU, so no
 * sample), grandchild (each child forks a grandchild that works, then
 * works itself), SIGTERM, SIGINT, SIGQUIT (the child works on until the
 * parent, told it worked that long, sends the signal, left at its default
 * action; the child must die of it, without a core), exec (the child
 * works, then execs this program as "execd SECONDS", which works in
 * exec_work and exits: one process, two programs). The parent works a little itself (parent_work)
 * and waits for every child; for each it prints child=PID cpu_seconds=S (the child's CPU from
 * wait4's rusage, less its grandchild's: the truth its profile is checked against), and
 * grandchild=PID cpu_seconds=S as the child reports it through a pipe. Exits 0 when every child
 * exited 0. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wl_common.h"

WL_SPIN_FN(child_work)
WL_SPIN_FN(grandchild_work)
WL_SPIN_FN(parent_work)
WL_SPIN_FN(exec_work)

static double rusage_cpu(const struct rusage *ru) {
  return (double)ru->ru_utime.tv_sec + (double)ru->ru_utime.tv_usec / 1e6 +
         (double)ru->ru_stime.tv_sec + (double)ru->ru_stime.tv_usec / 1e6;
}

/* Waits for pid; its CPU, or -1 if it did not exit 0 (die of signal sig,
 * if not 0). */
static double reap(pid_t pid, int sig) {
  int st = 0;
  struct rusage ru;
  if (wait4(pid, &st, 0, &ru) != pid ||
      !(sig ? WIFSIGNALED(st) && WTERMSIG(st) == sig : WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
    fprintf(stderr, "wl_fork_children: child %d ended with status 0x%x\n", (int)pid, st);
    return -1;
  }
  return rusage_cpu(&ru);
}

static int how_signal(const char *how) {
  return strcmp(how, "SIGTERM") == 0   ? SIGTERM
         : strcmp(how, "SIGINT") == 0  ? SIGINT
         : strcmp(how, "SIGQUIT") == 0 ? SIGQUIT
                                       : 0;
}

/* The child's life; returns only for HOW=return. */
static void child(const char *how, double seconds, int report_fd, int ready_fd) {
  if (strcmp(how, "quick") == 0)
    exit(0);
  if (how_signal(how)) {
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    child_work(seconds);
    if (write(ready_fd, "r", 1) != 1)
      exit(1);
    for (;;)
      child_work(1.0);
  }
  if (strcmp(how, "grandchild") == 0) {
    pid_t g = fork();
    if (g < 0)
      exit(1);
    if (g == 0) {
      grandchild_work(seconds);
      exit(0);
    }
    child_work(seconds);
    double cpu = reap(g, 0);
    dprintf(report_fd, "%d %d %.6f\n", (int)getpid(), (int)g, cpu);
    exit(cpu < 0);
  }
  child_work(seconds);
  if (strcmp(how, "exec") == 0) {
    char arg[32];
    snprintf(arg, sizeof arg, "%.3f", seconds);
    execl("/proc/self/exe", "wl_fork_children", "execd", arg, (char *)NULL);
    exit(1);
  }
  if (strcmp(how, "_exit") == 0)
    _exit(0);
  if (strcmp(how, "exit") == 0)
    exit(0);
}

int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "";
  if (strcmp(how, "execd") == 0 && argc == 3) {
    wl_start();
    exec_work(atof(argv[2]));
    return 0;
  }
  static const char *const hows[] = {"exit",    "return", "_exit",   "quick", "grandchild",
                                     "SIGTERM", "SIGINT", "SIGQUIT", "exec"};
  int known = 0;
  for (size_t i = 0; i < sizeof hows / sizeof hows[0]; i++)
    known |= strcmp(how, hows[i]) == 0;
  int n = argc > 2 ? atoi(argv[2]) : 2;
  double seconds = argc > 3 ? atof(argv[3]) : 0.2;
  if (!known || n < 1 || n > 1000 || !(seconds >= 0 && seconds <= 60)) {
    fprintf(stderr, "usage: wl_fork_children exit|return|_exit|quick|grandchild|SIGTERM|SIGINT|"
                    "SIGQUIT|exec [1..1000 children] [0..60 seconds each]\n");
    return 2;
  }
  wl_start();
  parent_work(0.05);
  int fds[2], ready[2];
  if (pipe(fds) != 0 || pipe(ready) != 0) {
    perror("wl_fork_children: pipe");
    return 1;
  }
  fflush(stdout);
  /* Static, not malloc'ed: the children exit with what the parent had, and
   * LeakSanitizer would count a heap array as their leak. */
  static pid_t kids[1000];
  static double cpu[1000];
  for (int i = 0; i < n; i++) {
    kids[i] = fork();
    if (kids[i] < 0) {
      perror("wl_fork_children: fork");
      return 1;
    }
    if (kids[i] == 0) {
      close(fds[0]);
      close(ready[0]);
      child(how, seconds, fds[1], ready[1]);
      return 0; /* HOW=return: main's return runs exit */
    }
  }
  close(fds[1]);
  close(ready[1]);
  int sig = how_signal(how);
  char r;
  for (int i = 0; sig && i < n; i++)
    if (read(ready[0], &r, 1) != 1)
      return 1;
  for (int i = 0; sig && i < n; i++)
    kill(kids[i], sig);
  int bad = 0;
  for (int i = 0; i < n; i++) {
    cpu[i] = reap(kids[i], sig);
    bad |= cpu[i] < 0;
  }
  /* A reaped grandchild's CPU is in its parent's rusage: take it out. */
  FILE *rep = fdopen(fds[0], "r");
  int c, g;
  double gcpu;
  while (rep && fscanf(rep, "%d %d %lf", &c, &g, &gcpu) == 3) {
    printf("grandchild=%d cpu_seconds=%.6f\n", g, gcpu);
    for (int i = 0; i < n; i++)
      if (kids[i] == c)
        cpu[i] -= gcpu;
  }
  for (int i = 0; i < n; i++)
    printf("child=%d cpu_seconds=%.6f\n", (int)kids[i], cpu[i]);
  return bad;
}
