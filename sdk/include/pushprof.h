/* pushprof.h: the one public header of the pushprof SDK.
 *
 * pushprof samples every thread of the process with per-thread CPU-time
 * timers (SIGPROF by default), records stacks and the thread's labels, and
 * writes pprof profiles (standalone: a file at exit; pushed: to a
 * pushprof-sidecar over a Unix socket).
 *
 * Conventions: 0 is success, failures are negative PUSHPROF_E* codes (never
 * renumbered); pushprof_strerror() names them. Unless a comment says
 * otherwise a function is thread-safe and NOT async-signal-safe.
 */
#ifndef PUSHPROF_H
#define PUSHPROF_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(PUSHPROF_BUILDING)
#define PUSHPROF_API __attribute__((visibility("default")))
#else
#define PUSHPROF_API
#endif

#define PUSHPROF_VERSION_MAJOR 0
#define PUSHPROF_VERSION_MINOR 1
#define PUSHPROF_VERSION_PATCH 0
#define PUSHPROF_VERSION_NUMBER                                                                    \
  (PUSHPROF_VERSION_MAJOR * 10000 + PUSHPROF_VERSION_MINOR * 100 + PUSHPROF_VERSION_PATCH)
#define PUSHPROF_VERSION_STRING "0.1.0"

/* Error codes. Append only; never renumber or reuse a retired slot. */
#define PUSHPROF_OK 0
#define PUSHPROF_EINVAL (-1)        /* an argument or option is invalid */
#define PUSHPROF_ENOMEM (-2)        /* out of memory */
#define PUSHPROF_EALREADY (-3)      /* already started */
#define PUSHPROF_ENOTSTARTED (-4)   /* not started */
#define PUSHPROF_ESYS (-5)          /* a system call failed (see the logged line) */
#define PUSHPROF_ECONFIG (-6)       /* an environment variable is invalid */
#define PUSHPROF_ELIMIT (-7)        /* a documented limit was exceeded */
#define PUSHPROF_ETIMEDOUT (-8)     /* the deadline passed */
#define PUSHPROF_EREFUSED (-9)      /* the sidecar refused the push */
#define PUSHPROF_EUNAVAILABLE (-10) /* the sidecar could not be reached */
#define PUSHPROF_ESETUID (-11)      /* refused to run in a setuid/setgid program */
#define PUSHPROF_ESTANDALONE (-12)  /* profiling runs without a sidecar: nothing to push to */

/* Profile types (PUSHPROF_PROFILES, pushprof_options.profiles). */
#define PUSHPROF_PROFILE_CPU 1u
#define PUSHPROF_PROFILE_HEAP 2u
#define PUSHPROF_PROFILE_OFFCPU 4u
#define PUSHPROF_PROFILE_LOCK 8u

/* Options for pushprof_start(). Start from PUSHPROF_OPTIONS_INIT (or
 * pushprof_options_init()), then set what you need; every unset field (0 or
 * NULL) means "from the environment (PUSHPROF_*), else the default":
 *   pushprof_options o = PUSHPROF_OPTIONS_INIT;
 *   o.socket_path = "/run/pushprof/pushprof.sock";
 *   pushprof_start(&o);
 *
 * The struct can grow without breaking binaries built against an older or a
 * newer pushprof.h. struct_size says which layout the caller was compiled
 * with: PUSHPROF_OPTIONS_TAG in the high 16 bits, sizeof(pushprof_options)
 * of the caller's header in the low 16. Fields are only ever appended (each
 * version's size is larger than the last; reserved0 fills what would be tail
 * padding), and the library reads them thus:
 * - struct_size smaller than its own sizeof (an older header): the fields
 *   that end within struct_size are read, later ones count as unset (below
 *   72, the first tagged layout's size, it is PUSHPROF_EINVAL).
 * - struct_size larger (a newer header than the library): the bytes beyond
 *   the fields the library knows must all be 0 (those options left unset);
 *   otherwise pushprof_start fails with PUSHPROF_EINVAL and a line naming
 *   struct_size, rather than ignore a setting. The same for reserved0 != 0.
 * - no tag: the layout of pushprof.h 0.1, which had no struct_size and
 *   began with `int hz` (that word is then the hz; no valid hz carries the
 *   tag). If that word is 0, hz is read from where this header puts it, so a
 *   struct zeroed without PUSHPROF_OPTIONS_INIT still has its hz honoured
 *   (the 0.1 layout had zero padding there); it is read as the 0.1 layout,
 *   so fields added after 0.1 are ignored in it: use PUSHPROF_OPTIONS_INIT.
 * Do not set struct_size by hand. */
#define PUSHPROF_OPTIONS_TAG 0x70700000u /* "pp" */
#define PUSHPROF_OPTIONS_TAG_MASK 0xffff0000u
#define PUSHPROF_OPTIONS_STRUCT_SIZE (PUSHPROF_OPTIONS_TAG | (unsigned)sizeof(pushprof_options))
typedef struct pushprof_options {
  unsigned int struct_size; /* PUSHPROF_OPTIONS_STRUCT_SIZE (see above) */
  int hz;                   /* samples per second per thread, 1..1000 (default 100) */
  const char *service;      /* service name (default: program name) */
  const char *output_path;  /* standalone: write a gzip pprof at exit; %p = pid */
  int signal_number;        /* sampling signal (default SIGPROF) */
  const char *socket_path;  /* push to the sidecar at this Unix socket */
  int upload_period_s;      /* seconds between pushes (default 10) */
  int exit_timeout_ms;      /* bound on the flush at exit (default 2000) */
  int handle_term_signals;  /* 1: flush on SIGTERM/INT/HUP/QUIT left at default */
  const char *spool_dir;    /* sidecar spool to write into if it is down at exit */
  int backlog;              /* unsent profiles kept in memory (default 6) */
  int reserved0;            /* must be 0 (a later version's field) */
  /* Added in 0.2: */
  const char *profiles; /* comma list of "cpu", "heap", "offcpu", "lock" (default "cpu") */
  long long heap_rate;  /* heap: mean bytes between samples (default 524288) */
  /* Later versions append their fields here. */
} pushprof_options;

#ifdef __cplusplus /* every member: g++ warns on the ones a list leaves out */
#define PUSHPROF_OPTIONS_INIT                                                                      \
  { PUSHPROF_OPTIONS_STRUCT_SIZE, 0, NULL, NULL, 0, NULL, 0, 0, 0, NULL, 0, 0, NULL, 0 }
#else
#define PUSHPROF_OPTIONS_INIT                                                                      \
  { .struct_size = PUSHPROF_OPTIONS_STRUCT_SIZE }
#endif

/* Resets *o to PUSHPROF_OPTIONS_INIT. Inline on purpose: it records the
 * caller's sizeof, not the library's. Async-signal-safe. */
static inline void pushprof_options_init(pushprof_options *o) {
  const pushprof_options init = PUSHPROF_OPTIONS_INIT;
  *o = init;
}

/* Starts profiling every thread. opts NULL: every setting from the
 * environment. opts is read during the call only (the caller keeps
 * ownership). With an output path the profile is written at normal exit
 * (atexit, bounded by the exit timeout). Returns
 *   PUSHPROF_OK
 *   PUSHPROF_EALREADY      profiling is running
 *   PUSHPROF_EINVAL        an option is invalid (struct_size included), or
 *                          neither an output path nor a socket is set
 *   PUSHPROF_ECONFIG       a PUSHPROF_* variable, OTEL_SERVICE_NAME or
 *                          OTEL_RESOURCE_ATTRIBUTES is invalid
 *   PUSHPROF_ESETUID       a setuid/setgid program (whose environment is
 *                          ignored) passed neither output path nor socket
 *   PUSHPROF_ESYS          a system resource failed: the signal handler,
 *                          setitimer, a thread, a pipe (file descriptors)
 *   PUSHPROF_ENOMEM        out of memory
 * Each failure prints one line on stderr and leaves profiling off.
 * Thread-safe. */
PUSHPROF_API int pushprof_start(const pushprof_options *opts);

/* Stops sampling and writes/pushes the final profile now; pushprof_start may
 * be called again afterwards. Profiling is off whatever it returns:
 *   PUSHPROF_OK
 *   PUSHPROF_ENOTSTARTED   profiling is not running
 * standalone (output path):
 *   PUSHPROF_ESYS          the file could not be written
 *   PUSHPROF_EINVAL        the output path plus its temporary suffix
 *                          (".tmp.<pid>") is longer than PATH_MAX
 *   PUSHPROF_ENOMEM        the profile could not be built or compressed
 * with a sidecar, when a profile was not acknowledged within the exit
 * timeout (it went to the spool directory if one is set, else is lost):
 *   PUSHPROF_EUNAVAILABLE  the sidecar could not be reached
 *   PUSHPROF_ETIMEDOUT     it did not answer in time
 *   PUSHPROF_EREFUSED      it asked to retry later (a profile it refuses
 *                          for good is dropped and counted, not an error)
 *   PUSHPROF_ENOMEM        a profile could not be built
 * Every failure prints one line on stderr. Thread-safe. */
PUSHPROF_API int pushprof_stop(void);

/* Pushes what has been sampled so far to the sidecar and waits for its
 * acknowledgement, at most timeout_ms; the push itself runs on the SDK's
 * thread, and unsent profiles stay in the backlog to be retried. Returns
 *   PUSHPROF_OK            the sidecar acknowledged every unsent profile
 *   PUSHPROF_ENOTSTARTED   profiling is not running
 *   PUSHPROF_ESTANDALONE   profiling runs without a sidecar (an output path
 *                          only): nothing to push to
 *   PUSHPROF_EINVAL        timeout_ms < 0
 *   PUSHPROF_ETIMEDOUT     no acknowledgement within timeout_ms
 *   PUSHPROF_EUNAVAILABLE  the sidecar could not be reached
 *   PUSHPROF_EREFUSED      the sidecar refused a profile (asked to retry:
 *                          kept; refused for good: dropped and counted)
 *   PUSHPROF_ENOMEM        the profile could not be built
 * Never blocks longer than timeout_ms. Thread-safe; not async-signal-safe. */
PUSHPROF_API int pushprof_flush(int timeout_ms);

/* Registers the calling thread for sampling. Needed only with the static
 * library, for threads created after pushprof_start; the .so files register
 * new threads themselves. Idempotent. Returns
 *   PUSHPROF_OK
 *   PUSHPROF_ENOTSTARTED   profiling is not running
 *   PUSHPROF_ELIMIT        4096 threads are sampled already
 *   PUSHPROF_ESYS          its CPU timer could not be created (for example
 *                          RLIMIT_SIGPENDING is reached)
 * Thread-safe. */
PUSHPROF_API int pushprof_thread_register(void);

/* Labels of the calling thread (e.g. trace_id per request). Every sample
 * taken on this thread carries the labels current at that instant as pprof
 * string labels (go tool pprof -tagfocus trace_id=abc). Limits: at most
 * PUSHPROF_LABELS_MAX labels per thread, key 1..PUSHPROF_LABEL_KEY_MAX bytes,
 * value 1..PUSHPROF_LABEL_VALUE_MAX bytes, and all pairs together (each
 * key + value + 2) within PUSHPROF_LABELS_BYTES. */
#define PUSHPROF_LABELS_MAX 8
#define PUSHPROF_LABEL_KEY_MAX 64
#define PUSHPROF_LABEL_VALUE_MAX 256
#define PUSHPROF_LABELS_BYTES 512

/* Sets key to value on the calling thread, replacing its previous value;
 * value NULL removes key (0 if it was not set). Strings are copied; the
 * caller keeps ownership. Returns 0; PUSHPROF_EINVAL for a NULL or empty
 * key, a key starting with "pushprof_" (reserved) or an empty value;
 * PUSHPROF_ELIMIT beyond a limit above; PUSHPROF_ENOMEM if the thread's
 * first label cannot be allocated. On error nothing changes. The first call
 * on a thread allocates its label block (freed at thread exit) and
 * registers the thread for sampling (so with the static library a labelled
 * thread needs no pushprof_thread_register); later calls do not allocate,
 * lock or enter the kernel (a few tens of ns). Works whether or not
 * profiling is started. Per calling thread (threads never see each other's
 * labels); NOT async-signal-safe. */
PUSHPROF_API int pushprof_label_set(const char *key, const char *value);

/* Removes every label of the calling thread. Always returns 0. Per calling
 * thread; NOT async-signal-safe. */
PUSHPROF_API int pushprof_labels_clear(void);

/* Nested label scopes: storage for one saved label set, owned by the
 * caller (typically on its stack). Its contents are private. */
typedef struct pushprof_label_scope {
  unsigned long long opaque_[72];
} pushprof_label_scope;

/* Saves the calling thread's current labels into *scope, to be put back by
 * pushprof_labels_restore (a request handler saves, sets per-step labels,
 * restores). Returns 0, PUSHPROF_EINVAL for a NULL scope. Allocates
 * nothing. Per calling thread; NOT async-signal-safe. */
PUSHPROF_API int pushprof_labels_save(pushprof_label_scope *scope);

/* Makes the calling thread's labels exactly those saved in *scope, in one
 * step (a sample never sees a mix). Returns 0; PUSHPROF_EINVAL for a NULL
 * scope or one not filled by pushprof_labels_save (nothing changes then);
 * PUSHPROF_ENOMEM if the thread's first label block cannot be allocated.
 * Allocation-free once the thread has had a label. Per calling thread; NOT
 * async-signal-safe. */
PUSHPROF_API int pushprof_labels_restore(const pushprof_label_scope *scope);

/* Static text for an error code; never NULL. Async-signal-safe. */
PUSHPROF_API const char *pushprof_strerror(int code);

/* Runtime version string, e.g. "0.1.0". Async-signal-safe. */
PUSHPROF_API const char *pushprof_version(void);

#ifdef __cplusplus
}
#endif
#endif
