/* A batch manifest file (sidecar/manifest.c): manifest_decode of any bytes,
 * with and without the payload. What must hold: a refused manifest says why;
 * one decoded with its payload also decodes without it, to the same fields;
 * an accepted one has a non-empty service, a lower-case 64-hex hash and
 * member ids that are plain file names; manifest_encode of a decoded
 * manifest decodes again (the same way) to the same fields and payload. */
#include <stdbool.h>
#include <string.h>

#include "fuzz_target.h"
#include "manifest.h"

static bool str_eq(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

static void check_same(const manifest *a, const manifest *b, bool payload) {
  FUZZ_CHECK(str_eq(a->service, b->service), "service changed");
  FUZZ_CHECK(str_eq(a->node, b->node), "node changed");
  FUZZ_CHECK(str_eq(a->subdir, b->subdir), "subdir changed");
  FUZZ_CHECK(str_eq(a->ptype, b->ptype), "profile type changed");
  FUZZ_CHECK(a->nlabels == b->nlabels, "%zu labels became %zu", a->nlabels, b->nlabels);
  for (size_t i = 0; i < a->nlabels; i++) {
    FUZZ_CHECK(str_eq(a->labels[i].key, b->labels[i].key), "label %zu key changed", i);
    FUZZ_CHECK(str_eq(a->labels[i].value, b->labels[i].value), "label %zu value changed", i);
  }
  FUZZ_CHECK(a->start_ns == b->start_ns && a->end_ns == b->end_ns && a->born_ns == b->born_ns,
             "times changed");
  FUZZ_CHECK(strcmp(a->hash, b->hash) == 0, "hash changed");
  FUZZ_CHECK(a->nmembers == b->nmembers, "%zu members became %zu", a->nmembers, b->nmembers);
  for (size_t i = 0; i < a->nmembers; i++) {
    FUZZ_CHECK(strcmp(a->members[i].id, b->members[i].id) == 0, "member %zu id changed", i);
    FUZZ_CHECK(memcmp(&a->members[i].pushid, &b->members[i].pushid, sizeof a->members[i].pushid) ==
                   0,
               "member %zu identity changed", i);
  }
  if (payload) {
    FUZZ_CHECK(a->gzlen == b->gzlen, "payload of %zu bytes became %zu", a->gzlen, b->gzlen);
    FUZZ_CHECK(a->gzlen == 0 || memcmp(a->gz, b->gz, a->gzlen) == 0, "payload changed");
  }
}

static void check_accepted(const manifest *m, bool payload) {
  FUZZ_CHECK(m->service && m->service[0], "accepted without a service");
  FUZZ_CHECK(strlen(m->hash) == 64, "hash of %zu chars", strlen(m->hash));
  for (size_t i = 0; i < 64; i++)
    FUZZ_CHECK((m->hash[i] >= '0' && m->hash[i] <= '9') || (m->hash[i] >= 'a' && m->hash[i] <= 'f'),
               "hash char %zu is 0x%02x", i, (unsigned)(unsigned char)m->hash[i]);
  for (size_t i = 0; i < m->nlabels; i++)
    FUZZ_CHECK(m->labels[i].key && m->labels[i].key[0] && m->labels[i].value, "bad label %zu", i);
  for (size_t i = 0; i < m->nmembers; i++) {
    const char *id = m->members[i].id;
    FUZZ_CHECK(memchr(id, 0, sizeof m->members[i].id) != NULL, "member %zu id unterminated", i);
    FUZZ_CHECK(id[0] && id[0] != '.' && !strchr(id, '/'), "member id \"%s\" is not a file name",
               id);
  }
  if (payload) {
    FUZZ_CHECK(m->gz != NULL && m->gzlen <= MANIFEST_PAYLOAD_MAX, "payload missing");
    char h[65];
    FUZZ_CHECK(manifest_hash_hex(m->gz, m->gzlen, h) == 0 && strcmp(h, m->hash) == 0,
               "accepted a payload that does not match its hash");
  } else {
    FUZZ_CHECK(m->gz == NULL && m->gzlen == 0, "payload read when not wanted");
  }
}

static void round_trip(const manifest *m, bool payload) {
  size_t len = 0, hdr = 0;
  uint8_t *enc = manifest_encode(m, &len, &hdr);
  FUZZ_CHECK(enc != NULL, "manifest_encode failed");
  FUZZ_CHECK(hdr <= len && len - hdr == m->gzlen, "header %zu + payload %zu != %zu", hdr, m->gzlen,
             len);
  char why[256] = "";
  manifest *again = manifest_decode(enc, len, payload, why, sizeof why);
  FUZZ_CHECK(again != NULL, "a re-encoded manifest is refused: %s", why);
  check_same(m, again, payload);
  manifest_free(again);
  free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char why[256] = "", why2[256] = "";
  manifest *full = manifest_decode(data, size, true, why, sizeof why);
  manifest *head = manifest_decode(data, size, false, why2, sizeof why2);
  if (!full)
    FUZZ_CHECK(why[0] != '\0', "a refused manifest must say why");
  if (!head)
    FUZZ_CHECK(why2[0] != '\0', "a refused manifest must say why");
  if (full) {
    FUZZ_CHECK(head != NULL, "accepted with its payload but not without: %s", why2);
    check_accepted(full, true);
    check_same(full, head, false);
    round_trip(full, true);
  }
  if (head) {
    check_accepted(head, false);
    round_trip(head, false);
  }
  manifest_free(full);
  manifest_free(head);
  return 0;
}
