/* Tree -> SVG. Frames are laid out in one pass over the nodes (a parent is
 * always created before its children, so its x is known when they are
 * placed); the root sits on top, or at the bottom when inverted. */
#include "view_svg.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "view_flame_js.h" /* view_flame_js[]: views/view_flame.js */

#define SVG_WIDTH 1200
#define XPAD 10
#define FRAME_H 16
#define FONT_SIZE 12
#define TOP_PAD 56
#define BOTTOM_PAD 34
#define MIN_WIDTH_PX 0.1
#define NAME_MAX_BYTES 2048
#define NO_NODE UINT32_MAX
#define LEGEND_MAX 12

int view_xml_escape(FILE *f, const char *s, size_t len) {
  size_t run = 0;
  for (size_t i = 0; i < len; i++) {
    const char *e = NULL;
    switch (s[i]) {
    case '&':
      e = "&amp;";
      break;
    case '<':
      e = "&lt;";
      break;
    case '>':
      e = "&gt;";
      break;
    case '"':
      e = "&quot;";
      break;
    case '\'':
      e = "&#39;";
      break;
    default:
      continue;
    }
    if (i > run && fwrite(s + run, 1, i - run, f) != i - run)
      return -1;
    if (fputs(e, f) == EOF)
      return -1;
    run = i + 1;
  }
  if (len > run && fwrite(s + run, 1, len - run, f) != len - run)
    return -1;
  return 0;
}

/* Cleans then escapes any bytes. */
static int put_text(FILE *f, const char *s, size_t max_bytes, char *buf) {
  size_t n = view_clean_name(s, strlen(s), buf, max_bytes);
  return view_xml_escape(f, buf, n);
}

static void with_commas(uint64_t v, char *buf, size_t len) {
  char digits[32];
  int n = snprintf(digits, sizeof digits, "%" PRIu64, v);
  size_t o = 0;
  for (int i = 0; i < n && o + 2 < len; i++) {
    if (i && (n - i) % 3 == 0)
      buf[o++] = ',';
    buf[o++] = digits[i];
  }
  buf[o] = 0;
}

void view_format_value(int64_t v, const char *type, const char *unit, char *buf, size_t len) {
  char num[40];
  uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  const char *sign = v < 0 ? "-" : "";
  if (strcmp(unit, "nanoseconds") == 0) {
    double s = (double)a / 1e9;
    if (s >= 1)
      snprintf(buf, len, "%s%.2f s", sign, s);
    else if (s >= 1e-3)
      snprintf(buf, len, "%s%.2f ms", sign, s * 1e3);
    else
      snprintf(buf, len, "%s%.2f us", sign, s * 1e6);
  } else if (strcmp(unit, "bytes") == 0) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double b = (double)a;
    size_t u = 0;
    while (b >= 1024 && u + 1 < sizeof units / sizeof units[0])
      b /= 1024, u++;
    snprintf(buf, len, u ? "%s%.2f %s" : "%s%.0f %s", sign, b, units[u]);
  } else if (strcmp(unit, "count") == 0) {
    /* what is counted: samples, or the word after the type's last '_'
     * (alloc_objects, inuse_objects: objects) */
    const char *what = type && *type ? type : "samples", *us = strrchr(what, '_');
    if (us && us[1])
      what = us + 1;
    with_commas(a, num, sizeof num);
    snprintf(buf, len, "%s%s %s", sign, num,
             strcmp(what, "samples") == 0 && a == 1 ? "sample" : what);
  } else {
    with_commas(a, num, sizeof num);
    snprintf(buf, len, "%s%s %s", sign, num, unit);
  }
}

static uint32_t hash_name(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

static void hsl_rgb(double h, double s, double l, int rgb[3]) {
  double c = (1 - fabs(2 * l - 1)) * s, hp = fmod(h, 360) / 60, x = c * (1 - fabs(fmod(hp, 2) - 1));
  double r = 0, g = 0, b = 0;
  if (hp < 1)
    r = c, g = x;
  else if (hp < 2)
    r = x, g = c;
  else if (hp < 3)
    g = c, b = x;
  else if (hp < 4)
    g = x, b = c;
  else if (hp < 5)
    r = x, b = c;
  else
    r = c, b = x;
  double m = l - c / 2;
  rgb[0] = (int)lround((r + m) * 255);
  rgb[1] = (int)lround((g + m) * 255);
  rgb[2] = (int)lround((b + m) * 255);
}

/* Colour of a frame by its group (the main binary warm, each library its own
 * hue, unnamed addresses grey), varied by the name so neighbours differ. */
static void group_colour(const view_tree *t, uint32_t group, const char *name, int rgb[3]) {
  double v1 = (hash_name(name) & 0xffff) / 65535.0, v2 = ((hash_name(name) >> 16) & 0xff) / 255.0;
  if (group == VIEW_GROUP_MAIN) {
    rgb[0] = 205 + (int)(50 * v2);
    rgb[1] = (int)(230 * v1);
    rgb[2] = (int)(55 * v2);
  } else if (group == VIEW_GROUP_UNNAMED) {
    rgb[0] = rgb[1] = rgb[2] = 170 + (int)(40 * v1);
  } else {
    double hue = 90 + (hash_name(view_tree_group_name(t, group)) % 211);
    hsl_rgb(hue, 0.55, 0.55 + 0.2 * v1, rgb);
  }
}

/* red grew, blue shrank; intensity = |delta| / the largest |delta| */
static void diff_colour(double delta, double maxabs, int rgb[3]) {
  double i = maxabs > 0 ? fabs(delta) / maxabs : 0;
  if (fabs(delta) < 0.05) {
    rgb[0] = rgb[1] = rgb[2] = 235;
    return;
  }
  int c = (int)lround(225 * (1 - i));
  if (delta > 0)
    rgb[0] = 255, rgb[1] = c, rgb[2] = c;
  else
    rgb[0] = c, rgb[1] = c, rgb[2] = 255;
}

/* Hue of an on-CPU frame (red to yellow) and of an off-CPU one (blues),
 * varied by name; a frame with both turns from the one to the other the
 * short way round, through magenta, so a mixed frame is neither. */
static void wall_colour(double off_share, const char *name, int rgb[3]) {
  uint32_t h = hash_name(name);
  double v1 = (h & 0xffff) / 65535.0, v2 = ((h >> 16) & 0xff) / 255.0;
  double on = 50 * v1, off = 200 + 30 * v2 - 360;
  double hue = on + (off - on) * (off_share < 0 ? 0 : off_share > 1 ? 1 : off_share);
  hsl_rgb(hue < 0 ? hue + 360 : hue, 0.8, 0.55 + 0.1 * v2, rgb);
}

/* A part of a frame's wall time: "0" when there is none, not "0.00 us". */
static void wall_part(int64_t v, const char *type, const char *unit, char *buf, size_t len) {
  if (v == 0)
    snprintf(buf, len, "0");
  else
    view_format_value(v, type, unit, buf, len);
}

/* White text on a dark frame (the strongest blues of a diff). */
static bool dark(const int rgb[3]) {
  return 299 * rgb[0] + 587 * rgb[1] + 114 * rgb[2] < 110000;
}

static int put_header(FILE *f, const view_svg_opts *o, int height, char *buf) {
  /* The frames' script reads which way the stacks grow (data-root). */
  if (o->html) {
    if (fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>", f) == EOF ||
        put_text(f, o->title ? o->title : "pushprof", 512, buf) != 0 ||
        fputs("</title></head><body style=\"margin:0\">\n", f) == EOF)
      return -1;
  } else if (fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n", f) == EOF) {
    return -1;
  }
  if (fprintf(f,
              "<svg version=\"1.1\" id=\"ppflame\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d "
              "%d\" xmlns=\"http://www.w3.org/2000/svg\" data-width=\"%d\" data-xpad=\"%d\" "
              "data-font=\"%d\" data-root=\"%s\">\n",
              SVG_WIDTH, height, SVG_WIDTH, height, SVG_WIDTH, XPAD, FONT_SIZE,
              o->inverted ? "bottom" : "top") < 0)
    return -1;
  if (fprintf(f,
              "<style>text{font-family:Verdana,sans-serif;font-size:%dpx;fill:#000}"
              "g.f:hover rect{stroke:#000;stroke-width:0.5;cursor:pointer}"
              "g.parent{opacity:0.5}.btn{cursor:pointer;fill:#333}text.w{fill:#fff}"
              "#pptitle{font-size:17px;text-anchor:middle}"
              "#ppsub{fill:#555;text-anchor:middle}</style>\n"
              "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f6f6ee\"/>\n"
              "<text id=\"pptitle\" x=\"%d\" y=\"22\">",
              FONT_SIZE, SVG_WIDTH / 2) < 0 ||
      put_text(f, o->title ? o->title : "Flame graph", 512, buf) != 0 ||
      fprintf(f, "</text>\n<text id=\"ppsub\" x=\"%d\" y=\"38\">", SVG_WIDTH / 2) < 0 ||
      put_text(f, o->subtitle ? o->subtitle : "", 512, buf) != 0 ||
      fprintf(f,
              "</text>\n<text id=\"ppreset\" class=\"btn\" x=\"%d\" y=\"22\" "
              "display=\"none\">Reset Zoom</text>\n"
              "<text id=\"ppsearch\" class=\"btn\" x=\"%d\" y=\"22\" "
              "text-anchor=\"end\">Search</text>\n"
              "<text id=\"ppdetails\" x=\"%d\" y=\"%d\"> </text>\n"
              "<text id=\"ppmatched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"></text>\n",
              XPAD, SVG_WIDTH - XPAD, XPAD, height - 12, SVG_WIDTH - XPAD, height - 12) < 0)
    return -1;
  return 0;
}

static int put_legend(FILE *f, const view_tree *t, const bool *drawn, bool diff, bool wall,
                      char *buf) {
  double x = XPAD;
  if (wall && !diff) {
    static const char *const key[] = {"on-CPU", "both", "off-CPU"};
    for (int i = 0; i < 3; i++) {
      int rgb[3];
      wall_colour(i / 2.0, "", rgb);
      if (fprintf(f,
                  "<rect x=\"%.0f\" y=\"42\" width=\"10\" height=\"10\" fill=\"rgb(%d,%d,%d)\"/>"
                  "<text x=\"%.0f\" y=\"51\">%s</text>\n",
                  x, rgb[0], rgb[1], rgb[2], x + 14, key[i]) < 0)
        return -1;
      x += 24 + 8 * strlen(key[i]);
    }
    return fprintf(f,
                   "<text x=\"%.0f\" y=\"51\">colour: the frame's share of off-CPU time "
                   "(waiting: sleep, I/O, locks)</text>\n",
                   x + 8) < 0
               ? -1
               : 0;
  }
  if (diff) {
    static const char *const key[] = {"grew", "shrank", "no change"};
    static const int col[3][3] = {{255, 60, 60}, {60, 60, 255}, {235, 235, 235}};
    for (int i = 0; i < 3; i++) {
      if (fprintf(f,
                  "<rect x=\"%.0f\" y=\"42\" width=\"10\" height=\"10\" fill=\"rgb(%d,%d,%d)\"/>"
                  "<text x=\"%.0f\" y=\"51\">%s</text>\n",
                  x, col[i][0], col[i][1], col[i][2], x + 14, key[i]) < 0)
        return -1;
      x += 24 + 8 * strlen(key[i]);
    }
    return 0;
  }
  size_t shown = 0;
  for (uint32_t g = 0; g < view_tree_group_count(t) && shown < LEGEND_MAX; g++) {
    if (!drawn[g])
      continue;
    int rgb[3];
    const char *label = view_tree_group_name(t, g);
    group_colour(t, g, g == VIEW_GROUP_MAIN ? "main" : label, rgb);
    if (fprintf(f,
                "<rect x=\"%.0f\" y=\"42\" width=\"10\" height=\"10\" fill=\"rgb(%d,%d,%d)\"/>"
                "<text x=\"%.0f\" y=\"51\">",
                x, rgb[0], rgb[1], rgb[2], x + 14) < 0 ||
        put_text(f, label, 40, buf) != 0 || fputs("</text>\n", f) == EOF)
      return -1;
    size_t l = strlen(label);
    x += 24 + 7.5 * (double)(l > 40 ? 43 : l);
    shown++;
    if (x > SVG_WIDTH - 200)
      break;
  }
  return 0;
}

/* Cuts name to what fits in w px, as the script does after a zoom. */
static size_t fit_label(const char *name, double w, char *out, size_t outlen) {
  long n = (long)floor((w - 3) / (FONT_SIZE * 0.59));
  if (n < 3)
    return 0;
  size_t chars = 0, i = 0, cut = 0;
  for (; name[i]; i++) {
    if (((unsigned char)name[i] & 0xc0) == 0x80)
      continue;
    if ((long)chars == n - 2)
      cut = i;
    chars++;
  }
  if ((long)chars <= n) {
    snprintf(out, outlen, "%s", name);
    return strlen(out);
  }
  snprintf(out, outlen, "%.*s..", (int)cut, name);
  return strlen(out);
}

int view_svg_write(FILE *f, const view_tree *t, const view_svg_opts *o) {
  size_t count = 0, bcount = 0;
  const view_node *nodes = view_tree_nodes(t, &count);
  const view_node *bnodes = o->base ? view_tree_nodes(o->base, &bcount) : NULL;
  const view_names *names = view_tree_names(t);
  int64_t total = view_tree_total(t);
  int64_t btotal = o->base ? view_tree_total(o->base) : 0;
  double scale = total > 0 ? (double)(SVG_WIDTH - 2 * XPAD) / (double)total : 0;
  double *x = malloc((count + 1) * sizeof *x);
  uint32_t *base_of = o->base ? malloc((count + 1) * sizeof *base_of) : NULL;
  bool *drawn_groups = calloc(view_tree_group_count(t) + 1, 1);
  char *name = malloc(NAME_MAX_BYTES + 8), *label = malloc(NAME_MAX_BYTES + 8);
  char *buf = malloc(NAME_MAX_BYTES * 3 + 8);
  int rc = -1;
  if (!x || (o->base && !base_of) || !drawn_groups || !name || !label || !buf)
    goto out;
  (void)bnodes;
  (void)bcount;

  /* x of every node, and its counterpart in BASE */
  x[0] = XPAD;
  if (base_of)
    base_of[0] = 0;
  double maxabs = 0;
  for (size_t i = 0; i < count; i++) {
    double cx = x[i];
    for (uint32_t c = nodes[i].first_child; c; c = nodes[c].next_sibling) {
      x[c] = cx;
      cx += (double)nodes[c].total * scale;
    }
    bool drawn = (double)nodes[i].total * scale >= MIN_WIDTH_PX;
    if (drawn)
      drawn_groups[nodes[i].group] = true;
    if (base_of) {
      uint32_t bp = i ? base_of[nodes[i].parent] : 0;
      uint32_t c = i == 0 ? 0 : bp == NO_NODE ? 0 : view_tree_child(o->base, bp, nodes[i].name);
      base_of[i] = i == 0 ? 0 : c ? c : NO_NODE; /* 0 is the root: no child is */
      if (drawn) {
        double before = base_of[i] == NO_NODE || btotal <= 0
                            ? 0
                            : (double)bnodes[base_of[i]].total / (double)btotal;
        double d = 100 * ((double)nodes[i].total / (double)total - before);
        if (fabs(d) > maxabs)
          maxabs = fabs(d);
      }
    }
  }
  int height = TOP_PAD + (int)(view_tree_max_depth(t) + 1) * FRAME_H + BOTTOM_PAD;
  if (put_header(f, o, height, buf) != 0 ||
      put_legend(f, t, drawn_groups, o->base, o->wall, buf) != 0)
    goto out;
  if (fputs("<g id=\"ppframes\">\n", f) == EOF)
    goto out;
  const char *unit = view_tree_value_unit(t), *vtype = view_tree_value_type(t);
  for (size_t i = 0; i < count; i++) {
    const view_node *n = &nodes[i];
    double w = (double)n->total * scale;
    if (w < MIN_WIDTH_PX)
      continue;
    const char *raw = view_names_at(names, n->name);
    size_t nl = view_clean_name(raw, strlen(raw), name, NAME_MAX_BYTES);
    char val[300], cval[300 * 3 + 8];
    bool wall = o->wall && !base_of;
    if (wall) {
      char a[64], b[64], c[64];
      view_format_value(n->total, vtype, unit, a, sizeof a);
      wall_part(n->total - n->off_cpu, vtype, unit, b, sizeof b);
      wall_part(n->off_cpu, vtype, unit, c, sizeof c);
      snprintf(val, sizeof val, "wall %s, on-CPU %s, off-CPU %s", a, b, c);
    } else {
      view_format_value(n->total, vtype, unit, val, sizeof val);
    }
    size_t vl = view_clean_name(val, strlen(val), cval, 300); /* the unit is the profile's */
    double pct = 100.0 * (double)n->total / (double)total;
    int rgb[3];
    double delta = 0;
    if (base_of) {
      double before = base_of[i] == NO_NODE || btotal <= 0
                          ? 0
                          : (double)bnodes[base_of[i]].total / (double)btotal;
      delta = 100 * ((double)n->total / (double)total - before);
      diff_colour(delta, maxabs, rgb);
    } else if (wall) {
      wall_colour(n->total > 0 ? (double)n->off_cpu / (double)n->total : 0, raw, rgb);
    } else {
      group_colour(t, n->group, raw, rgb);
    }
    /* Root on top by default: a deep graph (100+ frames) opens on its root
     * and widest frames, not on thin towers over empty space. */
    int y = o->inverted ? height - BOTTOM_PAD - (int)(n->depth + 1) * FRAME_H
                        : TOP_PAD + (int)n->depth * FRAME_H;
    size_t ll = fit_label(name, w, label, NAME_MAX_BYTES + 8);
    if (fputs("<g class=\"f\"><title>", f) == EOF || view_xml_escape(f, name, nl) != 0 ||
        fputs(" (", f) == EOF || view_xml_escape(f, cval, vl) != 0 ||
        fprintf(f, ", %.2f%%", pct) < 0 ||
        (base_of && fprintf(f, "; %+.1f pt", fabs(delta) < 0.05 ? 0.0 : delta) < 0) ||
        fprintf(f,
                ")</title><rect x=\"%.3f\" y=\"%d\" width=\"%.3f\" height=\"%d\" "
                "fill=\"rgb(%d,%d,%d)\" rx=\"2\" ry=\"2\"/><text x=\"%.3f\" y=\"%d\"%s>",
                x[i], y, w, FRAME_H - 1, rgb[0], rgb[1], rgb[2], x[i] + 3, y + FRAME_H - 4,
                dark(rgb) ? " class=\"w\"" : "") < 0 ||
        view_xml_escape(f, label, ll) != 0 || fputs("</text></g>\n", f) == EOF)
      goto out;
  }
  if (fputs("</g>\n<script type=\"text/ecmascript\"><![CDATA[\n", f) == EOF ||
      fputs(view_flame_js, f) == EOF || fputs("]]></script>\n</svg>\n", f) == EOF ||
      (o->html && fputs("</body></html>\n", f) == EOF))
    goto out;
  rc = ferror(f) ? -1 : 0;
out:
  free(x);
  free(base_of);
  free(drawn_groups);
  free(name);
  free(label);
  free(buf);
  return rc;
}
