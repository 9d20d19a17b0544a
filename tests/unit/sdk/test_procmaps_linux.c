/* /proc/self/maps parsing: well-formed lines, odd paths, malformed input. */
#include <stdint.h>
#include <string.h>

#include "pp_test.h"
#include "procmaps.h"

static int parse_str(const char *s, procmaps *m) {
  return procmaps_parse(s, strlen(s), m);
}

static void test_procmaps_parses_typical_lines(void) {
  const char *text =
      "55d0c6a00000-55d0c6a02000 r--p 00000000 08:01 1311 /usr/bin/cat\n"
      "55d0c6a02000-55d0c6a07000 r-xp 00002000 08:01 1311 /usr/bin/cat\n"
      "7f1c2a000000-7f1c2a021000 rw-p 00000000 00:00 0 \n"
      "7ffd1c3f0000-7ffd1c411000 rw-p 00000000 00:00 0                          [stack]\n"
      "7ffd1c5f2000-7ffd1c5f4000 r-xp 00000000 00:00 0                          [vdso]\n"
      "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";
  procmaps m;
  PP_CHECK_INT(parse_str(text, &m), ==, 0);
  PP_CHECK_INT(m.n, ==, 6);
  PP_CHECK_INT(m.skipped, ==, 0);
  if (m.n == 6) {
    PP_CHECK(m.v[1].start == 0x55d0c6a02000ull);
    PP_CHECK(m.v[1].end == 0x55d0c6a07000ull);
    PP_CHECK(m.v[1].offset == 0x2000);
    PP_CHECK_INT(m.v[1].dev_major, ==, 8);
    PP_CHECK_INT(m.v[1].dev_minor, ==, 1);
    PP_CHECK_INT(m.v[1].inode, ==, 1311);
    PP_CHECK(m.v[1].executable && m.v[1].readable && !m.v[1].writable && !m.v[1].shared);
    PP_CHECK_STR(m.v[1].path, "/usr/bin/cat");
    PP_CHECK(procmaps_is_file(&m.v[1]));
    PP_CHECK(!m.v[0].executable);
    PP_CHECK_STR(m.v[2].path, "");
    PP_CHECK(!procmaps_is_file(&m.v[2]));
    PP_CHECK_STR(m.v[3].path, "[stack]");
    PP_CHECK_STR(m.v[4].path, "[vdso]");
    PP_CHECK(!procmaps_is_file(&m.v[4]));
    PP_CHECK(m.v[5].start == 0xffffffffff600000ull);
    PP_CHECK(m.v[5].executable && !m.v[5].readable);
  }
  procmaps_free(&m);
}

static void test_procmaps_keeps_spaces_and_strips_deleted(void) {
  const char *text = "7f0000000000-7f0000001000 r-xp 00001000 fd:02 99 /opt/my app/lib x.so\n"
                     "7f0000001000-7f0000002000 r-xs 00000000 fd:02 100 /tmp/gone.so (deleted)\n"
                     "7f0000002000-7f0000003000 r-xp 00000000 fd:02 101 /tmp/ (deleted)/real\n";
  procmaps m;
  PP_CHECK_INT(parse_str(text, &m), ==, 0);
  PP_CHECK_INT(m.n, ==, 3);
  if (m.n == 3) {
    PP_CHECK_STR(m.v[0].path, "/opt/my app/lib x.so");
    PP_CHECK(!m.v[0].deleted);
    PP_CHECK_STR(m.v[1].path, "/tmp/gone.so");
    PP_CHECK(m.v[1].deleted);
    PP_CHECK(m.v[1].shared);
    PP_CHECK_STR(m.v[2].path, "/tmp/ (deleted)/real");
    PP_CHECK(!m.v[2].deleted);
  }
  procmaps_free(&m);
}

static void test_procmaps_skips_malformed_lines(void) {
  const char *text = "garbage\n"
                     "\n"
                     "1000-\n"
                     "1000-2000\n"
                     "1000-2000 rwxq 0 0:0 0\n"
                     "2000-1000 r-xp 00000000 00:00 0 /backwards\n"
                     "1000-2000 r-xp 0 00:00 12x /glued\n"
                     "11112222333344445-2000 r-xp 0 00:00 0 /too-long-hex\n"
                     "1000-2000 r-xp 0 00:00 99999999999999999999999 /inode-overflow\n"
                     "3000-4000 r-xp 00000000 08:01 7 /ok\n"
                     "5000-6000 r-xp 00000000 08:01 8"; /* truncated: no newline, no path */
  procmaps m;
  PP_CHECK_INT(parse_str(text, &m), ==, 0);
  PP_CHECK_INT(m.n, ==, 2);
  PP_CHECK_INT(m.skipped, ==, 8);
  if (m.n == 2) {
    PP_CHECK_STR(m.v[0].path, "/ok");
    PP_CHECK(m.v[1].start == 0x5000);
    PP_CHECK_STR(m.v[1].path, "");
  }
  procmaps_free(&m);
}

static void test_procmaps_survives_every_truncation(void) {
  const char *text = "55d0c6a02000-55d0c6a07000 r-xp 00002000 08:01 1311 /usr/bin/cat (deleted)\n";
  size_t len = strlen(text);
  for (size_t i = 0; i <= len; i++) {
    procmaps m;
    PP_CHECK_INT(procmaps_parse(text, i, &m), ==, 0);
    PP_CHECK(m.n <= 1);
    procmaps_free(&m);
  }
  /* embedded NUL bytes and binary noise */
  const char noise[] = "1000-2000 r-xp 0 0:0 1 /a\0b\n\xff\xfe-\x01 r\n";
  procmaps m;
  PP_CHECK_INT(procmaps_parse(noise, sizeof noise - 1, &m), ==, 0);
  PP_CHECK_INT(m.n, ==, 0);
  procmaps_free(&m);
}

static void test_procmaps_reads_self(void) {
  procmaps m;
  PP_CHECK_INT(procmaps_read_self(&m), ==, 0);
  PP_CHECK(m.n > 3);
  PP_CHECK_INT(m.skipped, ==, 0);
  /* the code of this function lies in an executable file mapping */
  uint64_t pc = (uint64_t)(uintptr_t)&test_procmaps_reads_self;
  int hits = 0;
  for (size_t i = 0; i < m.n; i++)
    if (pc >= m.v[i].start && pc < m.v[i].end && m.v[i].executable && procmaps_is_file(&m.v[i]))
      hits++;
  PP_CHECK_INT(hits, ==, 1);
  procmaps_free(&m);
}

static void test_procmaps_read_file_is_bounded(void) {
  char *buf = NULL;
  size_t len = 0;
  PP_CHECK_INT(procmaps_read_file("/proc/self/maps", 64, &buf, &len), ==, -1);
  PP_CHECK(buf == NULL);
  PP_CHECK_INT(procmaps_read_file("/proc/self/maps", 1 << 24, &buf, &len), ==, 0);
  PP_CHECK(buf && len > 64 && strlen(buf) == len);
  free(buf);
  PP_CHECK_INT(procmaps_read_file("/nonexistent/maps", 1 << 20, &buf, &len), ==, -1);
}

int main(void) {
  PP_RUN(test_procmaps_parses_typical_lines);
  PP_RUN(test_procmaps_keeps_spaces_and_strips_deleted);
  PP_RUN(test_procmaps_skips_malformed_lines);
  PP_RUN(test_procmaps_survives_every_truncation);
  PP_RUN(test_procmaps_reads_self);
  PP_RUN(test_procmaps_read_file_is_bounded);
  PP_DONE();
}
