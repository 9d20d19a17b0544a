/* The spool journal's replay (sidecar/journal.c): journal_open on a journal
 * file made from the input, in a private temp directory (on /dev/shm when
 * there is one, so the syncs are cheap). The first input byte is the mode:
 *   bit 0 clear (mode A): the rest is the whole file from offset 0 (the file
 *     is JOURNAL_MIN_BYTES, sparse beyond the input): header parsing;
 *   bit 0 set (mode B): a valid header slot is written, the rest is the ring
 *     from offset 4096; bit 1 fixes up the crc of every live record header
 *     the input holds whole (at each 4096-byte boundary), so the walk goes
 *     on past it; bit 2 picks the checkpoint lap (7 or UINT32_MAX, the wrap);
 *     bits 3-5 the checkpoint offset (4096 + k * 4096); bit 6 makes the replay
 *     callback fail on its second record.
 * What must hold: each replayed record has a NUL-terminated id shorter than
 * JOURNAL_ID_MAX and a frame inside the file; journal_open succeeds, or
 * fails with a message (always when the callback failed); after a
 * successful open (which starts a new lap), a second open replays nothing,
 * unless the ring holds record headers of a lap the writer cannot have
 * written (its head is at most one lap ahead of the durable checkpoint lap
 * G, so records are of lap G or G + 1; mode A's header is not checked).
 *
 * The harness duplicates the two on-disk structs of journal.c's layout
 * comment (record header, header slot) with their crcs: a minimal copy, kept
 * only to get past the crcs; if journal.c changes its layout, the seeds and
 * mode B stop reaching the walker (the replay test still passes), so keep
 * them in step. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "fuzz_target.h"
#include "journal.h"

#define F_HDR_BLOCK 4096u
#define F_ALIGN 4096u
#define F_REC_LIVE 0x4345524au  /* "JREC" */
#define F_REC_DEAD 0x4445444au  /* "JDED" */
#define F_HDR_MAGIC 0x484a5050u /* "PPJH" */

typedef struct f_rec_hdr {
  uint32_t magic, gen, len, crc;
  char id[JOURNAL_ID_MAX];
} f_rec_hdr;

typedef struct f_hdr_slot {
  uint32_t magic, version;
  uint64_t seq, size;
  uint64_t ckpt_off;
  uint32_t ckpt_gen;
  uint32_t crc; /* crc32 of the bytes before it */
} f_hdr_slot;

static int dirfd_ = -1;
static char dir_[64];

static void cleanup(void) {
  if (dirfd_ < 0)
    return;
  unlinkat(dirfd_, JOURNAL_NAME, 0);
  unlinkat(dirfd_, ".journal.new", 0);
  close(dirfd_);
  rmdir(dir_);
}

static void setup(void) {
  if (dirfd_ >= 0)
    return;
  struct stat st;
  const char *base =
      stat("/dev/shm", &st) == 0 && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(dir_, sizeof dir_, "%s/pushprof-fuzz-journal-XXXXXX", base);
  FUZZ_CHECK(mkdtemp(dir_) != NULL, "mkdtemp %s: %s", dir_, strerror(errno));
  dirfd_ = open(dir_, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  FUZZ_CHECK(dirfd_ >= 0, "open %s: %s", dir_, strerror(errno));
  atexit(cleanup);
}

typedef struct replay_ctx {
  int calls, fail_at;
} replay_ctx;

static int on_record(void *arg, const char *id, const uint8_t *frame, size_t len) {
  replay_ctx *c = arg;
  FUZZ_CHECK(id != NULL && memchr(id, 0, JOURNAL_ID_MAX) != NULL, "id not NUL-terminated");
  FUZZ_CHECK(strlen(id) < JOURNAL_ID_MAX, "id too long");
  FUZZ_CHECK(len <= JOURNAL_MIN_BYTES - F_HDR_BLOCK - sizeof(f_rec_hdr), "len %zu beyond the file",
             len);
  FUZZ_CHECK(len == 0 || frame != NULL, "no frame bytes");
  c->calls++;
  if (c->fail_at && c->calls == c->fail_at) {
    errno = EROFS;
    return -1;
  }
  return 0;
}

static uint32_t crc_bytes(uint32_t c, const void *p, size_t n) {
  return (uint32_t)crc32(c, (const Bytef *)p, (uInt)n);
}

/* Whether every record header in ring[0, n) is of lap gen or gen + 1. */
static bool laps_possible(const uint8_t *ring, size_t n, uint32_t gen) {
  for (size_t off = 0; off + sizeof(f_rec_hdr) <= n; off += F_ALIGN) {
    f_rec_hdr r;
    memcpy(&r, ring + off, sizeof r);
    if ((r.magic == F_REC_LIVE || r.magic == F_REC_DEAD) && r.gen != gen && r.gen != gen + 1)
      return false;
  }
  return true;
}

/* Gives every whole live record header in ring[0, n) its crc. */
static void fix_crcs(uint8_t *ring, size_t n) {
  for (size_t off = 0; off + sizeof(f_rec_hdr) <= n; off += F_ALIGN) {
    f_rec_hdr r;
    memcpy(&r, ring + off, sizeof r);
    if (r.magic != F_REC_LIVE || r.len > n - off - sizeof r)
      continue;
    uint32_t c = (uint32_t)crc32(0L, Z_NULL, 0);
    c = crc_bytes(c, &r.gen, sizeof r.gen);
    c = crc_bytes(c, &r.len, sizeof r.len);
    c = crc_bytes(c, r.id, sizeof r.id);
    c = crc_bytes(c, ring + off + sizeof r, r.len);
    r.crc = c;
    memcpy(ring + off, &r, sizeof r);
  }
}

static void write_file(const uint8_t *data, size_t size, uint64_t at, const void *hdr,
                       size_t hdrlen) {
  int fd = openat(dirfd_, JOURNAL_NAME, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  FUZZ_CHECK(fd >= 0, "create journal: %s", strerror(errno));
  FUZZ_CHECK(ftruncate(fd, JOURNAL_MIN_BYTES) == 0, "ftruncate: %s", strerror(errno));
  if (hdr)
    FUZZ_CHECK(pwrite(fd, hdr, hdrlen, 0) == (ssize_t)hdrlen, "write header");
  if (size > JOURNAL_MIN_BYTES - at)
    size = JOURNAL_MIN_BYTES - at;
  if (size)
    FUZZ_CHECK(pwrite(fd, data, size, (off_t)at) == (ssize_t)size, "write: %s", strerror(errno));
  close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  setup();
  if (size == 0)
    return 0;
  uint8_t mode = data[0];
  data++;
  size--;
  replay_ctx ctx = {0, 0};
  bool possible = true;
  if (!(mode & 1)) {
    write_file(data, size, 0, NULL, 0);
  } else {
    f_hdr_slot s = {.magic = F_HDR_MAGIC,
                    .version = 1,
                    .seq = 1,
                    .size = JOURNAL_MIN_BYTES,
                    .ckpt_off = F_HDR_BLOCK + (uint64_t)((mode >> 3) & 7) * F_ALIGN,
                    .ckpt_gen = (mode & 4) ? UINT32_MAX : 7};
    s.crc = crc_bytes((uint32_t)crc32(0L, Z_NULL, 0), &s, offsetof(f_hdr_slot, crc));
    uint8_t *ring = NULL;
    if (size > JOURNAL_MIN_BYTES - F_HDR_BLOCK)
      size = JOURNAL_MIN_BYTES - F_HDR_BLOCK;
    if (size) {
      ring = malloc(size);
      FUZZ_CHECK(ring != NULL, "out of memory");
      memcpy(ring, data, size);
      if (mode & 2)
        fix_crcs(ring, size);
      possible = laps_possible(ring, size, s.ckpt_gen);
    }
    /* Slot 1 (seq 1 is written at 1 * 512, as journal.c does). */
    uint8_t block[1024] = {0};
    memcpy(block + 512, &s, sizeof s);
    write_file(ring, size, F_HDR_BLOCK, block, sizeof block);
    free(ring);
    if (mode & 64)
      ctx.fail_at = 2;
  }

  char err[512] = "";
  journal *j = journal_open(dirfd_, dir_, JOURNAL_MIN_BYTES, on_record, &ctx, err, sizeof err);
  if (!j) {
    FUZZ_CHECK(err[0] != '\0', "a failed open must say why");
    FUZZ_CHECK(ctx.fail_at && ctx.calls == ctx.fail_at, "open failed without a failed callback: %s",
               err);
    return 0;
  }
  FUZZ_CHECK(!ctx.fail_at || ctx.calls < ctx.fail_at, "opened although the replay callback failed");
  FUZZ_CHECK(journal_used(j) == 0, "a fresh lap holds %llu bytes",
             (unsigned long long)journal_used(j));
  journal_close(j);

  replay_ctx again = {0, 0};
  j = journal_open(dirfd_, dir_, JOURNAL_MIN_BYTES, on_record, &again, err, sizeof err);
  FUZZ_CHECK(j != NULL, "the second open failed: %s", err);
  FUZZ_CHECK(!possible || again.calls == 0, "the second open replayed %d records (first: %d)",
             again.calls, ctx.calls);
  journal_close(j);
  return 0;
}
