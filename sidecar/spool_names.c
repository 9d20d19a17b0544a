/* Sorted name sets: the spool's pending, bad and held files by id. */
#include "spool_int.h"

size_t spool_set_lower(const name_set *s, const char *id, bool *found) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(s->v[mid].id, id);
    if (c == 0) {
      *found = true;
      return mid;
    }
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *found = false;
  return lo;
}

bool spool_set_has(const name_set *s, const char *id) {
  bool found;
  spool_set_lower(s, id, &found);
  return found;
}

spool_entry *spool_set_find(name_set *s, const char *id) {
  bool found;
  size_t i = s->n ? spool_set_lower(s, id, &found) : 0;
  return s->n && found ? &s->v[i] : NULL;
}

int spool_set_insert(name_set *s, const char *id, uint64_t bytes) {
  bool found;
  size_t i = spool_set_lower(s, id, &found);
  if (found) {
    s->v[i].bytes = bytes;
    return 0;
  }
  if (s->n == s->cap) {
    size_t ncap = s->cap ? s->cap * 2 : 64;
    spool_entry *nv = realloc(s->v, ncap * sizeof *nv);
    if (!nv)
      return -1;
    s->v = nv;
    s->cap = ncap;
  }
  memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof *s->v);
  snprintf(s->v[i].id, SPOOL_ID_MAX, "%s", id);
  s->v[i].bytes = bytes;
  s->n++;
  return 0;
}

/* Removes id; returns true and its byte count if it was there. */
bool spool_set_erase(name_set *s, const char *id, uint64_t *bytes) {
  bool found;
  size_t i = spool_set_lower(s, id, &found);
  if (!found)
    return false;
  if (bytes)
    *bytes = s->v[i].bytes;
  memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof *s->v);
  s->n--;
  return true;
}
