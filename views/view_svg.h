/* Flame graphs as one self-contained SVG file (or an HTML page holding it):
 * no network, its own small script for click-to-zoom, search (highlights the
 * matching frames and shows their total share) and a details line. Frames
 * narrower than 0.1 px at full width are left out, as flamegraph.pl does.
 * Each frame's <title> is "NAME (N samples, P%)" (a differential graph adds
 * "; +X.X pt"; a wall-time graph's is "NAME (wall X, on-CPU Y, off-CPU Z,
 * P%)"). Names are escaped and cleaned (view_clean_name), so no
 * profile can break the XML. */
#ifndef VIEW_SVG_H
#define VIEW_SVG_H
#include <stdbool.h>
#include <stdio.h>

#include "view_model.h"

typedef struct view_svg_opts {
  const char *title;    /* any bytes; escaped */
  const char *subtitle; /* may be NULL */
  /* A differential graph: t is NEW, base the BASE profile's tree (sharing
   * t's names). Each frame is coloured by the change of its share of all
   * samples, red grew, blue shrank. NULL for a plain graph. */
  const view_tree *base;
  bool html;     /* wrap the SVG in an HTML page */
  bool inverted; /* the root at the bottom (the classic look); else on top */
  /* t holds wall time (view_node.off_cpu its off-CPU part): each frame is
   * coloured by its off-CPU share, warm on-CPU, blue off-CPU, magenta
   * between, as in hot/cold flame graphs. Ignored with base. */
  bool wall;
} view_svg_opts;

/* Writes the picture of t to f. 0, or -1 on ENOMEM or a write error. */
int view_svg_write(FILE *f, const view_tree *t, const view_svg_opts *o);

/* Writes s to f with &, <, >, " and ' escaped (s must be clean UTF-8, see
 * view_clean_name). 0 or -1. */
int view_xml_escape(FILE *f, const char *s, size_t len);

/* "1,234 samples", "1.23 s", "12.50 MiB", "3 objects": v in the unit of a
 * sample type (bytes in powers of 1024; a count named by what its type
 * counts). */
void view_format_value(int64_t v, const char *type, const char *unit, char *buf, size_t len);
#endif
