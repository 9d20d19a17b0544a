/* A process for outside readers of the OpenTelemetry context: after
 * profiling starts (pushprof_start when linked, the constructor under
 * LD_PRELOAD), thread "labelled" sets trace_id, span_id (W3C hex), route
 * and tenant; thread "cleared" sets a key no other thread uses, then clears
 * its labels; the main thread forks a child that publishes nothing. It
 * writes "pid=P child=C labelled=TID cleared=TID" to the file named by
 * argv[1] when all that is done, then sleeps (threads included) until
 * killed or argv[2] seconds pass. Under LD_PRELOAD the label calls go
 * through dlsym; linked (WL_LINKED, also with libpushprof.a) they are
 * direct. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wl_common.h"

#define TRACE_ID "4bf92f3577b34da6a3ce929d0e0e4736"
#define SPAN_ID "00f067aa0ba902b7"

static int (*label_set)(const char *, const char *);
static int (*labels_clear)(void);
static pthread_barrier_t ready;
static pid_t tids[2];
static int hold_s = 60;

static void set(const char *k, const char *v) {
  int rc = label_set(k, v);
  if (rc != 0) {
    fprintf(stderr, "wl_otel: pushprof_label_set(%s): %d\n", k, rc);
    exit(4);
  }
}

static void *labelled(void *arg) {
  (void)arg;
  tids[0] = (pid_t)syscall(SYS_gettid);
  set("route", "/api/orders");
  set("trace_id", TRACE_ID);
  set("span_id", SPAN_ID);
  set("tenant", "acme");
  pthread_barrier_wait(&ready);
  sleep((unsigned)hold_s);
  return NULL;
}

static void *cleared(void *arg) {
  (void)arg;
  tids[1] = (pid_t)syscall(SYS_gettid);
  set("only_in_cleared", "x");
  set("trace_id", TRACE_ID);
  if (labels_clear() != 0)
    exit(4);
  pthread_barrier_wait(&ready);
  sleep((unsigned)hold_s);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: wl_otel READY_FILE [SECONDS]\n");
    return 2;
  }
  if (argc > 2)
    hold_s = atoi(argv[2]);
  wl_start();
#ifdef WL_LINKED
  label_set = pushprof_label_set;
  labels_clear = pushprof_labels_clear;
#else
  label_set = (int (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "pushprof_label_set");
  labels_clear = (int (*)(void))dlsym(RTLD_DEFAULT, "pushprof_labels_clear");
#endif
  if (!label_set || !labels_clear) {
    fprintf(stderr, "wl_otel: the SDK is not loaded\n");
    return 3;
  }
  pthread_barrier_init(&ready, NULL, 3);
  pthread_t a, b;
  pthread_create(&a, NULL, labelled, NULL);
  pthread_create(&b, NULL, cleared, NULL);
  pthread_barrier_wait(&ready);
  pid_t child = fork();
  if (child == 0) {
    sleep((unsigned)hold_s);
    _exit(0);
  }
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
  FILE *f = fopen(tmp, "w");
  if (!f ||
      fprintf(f, "pid=%d child=%d labelled=%d cleared=%d\n", (int)getpid(), (int)child,
              (int)tids[0], (int)tids[1]) < 0 ||
      fclose(f) != 0 || rename(tmp, argv[1]) != 0) {
    perror("wl_otel: ready file");
    return 5;
  }
  sleep((unsigned)hold_s);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  return 0;
}
