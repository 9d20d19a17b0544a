/* Preload only: a process that replaces itself (exec*) or leaves through
 * _exit/_Exit skips atexit, so the last window is flushed here first,
 * bounded by PUSHPROF_EXIT_TIMEOUT_MS. In a vfork or posix_spawn child,
 * which shares the parent's memory, api_final_flush does nothing (its pid is
 * not the one that started profiling). If exec fails, profiling restarts. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include "api_internal.h"
#include "pushprof.h"

#define EXEC_MAX_ARGS 1024 /* execl* argument lists longer than this: E2BIG */

static void *real_fn(const char *name) {
  return dlsym(RTLD_NEXT, name);
}

static void restart_after_failed_exec(int stopped) {
  if (!stopped)
    return;
  int e = errno;
  pushprof_options o = PUSHPROF_OPTIONS_INIT;
  o.handle_term_signals = 1;
  (void)pushprof_start(&o);
  errno = e;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

__attribute__((visibility("default"))) int execve(const char *path, char *const argv[],
                                                  char *const envp[]) {
  execve_fn real = (execve_fn)real_fn("execve");
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  int stopped = api_final_flush();
  int rc = real(path, argv, envp);
  restart_after_failed_exec(stopped);
  return rc;
}

__attribute__((visibility("default"))) int execv(const char *path, char *const argv[]) {
  return execve(path, argv, environ);
}

__attribute__((visibility("default"))) int execvpe(const char *file, char *const argv[],
                                                   char *const envp[]) {
  execvpe_fn real = (execvpe_fn)real_fn("execvpe");
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  int stopped = api_final_flush();
  int rc = real(file, argv, envp);
  restart_after_failed_exec(stopped);
  return rc;
}

__attribute__((visibility("default"))) int execvp(const char *file, char *const argv[]) {
  return execvpe(file, argv, environ);
}

__attribute__((visibility("default"))) int fexecve(int fd, char *const argv[], char *const envp[]) {
  fexecve_fn real = (fexecve_fn)real_fn("fexecve");
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  int stopped = api_final_flush();
  int rc = real(fd, argv, envp);
  restart_after_failed_exec(stopped);
  return rc;
}

/* execl, execlp, execle: collect the variadic list into argv (NULL-ended);
 * with envp, also the environment that follows the NULL. -1 (E2BIG) when
 * the list is longer than EXEC_MAX_ARGS. */
static int collect_args(const char *first, va_list *ap, char **argv, char *const **envp) {
  size_t n = 1;
  argv[0] = (char *)first;
  while (argv[n - 1] != NULL) {
    if (n == EXEC_MAX_ARGS) {
      errno = E2BIG;
      return -1;
    }
    argv[n++] = va_arg(*ap, char *);
  }
  if (envp)
    *envp = va_arg(*ap, char *const *);
  return 0;
}

__attribute__((visibility("default"))) int execl(const char *path, const char *arg, ...) {
  char *argv[EXEC_MAX_ARGS];
  va_list ap;
  va_start(ap, arg);
  int rc = collect_args(arg, &ap, argv, NULL);
  va_end(ap);
  return rc ? rc : execve(path, argv, environ);
}

__attribute__((visibility("default"))) int execlp(const char *file, const char *arg, ...) {
  char *argv[EXEC_MAX_ARGS];
  va_list ap;
  va_start(ap, arg);
  int rc = collect_args(arg, &ap, argv, NULL);
  va_end(ap);
  return rc ? rc : execvpe(file, argv, environ);
}

__attribute__((visibility("default"))) int execle(const char *path, const char *arg, ...) {
  char *argv[EXEC_MAX_ARGS];
  char *const *envp = NULL;
  va_list ap;
  va_start(ap, arg);
  int rc = collect_args(arg, &ap, argv, &envp);
  va_end(ap);
  return rc ? rc : execve(path, argv, envp);
}

typedef void (*exit_fn)(int);

__attribute__((visibility("default"), noreturn)) void _exit(int status) {
  exit_fn real = (exit_fn)real_fn("_exit");
  (void)api_final_flush();
  if (real)
    real(status);
  for (;;) /* no libc _exit: cannot happen */
    ;
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status) {
  _exit(status);
}
