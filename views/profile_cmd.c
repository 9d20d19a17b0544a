/* `pushprof profile` (profile_cmd.h): one HTTP request with libcurl, the
 * body built with jansson, the answer checked as a pprof before it is
 * written (to FILE.tmp, then renamed). */
#include "profile_cmd.h"

#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pp_arena.h"
#include "pp_parse.h"

#define DEFAULT_ADDR "127.0.0.1:9464"
#define ANSWER_MAX (256u << 20)

void profile_cmd_usage(FILE *f) {
  fprintf(f,
          "usage: pushprof profile -o FILE [--seconds N] [--hz N] [--heap] [--service NAME]\n"
          "                        [--pid PID] [--label KEY=VALUE]... [--gzip]\n"
          "                        [--addr HOST:PORT] [--token-file PATH]\n"
          "Asks the sidecar for an on-demand profile of its profiled processes and writes it.\n"
          "  --seconds   CPU window, 1..300 (default 5)\n"
          "  --hz        CPU sampling rate, 1..1000 (default 100; the kernel tick caps it)\n"
          "  --heap      the live heap now instead of CPU (processes with heap profiling on)\n"
          "  --service, --pid, --label  only the processes that match\n"
          "  --gzip      ask for a gzipped answer\n"
          "  --addr      the sidecar's --metrics-addr (default $PUSHPROF_HTTP_ADDR, else %s)\n"
          "  --token-file  bearer token file (the sidecar's --http-token-file)\n",
          DEFAULT_ADDR);
}

typedef struct buf {
  uint8_t *p;
  size_t n;
  bool over;
} buf;

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg) {
  buf *b = arg;
  size_t n = size * nmemb;
  if (b->n + n > ANSWER_MAX) {
    b->over = true;
    return 0;
  }
  uint8_t *q = realloc(b->p, b->n + n + 1);
  if (!q)
    return 0;
  memcpy(q + b->n, p, n);
  b->p = q;
  b->n += n;
  b->p[b->n] = 0;
  return n;
}

static char *read_token(const char *path) {
  FILE *f = fopen(path, "re");
  if (!f) {
    fprintf(stderr, "pushprof: --token-file %s: %s\n", path, strerror(errno));
    return NULL;
  }
  char *t = calloc(1, 4098);
  size_t n = t ? fread(t, 1, 4097, f) : 0;
  fclose(f);
  while (t && n && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' '))
    t[--n] = 0;
  if (!t || n == 0 || n > 4096) {
    fprintf(stderr, "pushprof: --token-file %s: expected one token of 1..4096 bytes\n", path);
    free(t);
    return NULL;
  }
  return t;
}

static int write_answer(const char *path, const buf *b) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f || fwrite(b->p, 1, b->n, f) != b->n || fclose(f) != 0 || rename(tmp, path) != 0) {
    fprintf(stderr, "pushprof: cannot write %s: %s\n", path, strerror(errno));
    return 1;
  }
  return 0;
}

static int usage_error(const char *msg) {
  fprintf(stderr, "pushprof profile: %s\n", msg);
  profile_cmd_usage(stderr);
  return 2;
}

int profile_cmd_main(int argc, char **argv) {
  static const struct option lo[] = {
      {"output", required_argument, NULL, 'o'},  {"seconds", required_argument, NULL, 's'},
      {"hz", required_argument, NULL, 'z'},      {"heap", no_argument, NULL, 'H'},
      {"service", required_argument, NULL, 'S'}, {"pid", required_argument, NULL, 'p'},
      {"label", required_argument, NULL, 'l'},   {"gzip", no_argument, NULL, 'g'},
      {"addr", required_argument, NULL, 'a'},    {"token-file", required_argument, NULL, 't'},
      {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
  const char *out = NULL, *addr = getenv("PUSHPROF_HTTP_ADDR"), *token_file = NULL;
  json_t *body = json_object(), *labels = json_object();
  bool heap = false;
  int c, rc = 2;
  char *end;
  optind = 1;
  while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
    long v;
    switch (c) {
    case 'o':
      out = optarg;
      break;
    case 's':
    case 'z':
    case 'p':
      errno = 0;
      v = strtol(optarg, &end, 10);
      if (errno || *end || end == optarg || v < 1 || v > 4194304) {
        rc = usage_error("--seconds, --hz and --pid take a positive integer");
        goto done;
      }
      json_object_set_new(body,
                          c == 's'   ? "timeout_seconds"
                          : c == 'z' ? "sampling_frequency"
                                     : "pid",
                          json_integer(v));
      break;
    case 'H':
      heap = true;
      break;
    case 'S':
      json_object_set_new(body, "service", json_string(optarg));
      break;
    case 'l': {
      const char *eq = strchr(optarg, '=');
      if (!eq || eq == optarg) {
        rc = usage_error("--label takes KEY=VALUE");
        goto done;
      }
      char key[256];
      snprintf(key, sizeof key, "%.*s", (int)(eq - optarg), optarg);
      json_object_set_new(labels, key, json_string(eq + 1));
      break;
    }
    case 'g':
      json_object_set_new(body, "archive", json_true());
      break;
    case 'a':
      addr = optarg;
      break;
    case 't':
      token_file = optarg;
      break;
    case 'h':
      profile_cmd_usage(stdout);
      rc = 0;
      goto done;
    default:
      profile_cmd_usage(stderr);
      goto done;
    }
  }
  if (!out || optind != argc) {
    rc = usage_error(out ? "unexpected argument" : "-o FILE is required");
    goto done;
  }
  if (json_object_size(labels))
    json_object_set(body, "labels", labels);
  if (!addr || !*addr)
    addr = DEFAULT_ADDR;
  char *token = NULL;
  if (token_file && !(token = read_token(token_file)))
    goto done;
  char url[600], auth[4200];
  snprintf(url, sizeof url, "http://%s/profile/%s", addr, heap ? "heap" : "cpu");
  char *payload = json_dumps(body, JSON_COMPACT);
  json_int_t seconds = json_integer_value(json_object_get(body, "timeout_seconds"));
  buf ans = {0};
  CURL *cu = curl_easy_init();
  struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
  if (token) {
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    hdr = curl_slist_append(hdr, auth);
  }
  if (!cu || !payload || !hdr) {
    fprintf(stderr, "pushprof: out of memory\n");
    rc = 3;
  } else {
    curl_easy_setopt(cu, CURLOPT_URL, url);
    curl_easy_setopt(cu, CURLOPT_POSTFIELDS, payload);
    curl_easy_setopt(cu, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(cu, CURLOPT_WRITEDATA, &ans);
    curl_easy_setopt(cu, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(cu, CURLOPT_CONNECTTIMEOUT, 10L);
    /* The window, the pushes after it (a few seconds), and slack. */
    curl_easy_setopt(cu, CURLOPT_TIMEOUT, (long)((heap ? 0 : seconds ? seconds : 5) + 30));
    CURLcode cc = curl_easy_perform(cu);
    long status = 0;
    curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &status);
    if (cc != CURLE_OK) {
      fprintf(stderr, "pushprof: %s: %s%s\n", url, curl_easy_strerror(cc),
              ans.over ? " (answer over 256 MiB)" : " (is the sidecar's --metrics-addr this?)");
      rc = 3;
    } else if (status != 200) {
      fprintf(stderr, "pushprof: the sidecar answered %ld: %s%s", status,
              ans.p ? (char *)ans.p : "", ans.n && ans.p[ans.n - 1] == '\n' ? "" : "\n");
      rc = 1;
    } else {
      char why[256];
      pp_pprof *pp = pp_pprof_parse(ans.p, ans.n, ANSWER_MAX, why, sizeof why);
      if (!pp) {
        fprintf(stderr, "pushprof: the answer is not a pprof profile: %s\n", why);
        rc = 1;
      } else {
        const Perftools__Profiles__Profile *p = pp_pprof_profile(pp);
        rc = write_answer(out, &ans);
        if (rc == 0)
          printf("pushprof: wrote %s (%zu bytes, %zu samples)\n", out, ans.n, p->n_sample);
        pp_pprof_free(pp);
      }
    }
  }
  curl_slist_free_all(hdr);
  if (cu)
    curl_easy_cleanup(cu);
  free(payload);
  free(ans.p);
  free(token);
done:
  json_decref(body);
  json_decref(labels);
  return rc;
}
