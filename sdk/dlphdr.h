/* The SDK's only way to call dl_iterate_phdr. glibc does not reset the
 * loader's dl_iterate_phdr lock in a forked child: if fork() runs while
 * another thread is inside dl_iterate_phdr, the child deadlocks at its next
 * call (or at the next C++ exception that needs it). The SDK's threads call
 * it (unwind tables every drain, symbolization at each push), so each call
 * holds dlphdr's mutex and the fork handlers take it: a fork waits for the
 * SDK's call in progress (microseconds to a millisecond) and never splits
 * one. Thread-safe; not async-signal-safe. */
#ifndef PUSHPROF_DLPHDR_H
#define PUSHPROF_DLPHDR_H
#include <link.h>
#include <stddef.h>

int dlphdr_iterate(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data);

/* fork handlers, run by the sampler's pthread_atfork registration. */
void dlphdr_atfork_prepare(void);
void dlphdr_atfork_parent(void);
void dlphdr_atfork_child(void);
#endif
