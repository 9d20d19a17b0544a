/* views/view_cmd.c, the subcommands top, folded, flame and diff: each
 * writes its output file whole or, on bad input or a usage error, exits 2
 * and leaves no file behind (not even its temporary one). */
#include <dirent.h>
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

int main(void) {
  PP_RUN(test_cmd_knows_its_subcommands);
  PP_RUN(test_cmd_folded_and_diff_write_their_files);
  PP_RUN(test_cmd_refusals_exit_2_and_write_nothing);
  PP_DONE();
}
