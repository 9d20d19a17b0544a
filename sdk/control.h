/* The SDK's side of on-demand profiles (proto/PROTOCOL.md, "On-demand
 * profiles"): a subscription to the sidecar on a connection of its own,
 * opened and read without blocking from the collector thread's tick. A
 * Control START makes the sampler take the session's rate (CPU) or cuts a
 * heap snapshot; at the session's end (its duration, a STOP) the pusher
 * pushes the session's profile with its session_id. Thread-safe; nothing
 * here is async-signal-safe. */
#ifndef PUSHPROF_CONTROL_H
#define PUSHPROF_CONTROL_H
#include <stdint.h>

#include "env_config.h"

/* Subscribes (at the next tick) to the sidecar at cfg->socket_path, with
 * cfg's service, labels and profile types. */
void control_start(const env_config *cfg);
/* The collector thread, every drain: connects (with backoff), reads Control
 * frames, starts sessions and ends those whose time is up. */
void control_tick(void);
/* Closes the subscription. Returns the id of a CPU session still running
 * (its profile is then the caller's to cut and push), 0 if none. */
uint64_t control_stop(void);
/* fork(): the child holds no subscription until it starts its own. */
void control_atfork_child(void);
#endif
