/* Replays fuzz inputs without libFuzzer: every regular file of each directory
 * argument (in name order), or each file argument, is read and passed to
 * LLVMFuzzerTestOneInput once. A broken invariant aborts; under the ASan+UBSan
 * build memory errors do too. Fails if it found no input at all, so a
 * misplaced corpus cannot pass silently. */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_target.h"

static int read_file(const char *path, uint8_t **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return -1;
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap)
      break;
    uint8_t *nb = realloc(buf, cap * 2);
    if (!nb) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = nb;
    cap *= 2;
  }
  int bad = !buf || ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    return -1;
  }
  *data = buf;
  *len = n;
  return 0;
}

static int run_one(const char *path) {
  uint8_t *data = NULL;
  size_t len = 0;
  if (read_file(path, &data, &len) != 0) {
    fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno));
    return -1;
  }
  /* An exact-size copy: ASan then catches reads past the end of the input. */
  uint8_t *exact = malloc(len ? len : 1);
  if (!exact) {
    free(data);
    return -1;
  }
  memcpy(exact, data, len);
  free(data);
  fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file of dir; returns how many, or -1. */
static long run_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "replay: cannot open corpus directory %s: %s\n", dir, strerror(errno));
    return -1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  long rc = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn) {
        rc = -1;
        goto done;
      }
      names = nn;
    }
    if (!(names[n] = strdup(de->d_name))) {
      rc = -1;
      goto done;
    }
    n++;
  }
  qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n && rc >= 0; i++) {
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    rc = run_one(path) == 0 ? rc + 1 : -1;
  }
done:
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
  closedir(d);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  long total = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    long n;
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
      n = run_dir(argv[i]);
    else
      n = run_one(argv[i]) == 0 ? 1 : -1;
    if (n < 0)
      return 1;
    total += n;
  }
  if (total == 0) {
    fprintf(stderr, "replay: no inputs found in the given paths (is the corpus there?)\n");
    return 1;
  }
  printf("replay: %ld inputs ran without a finding\n", total);
  return 0;
}
