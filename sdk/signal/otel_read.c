/* otel_read.h. The record's layout (OTEP 4947, host byte order): trace id
 * (16 bytes), span id (8), valid (1), flags (1), attrs-data size (2), then
 * attrs-data: key index (1), length (1), value bytes; readers take at most
 * 640 bytes. */
#include "otel_read.h"

#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define RECORD_MAX 640
#define RECORD_HEAD 28

/* Bytes before the first NUL in s[0..n), or n: no libc string calls here. */
static size_t span(const char *s, size_t n) {
  size_t i = 0;
  while (i < n && s[i])
    i++;
  return i;
}

static int has_key(const ring_record *rec, const char *key, size_t klen) {
  size_t off = 0, len = rec->labels_len <= RING_LABEL_BYTES ? rec->labels_len : 0;
  for (unsigned i = 0; i < rec->nlabels && off < len; i++) {
    size_t kl = span(rec->labels + off, len - off);
    if (kl == klen && memcmp(rec->labels + off, key, klen) == 0)
      return 1;
    off += kl + 1;
    if (off < len)
      off += span(rec->labels + off, len - off) + 1;
  }
  return 0;
}

/* Appends key\0value\0 if there is room; value is vlen bytes, cut at a NUL. */
static void append(ring_record *rec, const char *key, size_t klen, const char *value, size_t vlen) {
  vlen = span(value, vlen);
  if (rec->nlabels >= RING_MAX_LABELS || rec->labels_len + klen + vlen + 2 > RING_LABEL_BYTES)
    return;
  char *p = rec->labels + rec->labels_len;
  memcpy(p, key, klen);
  p[klen] = '\0';
  memcpy(p + klen + 1, value, vlen);
  p[klen + 1 + vlen] = '\0';
  rec->labels_len = (uint16_t)(rec->labels_len + klen + vlen + 2);
  rec->nlabels++;
}

static void hex_id(ring_record *rec, const char *key, size_t klen, const uint8_t *id, size_t n) {
  static const char digits[] = "0123456789abcdef";
  char hex[32];
  int any = 0;
  for (size_t i = 0; i < n; i++) {
    any |= id[i];
    hex[2 * i] = digits[id[i] >> 4];
    hex[2 * i + 1] = digits[id[i] & 15];
  }
  if (any && !has_key(rec, key, klen)) /* all zero: no id (W3C) */
    append(rec, key, klen, hex, 2 * n);
}

void otel_read_record(uintptr_t slot, ring_record *rec) {
  uintptr_t at = *(const volatile uintptr_t *)slot;
  if (!at)
    return;
  uint8_t r[RECORD_MAX];
  struct iovec local = {r, sizeof r}, remote = {(void *)at, sizeof r};
  /* A record near the end of its mapping reads short: what was read counts. */
  long n = syscall(SYS_process_vm_readv, (long)getpid(), &local, 1L, &remote, 1L, 0L);
  if (n < RECORD_HEAD || r[24] != 1)
    return; /* unreadable, or not valid */
  uint16_t attrs;
  memcpy(&attrs, r + 26, sizeof attrs);
  if (attrs > (size_t)n - RECORD_HEAD)
    return; /* a size past what is there: the whole record is suspect */
  hex_id(rec, "trace_id", 8, r, 16);
  hex_id(rec, "span_id", 7, r + 16, 8);
  const uint8_t *p = r + RECORD_HEAD, *end = p + attrs;
  while (end - p >= 2 && p[1] <= end - p - 2) {
    char key[5] = {OTEL_ATTR_KEY};
    unsigned idx = p[0], k = 1;
    if (idx >= 100)
      key[k++] = (char)('0' + idx / 100);
    if (idx >= 10)
      key[k++] = (char)('0' + idx / 10 % 10);
    key[k++] = (char)('0' + idx % 10);
    append(rec, key, k, (const char *)p + 2, p[1]);
    p += 2 + p[1];
  }
}
