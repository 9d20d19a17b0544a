/* Folded stacks, the text form flamegraph.pl, speedscope and inferno read:
 * one line per stack that has samples ending in it,
 * "root;caller;...;leaf VALUE" (names cleaned by view_clean_name, so a ';'
 * in a name becomes ':'), in depth-first name order. */
#ifndef VIEW_FOLDED_H
#define VIEW_FOLDED_H
#include <stdio.h>

#include "view_model.h"

/* 0, or -1 on ENOMEM or a write error. */
int view_folded_write(FILE *f, const view_tree *t);
/* difffolded.pl's form, "STACK BEFORE AFTER", the raw values of BASE and
 * NEW (base and t share their names): every stack of either. 0 or -1. */
int view_folded_diff_write(FILE *f, const view_tree *base, const view_tree *t);
#endif
