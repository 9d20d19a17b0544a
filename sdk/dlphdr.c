#include "dlphdr.h"

#include <pthread.h>

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

int dlphdr_iterate(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data) {
  pthread_mutex_lock(&g_mu);
  int rc = dl_iterate_phdr(cb, data);
  pthread_mutex_unlock(&g_mu);
  return rc;
}

void dlphdr_atfork_prepare(void) {
  pthread_mutex_lock(&g_mu);
}

void dlphdr_atfork_parent(void) {
  pthread_mutex_unlock(&g_mu);
}

void dlphdr_atfork_child(void) {
  pthread_mutex_init(&g_mu, NULL);
}
