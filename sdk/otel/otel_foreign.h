/* Reading another tracer's OpenTelemetry context (OTEP 4719 and 4947) when
 * its definition of otel_thread_ctx_v1 is the one in force in the process
 * (otel_records_on is 0): the per-thread slot address the signal handler
 * reads through, and the key map and service name of that tracer's process
 * context. Nothing here runs in the signal handler (otel_read.h does). */
#ifndef PUSHPROF_OTEL_FOREIGN_H
#define PUSHPROF_OTEL_FOREIGN_H
#include <stddef.h>
#include <stdint.h>

/* On the calling thread: the address of the otel_thread_ctx_v1 the name
 * binds to, if it is not ours; 0 if ours (or none). For
 * threads_set_tls_probe. */
uintptr_t otel_foreign_slot(void);

/* Reads the process context named OTEL_CTX that is not ours (found in
 * /proc/self/maps, copied with process_vm_readv, its timestamp checked
 * before and after the copy) and keeps its key map and service.name. 0, or
 * -1 if there is none (or it is being updated, or malformed): the previous
 * map stays. Thread-safe. */
int otel_foreign_load(void);
/* The name of key index idx of the last map loaded, copied into out; 0,
 * or -1 if idx is not in it. Thread-safe. */
int otel_foreign_key(unsigned idx, char *out, size_t outlen);
/* The foreign context's service.name (after otel_foreign_load), "" if none. */
int otel_foreign_service(char *out, size_t outlen);

/* Parses an OTEP 4719 Resource payload: service.name into service (svclen)
 * and each string of threadlocal.attribute_key_map through key(i, s, n,
 * arg). 0, or -1 if the protobuf is malformed. Pure (tests call it). */
int otel_parse_resource(const uint8_t *p, size_t len, char *service, size_t svclen,
                        void (*key)(unsigned i, const char *s, size_t n, void *arg), void *arg);
#endif
