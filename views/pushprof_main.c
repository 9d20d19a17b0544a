/* `pushprof push FILE`: pushes an existing pprof file (gzipped or not) to the
 * sidecar, like an SDK would, and prints the ack or the error. Needs only
 * the protocol code, never the sidecar's internals.
 * Exit: 0 acked, 1 refused by the sidecar, 2 usage or a bad file,
 *       3 sidecar unreachable / timeout / broken connection.
 * `pushprof top|folded|flame|diff` are the views (views/view_cmd.h). */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pp_client.h"
#include "pp_frame.h"
#include "pp_parse.h"
#include "pp_gzip.h"
#include "profile_cmd.h"
#include "pushprof.pb-c.h"
#include "view_cmd.h"

#define DEFAULT_SOCKET "/run/pushprof/pushprof.sock"
#define MAX_FILE_BYTES (64u << 20)

static void usage(FILE *f) {
  fprintf(f,
          "usage: pushprof push FILE [--socket PATH] [--service NAME] [--label KEY=VALUE]...\n"
          "                          [--timeout SECONDS]\n"
          "Pushes a pprof file (gzipped or not) to pushprof-sidecar and prints the push id.\n"
          "  --socket   the sidecar's socket (default $PUSHPROF_SOCKET, else %s)\n"
          "  --service  service name (default: the file name without .pb.gz/.pprof)\n"
          "  --label    a process label; repeat for more (at most %d)\n"
          "  --timeout  seconds to wait for the ack (default 10)\n"
          "push's exit status: 0 acknowledged, 1 refused by the sidecar, 2 usage or bad\n"
          "file, 3 sidecar unreachable or no answer in time.\n"
          "Reading profiles (top table, folded stacks, flame graph, differential graph):\n",
          DEFAULT_SOCKET, PP_LABELS_MAX);
  view_cmd_usage(f);
  fputs("Their exit status: 0 done, 2 usage or bad input (nothing written), 1 a write "
        "failed.\n"
        "On-demand profiles from a running sidecar:\n",
        f);
  profile_cmd_usage(f);
  fputs("profile's exit status: 0 written, 1 the sidecar answered with an error, 2 usage, 3 "
        "unreachable.\n",
        f);
}

static int read_file(const char *path, uint8_t **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "pushprof: cannot open %s: %s\n", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fprintf(stderr, "pushprof: %s is not a regular file\n", path);
    fclose(f);
    return -1;
  }
  if ((uint64_t)st.st_size > MAX_FILE_BYTES) {
    fprintf(stderr, "pushprof: %s is %lld bytes; the limit is %u (not a pprof profile?)\n", path,
            (long long)st.st_size, MAX_FILE_BYTES);
    fclose(f);
    return -1;
  }
  size_t n = (size_t)st.st_size;
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf || fread(buf, 1, n, f) != n) {
    fprintf(stderr, "pushprof: cannot read %s\n", path);
    free(buf);
    fclose(f);
    return -1;
  }
  fclose(f);
  *out = buf;
  *len = n;
  return 0;
}

/* "dir/api-1234.pb.gz" -> "api-1234". */
static void default_service(const char *path, char *out, size_t outlen) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  snprintf(out, outlen, "%s", base);
  static const char *const suffixes[] = {".gz", ".pb", ".pprof", ".prof"};
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
      size_t ol = strlen(out), sl = strlen(suffixes[i]);
      if (ol > sl && strcmp(out + ol - sl, suffixes[i]) == 0)
        out[ol - sl] = 0;
    }
  if (!out[0] || out[0] == '.')
    snprintf(out, outlen, "unknown");
}

static const char *code_name(int code) {
  switch (code) {
  case PUSHPROF__V1__PUSH_REPLY__CODE__OK:
    return "OK";
  case PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_FRAME:
    return "INVALID_FRAME";
  case PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PUSH:
    return "INVALID_PUSH";
  case PUSHPROF__V1__PUSH_REPLY__CODE__INVALID_PPROF:
    return "INVALID_PPROF";
  case PUSHPROF__V1__PUSH_REPLY__CODE__RESOURCE_EXHAUSTED:
    return "RESOURCE_EXHAUSTED";
  case PUSHPROF__V1__PUSH_REPLY__CODE__PERMISSION_DENIED:
    return "PERMISSION_DENIED";
  case PUSHPROF__V1__PUSH_REPLY__CODE__UNAVAILABLE:
    return "UNAVAILABLE";
  case PUSHPROF__V1__PUSH_REPLY__CODE__INTERNAL:
    return "INTERNAL";
  default:
    return "UNKNOWN";
  }
}

static int cmd_push(int argc, char **argv) {
  const char *sock = getenv("PUSHPROF_SOCKET");
  if (!sock || !*sock)
    sock = DEFAULT_SOCKET;
  const char *service = NULL;
  int timeout_s = 10;
  Pushprof__V1__Label labels[PP_LABELS_MAX], *label_ptrs[PP_LABELS_MAX];
  char *label_bufs[PP_LABELS_MAX];
  size_t nlabels = 0;
  int rc = 2;
  uint8_t *file = NULL, *raw = NULL, *frame = NULL;
  size_t file_len = 0, raw_len = 0, frame_len = 0;
  pp_pprof *parsed = NULL;
  const Perftools__Profiles__Profile *prof = NULL;

  static const struct option lo[] = {
      {"socket", required_argument, NULL, 's'}, {"service", required_argument, NULL, 'S'},
      {"label", required_argument, NULL, 'l'},  {"timeout", required_argument, NULL, 't'},
      {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
  optind = 1;
  int ch;
  while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    switch (ch) {
    case 's':
      sock = optarg;
      break;
    case 'S':
      service = optarg;
      break;
    case 't': {
      char *end;
      long v = strtol(optarg, &end, 10);
      if (*end || v < 1 || v > 3600) {
        fprintf(stderr, "pushprof: --timeout \"%s\": expected whole seconds from 1 to 3600\n",
                optarg);
        goto out;
      }
      timeout_s = (int)v;
      break;
    }
    case 'l': {
      char *eq = strchr(optarg, '=');
      if (!eq || eq == optarg || nlabels == PP_LABELS_MAX ||
          (size_t)(eq - optarg) > PP_LABEL_KEY_MAX || strlen(eq + 1) > PP_LABEL_VALUE_MAX) {
        fprintf(stderr,
                "pushprof: --label \"%s\": expected KEY=VALUE (key 1..%d bytes, value at most %d "
                "bytes, at most %d labels)\n",
                optarg, PP_LABEL_KEY_MAX, PP_LABEL_VALUE_MAX, PP_LABELS_MAX);
        goto out;
      }
      char *dup = strdup(optarg);
      if (!dup)
        goto out;
      dup[eq - optarg] = 0;
      label_bufs[nlabels] = dup;
      labels[nlabels] = (Pushprof__V1__Label)PUSHPROF__V1__LABEL__INIT;
      labels[nlabels].key = dup;
      labels[nlabels].value = dup + (eq - optarg) + 1;
      label_ptrs[nlabels] = &labels[nlabels];
      nlabels++;
      break;
    }
    case 'h':
      usage(stdout);
      rc = 0;
      goto out;
    default:
      usage(stderr);
      goto out;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "pushprof push: expected exactly one FILE\n");
    usage(stderr);
    goto out;
  }
  const char *path = argv[optind];
  if (read_file(path, &file, &file_len) != 0)
    goto out;

  /* The wire carries the uncompressed pprof. */
  uint32_t max_pprof = PP_FRAME_MAX_DEFAULT;
  if (file_len >= 2 && file[0] == 0x1f && file[1] == 0x8b) {
    if (pp_gunzip(file, file_len, max_pprof, &raw, &raw_len) != 0) {
      fprintf(stderr, "pushprof: %s: not valid gzip, or larger than %u bytes uncompressed\n", path,
              max_pprof);
      goto out;
    }
  } else {
    raw = file;
    raw_len = file_len;
    file = NULL;
  }
  char why[256] = "";
  parsed = pp_pprof_parse(raw, raw_len, max_pprof, why, sizeof why);
  prof = parsed ? pp_pprof_profile(parsed) : NULL;
  if (!prof) {
    fprintf(stderr, "pushprof: %s is not a valid pprof profile: %s\n", path, why);
    goto out;
  }

  char svc[PP_SERVICE_MAX + 1];
  if (service) {
    if (!*service || strlen(service) > PP_SERVICE_MAX) {
      fprintf(stderr, "pushprof: --service must be 1..%d bytes\n", PP_SERVICE_MAX);
      goto out;
    }
    snprintf(svc, sizeof svc, "%s", service);
  } else {
    default_service(path, svc, sizeof svc);
  }
  char host[PP_HOSTNAME_MAX + 1] = "";
  if (gethostname(host, sizeof host - 1) != 0)
    host[0] = 0;

  Pushprof__V1__PushRequest req = PUSHPROF__V1__PUSH_REQUEST__INIT;
  req.service = svc;
  req.labels = label_ptrs;
  req.n_labels = nlabels;
  req.pid = (uint32_t)getpid();
  req.hostname = host;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t now_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
  req.start_time_nanos = prof->time_nanos > 0 ? prof->time_nanos : now_ns;
  req.end_time_nanos = req.start_time_nanos + (prof->duration_nanos > 0 ? prof->duration_nanos : 0);
  req.sequence = 1;
  req.pprof.data = raw;
  req.pprof.len = raw_len;
  if (pp_client_encode_push(&req, &frame, &frame_len) != 0) {
    fprintf(stderr, "pushprof: cannot encode the push (out of memory?)\n");
    goto out;
  }
  pp_client_reply reply;
  memset(&reply, 0, sizeof reply);
  int status = pp_client_push_frame(sock, frame, frame_len, timeout_s * 1000, &reply);
  switch (status) {
  case PP_CLIENT_ACKED:
    printf("pushed %s (%zu bytes, service %s): push id %s\n", path, raw_len, svc, reply.push_id);
    rc = 0;
    break;
  case PP_CLIENT_REFUSED:
    fprintf(stderr, "pushprof: the sidecar refused %s: %s: %s\n", path, code_name(reply.code),
            reply.reason);
    rc = 1;
    break;
  default: /* unavailable, timeout, broken connection: the reason names the socket */
    fprintf(stderr, "pushprof: %s\n", reply.reason[0] ? reply.reason : "push failed");
    rc = 3;
    break;
  }
out:
  pp_pprof_free(parsed);
  for (size_t i = 0; i < nlabels; i++)
    free(label_bufs[i]);
  free(frame);
  free(raw);
  free(file);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
      !strcmp(argv[1], "help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
    printf("pushprof 0.1.0\n");
    return 0;
  }
  if (view_cmd_known(argv[1]))
    return view_cmd_main(argc - 1, argv + 1);
  if (strcmp(argv[1], "profile") == 0)
    return profile_cmd_main(argc - 1, argv + 1);
  if (strcmp(argv[1], "push") != 0) {
    fprintf(stderr,
            "pushprof: unknown command \"%s\"; the commands are push, profile, top, folded, "
            "flame, diff\n",
            argv[1]);
    return 2;
  }
  return cmd_push(argc - 1, argv + 1);
}
