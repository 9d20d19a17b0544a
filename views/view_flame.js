// The script inside every flame graph pushprof writes (view_svg.c embeds
// this file at build time). No network, no libraries. It reads the frames
// back from the document: <g class="f"> holding <title>, <rect>, <text>.
// Click a frame to zoom on it, "Reset Zoom" (or Escape) to go back,
// "Search" (or Ctrl-F) to highlight frames matching a regular expression.
// Tests drive it through window.ppflame.
(function () {
  "use strict";
  var root = document.getElementById("ppflame");
  var W = +root.getAttribute("data-width");
  var XPAD = +root.getAttribute("data-xpad");
  var FONT = +root.getAttribute("data-font");
  // Where the root is: ancestors are above a frame when it is on top.
  var ROOT_ON_TOP = root.getAttribute("data-root") === "top";
  var EPS = 0.01;
  var frames = [];
  var zoomed = null;
  var details = document.getElementById("ppdetails");
  var matched = document.getElementById("ppmatched");
  var reset = document.getElementById("ppreset");
  var searchBtn = document.getElementById("ppsearch");

  function fit(f, w) {
    var n = Math.floor((w - 3) / (FONT * 0.59));
    if (n < 3) {
      f.t.textContent = "";
      return;
    }
    var chars = Array.from(f.name);
    f.t.textContent = chars.length <= n ? f.name : chars.slice(0, n - 2).join("") + "..";
  }

  function place(f, x, w) {
    f.r.setAttribute("x", x.toFixed(3));
    f.r.setAttribute("width", w.toFixed(3));
    f.t.setAttribute("x", (x + 3).toFixed(3));
    fit(f, w);
  }

  function show(f, on) {
    if (on)
      f.g.removeAttribute("display");
    else
      f.g.setAttribute("display", "none");
  }

  function zoom(z) {
    var x0 = z.x, w0 = z.w, s = (W - 2 * XPAD) / w0;
    for (var i = 0; i < frames.length; i++) {
      var f = frames[i];
      f.g.classList.remove("parent");
      if (ROOT_ON_TOP ? f.y < z.y : f.y > z.y) {
        var ancestor = f.x <= x0 + EPS && f.x + f.w >= x0 + w0 - EPS;
        show(f, ancestor);
        if (ancestor) {
          f.g.classList.add("parent");
          place(f, XPAD, W - 2 * XPAD);
        }
      } else {
        var inside = f.x >= x0 - EPS && f.x + f.w <= x0 + w0 + EPS;
        show(f, inside);
        if (inside)
          place(f, XPAD + (f.x - x0) * s, f.w * s);
      }
    }
    zoomed = z;
    reset.removeAttribute("display");
  }

  function unzoom() {
    for (var i = 0; i < frames.length; i++) {
      var f = frames[i];
      f.g.classList.remove("parent");
      show(f, true);
      place(f, f.x, f.w);
    }
    zoomed = null;
    reset.setAttribute("display", "none");
  }

  // Highlights the frames whose name matches re; returns their total share
  // of all samples in percent (nested matches counted once).
  function search(term) {
    var re;
    try {
      re = new RegExp(term);
    } catch (e) {
      matched.textContent = "bad regular expression: " + term;
      return -1;
    }
    var spans = [];
    for (var i = 0; i < frames.length; i++) {
      var f = frames[i];
      if (re.test(f.name)) {
        f.r.setAttribute("fill", "rgb(230,0,230)");
        spans.push([f.x, f.x + f.w]);
      } else {
        f.r.setAttribute("fill", f.fill);
      }
    }
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var covered = 0, end = -1;
    for (var j = 0; j < spans.length; j++) {
      var a = Math.max(spans[j][0], end), b = spans[j][1];
      if (b > a)
        covered += b - a;
      end = Math.max(end, b);
    }
    var pct = covered / (W - 2 * XPAD) * 100;
    matched.textContent = "Matched: " + pct.toFixed(1) + "% (" + spans.length + " frames)";
    searchBtn.textContent = "Clear search";
    return Math.round(pct * 10) / 10;
  }

  function clearSearch() {
    for (var i = 0; i < frames.length; i++)
      frames[i].r.setAttribute("fill", frames[i].fill);
    matched.textContent = "";
    searchBtn.textContent = "Search";
  }

  function askSearch() {
    if (searchBtn.textContent !== "Search") {
      clearSearch();
      return;
    }
    var term = window.prompt("Search for frames matching (a regular expression):", "");
    if (term)
      search(term);
  }

  var gs = root.querySelectorAll("g.f");
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i];
    var r = g.querySelector("rect"), t = g.querySelector("text");
    var title = g.querySelector("title").textContent;
    var f = {
      g: g, r: r, t: t,
      x: +r.getAttribute("x"), w: +r.getAttribute("width"), y: +r.getAttribute("y"),
      name: title.substring(0, title.lastIndexOf(" (")),
      title: title, fill: r.getAttribute("fill")
    };
    g.ppframe = f;
    frames.push(f);
  }
  function frameOf(e) {
    var n = e.target;
    while (n && n !== root && !(n.classList && n.classList.contains("f")))
      n = n.parentNode;
    return n && n !== root ? n.ppframe : null;
  }
  root.addEventListener("click", function (e) {
    var f = frameOf(e);
    if (f)
      zoom(f);
  });
  root.addEventListener("mouseover", function (e) {
    var f = frameOf(e);
    details.textContent = f ? f.title : "";
  });
  root.addEventListener("mouseout", function () { details.textContent = ""; });
  reset.addEventListener("click", unzoom);
  searchBtn.addEventListener("click", askSearch);
  window.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") {
      e.preventDefault();
      askSearch();
    } else if (e.key === "Escape") {
      unzoom();
      clearSearch();
    }
  });
  // The widest visible frame called name, or null.
  function byName(name) {
    var best = null;
    for (var i = 0; i < frames.length; i++)
      if (frames[i].name === name && (!best || frames[i].w > best.w))
        best = frames[i];
    return best;
  }
  window.ppflame = {
    frames: function () { return frames.length; },
    // Zooms on the widest frame named name; returns its width afterwards.
    zoom: function (name) {
      var f = byName(name);
      if (!f)
        return -1;
      zoom(f);
      return +f.r.getAttribute("width");
    },
    // Widths of the visible frames named name (after a zoom).
    widths: function (name) {
      var out = [];
      for (var i = 0; i < frames.length; i++)
        if (frames[i].name === name && frames[i].g.getAttribute("display") !== "none")
          out.push(+frames[i].r.getAttribute("width"));
      return out;
    },
    visible: function () {
      var n = 0;
      for (var i = 0; i < frames.length; i++)
        if (frames[i].g.getAttribute("display") !== "none")
          n++;
      return n;
    },
    unzoom: unzoom,
    search: search,
    clearSearch: clearSearch,
    matched: function () { return matched.textContent; },
    zoomed: function () { return zoomed ? zoomed.name : null; }
  };
})();
