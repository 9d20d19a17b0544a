/* The signal handler's reader of another tracer's OTEP 4947 thread record
 * (see otel/otel_foreign.h for when): async-signal-safe, bounded, and it
 * never faults whatever the record pointer holds. */
#ifndef PUSHPROF_OTEL_READ_H
#define PUSHPROF_OTEL_READ_H
#include <stdint.h>

#include "ring.h"

/* The key prefix of a record attribute in rec->labels: OTEL_ATTR_KEY then
 * the key index in decimal; the collector names it from the tracer's key
 * map. Not a byte any label key holds. */
#define OTEL_ATTR_KEY '\x01'

/* slot: the address of the interrupted thread's otel_thread_ctx_v1 (its
 * own TLS, so plain memory). If it points at a record that is valid, its
 * trace_id and span_id (hex) and its attributes (OTEL_ATTR_KEY keys) are
 * appended to rec->labels while room is left, unless rec already holds a
 * label of that name (the program's own pushprof labels win). The record
 * is copied with process_vm_readv: an unmapped or freed record reads as
 * nothing. */
void otel_read_record(uintptr_t slot, ring_record *rec);
#endif
