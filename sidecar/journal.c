/* The spool's write-ahead journal (see journal.h).
 *
 * File layout (host byte order: the file never leaves the machine):
 *   [0, 4096)      two header slots of 512 bytes (written alternately, the
 *                  valid one with the higher seq wins): size and checkpoint
 *   [4096, size)   the ring of records, each at a 4096-byte boundary:
 *                  rec_hdr (64 bytes) then the frame bytes
 * A record is live (magic JREC, crc32 over gen, len, id and frame) or dead
 * (magic JDED: copied elsewhere or never acknowledged). The gen of a record
 * is the lap of the ring it was written in, so a replay can tell this lap's
 * records from stale bytes of earlier laps.
 *
 * The checkpoint (gen, off) in the header is the oldest record that may still
 * be live; a replay walks from there to the end of that lap, then from the
 * start of the next lap, and stops at the first record that is not of the
 * lap it expects or fails its crc. Appends never overwrite bytes at or after
 * the durable checkpoint of the previous lap, so everything a replay must see
 * is intact.
 *
 * Locking: mu guards the ring state; pwrite and fdatasync run outside it.
 * ckpt_mu serializes header writes and is taken before mu. */
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <isa-l/crc.h>

#include "fsutil.h"
#include "log.h"

#define HDR_BLOCK 4096u
#define SLOT_BYTES 512u
#define REC_ALIGN 4096u
#define REC_LIVE 0x4345524au  /* "JREC" */
#define REC_DEAD 0x4445444au  /* "JDED" */
#define HDR_MAGIC 0x484a5050u /* "PPJH" */
#define HDR_VERSION 1u

typedef struct rec_hdr {
  uint32_t magic, gen, len, crc;
  char id[JOURNAL_ID_MAX];
} rec_hdr;
_Static_assert(sizeof(rec_hdr) == 64, "record header is 64 bytes");

typedef struct hdr_slot {
  uint32_t magic, version;
  uint64_t seq, size;
  uint64_t ckpt_off;
  uint32_t ckpt_gen;
  uint32_t crc; /* crc32 of the bytes before it */
} hdr_slot;

enum { ST_WRITING, ST_WRITTEN, ST_DONE };

typedef struct ring_ent {
  uint64_t rseq, off, bytes;
  uint32_t gen;
  int state;
} ring_ent;

struct journal {
  pthread_mutex_t mu, ckpt_mu;
  pthread_cond_t cv;
  int fd;
  char *path;
  uint64_t size;
  uint32_t hgen, cgen; /* head: next record; durable checkpoint */
  uint64_t hoff, coff;
  uint64_t hdr_seq;
  ring_ent *q; /* records not released yet, in rseq order */
  size_t qcap, qhead, qn;
  uint64_t next_rseq, written_upto, marks_done, synced_rseq, synced_marks;
  uint64_t used;
  bool syncing, broken;
};

static uint64_t align_up(uint64_t n) {
  return (n + REC_ALIGN - 1) / REC_ALIGN * REC_ALIGN;
}

/* Records and header slots carry zlib's CRC-32 (the gzip polynomial,
 * reflected), computed with ISA-L's crc32_gzip_refl, which gives the same
 * values (test_journal checks it against zlib) several times faster: it
 * runs over every pushed byte once. */
static uint32_t rec_crc(const rec_hdr *h, const uint8_t *frame, size_t len) {
  uint32_t c = crc32_gzip_refl(0, (const unsigned char *)&h->gen, sizeof h->gen);
  c = crc32_gzip_refl(c, (const unsigned char *)&h->len, sizeof h->len);
  c = crc32_gzip_refl(c, (const unsigned char *)h->id, sizeof h->id);
  return crc32_gzip_refl(c, frame, len);
}

static uint32_t slot_crc(const hdr_slot *s) {
  return crc32_gzip_refl(0, (const unsigned char *)s, offsetof(hdr_slot, crc));
}

/* Logs once and refuses every later append: after a failed write or sync the
 * page cache no longer tells what is on disk. Lock held. */
static void set_broken_locked(journal *j, const char *what, int e) {
  if (j->broken)
    return;
  j->broken = true;
  char q[128];
  log_event(LOG_ERROR, "spool journal disabled after an I/O error; pushes go to spool files",
            "file=%s op=%s err=%s fix=\"check the disk; restart the sidecar to use the journal "
            "again\"",
            j->path, what, log_quote(strerror(e), q, sizeof q));
}

/* ---- header ---- */

static int write_header(journal *j, uint32_t gen, uint64_t off) {
  uint8_t block[SLOT_BYTES];
  hdr_slot s = {.magic = HDR_MAGIC,
                .version = HDR_VERSION,
                .seq = j->hdr_seq + 1,
                .size = j->size,
                .ckpt_off = off,
                .ckpt_gen = gen};
  s.crc = slot_crc(&s);
  memset(block, 0, sizeof block);
  memcpy(block, &s, sizeof s);
  if (fsutil_pwrite_all(j->fd, block, sizeof block, (s.seq % 2) * SLOT_BYTES) != 0 ||
      fdatasync(j->fd) != 0)
    return -1;
  j->hdr_seq = s.seq;
  return 0;
}

/* The valid slot with the highest seq; -1 if neither is valid. */
static int read_header(int fd, hdr_slot *out) {
  uint8_t block[2 * SLOT_BYTES];
  int best = -1;
  if (fsutil_pread_all(fd, block, sizeof block, 0) != 0)
    return -1;
  for (int i = 0; i < 2; i++) {
    hdr_slot s;
    memcpy(&s, block + i * SLOT_BYTES, sizeof s);
    if (s.magic != HDR_MAGIC || s.version != HDR_VERSION || s.crc != slot_crc(&s))
      continue;
    if (best < 0 || s.seq > out->seq) {
      *out = s;
      best = i;
    }
  }
  return best < 0 ? -1 : 0;
}

/* ---- replay ---- */

/* Walks the records a previous run may have acknowledged; returns the lap
 * the walk ended in, or -1 (errno set) if a callback failed. */
static int64_t replay(int fd, uint64_t size, const char *path, const hdr_slot *h,
                      journal_replay_cb cb, void *arg, int *count) {
  uint32_t gen = h->ckpt_gen;
  uint64_t off = h->ckpt_off;
  bool wrapped = false;
  uint8_t *buf = NULL;
  size_t bufcap = 0;
  *count = 0;
  if (off < HDR_BLOCK || off > size)
    off = size; /* nonsense: treat this lap as empty */
  for (;;) {
    rec_hdr r;
    if (off + sizeof r <= size && fsutil_pread_all(fd, &r, sizeof r, off) == 0 &&
        (r.magic == REC_LIVE || r.magic == REC_DEAD) && r.gen == gen &&
        r.len <= size - off - sizeof r && memchr(r.id, 0, sizeof r.id)) {
      uint64_t next = off + align_up(sizeof r + r.len);
      if (r.magic == REC_DEAD) {
        off = next;
        continue;
      }
      if (r.len > bufcap) {
        uint8_t *nb = realloc(buf, r.len);
        if (!nb) {
          free(buf);
          errno = ENOMEM;
          return -1;
        }
        buf = nb;
        bufcap = r.len;
      }
      if (fsutil_pread_all(fd, buf, r.len, off + sizeof r) != 0 ||
          rec_crc(&r, buf, r.len) != r.crc) {
        /* Torn: never acknowledged, nor was anything reserved after it. */
        log_event(LOG_INFO, "spool journal: replay stops at a torn record",
                  "file=%s offset=%" PRIu64 " id=%s", path, off, r.id);
        break;
      }
      if (cb(arg, r.id, buf, r.len) != 0) {
        free(buf);
        return -1;
      }
      (*count)++;
      off = next;
      continue;
    }
    if (wrapped)
      break;
    wrapped = true;
    gen++;
    off = HDR_BLOCK;
  }
  free(buf);
  return gen;
}

/* ---- open / close ---- */

/* Writes a zero-filled journal of size bytes under a temp name, then renames
 * it into place: a crash never leaves a half-made journal. */
static int create_file(int dirfd, uint64_t size) {
  static const char tmp[] = ".journal.new";
  int fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
  uint8_t *zero = calloc(1, 1u << 20);
  int e = ENOMEM;
  if (fd < 0 || !zero) {
    e = fd < 0 ? errno : ENOMEM;
    goto fail;
  }
  for (uint64_t off = 0; off < size; off += 1u << 20) {
    size_t n = size - off < (1u << 20) ? (size_t)(size - off) : (1u << 20);
    if (fsutil_pwrite_all(fd, zero, n, off) != 0) {
      e = errno;
      goto fail;
    }
  }
  if (fsync(fd) != 0 || renameat(dirfd, tmp, dirfd, JOURNAL_NAME) != 0 || fsync(dirfd) != 0) {
    e = errno;
    goto fail;
  }
  free(zero);
  return fd;
fail:
  free(zero);
  if (fd >= 0) {
    close(fd);
    unlinkat(dirfd, tmp, 0);
  }
  errno = e;
  return -1;
}

static journal *alloc_journal(const char *dir, uint64_t size) {
  journal *j = calloc(1, sizeof *j);
  if (!j)
    return NULL;
  j->fd = -1;
  j->size = size;
  j->qcap = (size_t)((size - HDR_BLOCK) / REC_ALIGN) + 1;
  j->q = calloc(j->qcap, sizeof *j->q);
  size_t plen = strlen(dir) + sizeof "/" JOURNAL_NAME;
  j->path = malloc(plen);
  if (!j->q || !j->path || pthread_mutex_init(&j->mu, NULL) != 0) {
    free(j->q);
    free(j->path);
    free(j);
    return NULL;
  }
  if (pthread_mutex_init(&j->ckpt_mu, NULL) != 0) {
    pthread_mutex_destroy(&j->mu);
    goto fail;
  }
  if (pthread_cond_init(&j->cv, NULL) != 0) {
    pthread_mutex_destroy(&j->ckpt_mu);
    pthread_mutex_destroy(&j->mu);
    goto fail;
  }
  snprintf(j->path, plen, "%s/%s", dir, JOURNAL_NAME);
  return j;
fail:
  free(j->q);
  free(j->path);
  free(j);
  return NULL;
}

journal *journal_open(int dirfd, const char *dir, uint64_t size, journal_replay_cb cb, void *arg,
                      char *err, size_t errlen) {
  size = size / REC_ALIGN * REC_ALIGN;
  if (size < JOURNAL_MIN_BYTES) {
    snprintf(err, errlen, "journal size %" PRIu64 " is below the minimum of %u bytes", size,
             JOURNAL_MIN_BYTES);
    return NULL;
  }
  journal *j = alloc_journal(dir, size);
  if (!j) {
    snprintf(err, errlen, "out of memory opening the spool journal");
    return NULL;
  }
  uint32_t lap = 1;
  int fd = openat(dirfd, JOURNAL_NAME, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno != ENOENT) {
    snprintf(err, errlen, "cannot open %s: %s", j->path, strerror(errno));
    goto fail;
  }
  if (fd >= 0) {
    hdr_slot h = {0};
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      snprintf(err, errlen, "%s is not a regular file (remove it)", j->path);
      close(fd);
      goto fail;
    }
    if (read_header(fd, &h) != 0 || h.size != (uint64_t)st.st_size || h.size < JOURNAL_MIN_BYTES) {
      /* Without a header nothing in it was ever acknowledged through it: a
       * journal gets its header before its first record. */
      log_event(LOG_WARN, "spool journal has no valid header; making a new one", "file=%s",
                j->path);
      close(fd);
      fd = -1;
    } else {
      /* Replay with the size the file was written with, whatever the
       * configuration says now. */
      int count = 0;
      int64_t end = replay(fd, h.size, j->path, &h, cb, arg, &count);
      if (end < 0) {
        snprintf(err, errlen, "replaying %s failed: %s (the spool directory must be writable)",
                 j->path, strerror(errno));
        close(fd);
        goto fail;
      }
      /* The callback's copies are files in dirfd: their names must be
       * durable before the new lap's header (below) drops the records. */
      if (count && fsync(dirfd) != 0) {
        snprintf(err, errlen, "fsync of the directory of %s failed: %s", j->path, strerror(errno));
        close(fd);
        goto fail;
      }
      if (count)
        log_event(LOG_INFO, "spool journal replayed", "file=%s records=%d", j->path, count);
      /* Past every lap the previous run may have written: its head was at
       * most one lap ahead of its durable checkpoint, and records of that
       * lap reserved after a torn one (so never acknowledged) must not be
       * taken for records of the new lap by a later replay. */
      lap = h.ckpt_gen + 2;
      j->hdr_seq = h.seq;
      if (h.size != size) {
        close(fd);
        fd = -1;
      }
    }
  }
  if (fd < 0 && (fd = create_file(dirfd, size)) < 0) {
    snprintf(err, errlen,
             "cannot create %s of %" PRIu64 " bytes: %s (free disk space or lower "
             "--journal-bytes; 0 turns the journal off)",
             j->path, size, strerror(errno));
    goto fail;
  }
  j->fd = fd;
  /* A new lap: nothing of earlier runs can ever be taken for a record. */
  j->hgen = j->cgen = lap;
  j->hoff = j->coff = HDR_BLOCK;
  if (write_header(j, lap, HDR_BLOCK) != 0) {
    snprintf(err, errlen, "cannot write the header of %s: %s", j->path, strerror(errno));
    goto fail;
  }
  return j;
fail:
  journal_close(j);
  return NULL;
}

void journal_close(journal *j) {
  if (!j)
    return;
  if (j->fd >= 0)
    close(j->fd);
  pthread_cond_destroy(&j->cv);
  pthread_mutex_destroy(&j->ckpt_mu);
  pthread_mutex_destroy(&j->mu);
  free(j->q);
  free(j->path);
  free(j);
}

int journal_fd(const journal *j) {
  return j->fd;
}

uint64_t journal_used(journal *j) {
  pthread_mutex_lock(&j->mu);
  uint64_t u = j->used;
  pthread_mutex_unlock(&j->mu);
  return u;
}

/* ---- the ring ---- */

static ring_ent *ent_at(journal *j, size_t i) {
  return &j->q[(j->qhead + i) % j->qcap];
}

static ring_ent *ent_find(journal *j, uint64_t rseq) {
  if (j->qn == 0 || rseq < ent_at(j, 0)->rseq || rseq - ent_at(j, 0)->rseq >= j->qn)
    return NULL;
  return ent_at(j, (size_t)(rseq - ent_at(j, 0)->rseq));
}

/* Where the oldest unreleased record starts (the head if there is none). */
static void tail_locked(journal *j, uint32_t *gen, uint64_t *off) {
  if (j->qn) {
    *gen = ent_at(j, 0)->gen;
    *off = ent_at(j, 0)->off;
  } else {
    *gen = j->hgen;
    *off = j->hoff;
  }
}

/* Finds room for need bytes without passing the durable checkpoint. */
static bool place_locked(journal *j, uint64_t need, uint32_t *gen, uint64_t *off) {
  if (j->hgen == j->cgen) {
    if (j->hoff + need <= j->size) {
      *gen = j->hgen;
      *off = j->hoff;
      return true;
    }
    if (HDR_BLOCK + need <= j->coff) {
      *gen = j->hgen + 1;
      *off = HDR_BLOCK;
      return true;
    }
    return false;
  }
  if (j->hoff + need <= j->coff) {
    *gen = j->hgen;
    *off = j->hoff;
    return true;
  }
  return false;
}

/* Moves the durable checkpoint up to the oldest unreleased record. Returns
 * true if it moved. Takes ckpt_mu then mu. */
static bool advance_checkpoint(journal *j) {
  bool moved = false;
  pthread_mutex_lock(&j->ckpt_mu);
  pthread_mutex_lock(&j->mu);
  uint32_t tgen;
  uint64_t toff;
  tail_locked(j, &tgen, &toff);
  bool broken = j->broken;
  pthread_mutex_unlock(&j->mu);
  if (!broken && (tgen != j->cgen || toff != j->coff)) {
    /* Records before the tail are released (their dead marks durable) or
     * were never acknowledged, so no replay needs them. */
    if (write_header(j, tgen, toff) == 0) {
      pthread_mutex_lock(&j->mu);
      j->cgen = tgen;
      j->coff = toff;
      pthread_mutex_unlock(&j->mu);
      moved = true;
    } else {
      int e = errno;
      pthread_mutex_lock(&j->mu);
      set_broken_locked(j, "checkpoint", e);
      pthread_mutex_unlock(&j->mu);
    }
  }
  pthread_mutex_unlock(&j->ckpt_mu);
  return moved;
}

/* Bytes from the durable checkpoint to the oldest unreleased record. */
static uint64_t reclaimable_locked(journal *j) {
  uint32_t tgen;
  uint64_t toff;
  tail_locked(j, &tgen, &toff);
  if (tgen == j->cgen)
    return toff - j->coff;
  return (j->size - j->coff) + (toff - HDR_BLOCK);
}

static void pop_done_locked(journal *j) {
  while (j->qn && ent_at(j, 0)->state == ST_DONE) {
    j->used -= ent_at(j, 0)->bytes;
    j->qhead = (j->qhead + 1) % j->qcap;
    j->qn--;
  }
}

int journal_append(journal *j, const char *id, const uint8_t *frame, size_t len, journal_rec *r) {
  rec_hdr h;
  uint64_t need = align_up(sizeof h + len);
  r->rseq = 0;
  if (strnlen(id, JOURNAL_ID_MAX) >= JOURNAL_ID_MAX || len > UINT32_MAX ||
      need > (j->size - HDR_BLOCK) / 4) {
    errno = EFBIG; /* big frames take the spool-file path */
    return -1;
  }
  uint32_t gen = 0;
  uint64_t off = 0;
  for (int attempt = 0;; attempt++) {
    pthread_mutex_lock(&j->mu);
    if (j->broken) {
      pthread_mutex_unlock(&j->mu);
      errno = EIO;
      return -1;
    }
    if (j->qn < j->qcap && place_locked(j, need, &gen, &off))
      break;
    pthread_mutex_unlock(&j->mu);
    if (attempt > 0 || !advance_checkpoint(j)) {
      errno = ENOSPC;
      return -1;
    }
  }
  ring_ent *e = ent_at(j, j->qn);
  *e = (ring_ent){
      .rseq = ++j->next_rseq, .off = off, .bytes = need, .gen = gen, .state = ST_WRITING};
  j->qn++;
  j->used += need;
  j->hgen = gen;
  j->hoff = off + need;
  r->rseq = e->rseq;
  pthread_mutex_unlock(&j->mu);

  memset(&h, 0, sizeof h);
  h.magic = REC_LIVE;
  h.gen = gen;
  h.len = (uint32_t)len;
  snprintf(h.id, sizeof h.id, "%s", id);
  h.crc = rec_crc(&h, frame, len);
  r->off = off + sizeof h;
  r->len = len;
  int werr = 0;
  if (fsutil_pwrite_all(j->fd, &h, sizeof h, off) != 0 ||
      fsutil_pwrite_all(j->fd, frame, len, off + sizeof h) != 0)
    werr = errno ? errno : EIO;
  /* Only a hint that starts the disk while the caller validates. */
  if (!werr)
    (void)sync_file_range(j->fd, (off_t)off, (off_t)(sizeof h + len), SYNC_FILE_RANGE_WRITE);

  pthread_mutex_lock(&j->mu);
  e = ent_find(j, r->rseq);
  if (werr) {
    set_broken_locked(j, "write", werr);
    e->state = ST_DONE;
  } else {
    e->state = ST_WRITTEN;
  }
  while (j->written_upto < j->next_rseq) {
    ring_ent *n = ent_find(j, j->written_upto + 1);
    if (n && n->state == ST_WRITING)
      break;
    j->written_upto++;
  }
  pop_done_locked(j);
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
  if (werr) {
    r->rseq = 0;
    errno = werr;
    return -1;
  }
  return 0;
}

/* Waits until every record up to rseq is written and a sync that started
 * after that, and after dead mark number mark, succeeded. */
static int sync_until(journal *j, uint64_t rseq, uint64_t mark) {
  int rc = 0;
  pthread_mutex_lock(&j->mu);
  for (;;) {
    if (j->broken) {
      rc = -1;
      errno = EIO;
      break;
    }
    if (j->synced_rseq >= rseq && j->synced_marks >= mark)
      break;
    if (j->syncing || j->written_upto < rseq) {
      pthread_cond_wait(&j->cv, &j->mu);
      continue;
    }
    j->syncing = true;
    uint64_t tr = j->written_upto, tm = j->marks_done;
    pthread_mutex_unlock(&j->mu);
    int r = fdatasync(j->fd);
    int e = errno;
    pthread_mutex_lock(&j->mu);
    j->syncing = false;
    if (r == 0) {
      if (tr > j->synced_rseq)
        j->synced_rseq = tr;
      if (tm > j->synced_marks)
        j->synced_marks = tm;
    } else {
      set_broken_locked(j, "fdatasync", e);
    }
    pthread_cond_broadcast(&j->cv);
  }
  pthread_mutex_unlock(&j->mu);
  return rc;
}

int journal_sync(journal *j, const journal_rec *r) {
  return sync_until(j, r->rseq, 0);
}

/* Writes the dead mark of r; returns its mark number (0 if it failed). */
static uint64_t mark_dead(journal *j, const journal_rec *r) {
  const uint32_t dead = REC_DEAD;
  if (fsutil_pwrite_all(j->fd, &dead, sizeof dead, r->off - sizeof(rec_hdr)) != 0) {
    int e = errno;
    pthread_mutex_lock(&j->mu);
    set_broken_locked(j, "dead mark", e);
    pthread_mutex_unlock(&j->mu);
    return 0;
  }
  pthread_mutex_lock(&j->mu);
  uint64_t m = ++j->marks_done;
  pthread_mutex_unlock(&j->mu);
  return m;
}

static void finish(journal *j, journal_rec *r) {
  pthread_mutex_lock(&j->mu);
  ring_ent *e = ent_find(j, r->rseq);
  if (e)
    e->state = ST_DONE;
  pop_done_locked(j);
  bool ckpt = !j->broken && reclaimable_locked(j) > (j->size - HDR_BLOCK) / 4;
  pthread_mutex_unlock(&j->mu);
  r->rseq = 0;
  /* Keep the free part of the ring ahead of demand, so appends rarely wait
   * for a header write. */
  if (ckpt)
    advance_checkpoint(j);
}

void journal_abort(journal *j, journal_rec *r) {
  if (!r->rseq)
    return;
  (void)mark_dead(j, r); /* best effort: a replay re-validates and skips it */
  finish(j, r);
}

int journal_release(journal *j, journal_rec *r) {
  return journal_release_many(j, r, 1);
}

int journal_release_many(journal *j, journal_rec *r, size_t n) {
  uint64_t last = 0;
  for (size_t i = 0; i < n; i++)
    if (r[i].rseq && (last = mark_dead(j, &r[i])) == 0)
      return -1; /* the journal is broken: all stay live, a restart replays them */
  if (last && sync_until(j, 0, last) != 0)
    return -1; /* stays live: a restart replays it and finds its copy */
  for (size_t i = 0; i < n; i++)
    if (r[i].rseq)
      finish(j, &r[i]);
  return 0;
}

uint64_t journal_size(const journal *j) {
  return j->size;
}
