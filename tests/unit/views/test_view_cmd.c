/* views/view_cmd.c, the subcommands top, folded, flame and diff: each
 * writes its output file whole or, on bad input or a usage error, exits 2
 * and leaves no file behind (not even its temporary one). */
#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>
#include <sys/stat.h>

#include "view_cmd.h"
#include "view_fixture.h"

static const char *const A[] = {"3 main;a", "4 main;b"};
static const char *const B[] = {"5 main;a"};

/* view_cmd_main on a copy of args (getopt permutes its argv). */
static int run(int argc, const char *const *args) {
  char *argv[16];
  if (argc >= 16)
    return -1;
  for (int i = 0; i < argc; i++)
    argv[i] = strdup(args[i]);
  argv[argc] = NULL;
  int rc = view_cmd_main(argc, argv);
  for (int i = 0; i < argc; i++)
    free(argv[i]);
  return rc;
}

/* run() on its arguments, counted. */
#define RUN(...)                                                                                   \
  run(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *), (const char *[]){__VA_ARGS__})

/* The contents of path (NUL-terminated), NULL if it cannot be read. */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *buf = calloc(1, 1 << 20);
  size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
  if (buf)
    buf[n] = '\0';
  fclose(f);
  return buf;
}

/* The number of entries in dir besides . and .. */
static int entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  if (d)
    closedir(d);
  return n;
}

static void test_cmd_knows_its_subcommands(void) {
  PP_CHECK(view_cmd_known("top") && view_cmd_known("folded"));
  PP_CHECK(view_cmd_known("flame") && view_cmd_known("diff"));
  PP_CHECK(!view_cmd_known("push") && !view_cmd_known("Top") && !view_cmd_known(""));
}

static void test_cmd_folded_and_diff_write_their_files(void) {
  char dir[64], a[256], b[256], out[256];
  if (!temp_dir(dir, sizeof dir))
    return;
  snprintf(a, sizeof a, "%s/a.pb", dir);
  snprintf(b, sizeof b, "%s/b.pb.gz", dir);
  write_lines_at(a, A, 2, 0, false);
  write_lines_at(b, B, 1, 0, true);
  mode_t mask = umask(022);
  snprintf(out, sizeof out, "%s/out.folded", dir);
  PP_CHECK_INT(RUN("folded", "-o", out, a), ==, 0);
  char *s = slurp(out);
  PP_CHECK_STR(s, "main;a 3\nmain;b 4\n");
  free(s);
  struct stat st;
  PP_CHECK_INT(stat(out, &st), ==, 0);
  PP_CHECK_INT(st.st_mode & 0777, ==, 0644); /* an ordinary file's mode, not mkstemp's */
  PP_CHECK_INT(RUN("diff", "--folded", "-o", out, a, "--", b), ==, 0);
  s = slurp(out);
  PP_CHECK_STR(s, "main;a 3 5\nmain;b 4 0\n");
  free(s);
  snprintf(out, sizeof out, "%s/out.svg", dir);
  PP_CHECK_INT(RUN("flame", "--title", "T<1>", "-o", out, a), ==, 0);
  s = slurp(out);
  PP_CHECK(s && strstr(s, "<svg") && strstr(s, "<title>main (7 samples, 100.00%)</title>"));
  PP_CHECK(s && strstr(s, "T&lt;1&gt;"));
  free(s);
  PP_CHECK_INT(entries(dir), ==, 4); /* a, b, out.folded, out.svg: no temporary left */
  umask(mask);
  temp_dir_remove(dir);
}

static void test_cmd_refusals_exit_2_and_write_nothing(void) {
  char dir[64], a[256], junk[256], out[256];
  if (!temp_dir(dir, sizeof dir))
    return;
  snprintf(a, sizeof a, "%s/a.pb", dir);
  snprintf(junk, sizeof junk, "%s/junk.pb", dir);
  snprintf(out, sizeof out, "%s/out.svg", dir);
  write_lines_at(a, A, 2, 0, false);
  write_file(junk, "not a profile", 13);
  PP_CHECK_INT(RUN("folded", "-o", out, junk), ==, 2);
  PP_CHECK_INT(RUN("flame", "-o", out, junk), ==, 2);
  PP_CHECK_INT(RUN("folded", "-o"), ==, 2);       /* -o needs a value */
  PP_CHECK_INT(RUN("folded", "--bogus"), ==, 2);  /* unknown option */
  PP_CHECK_INT(RUN("folded"), ==, 2);             /* no profile */
  PP_CHECK_INT(RUN("top", "-o", out, a), ==, 2);  /* top prints */
  PP_CHECK_INT(RUN("diff", "-o", out, a), ==, 2); /* no "--" */
  PP_CHECK_INT(RUN("flame", "-o", a), ==, 2);     /* no profile */
  PP_CHECK_INT(RUN("flame", a), ==, 2);           /* no -o */
  char txt[256];
  snprintf(txt, sizeof txt, "%s/out.txt", dir);
  PP_CHECK_INT(RUN("flame", "-o", txt, a), ==, 2); /* not .svg/.html */
  PP_CHECK_INT(RUN("folded", "--focus", "(", "-o", out), ==, 2);
  PP_CHECK_INT(entries(dir), ==, 2); /* a and junk only */
  temp_dir_remove(dir);
}

/* Standard output and error of view_cmd_main(args), into out and err. */
static int run_captured(char *out, char *err, size_t len, int argc, const char *const *args) {
  int fo = memfd_create("out", 0), fe = memfd_create("err", 0);
  PP_CHECK(fo >= 0 && fe >= 0);
  fflush(NULL);
  int so = dup(1), se = dup(2);
  dup2(fo, 1);
  dup2(fe, 2);
  int rc = run(argc, args);
  fflush(NULL);
  dup2(so, 1);
  dup2(se, 2);
  close(so);
  close(se);
  for (int i = 0; i < 2; i++) {
    char *buf = i ? err : out;
    ssize_t n = pread(i ? fe : fo, buf, len - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
  }
  close(fo);
  close(fe);
  return rc;
}

#define RUN_CAPTURED(out, err, ...)                                                                \
  run_captured(out, err, sizeof out, sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *), \
               (const char *[]){__VA_ARGS__})

/* top's wall row of name: wall, on-CPU and off-CPU as printed; false if
 * there is no such row. */
static bool wall_row(const char *top, const char *name, char wall[16], char on[16], char off[16]) {
  char tail[128];
  snprintf(tail, sizeof tail, "  %s\n", name);
  for (const char *line = top; *line;) {
    const char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line + 1) : strlen(line);
    size_t tl = strlen(tail);
    if (n >= tl && strncmp(line + n - tl, tail, tl) == 0)
      return sscanf(line, "%15s %*s %*s %15s %*s %15s", wall, on, off) == 3;
    line += n;
  }
  return false;
}

/* CPU and off-CPU profiles of the same code: top and flame show wall time
 * (by default, given both), split into on-CPU and off-CPU per function;
 * lock and other profiles in a directory are left out. */
static void test_cmd_wall_splits_on_and_off_cpu(void) {
  static const char *const cpu_lines[] = {"3 main;work", "2 main;wait"};
  static const char *const off_lines[] = {"4 main;wait", "1 main;sleep"};
  static const char *const lock_lines[] = {"7 main;locked"};
  char dir[64], cpu[256], off[256], lock[256], svg[256];
  static char out[1 << 14], err[1 << 14];
  if (!temp_dir(dir, sizeof dir))
    return;
  snprintf(cpu, sizeof cpu, "%s/p/cpu.pb.gz", dir);
  snprintf(off, sizeof off, "%s/p/offcpu.pb", dir);
  snprintf(lock, sizeof lock, "%s/p/lock.pb.gz", dir);
  snprintf(svg, sizeof svg, "%s/wall.svg", dir);
  write_kind_at(cpu, cpu_lines, 2, FIX_CPU, 10000, 0, true);
  write_kind_at(off, off_lines, 2, FIX_OFFCPU, 10000, 0, false);
  write_kind_at(lock, lock_lines, 1, FIX_LOCK, 10000, 0, true);
  char pdir[256];
  snprintf(pdir, sizeof pdir, "%s/p", dir);

  static const struct {
    const char *name, *wall, *on, *off;
  } want[] = {{"wait", "60us", "20us", "40us"},
              {"work", "30us", "30us", "0"},
              {"sleep", "10us", "0", "10us"},
              {"main", "0", "0", "0"}};
  PP_CHECK_INT(RUN_CAPTURED(out, err, "top", pdir), ==, 0); /* wall by default */
  PP_CHECK(strstr(out, "Type: wall (nanoseconds)") != NULL);
  PP_CHECK(strstr(out, "100.00% of 100us total") != NULL); /* not the lock profile's 70us */
  PP_CHECK(strstr(out, "locked") == NULL);
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    char w[16] = "", on[16] = "", of[16] = "";
    PP_CHECK(wall_row(out, want[i].name, w, on, of));
    PP_CHECK_STR(w, want[i].wall);
    PP_CHECK_STR(on, want[i].on);
    PP_CHECK_STR(of, want[i].off);
  }
  PP_CHECK(strstr(out, "  wait\n") < strstr(out, "  work\n")); /* sorted by wall */
  /* --cum splits the cumulative time: main holds everything */
  PP_CHECK_INT(RUN_CAPTURED(out, err, "top", "--cum", "--value", "wall", cpu, off), ==, 0);
  char w[16] = "", on[16] = "", of[16] = "";
  PP_CHECK(wall_row(out, "main", w, on, of));
  PP_CHECK_STR(w, "100us");
  PP_CHECK_STR(on, "50us");
  PP_CHECK_STR(of, "50us");
  /* one kind alone: the other part is 0 */
  PP_CHECK_INT(RUN_CAPTURED(out, err, "top", "--value", "wall", cpu), ==, 0);
  PP_CHECK(wall_row(out, "wait", w, on, of));
  PP_CHECK_STR(w, "20us");
  PP_CHECK_STR(of, "0");
  /* folded shows the wall time when asked */
  PP_CHECK_INT(RUN_CAPTURED(out, err, "folded", "--value", "wall", pdir), ==, 0);
  PP_CHECK_STR(out, "main;sleep 10000\nmain;wait 60000\nmain;work 30000\n");

  PP_CHECK_INT(RUN("flame", "-o", svg, pdir), ==, 0);
  char *s = slurp(svg);
  PP_CHECK(s && strstr(s, "Wall-time flame graph"));
  PP_CHECK(s &&
           strstr(s, "<title>wait (wall 60.00 us, on-CPU 20.00 us, off-CPU 40.00 us, 60.00%)"));
  free(s);

  /* nothing to show as wall time: one line naming what there is */
  PP_CHECK_INT(RUN_CAPTURED(out, err, "top", "--value", "wall", lock), ==, 2);
  PP_CHECK(strstr(err, "--value wall needs CPU profiles") && strstr(err, "holds 1 lock"));
  PP_CHECK(strchr(err, '\n') == err + strlen(err) - 1);
  PP_CHECK_INT(RUN_CAPTURED(out, err, "diff", "--value", "wall", cpu, "--", off), ==, 2);
  PP_CHECK(strstr(err, "--value wall is for top, folded and flame") != NULL);
  PP_CHECK_INT(RUN_CAPTURED(out, err, "folded", pdir), ==, 2); /* folded: no default wall */
  temp_dir_remove(dir);
}

int main(void) {
  PP_RUN(test_cmd_knows_its_subcommands);
  PP_RUN(test_cmd_folded_and_diff_write_their_files);
  PP_RUN(test_cmd_refusals_exit_2_and_write_nothing);
  PP_RUN(test_cmd_wall_splits_on_and_off_cpu);
  PP_DONE();
}
