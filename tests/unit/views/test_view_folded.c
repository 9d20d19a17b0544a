/* views/view_folded.c: folded stacks, root first, one line per stack with
 * its value, and difffolded lines with the base and the new value. */
#include "view_fixture.h"
#include "view_folded.h"
#include "view_model.h"

/* The folded (base NULL) or difffolded output of t, as a string. */
static char *folded(const view_tree *base, const view_tree *t) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  PP_CHECK(f != NULL);
  PP_CHECK_INT(base ? view_folded_diff_write(f, base, t) : view_folded_write(f, t), ==, 0);
  fclose(f);
  return buf;
}

static void test_folded_writes_each_stack_root_first(void) {
  const char *lines[] = {"3 main;a;b;a", "2 main;a", "5 main;c"};
  Perftools__Profiles__Profile *p = make(lines, 3);
  view_names *names = view_names_new();
  char why[256];
  view_tree *t = p && names ? view_tree_build(p, 0, NULL, names, why, sizeof why) : NULL;
  PP_CHECK(t != NULL);
  if (t) {
    char *s = folded(NULL, t);
    PP_CHECK_STR(s, "main;a 2\nmain;a;b;a 3\nmain;c 5\n");
    free(s);
  }
  view_tree_free(t);
  view_names_free(names);
  perftools__profiles__profile__free_unpacked(p, NULL);
}

/* Each stack of the known splits with both values, 0 where absent. */
static void test_folded_diff_known_splits(void) {
  known_splits k;
  known_splits_make(&k);
  if (!k.base || !k.new_) {
    known_splits_free(&k);
    return;
  }
  char *s = folded(k.base, k.new_);
  PP_CHECK_STR(s, "main;a;b 50 144\nmain;a;c 50 36\nmain;d 0 20\n");
  free(s);
  known_splits_free(&k);
}

int main(void) {
  PP_RUN(test_folded_writes_each_stack_root_first);
  PP_RUN(test_folded_diff_known_splits);
  PP_DONE();
}
