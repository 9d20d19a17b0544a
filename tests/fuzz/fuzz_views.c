/* The views' readers and writers on any profile: bytes go through
 * pp_pprof_parse (as `pushprof flame` reads a file); an accepted profile
 * becomes a call tree (each sample type in turn), folded stacks, a flame
 * graph and a differential one against itself. What must hold:
 *  - the folded counts add up to the tree's total, one "STACK COUNT" per
 *    line, valid UTF-8 without control bytes;
 *  - the SVG is valid UTF-8 without control bytes, every '<' between the
 *    frames starts one of the tags the writer emits and every '&' an entity
 *    it emits, so no frame name can break the XML or inject markup;
 *  - a diff of a profile against itself changes nothing (+0.0 pt; BEFORE ==
 *    AFTER);
 *  - view_clean_name/view_xml_escape of the raw input leave no ';', control
 *    byte, invalid UTF-8 or markup character. */
#include <string.h>

#include "fuzz_target.h"
#include "pp_parse_ref.h"
#include "view_folded.h"
#include "view_model.h"
#include "view_svg.h"

#define MAX_UNPACKED (1u << 20)

/* Independent of views/: true if s[0..len) is UTF-8 without C0 controls
 * (newline allowed when nl_ok), DEL, surrogates, overlong forms. */
static bool clean_utf8(const char *s, size_t len, bool nl_ok) {
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0; i < len;) {
    unsigned c = u[i];
    if (c < 0x80) {
      if ((c < 0x20 && !(nl_ok && c == '\n')) || c == 0x7f)
        return false;
      i++;
      continue;
    }
    size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    if (n == 0 || c > 0xf4 || i + n > len)
      return false;
    uint32_t cp = c & (0x7f >> n);
    for (size_t k = 1; k < n; k++) {
      if ((u[i + k] & 0xc0) != 0x80)
        return false;
      cp = cp << 6 | (u[i + k] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += n;
  }
  return true;
}

static void check_markup(const char *svg, size_t len) {
  static const char *const tags[] = {"<g class=\"f\">", "<title>", "</title>", "<rect ",
                                     "<text ",          "</text>", "</g>"};
  static const char *const ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
  const char *start = strstr(svg, "<g id=\"ppframes\">\n");
  const char *end = strstr(svg, "</g>\n<script");
  FUZZ_CHECK(start && end && start < end, "no frames group");
  for (const char *p = start + strlen("<g id=\"ppframes\">\n"); p < end; p++) {
    if (*p == '<') {
      bool known = false;
      for (size_t i = 0; i < sizeof tags / sizeof tags[0] && !known; i++)
        known = strncmp(p, tags[i], strlen(tags[i])) == 0;
      FUZZ_CHECK(known, "markup from a name: %.60s", p);
    } else if (*p == '&') {
      bool known = false;
      for (size_t i = 0; i < sizeof ents / sizeof ents[0] && !known; i++)
        known = strncmp(p, ents[i], strlen(ents[i])) == 0;
      FUZZ_CHECK(known, "a raw '&': %.60s", p);
    }
  }
  FUZZ_CHECK(clean_utf8(svg, len, true), "the SVG is not clean UTF-8");
}

static void check_folded(const char *out, size_t len, int64_t total, bool diff) {
  FUZZ_CHECK(clean_utf8(out, len, true), "folded output is not clean UTF-8");
  int64_t sum = 0;
  for (const char *line = out; line < out + len;) {
    const char *nl = memchr(line, '\n', (size_t)(out + len - line));
    FUZZ_CHECK(nl != NULL, "an unterminated line");
    const char *sp = nl;
    while (sp > line && sp[-1] != ' ')
      sp--;
    FUZZ_CHECK(sp > line + 1, "a line without a stack");
    long long v = strtoll(sp, NULL, 10);
    if (diff) {
      const char *sp2 = sp - 1;
      while (sp2 > line && sp2[-1] != ' ')
        sp2--;
      FUZZ_CHECK(strtoll(sp2, NULL, 10) == v, "a stack changed in a diff against itself");
    }
    sum += v;
    line = nl + 1;
  }
  FUZZ_CHECK(sum == total, "folded counts add up to %lld, the tree holds %lld", (long long)sum,
             (long long)total);
}

static char *render(const view_tree *t, const view_tree *base, int what, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  FUZZ_CHECK(f != NULL, "open_memstream");
  view_svg_opts o = {"fuzz <&>", "sub \"'", base, false, base != NULL, base == NULL};
  int rc = what == 0   ? view_folded_write(f, t)
           : what == 1 ? view_folded_diff_write(f, base, t)
                       : view_svg_write(f, t, &o);
  FUZZ_CHECK(rc == 0, "writing failed");
  FUZZ_CHECK(fclose(f) == 0, "fclose");
  return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* the raw bytes as a name */
  char *clean = malloc(size * 3 + 16);
  FUZZ_CHECK(clean != NULL, "out of memory");
  size_t cl = view_clean_name((const char *)data, size, clean, size * 3);
  FUZZ_CHECK(clean_utf8(clean, cl, false) && !memchr(clean, ';', cl), "view_clean_name left junk");
  size_t elen = 0;
  char *esc = NULL;
  FILE *ef = open_memstream(&esc, &elen);
  FUZZ_CHECK(ef && view_xml_escape(ef, clean, cl) == 0 && fclose(ef) == 0, "escape");
  FUZZ_CHECK(!memchr(esc, '<', elen) && !memchr(esc, '>', elen) && !memchr(esc, '"', elen),
             "view_xml_escape left markup");
  free(esc);
  free(clean);

  char why[256] = "";
  Perftools__Profiles__Profile *p = pp_ref_parse(data, size, MAX_UNPACKED, why, sizeof why);
  if (!p)
    return 0;
  for (size_t vix = 0; vix < p->n_sample_type && vix < 4; vix++) {
    view_names *names = view_names_new();
    FUZZ_CHECK(names != NULL, "out of memory");
    view_tree *t = view_tree_build(p, vix, NULL, names, why, sizeof why);
    view_tree *again = t ? view_tree_build(p, vix, NULL, names, why, sizeof why) : NULL;
    FUZZ_CHECK(t || why[0], "a refused tree must say why");
    if (t && again) {
      size_t len = 0;
      char *out = render(t, NULL, 0, &len);
      check_folded(out, len, view_tree_total(t), false);
      free(out);
      out = render(t, again, 1, &len);
      check_folded(out, len, view_tree_total(t), true);
      free(out);
      if (view_tree_total(t) > 0) {
        out = render(t, NULL, 2, &len);
        check_markup(out, len);
        free(out);
        out = render(t, again, 2, &len);
        check_markup(out, len);
        size_t frames = 0, same = 0;
        char *script = strstr(out, "<script");
        FUZZ_CHECK(script != NULL, "no script");
        *script = 0; /* the script's own comments mention <title> */
        for (const char *q = strstr(out, "<title>"); q; q = strstr(q + 1, "<title>")) {
          frames++;
          const char *e = strstr(q, "</title>");
          same += e && e - q > 10 && strncmp(e - 10, "; +0.0 pt)", 10) == 0;
        }
        FUZZ_CHECK(frames == same, "a diff against itself: %zu of %zu frames changed",
                   frames - same, frames);
        free(out);
      }
      view_top_row *rows = NULL;
      size_t nrows = 0;
      FUZZ_CHECK(view_tree_top(t, vix & 1, &rows, &nrows) == 0, "top");
      int64_t flat = 0;
      for (size_t i = 0; i < nrows; i++) {
        flat += rows[i].flat;
        FUZZ_CHECK(rows[i].cum >= rows[i].flat && rows[i].cum <= view_tree_total(t),
                   "cum %lld outside [flat %lld, total]", (long long)rows[i].cum,
                   (long long)rows[i].flat);
      }
      FUZZ_CHECK(flat == view_tree_total(t), "flat adds up to %lld, total %lld", (long long)flat,
                 (long long)view_tree_total(t));
      free(rows);
    }
    view_tree_free(t);
    view_tree_free(again);
    view_names_free(names);
  }
  perftools__profiles__profile__free_unpacked(p, NULL);
  return 0;
}
