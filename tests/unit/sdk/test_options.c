/* options_import: pushprof_options from the 0.1 header (no struct_size),
 * from this header, from an older and from a newer tagged header. */
#include <stdint.h>
#include <string.h>

#include "options.h"
#include "pp_test.h"

/* pushprof.h 0.1's struct, verbatim. */
typedef struct options_v0 {
  int hz;
  const char *service;
  const char *output_path;
  int signal_number;
  const char *socket_path;
  int upload_period_s;
  int exit_timeout_ms;
  int handle_term_signals;
  const char *spool_dir;
  int backlog;
} options_v0;

/* A later header: this one's fields plus two appended. */
typedef struct options_next {
  pushprof_options cur;
  const char *future_path;
  int future_flag;
} options_next;

/* Checks that o carries every field 0.1 had, as want has them. */
static void check_v0_fields(const pushprof_options *o, const options_v0 *want) {
  PP_CHECK_INT(o->hz, ==, want->hz);
  PP_CHECK_STR(o->service, want->service);
  PP_CHECK_STR(o->output_path, want->output_path);
  PP_CHECK_INT(o->signal_number, ==, want->signal_number);
  PP_CHECK_STR(o->socket_path, want->socket_path);
  PP_CHECK_INT(o->upload_period_s, ==, want->upload_period_s);
  PP_CHECK_INT(o->exit_timeout_ms, ==, want->exit_timeout_ms);
  PP_CHECK_INT(o->handle_term_signals, ==, want->handle_term_signals);
  PP_CHECK_STR(o->spool_dir, want->spool_dir);
  PP_CHECK_INT(o->backlog, ==, want->backlog);
}

static void test_options_null_is_all_unset(void) {
  pushprof_options o;
  char err[256];
  memset(&o, 0x5a, sizeof o);
  PP_CHECK_INT(options_import(NULL, &o, err, sizeof err), ==, 0);
  PP_CHECK_INT(o.struct_size, ==, PUSHPROF_OPTIONS_STRUCT_SIZE);
  PP_CHECK_INT(o.hz, ==, 0);
  PP_CHECK(o.service == NULL && o.output_path == NULL && o.socket_path == NULL);
  PP_CHECK_INT(o.backlog, ==, 0);
}

static void test_options_init_reads_every_field(void) {
  pushprof_options in = PUSHPROF_OPTIONS_INIT, o;
  char err[256];
  PP_CHECK_INT(in.struct_size & PUSHPROF_OPTIONS_TAG_MASK, ==, PUSHPROF_OPTIONS_TAG);
  PP_CHECK_INT(in.struct_size & ~PUSHPROF_OPTIONS_TAG_MASK, ==, sizeof(pushprof_options));
  in.hz = 250;
  in.service = "svc";
  in.output_path = "/o";
  in.signal_number = 12;
  in.socket_path = "/s";
  in.upload_period_s = 3;
  in.exit_timeout_ms = 400;
  in.handle_term_signals = 1;
  in.spool_dir = "/sp";
  in.backlog = 9;
  PP_CHECK_INT(options_import(&in, &o, err, sizeof err), ==, 0);
  check_v0_fields(&o, &(options_v0){250, "svc", "/o", 12, "/s", 3, 400, 1, "/sp", 9});

  pushprof_options f;
  memset(&f, 0x77, sizeof f); /* pushprof_options_init clears every field */
  pushprof_options_init(&f);
  PP_CHECK_INT(f.struct_size, ==, PUSHPROF_OPTIONS_STRUCT_SIZE);
  PP_CHECK(f.hz == 0 && f.service == NULL && f.backlog == 0 && f.reserved0 == 0);
}

static void test_options_reads_the_v0_layout(void) {
  options_v0 v = {.hz = 300,
                  .service = "old",
                  .output_path = "/old",
                  .signal_number = 10,
                  .socket_path = "/old.sock",
                  .upload_period_s = 7,
                  .exit_timeout_ms = 900,
                  .handle_term_signals = 1,
                  .spool_dir = "/spool",
                  .backlog = 4};
  pushprof_options o;
  char err[256];
  PP_CHECK_INT(sizeof v, ==, OPTIONS_V0_SIZE);
  PP_CHECK_INT(options_import((const pushprof_options *)(const void *)&v, &o, err, sizeof err), ==,
               0);
  check_v0_fields(&o, &v);
  PP_CHECK_INT(o.reserved0, ==, 0);
}

/* 0.1's padding after hz and at the end is not a field there: garbage in the
 * tail padding is ignored; hz set means the padding after it is ignored. */
static void test_options_v0_padding_is_not_read_as_fields(void) {
  unsigned char raw[OPTIONS_V0_SIZE];
  memset(raw, 0, sizeof raw);
  int hz = 50;
  memcpy(raw, &hz, sizeof hz);
  memset(raw + 4, 0xee, 4);  /* padding after hz */
  memset(raw + 68, 0xee, 4); /* tail padding */
  pushprof_options o;
  char err[256];
  PP_CHECK_INT(options_import((const pushprof_options *)(const void *)raw, &o, err, sizeof err), ==,
               0);
  PP_CHECK_INT(o.hz, ==, 50);
  PP_CHECK_INT(o.reserved0, ==, 0);
}

/* A caller that zeroed the struct and forgot PUSHPROF_OPTIONS_INIT. */
static void test_options_zeroed_without_init_keeps_hz(void) {
  pushprof_options in = {.hz = 40, .socket_path = "/s"}, o;
  char err[256];
  PP_CHECK_INT(options_import(&in, &o, err, sizeof err), ==, 0);
  PP_CHECK_INT(o.hz, ==, 40);
  PP_CHECK_STR(o.socket_path, "/s");
}

/* The first tagged layout's size is always read (today it is the whole
 * struct; later ones read their fields past it as unset). */
static void test_options_older_tagged_size_leaves_later_fields_unset(void) {
  options_next buf;
  memset(&buf, 0, sizeof buf);
  buf.cur.struct_size = PUSHPROF_OPTIONS_TAG | OPTIONS_V1_SIZE;
  buf.cur.hz = 77;
  buf.cur.backlog = 3;
  pushprof_options o;
  char err[256];
  PP_CHECK_INT(options_import(&buf.cur, &o, err, sizeof err), ==, 0);
  PP_CHECK_INT(o.hz, ==, 77);
  PP_CHECK_INT(o.backlog, ==, 3);
  PP_CHECK_INT(o.struct_size, ==, PUSHPROF_OPTIONS_STRUCT_SIZE);
}

static void test_options_rejects_a_tagged_size_too_small(void) {
  pushprof_options in = PUSHPROF_OPTIONS_INIT, o;
  char err[256];
  in.struct_size = PUSHPROF_OPTIONS_TAG | 16;
  PP_CHECK_INT(options_import(&in, &o, err, sizeof err), ==, PUSHPROF_EINVAL);
  PP_CHECK(strstr(err, "pushprof_options.struct_size=0x70700010") != NULL);
  PP_CHECK(strstr(err, "PUSHPROF_OPTIONS_INIT") != NULL);
}

/* A newer header: its unknown fields unset are fine, set is EINVAL. */
static void test_options_newer_header_unset_tail_ok_set_tail_rejected(void) {
  options_next n;
  memset(&n, 0, sizeof n);
  n.cur.struct_size = PUSHPROF_OPTIONS_TAG | (unsigned)sizeof n;
  n.cur.hz = 123;
  pushprof_options o;
  char err[512];
  PP_CHECK_INT(options_import(&n.cur, &o, err, sizeof err), ==, 0);
  PP_CHECK_INT(o.hz, ==, 123);
  n.future_flag = 1;
  PP_CHECK_INT(options_import(&n.cur, &o, err, sizeof err), ==, PUSHPROF_EINVAL);
  PP_CHECK(strstr(err, "does not know") != NULL);
  PP_CHECK(strstr(err, "upgrade libpushprof") != NULL);
  char want[64];
  snprintf(want, sizeof want, "byte %zu", offsetof(options_next, future_flag));
  PP_CHECK(strstr(err, want) != NULL);
  n.future_flag = 0;
  n.future_path = "/x";
  PP_CHECK_INT(options_import(&n.cur, &o, err, sizeof err), ==, PUSHPROF_EINVAL);
  /* reserved0 is a later version's field: set, it is not ignored either. */
  pushprof_options r = PUSHPROF_OPTIONS_INIT;
  r.reserved0 = 5;
  PP_CHECK_INT(options_import(&r, &o, err, sizeof err), ==, PUSHPROF_EINVAL);
  PP_CHECK(strstr(err, "byte 68") != NULL);
}

int main(void) {
  PP_RUN(test_options_null_is_all_unset);
  PP_RUN(test_options_init_reads_every_field);
  PP_RUN(test_options_reads_the_v0_layout);
  PP_RUN(test_options_v0_padding_is_not_read_as_fields);
  PP_RUN(test_options_zeroed_without_init_keeps_hz);
  PP_RUN(test_options_older_tagged_size_leaves_later_fields_unset);
  PP_RUN(test_options_rejects_a_tagged_size_too_small);
  PP_RUN(test_options_newer_header_unset_tail_ok_set_tail_rejected);
  PP_DONE();
}
