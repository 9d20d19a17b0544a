/* A program that defines and exports otel_thread_ctx_v1 itself, as a
 * tracer writing its own OTEP 4947 records does, linked with
 * libpushprof.so: pushprof's labels must leave the program's pointer alone
 * when set, cleared, and when a labelled thread exits. Exits 0 if so,
 * 1 naming the step that changed it. */
#include <pthread.h>
#include <stdio.h>

#include "pushprof.h"

__attribute__((visibility("default"))) __thread void *otel_thread_ctx_v1;
static char mine[64] __attribute__((aligned(8)));
static const char *broken;

static void step(const char *what, int rc) {
  if (rc != 0 || otel_thread_ctx_v1 != mine) {
    if (!broken)
      broken = what;
  }
}

static void *labelled(void *arg) {
  (void)arg;
  otel_thread_ctx_v1 = mine;
  step("thread label_set", pushprof_label_set("route", "/x"));
  step("thread trace_id", pushprof_label_set("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"));
  step("thread span_id", pushprof_label_set("span_id", "00f067aa0ba902b7"));
  return NULL;
}

int main(void) {
  otel_thread_ctx_v1 = mine;
  step("label_set", pushprof_label_set("route", "/y"));
  step("labels_clear", pushprof_labels_clear());
  step("label_set again", pushprof_label_set("tenant", "acme"));
  pthread_t t;
  if (pthread_create(&t, NULL, labelled, NULL) != 0 || pthread_join(t, NULL) != 0)
    return 2;
  step("after a labelled thread exited", 0);
  if (broken) {
    fprintf(stderr, "wl_otel_foreign: pushprof replaced the program's otel_thread_ctx_v1 (%s)\n",
            broken);
    return 1;
  }
  return 0;
}
