/* The push path: an SDK thread (the pusher) cuts a window every upload
 * period, keeps it in a bounded backlog and pushes it to the sidecar over its
 * Unix socket (proto/PROTOCOL.md). It also carries the final flush at exit,
 * on SIGTERM/SIGINT/SIGHUP and before exec. Application threads only ever
 * wake it (pushprof_flush waits at most its timeout). Thread-safe; nothing
 * here is async-signal-safe except its SIGTERM/SIGINT/SIGHUP handler. */
#ifndef PUSHPROF_PUSH_H
#define PUSHPROF_PUSH_H
#include <stddef.h>
#include <stdint.h>

#include "env_config.h"
#include "pushprof.pb-c.h"

/* Starts the pusher thread for cfg->socket_path, pushing cfg's process
 * labels with every profile. on_term is the owner's stop: on a term signal
 * (push_install_term_handlers) the pusher runs it (it must stop sampling and
 * end in push_final), then re-raises the signal. The pusher thread is not
 * sampled: its CPU (cutting, symbolizing, encoding) is the SDK's, not the
 * host's. 0 or a negative PUSHPROF_E* code with a one-line reason in err
 * (profiling then stays off). */
int push_start(const env_config *cfg, void (*on_term)(void), char *err, size_t errlen);

/* 1 if push_start succeeded and push_final has not run. */
int push_active(void);

/* At exit once push_nothing_to_send() held (sampling quiesced): sends the
 * no_samples notice and tells the pusher thread to stop without waking or
 * joining it (the process is ending; push_start joins it if it restarts). */
int push_leave_empty(void);

/* 1 if nothing waits to be pushed: the backlog is empty and nothing was
 * sampled since the last cut. push_final then pushes nothing (the empty
 * exit, see README "Short processes"). */
int push_nothing_to_send(void);

/* Cuts what was sampled so far and pushes it (and the backlog), waiting for
 * the acks at most timeout_ms. Called from application threads. */
int push_flush(int timeout_ms);

/* The last flush: call after sampler_stop(). Stops the pusher thread, cuts
 * the remainder and pushes everything unsent within timeout_ms; what the
 * sidecar could not take goes to cfg->spool_dir as drop-in files, or is
 * named in one warning line. Safe to call from the pusher thread itself. */
int push_final(int timeout_ms);

/* Installs the SIGTERM/SIGINT/SIGHUP handler for each of them whose
 * disposition is SIG_DFL now: the handler only wakes the pusher, which
 * runs push_start's on_term and then re-raises the signal with its
 * default action, so the exit status is unchanged. */
void push_install_term_handlers(void);

/* Asks the pusher to cut on-demand session id of profile type (a
 * PUSHPROF_PROFILE_* bit: CPU cuts the collector's session, heap a
 * snapshot) and push it with its session_id. Called by control.c. */
void push_session(unsigned type, uint64_t id);

/* Points lab[0..n) (and labp) at env_config's packed "key\0value\0"
 * pairs kv, at most ENV_CONFIG_LABELS_MAX; returns how many. */
size_t push_labels_view(const char *kv, size_t n, Pushprof__V1__Label *lab,
                        Pushprof__V1__Label **labp);

/* fork(): the child starts with an empty backlog and no pusher thread. */
void push_atfork_child(void);
#endif
