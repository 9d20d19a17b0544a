/* Option parsing and output for `pushprof top|folded|flame|diff`. Every
 * input is read, filtered and turned into trees before any output file is
 * created; files are written to a temp name beside the target and renamed,
 * so bad input or a failed write leaves nothing behind. */
#include "view_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "view_folded.h"
#include "view_input.h"
#include "view_model.h"
#include "view_svg.h"

#define MAX_LABELS 16

bool view_cmd_known(const char *name) {
  return !strcmp(name, "top") || !strcmp(name, "folded") || !strcmp(name, "flame") ||
         !strcmp(name, "diff");
}

void view_cmd_usage(FILE *f) {
  fputs(
      "       pushprof top [--cum] [--nodecount N] [FILTERS] PROFILE...\n"
      "       pushprof folded [FILTERS] [-o FILE] PROFILE...\n"
      "       pushprof flame [FILTERS] [--title T] [--inverted] -o FILE.svg|FILE.html PROFILE...\n"
      "       pushprof diff [FILTERS] [--inverted] BASE... -- NEW... (-o FILE.svg|.html | "
      "--folded)\n"
      "PROFILE: pprof files (gzipped or not) and directories (every .pb.gz, .pprof, .pb\n"
      "and .prof file below), merged. FILTERS:\n"
      "  --value TYPE        sample type to show (e.g. samples, cpu, inuse_space);\n"
      "                      default: the profile's default type (a heap profile's\n"
      "                      inuse_space), else samples for folded/flame/diff and\n"
      "                      the last type for top; in directories, only the\n"
      "                      profiles that have TYPE\n"
      "  --value wall        wall time by stack: the CPU profiles' cpu plus the\n"
      "                      off-CPU profiles' delay (other types left out); top\n"
      "                      shows on-CPU and off-CPU columns, flame colours each\n"
      "                      frame by its off-CPU share. The default of top and\n"
      "                      flame when the PROFILEs hold both CPU and off-CPU\n"
      "                      profiles\n"
      "  --service NAME      only files in a directory NAME (the file exporter's layout)\n"
      "  --since T --until T profile time: 2026-11-23T10:00:00Z, 2026-11-23, @UNIX, 2h\n"
      "  --label KEY=VALUE   only samples carrying that label (repeat: all of them)\n"
      "  --focus REGEX       only samples with a frame matching (POSIX extended)\n"
      "  --ignore REGEX      drop samples with a frame matching\n"
      "Graphs draw the root on top, so a deep graph opens on its widest frames;\n"
      "--inverted draws it at the bottom (the classic flame graph).\n",
      f);
}

typedef struct opts {
  const char *value, *service, *output, *title, *focus_s, *ignore_s;
  const char *labels[MAX_LABELS];
  size_t nlabels;
  int64_t since, until;
  bool cum, folded, have_focus, have_ignore, inverted;
  long nodecount;
  regex_t focus, ignore;
} opts;

static int bad(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One line on stderr; control bytes (from profile strings or file names)
 * become '?', so a hostile profile cannot drive the terminal. */
static int bad(const char *cmd, const char *fmt, ...) {
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  for (char *c = line; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f)
      *c = '?';
  fprintf(stderr, "pushprof %s: %s\n", cmd, line);
  return 2;
}

/* A profile's string for the terminal: cleaned like a frame name. */
static const char *tty(const char *s, char *buf, size_t buflen) {
  view_clean_name(s, strnlen(s, buflen / 3 - 8), buf, buflen / 3 - 8);
  return buf;
}

static int compile(const char *cmd, const char *flag, const char *re, regex_t *out) {
  int e = regcomp(out, re, REG_EXTENDED | REG_NOSUB);
  if (e != 0) {
    char msg[256];
    regerror(e, out, msg, sizeof msg);
    return bad(cmd, "%s \"%.200s\": %s", flag, re, msg);
  }
  return 0;
}

/* Parses options from argv[0..argc) (argv[0] is skipped); positionals go to
 * pos. Returns 0, 2 (usage, said), or -1 for --help. */
static int parse(const char *cmd, int argc, char **argv, opts *o, char **pos, size_t *npos) {
  enum {
    O_CUM = 256,
    O_NODES,
    O_VALUE,
    O_SERVICE,
    O_SINCE,
    O_UNTIL,
    O_LABEL,
    O_FOCUS,
    O_IGNORE,
    O_FOLDED,
    O_TITLE,
    O_INVERTED
  };
  static const struct option lo[] = {{"cum", no_argument, NULL, O_CUM},
                                     {"nodecount", required_argument, NULL, O_NODES},
                                     {"value", required_argument, NULL, O_VALUE},
                                     {"service", required_argument, NULL, O_SERVICE},
                                     {"since", required_argument, NULL, O_SINCE},
                                     {"until", required_argument, NULL, O_UNTIL},
                                     {"label", required_argument, NULL, O_LABEL},
                                     {"focus", required_argument, NULL, O_FOCUS},
                                     {"ignore", required_argument, NULL, O_IGNORE},
                                     {"folded", no_argument, NULL, O_FOLDED},
                                     {"title", required_argument, NULL, O_TITLE},
                                     {"inverted", no_argument, NULL, O_INVERTED},
                                     {"output", required_argument, NULL, 'o'},
                                     {"help", no_argument, NULL, 'h'},
                                     {NULL, 0, NULL, 0}};
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t now_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
  optind = 1;
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, ":o:h", lo, NULL)) != -1) {
    switch (ch) {
    case O_CUM:
      o->cum = true;
      break;
    case O_NODES: {
      char *end;
      errno = 0;
      long v = strtol(optarg, &end, 10);
      if (errno || *end || v < 1)
        return bad(cmd, "--nodecount \"%.100s\": expected a whole number from 1", optarg);
      o->nodecount = v;
      break;
    }
    case O_VALUE:
      o->value = optarg;
      break;
    case O_SERVICE:
      o->service = optarg;
      break;
    case O_SINCE:
    case O_UNTIL:
      if (view_parse_time(optarg, now_ns, ch == O_SINCE ? &o->since : &o->until) != 0)
        return bad(cmd,
                   "--%s \"%.100s\": expected 2026-11-23T10:00:00Z (or +01:00), 2026-11-23, "
                   "@UNIXSECONDS or an age such as 90s, 15m, 2h, 7d",
                   ch == O_SINCE ? "since" : "until", optarg);
      break;
    case O_LABEL:
      if (!strchr(optarg, '=') || optarg[0] == '=')
        return bad(cmd, "--label \"%.200s\": expected KEY=VALUE", optarg);
      if (o->nlabels == MAX_LABELS)
        return bad(cmd, "at most %d --label filters", MAX_LABELS);
      o->labels[o->nlabels++] = optarg;
      break;
    case O_FOCUS:
      if (o->have_focus)
        regfree(&o->focus);
      o->have_focus = false;
      if (compile(cmd, "--focus", optarg, &o->focus) != 0)
        return 2;
      o->have_focus = true;
      break;
    case O_IGNORE:
      if (o->have_ignore)
        regfree(&o->ignore);
      o->have_ignore = false;
      if (compile(cmd, "--ignore", optarg, &o->ignore) != 0)
        return 2;
      o->have_ignore = true;
      break;
    case O_FOLDED:
      o->folded = true;
      break;
    case O_TITLE:
      o->title = optarg;
      break;
    case O_INVERTED:
      o->inverted = true;
      break;
    case 'o':
      o->output = optarg;
      break;
    case 'h':
      return -1;
    case ':':
      return bad(cmd, "%s needs a value", argv[optind - 1]);
    default:
      return bad(cmd, "unknown option \"%s\" (pushprof --help lists them)", argv[optind - 1]);
    }
  }
  for (int i = optind; i < argc; i++)
    pos[(*npos)++] = argv[i];
  return 0;
}

/* ---- output files: temp name, then rename ---- */
typedef struct out_file {
  FILE *f;
  char *tmp;
  const char *path;
} out_file;

static int out_open(const char *cmd, const char *path, out_file *o) {
  memset(o, 0, sizeof *o);
  o->path = path;
  if (!path || !strcmp(path, "-")) {
    o->f = stdout;
    return 0;
  }
  if (asprintf(&o->tmp, "%s.tmpXXXXXX", path) < 0) {
    o->tmp = NULL;
    return bad(cmd, "out of memory");
  }
  int fd = mkstemp(o->tmp);
  if (fd < 0) {
    int e = errno;
    free(o->tmp);
    o->tmp = NULL;
    return bad(cmd, "cannot create %s: %s", path, strerror(e));
  }
  mode_t mask = umask(0); /* mkstemp makes 0600; give it an ordinary file's mode */
  umask(mask);
  o->f = fchmod(fd, 0666 & ~mask) == 0 ? fdopen(fd, "w") : NULL;
  if (!o->f) {
    int e = errno;
    close(fd);
    unlink(o->tmp);
    free(o->tmp);
    o->tmp = NULL;
    return bad(cmd, "cannot write %s: %s", path, strerror(e));
  }
  return 0;
}

/* ok: the content was written fully. Returns 0 or 1 (write failed, said). */
static int out_close(const char *cmd, out_file *o, bool ok) {
  if (o->f == stdout) {
    if (fflush(stdout) != 0 || !ok) {
      fprintf(stderr, "pushprof %s: cannot write to standard output: %s\n", cmd, strerror(errno));
      return 1;
    }
    return 0;
  }
  int e = 0;
  if (!ok || ferror(o->f))
    e = errno ? errno : EIO;
  if (fflush(o->f) != 0 && !e)
    e = errno;
  if (!e && fsync(fileno(o->f)) != 0)
    e = errno;
  if (fclose(o->f) != 0 && !e)
    e = errno;
  if (!e && rename(o->tmp, o->path) != 0)
    e = errno;
  if (e)
    unlink(o->tmp);
  free(o->tmp);
  if (e) {
    fprintf(stderr, "pushprof %s: cannot write %s: %s\n", cmd, o->path, strerror(e));
    return 1;
  }
  return 0;
}

/* ---- one side: files -> tree ---- */
typedef struct side {
  view_input in;
  view_tree *tree;
  int vix;
  int64_t all_total; /* before the sample filters: pprof's percentages */
  /* --value wall: the tree holds on-CPU plus off-CPU time; files of each */
  bool wall;
  size_t ncpu, noff;
} side;

static bool is_wall(const char *value) {
  return value && !strcmp(value, "wall");
}

static int add_total(const Perftools__Profiles__Profile *p, int vix, int64_t *total) {
  for (size_t i = 0; i < p->n_sample; i++)
    if ((size_t)vix < p->sample[i]->n_value)
      if (__builtin_add_overflow(*total, p->sample[i]->value[vix], total))
        return -1;
  return 0;
}

/* The tree is finished and not empty: 0, or -1 with err. */
static int finish_side(opts *o, char **paths, size_t n, side *s, char *err, size_t errlen) {
  char why[1024];
  const char *and = n > 1 ? " (and the others)" : "";
  if (view_tree_finish(s->tree, why, sizeof why) != 0) {
    snprintf(err, errlen, "%s%s: %s", paths[0], and, why);
    return -1;
  }
  if (view_tree_total(s->tree) <= 0) {
    snprintf(err, errlen, "%s%s: no samples left after the filters (%s)", paths[0], and,
             o->have_focus || o->have_ignore || o->nlabels ? "--label/--focus/--ignore"
                                                           : "the profile is empty");
    return -1;
  }
  return 0;
}

/* One tree of the PROFILEs: 0, or -1 with one line in err. */
static int load_side(opts *o, char **paths, size_t n, bool prefer_count, view_names *names, side *s,
                     char *err, size_t errlen) {
  char why[1024];
  const char *and = n > 1 ? " (and the others)" : "";
  view_input_opts io = {o->service, o->since, o->until, o->value};
  if (view_input_load((const char *const *)paths, n, &io, &s->in, err, errlen) != 0)
    return -1;
  const Perftools__Profiles__Profile *p = s->in.profile;
  s->vix = view_pick_value(p, o->value, prefer_count, why, sizeof why);
  if (s->vix < 0) {
    snprintf(err, errlen, "%s%s: %s", paths[0], and, why);
    return -1;
  }
  if (add_total(p, s->vix, &s->all_total) != 0) {
    snprintf(err, errlen, "%s: the sample values add up past 2^63", paths[0]);
    return -1;
  }
  view_filter f = {o->labels, o->nlabels, o->have_focus ? &o->focus : NULL,
                   o->have_ignore ? &o->ignore : NULL};
  s->tree = view_tree_collect(p, (size_t)s->vix, &f, names, why, sizeof why);
  if (!s->tree) {
    snprintf(err, errlen, "%s%s: %s", paths[0], and, why);
    return -1;
  }
  /* the decoded profile is the largest thing here: gone before the tree */
  view_input_free(&s->in);
  return finish_side(o, paths, n, s, err, errlen);
}

/* Wall time: the CPU profiles' cpu and the off-CPU profiles' delay in one
 * tree, the second also as the nodes' off-CPU part. Each kind is merged on
 * its own (they cannot merge with each other); files of other kinds are
 * left out. 0, or -1 with err. */
static int load_wall(opts *o, char **paths, size_t n, view_names *names, side *s, char *err,
                     size_t errlen) {
  char why[1024];
  const char *and = n > 1 ? " (and the others)" : "";
  view_filter f = {o->labels, o->nlabels, o->have_focus ? &o->focus : NULL,
                   o->have_ignore ? &o->ignore : NULL};
  s->wall = true;
  s->tree = view_tree_new(names, "wall", "nanoseconds");
  if (!s->tree) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  view_input cpu, off;
  view_input *by_kind[VIEW_KINDS] = {NULL};
  by_kind[VIEW_KIND_CPU] = &cpu;
  by_kind[VIEW_KIND_OFFCPU] = &off;
  view_input_opts io = {o->service, o->since, o->until, NULL};
  if (view_input_load_kinds((const char *const *)paths, n, &io, by_kind, err, errlen) != 0)
    return -1;
  s->in.nfiles = cpu.nfiles;
  const size_t *nkind = cpu.nkind;
  s->ncpu = cpu.nkept;
  s->noff = off.nkept;
  why[0] = 0;
  for (int k = 0; k < 2 && !why[0]; k++) {
    view_input *in = k ? &off : &cpu;
    if (in->nkept == 0)
      continue;
    int vix = view_pick_value(in->profile, k ? "delay" : "cpu", false, why, sizeof why);
    if (vix >= 0 && add_total(in->profile, vix, &s->all_total) != 0)
      snprintf(why, sizeof why, "the sample values add up past 2^63");
    else if (vix >= 0 &&
             view_tree_add(s->tree, in->profile, (size_t)vix, &f, k == 1, why, sizeof why) == 0)
      why[0] = 0;
    view_input_free(in);
  }
  view_input_free(&cpu);
  view_input_free(&off);
  if (why[0]) {
    snprintf(err, errlen, "%s%s: %s", paths[0], and, why);
    return -1;
  }
  s->in.nkept = s->ncpu + s->noff;
  if (s->in.nkept == 0) {
    snprintf(err, errlen,
             "--value wall needs CPU profiles (cpu/nanoseconds) or off-CPU profiles "
             "(delay/nanoseconds, not lock); %s%s holds %zu lock and %zu other profile%s "
             "(heap, ...)%s",
             paths[0], and, nkind[VIEW_KIND_LOCK], nkind[VIEW_KIND_OTHER],
             nkind[VIEW_KIND_OTHER] == 1 ? "" : "s",
             nkind[VIEW_KIND_CPU] + nkind[VIEW_KIND_OFFCPU]
                 ? ", and CPU or off-CPU ones outside --since/--until"
                 : "");
    return -1;
  }
  return finish_side(o, paths, n, s, err, errlen);
}

static void free_side(side *s) {
  view_tree_free(s->tree);
  view_input_free(&s->in);
}

/* "620" "1.5" "1.02": 3 significant digits at most, no trailing zeros */
static void trim_num(double a, char *buf, size_t len) {
  snprintf(buf, len, a >= 100 ? "%.0f" : a >= 10 ? "%.1f" : "%.2f", a);
  if (strchr(buf, '.')) {
    size_t n = strlen(buf);
    while (buf[n - 1] == '0')
      buf[--n] = 0;
    if (buf[n - 1] == '.')
      buf[n - 1] = 0;
  }
}

/* pprof-like compact values for the table: 1.02s, 620ms, 1234, 1.5MiB */
static void compact(int64_t v, const char *unit, char *buf, size_t len) {
  double a = (double)(v < 0 ? -v : v);
  const char *sign = v < 0 ? "-" : "", *u = "";
  if (v == 0) {
    snprintf(buf, len, "0");
    return;
  }
  if (!strcmp(unit, "nanoseconds")) {
    static const char *const us[] = {"ns", "us", "ms", "s"};
    size_t i = 0;
    while (a >= 1000 && i < 3)
      a /= 1000, i++;
    u = us[i];
  } else if (!strcmp(unit, "bytes")) {
    static const char *const us[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    size_t i = 0;
    while (a >= 1024 && i < 4)
      a /= 1024, i++;
    u = us[i];
  } else {
    snprintf(buf, len, "%" PRId64, v);
    return;
  }
  char num[48];
  trim_num(a, num, sizeof num);
  snprintf(buf, len, "%s%s%s", sign, num, u);
}

static int do_top(const char *cmd, opts *o, side *s) {
  view_top_row *rows = NULL;
  size_t nrows = 0;
  if (view_tree_top(s->tree, o->cum, &rows, &nrows) != 0)
    return bad(cmd, "out of memory");
  const char *unit = view_tree_value_unit(s->tree);
  const view_names *names = view_tree_names(s->tree);
  double total = (double)(s->all_total ? s->all_total : 1);
  size_t show = o->nodecount > 0 && (size_t)o->nodecount < nrows ? (size_t)o->nodecount : nrows;
  int64_t shown = 0;
  for (size_t i = 0; i < show; i++)
    shown += rows[i].flat;
  char a[64], b[64], c[64];
  compact(s->all_total, unit, a, sizeof a);
  compact(view_tree_total(s->tree), unit, b, sizeof b);
  compact(shown, unit, c, sizeof c);
  char tb[300], ub[300];
  if (s->wall)
    printf("Type: wall (nanoseconds) = on-CPU (cpu of %zu CPU profile file%s) + off-CPU (delay of "
           "%zu off-CPU profile file%s), of %zu profile files\n",
           s->ncpu, s->ncpu == 1 ? "" : "s", s->noff, s->noff == 1 ? "" : "s", s->in.nfiles);
  else
    printf("Type: %s (%s), %zu of %zu profile files\n",
           tty(view_tree_value_type(s->tree), tb, sizeof tb), tty(unit, ub, sizeof ub), s->in.nkept,
           s->in.nfiles);
  if (view_tree_total(s->tree) != s->all_total)
    printf("Filters keep %s of %s total (%.2f%%)\n", b, a,
           100.0 * (double)view_tree_total(s->tree) / total);
  printf("Showing nodes accounting for %s, %.2f%% of %s total; %zu of %zu functions\n", c,
         100.0 * (double)shown / total, a, show, nrows);
  int64_t unnamed = view_tree_unnamed_self(s->tree);
  if (unnamed > 0) {
    char d[64];
    compact(unnamed, unit, d, sizeof d);
    printf("No symbol for %s, %.2f%% of %s total: shown as [object] or 0x address (install "
           "the object's debug symbols, e.g. Debian's -dbgsym package, to name it)\n",
           d, 100.0 * (double)unnamed / total, a);
  }
  if (s->wall) {
    printf("wall, on-CPU, off-CPU: %s; %s\n",
           o->cum ? "with the callees (cum), sorted by it"
                  : "in the function itself (flat), sorted "
                    "by it",
           o->cum ? "flat: itself" : "cum: with its callees");
    printf("%10s %6s %6s %10s %6s %10s %6s %10s %6s  %s\n", "wall", "wall%", "sum%", "on-CPU",
           "on%", "off-CPU", "off%", o->cum ? "flat" : "cum", o->cum ? "flat%" : "cum%", "name");
  } else {
    printf("%10s %6s %6s %10s %6s  %s\n", "flat", "flat%", "sum%", "cum", "cum%", "name");
  }
  int64_t sum = 0;
  size_t cap = 0;
  char *clean = NULL;
  int rc = 0;
  for (size_t i = 0; i < show; i++) {
    sum += rows[i].flat;
    const char *nm = view_names_at(names, rows[i].name);
    size_t nl = strlen(nm);
    if (nl * 3 + 8 > cap) {
      cap = nl * 3 + 8;
      char *nc = realloc(clean, cap);
      if (!nc) {
        rc = bad(cmd, "out of memory");
        break;
      }
      clean = nc;
    }
    view_clean_name(nm, nl, clean, nl * 3);
    if (s->wall) {
      /* the sorted measure, split; sum% adds up flat, as pprof's does */
      int64_t v = o->cum ? rows[i].cum : rows[i].flat, other = o->cum ? rows[i].flat : rows[i].cum;
      int64_t off = o->cum ? rows[i].cum_off : rows[i].flat_off;
      char on_s[64], off_s[64];
      compact(v, unit, a, sizeof a);
      compact(v - off, unit, on_s, sizeof on_s);
      compact(off, unit, off_s, sizeof off_s);
      compact(other, unit, b, sizeof b);
      printf("%10s %5.2f%% %5.2f%% %10s %5.2f%% %10s %5.2f%% %10s %5.2f%%  %s\n", a,
             100.0 * (double)v / total, 100.0 * (double)sum / total, on_s,
             100.0 * (double)(v - off) / total, off_s, 100.0 * (double)off / total, b,
             100.0 * (double)other / total, clean);
      continue;
    }
    compact(rows[i].flat, unit, a, sizeof a);
    compact(rows[i].cum, unit, b, sizeof b);
    printf("%10s %5.2f%% %5.2f%% %10s %5.2f%%  %s\n", a, 100.0 * (double)rows[i].flat / total,
           100.0 * (double)sum / total, b, 100.0 * (double)rows[i].cum / total, clean);
  }
  free(clean);
  free(rows);
  if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout)))
    return bad(cmd, "cannot write to standard output: %s", strerror(errno)) - 1;
  return rc;
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s && s[1] ? s + 1 : p;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int picture(const char *cmd, opts *o, side *s, side *base, char **paths, size_t n) {
  if (!o->output)
    return bad(cmd, "-o FILE.svg (or FILE.html) is required");
  bool html = ends_with(o->output, ".html") || ends_with(o->output, ".htm");
  if (!html && !ends_with(o->output, ".svg"))
    return bad(cmd, "-o \"%.200s\": the name must end in .svg or .html", o->output);
  char title[512], sub[512], tot[64];
  if (o->title)
    snprintf(title, sizeof title, "%s", o->title);
  else if (base)
    snprintf(title, sizeof title, "Differential flame graph: %s", base_name(paths[0]));
  else
    snprintf(title, sizeof title, "%s: %s%s", s->wall ? "Wall-time flame graph" : "Flame graph",
             base_name(paths[0]), n > 1 ? ", ..." : "");
  view_format_value(view_tree_total(s->tree), view_tree_value_type(s->tree),
                    view_tree_value_unit(s->tree), tot, sizeof tot);
  if (base) {
    char btot[64];
    view_format_value(view_tree_total(base->tree), view_tree_value_type(base->tree),
                      view_tree_value_unit(base->tree), btot, sizeof btot);
    snprintf(sub, sizeof sub,
             "drawn on NEW (%zu file%s, %s), coloured by the change of each frame's share since "
             "BASE (%zu file%s, %s): red grew, blue shrank",
             s->in.nkept, s->in.nkept == 1 ? "" : "s", tot, base->in.nkept,
             base->in.nkept == 1 ? "" : "s", btot);
  } else if (s->wall) {
    const view_node *root = view_tree_nodes(s->tree, &(size_t){0});
    char on[64], off[64];
    view_format_value(root->total - root->off_cpu, "wall", "nanoseconds", on, sizeof on);
    view_format_value(root->off_cpu, "wall", "nanoseconds", off, sizeof off);
    snprintf(sub, sizeof sub,
             "wall time of %zu CPU and %zu off-CPU profile file%s: %s = on-CPU %s + off-CPU %s",
             s->ncpu, s->noff, s->noff == 1 ? "" : "s", tot, on, off);
  } else {
    snprintf(sub, sizeof sub, "%s (%s) of %zu profile file%s: %s", view_tree_value_type(s->tree),
             view_tree_value_unit(s->tree), s->in.nkept, s->in.nkept == 1 ? "" : "s", tot);
  }
  view_svg_opts so = {title, sub, base ? base->tree : NULL, html, o->inverted, s->wall};
  out_file of;
  if (out_open(cmd, o->output, &of) != 0)
    return 2;
  int w = view_svg_write(of.f, s->tree, &so);
  return out_close(cmd, &of, w == 0);
}

int view_cmd_main(int argc, char **argv) {
  const char *cmd = argv[0];
  opts o;
  memset(&o, 0, sizeof o);
  o.nodecount = 20;
  char **pos = calloc((size_t)argc + 1, sizeof *pos), **pos2 = NULL;
  size_t npos = 0, npos2 = 0;
  side s = {0}, base = {0};
  view_names *names = NULL;
  int rc = 2;
  if (!pos)
    return bad(cmd, "out of memory");
  bool diff = !strcmp(cmd, "diff");
  int sep = argc;
  if (diff)
    for (int i = 1; i < argc; i++)
      if (!strcmp(argv[i], "--")) {
        sep = i;
        break;
      }
  int pr = parse(cmd, sep, argv, &o, pos, &npos);
  if (pr == 0 && diff) {
    if (sep == argc) {
      rc = bad(cmd, "expected BASE... -- NEW... (a \"--\" between the two sets)");
      goto out;
    }
    pos2 = calloc((size_t)argc + 1, sizeof *pos2);
    char **rest = calloc((size_t)(argc - sep) + 1, sizeof *rest);
    if (!pos2 || !rest) {
      free(rest);
      rc = bad(cmd, "out of memory");
      goto out;
    }
    rest[0] = argv[0];
    for (int i = sep + 1; i < argc; i++)
      rest[i - sep] = argv[i];
    pr = parse(cmd, argc - sep, rest, &o, pos2, &npos2);
    free(rest);
  }
  if (pr < 0) {
    printf("usage:\n");
    view_cmd_usage(stdout);
    rc = 0;
    goto out;
  }
  if (pr != 0)
    goto out;
  if (npos == 0 || (diff && npos2 == 0)) {
    rc = bad(cmd, diff ? "expected BASE... -- NEW... (files or directories on both sides)"
                       : "expected one or more PROFILE files or directories");
    goto out;
  }
  if (!strcmp(cmd, "top") && o.output) {
    rc = bad(cmd, "top prints to standard output; -o is for folded, flame and diff");
    goto out;
  }
  names = view_names_new();
  if (!names) {
    rc = bad(cmd, "out of memory");
    goto out;
  }
  bool prefer_count = strcmp(cmd, "top") != 0;
  char err[2048];
  if (diff) {
    if (is_wall(o.value)) {
      rc = bad(cmd, "--value wall is for top, folded and flame; diff compares one type");
      goto out;
    }
    if (load_side(&o, pos, npos, prefer_count, names, &base, err, sizeof err) != 0 ||
        load_side(&o, pos2, npos2, prefer_count, names, &s, err, sizeof err) != 0) {
      rc = bad(cmd, "%s", err);
      goto out;
    }
    if (view_tree_index(base.tree) != 0 || view_tree_index(s.tree) != 0) {
      rc = bad(cmd, "out of memory");
      goto out;
    }
    if (strcmp(view_tree_value_unit(base.tree), view_tree_value_unit(s.tree)) != 0) {
      rc = bad(cmd, "BASE shows %s but NEW shows %s: pick one with --value",
               view_tree_value_type(base.tree), view_tree_value_type(s.tree));
      goto out;
    }
    if (o.folded) {
      out_file of;
      if (out_open(cmd, o.output, &of) != 0)
        goto out;
      int w = view_folded_diff_write(of.f, base.tree, s.tree);
      rc = out_close(cmd, &of, w == 0);
    } else {
      rc = picture(cmd, &o, &s, &base, pos2, npos2);
    }
    goto out;
  }
  if (is_wall(o.value)) {
    if (load_wall(&o, pos, npos, names, &s, err, sizeof err) != 0) {
      rc = bad(cmd, "%s", err);
      goto out;
    }
  } else if (load_side(&o, pos, npos, prefer_count, names, &s, err, sizeof err) != 0) {
    /* Profiles of one type merge; CPU and off-CPU ones do not, and then
     * top and flame show them together as wall time. */
    char err2[2048];
    side w = {0};
    bool both = !o.value && strcmp(cmd, "folded") != 0 &&
                load_wall(&o, pos, npos, names, &w, err2, sizeof err2) == 0 && w.ncpu && w.noff;
    free_side(&s);
    s = w;
    if (!both) {
      rc = bad(cmd, "%s", err);
      goto out;
    }
  }
  if (!strcmp(cmd, "top")) {
    rc = do_top(cmd, &o, &s);
  } else if (!strcmp(cmd, "folded")) {
    out_file of;
    if (out_open(cmd, o.output, &of) != 0)
      goto out;
    int w = view_folded_write(of.f, s.tree);
    rc = out_close(cmd, &of, w == 0);
  } else {
    rc = picture(cmd, &o, &s, NULL, pos, npos);
  }
out:
  free_side(&s);
  free_side(&base);
  view_names_free(names);
  if (o.have_focus)
    regfree(&o.focus);
  if (o.have_ignore)
    regfree(&o.ignore);
  free(pos);
  free(pos2);
  return rc;
}
