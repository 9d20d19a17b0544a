/* OpenTelemetry context for readers outside the process.
 * The process context (OTEP 4719): a mapping named OTEL_CTX holding a
 * 32-byte header and an opentelemetry.proto.resource.v1.Resource with
 * service.name, service.instance.id, the process labels and the thread
 * records' key map (threadlocal.schema_version, threadlocal.attribute_key_map).
 * The thread records (OTEP 4947): the exported TLS pointer otel_thread_ctx_v1
 * points at the calling thread's record or is NULL; labels.c writes it.
 * Nothing here runs in the signal handler. */
#ifndef PUSHPROF_OTEL_CTX_H
#define PUSHPROF_OTEL_CTX_H
#include <stddef.h>
#include <stdint.h>

#define OTEL_SCHEMA_VERSION "tls_v1"
#define OTEL_KEYS_MAX 256   /* key indexes are one byte */
#define OTEL_KEY_TRACE_ID 0 /* the key map starts with these two */
#define OTEL_KEY_SPAN_ID 1
#define OTEL_RECORD_HEAD 28 /* trace id, span id, valid, flags, attrs size */
#define OTEL_ATTR_VALUE_MAX 255

/* A thread record: the fixed head, then attrs-data (key index, length,
 * bytes) packed, in host byte order, without padding. */
typedef struct otel_record {
  uint8_t trace_id[16];
  uint8_t span_id[8];
  uint8_t valid; /* 1 once the record is complete */
  uint8_t flags; /* W3C trace-flags */
  uint16_t attrs_size;
  uint8_t attrs[612]; /* keeps the record within the 640 bytes readers take */
} __attribute__((aligned(8))) otel_record;
_Static_assert(offsetof(otel_record, attrs) == OTEL_RECORD_HEAD, "record head layout");

/* The calling thread's record, or NULL: read by external readers while the
 * thread is stopped, written only by the thread itself (compiler fences). */
extern __thread otel_record *otel_thread_ctx_v1 __attribute__((visibility("default")));

/* 1 if otel_thread_ctx_v1 is ours to write: set once the key map is first
 * used (before any thread record exists); 0 while another definition of
 * the name comes first in the process (a tracer's), whose pointer we leave
 * alone. */
extern _Atomic int otel_records_on;
/* otel_records_on, once the binding of the name was checked (first call). */
int otel_records_ours(void);

/* Publishes the process context, or updates it if already published.
 * labels holds nlabels "key\0value\0" pairs (service.name,
 * service.instance.id and threadlocal.* among them are left out).
 * Returns 0, or -1 with a reason in err. Thread-safe. */
int otel_ctx_publish(const char *service, const char *labels, size_t nlabels, char *err,
                     size_t errlen);

/* The index of key (klen bytes) in the key map, appended (and the process
 * context updated, if published) when new; -1 if the map is full or memory
 * short. Lock-free for keys already in the map. Thread-safe. */
int otel_key_index(const char *key, size_t klen);

/* Decodes hex lowercase or uppercase W3C ids: 1 if s (len bytes) is 2*n hex
 * digits, not all zero, written to out[n]; else 0. */
int otel_hex_id(const char *s, size_t len, uint8_t *out, size_t n);

/* The address of the published header, NULL if none (tests). */
const void *otel_ctx_header(void);
#endif
