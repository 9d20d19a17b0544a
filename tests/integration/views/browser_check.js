// Opens a flame graph in headless Chromium over the DevTools protocol (no
// npm packages: node's WebSocket, behind --experimental-websocket in node 20)
// and checks what a user does with it: the page loads with no console error
// or exception, a screenshot is taken, a real mouse click on a frame zooms on
// it (the frame then spans the width), the search highlights the matching
// frames and reports their share, and the zoom resets.
//
//   node --experimental-websocket browser_check.js FILE.svg|.html OUT.png \
//        ZOOM_NAME SEARCH_REGEX EXPECTED_PERCENT [PROFILE_DIR]
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const [file, png, zoomName, searchRe, wantPct] = process.argv.slice(2);
if (!wantPct) {
  console.error("usage: browser_check.js FILE OUT.png ZOOM_NAME SEARCH_REGEX EXPECTED_PERCENT");
  process.exit(2);
}
const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), "pushprof-chromium-"));
const chromium = process.env.CHROMIUM || "/usr/bin/chromium";
const args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
  "--disable-dev-shm-usage", "--user-data-dir=" + profileDir, "--remote-debugging-port=0",
  "about:blank"];
const proc = spawn(chromium, args, { stdio: ["ignore", "ignore", "pipe"] });
let failed = false;
const problems = [];
function fail(msg) {
  console.error("FAIL: " + msg);
  failed = true;
}
let closing = null; // set by run(): closes the browser over the protocol
function done() {
  const cleanup = () => {
    try {
      fs.rmSync(profileDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    } catch (e) {
      console.error("note: could not remove " + profileDir + ": " + e.message);
    }
    process.exit(failed ? 1 : 0);
  };
  // Browser.close first, so no child process writes into the profile while
  // it is removed; SIGKILL if it does not exit within 5 s.
  const killer = setTimeout(() => { try { proc.kill("SIGKILL"); } catch (e) { /* gone */ } }, 5000);
  proc.once("exit", () => { clearTimeout(killer); setTimeout(cleanup, 200); });
  if (proc.exitCode !== null || proc.signalCode !== null) {
    clearTimeout(killer);
    cleanup();
    return;
  }
  if (closing)
    closing().catch(() => proc.kill("SIGKILL"));
  else
    proc.kill("SIGKILL");
}
const timer = setTimeout(() => { fail("timed out after 90 s"); done(); }, 90000);

let stderr = "";
proc.stderr.on("data", (d) => {
  stderr += d.toString();
  const m = stderr.match(/DevTools listening on (ws:\/\/\S+)/);
  if (m && !proc.started) {
    proc.started = true;
    run(m[1]).catch((e) => fail(String(e && e.stack || e))).finally(() => {
      clearTimeout(timer);
      done();
    });
  }
});
proc.once("exit", (code) => {
  if (!proc.started) {
    console.error(stderr);
    fail("chromium exited with " + code + " before DevTools listened");
    done();
  }
});

async function run(url) {
  const ws = new WebSocket(url);
  await new Promise((res, rej) => { ws.onopen = res; ws.onerror = rej; });
  let next = 1;
  const pending = new Map();
  const waiters = [];
  ws.onmessage = (ev) => {
    const msg = JSON.parse(ev.data);
    if (msg.id && pending.has(msg.id)) {
      const { res, rej } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error)
        rej(new Error(JSON.stringify(msg.error)));
      else
        res(msg.result);
      return;
    }
    if (msg.method === "Runtime.exceptionThrown")
      problems.push("exception: " + JSON.stringify(msg.params.exceptionDetails).slice(0, 500));
    if (msg.method === "Runtime.consoleAPICalled" &&
        (msg.params.type === "error" || msg.params.type === "warning"))
      problems.push("console " + msg.params.type + ": " +
        JSON.stringify(msg.params.args).slice(0, 500));
    if (msg.method === "Log.entryAdded" && msg.params.entry.level === "error")
      problems.push("log error: " + msg.params.entry.text);
    for (let i = waiters.length - 1; i >= 0; i--)
      if (waiters[i].method === msg.method) {
        waiters[i].res(msg.params);
        waiters.splice(i, 1);
      }
  };
  const send = (method, params = {}, sessionId) => new Promise((res, rej) => {
    const id = next++;
    pending.set(id, { res, rej });
    ws.send(JSON.stringify({ id, method, params, sessionId }));
  });
  const waitFor = (method) => new Promise((res) => waiters.push({ method, res }));
  closing = () => send("Browser.close");

  const { targetId } = await send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
  const s = (m, p) => send(m, p, sessionId);
  await s("Page.enable");
  await s("Runtime.enable");
  await s("Log.enable");
  await s("Emulation.setDeviceMetricsOverride",
    { width: 1200, height: 900, deviceScaleFactor: 1, mobile: false });
  const loaded = waitFor("Page.loadEventFired");
  await s("Page.navigate", { url: "file://" + path.resolve(file) });
  await loaded;
  const ev = async (expr) => {
    const r = await s("Runtime.evaluate", { expression: expr, returnByValue: true });
    if (r.exceptionDetails)
      throw new Error(expr + ": " + JSON.stringify(r.exceptionDetails).slice(0, 400));
    return r.result.value;
  };
  const frames = await ev("window.ppflame ? ppflame.frames() : -1");
  if (!(frames > 0))
    fail("the script did not start (ppflame.frames() = " + frames + ")");
  const shot = await s("Page.captureScreenshot", { format: "png" });
  fs.writeFileSync(png, Buffer.from(shot.data, "base64"));
  console.log("loaded: " + frames + " frames; screenshot " + png);
  // The graph opens on its root, however deep it is: the root frame lies
  // inside the first screen, as the screenshot shows it.
  const rootBox = await ev(`(function () {
    var r = null;
    document.querySelectorAll("g.f").forEach(function (g) {
      if (g.ppframe.name === "all") r = g.querySelector("rect");
    });
    if (!r) return null;
    var b = r.getBoundingClientRect();
    return { top: b.top, bottom: b.bottom, screen: window.innerHeight,
      page: document.documentElement.scrollHeight || +document.documentElement.getAttribute("height") };
  })()`);
  if (!rootBox || rootBox.top < 0 || rootBox.bottom > rootBox.screen)
    fail("the root frame is not on the first screen: " + JSON.stringify(rootBox));
  else
    console.log(`root frame at ${rootBox.top.toFixed(0)}-${rootBox.bottom.toFixed(0)} px of a ` +
      `${rootBox.screen} px screen (page ${rootBox.page} px)`);

  // a real click in the middle of the widest frame called zoomName
  const box = await ev(`(function () {
    var best = null;
    document.querySelectorAll("g.f").forEach(function (g) {
      var r = g.querySelector("rect");
      if (g.ppframe.name === ${JSON.stringify(zoomName)} && (!best || +r.getAttribute("width") >
          +best.getAttribute("width"))) best = r;
    });
    if (!best) return null;
    var b = best.getBoundingClientRect();
    return { x: b.x + b.width / 2, y: b.y + b.height / 2, w: b.width };
  })()`);
  if (!box) {
    fail("no frame named " + zoomName);
  } else {
    for (const type of ["mouseMoved", "mousePressed", "mouseReleased"])
      await s("Input.dispatchMouseEvent",
        { type, x: box.x, y: box.y, button: "left", clickCount: 1 });
    const zoomed = await ev("ppflame.zoomed()");
    const widths = await ev(`ppflame.widths(${JSON.stringify(zoomName)})`);
    const visible = await ev("ppflame.visible()");
    console.log(`click on ${zoomName} (was ${box.w.toFixed(1)} px): zoomed=${zoomed}, ` +
      `its widths now ${JSON.stringify(widths)}, ${visible} of ${frames} frames visible`);
    if (zoomed !== zoomName)
      fail("the click did not zoom on " + zoomName + " (zoomed: " + zoomed + ")");
    if (!widths.some((w) => Math.abs(w - 1180) < 0.5))
      fail("after the zoom " + zoomName + " does not span the width");
    const details = await ev("document.getElementById('ppdetails').textContent");
    if (!details.startsWith(zoomName + " ("))
      fail("hovering did not show the details line: " + JSON.stringify(details));
  }
  const pct = await ev(`ppflame.search(${JSON.stringify(searchRe)})`);
  const matched = await ev("ppflame.matched()");
  console.log(`search ${searchRe}: ${pct}% ("${matched}")`);
  if (Math.abs(pct - Number(wantPct)) > 0.15)
    fail(`search ${searchRe} matched ${pct}%, want ${wantPct}%`);
  const magenta = await ev(`document.querySelectorAll('rect[fill="rgb(230,0,230)"]').length`);
  if (!(magenta > 0))
    fail("the search highlighted nothing");
  const shot2 = await s("Page.captureScreenshot", { format: "png" });
  fs.writeFileSync(png.replace(/\.png$/, "-zoom-search.png"), Buffer.from(shot2.data, "base64"));
  await ev("ppflame.unzoom()");
  const after = await ev("ppflame.visible()");
  if (after !== frames)
    fail(`after the reset ${after} of ${frames} frames are visible`);
  await new Promise((r) => setTimeout(r, 200));
  for (const p of problems)
    fail(p);
  if (!failed)
    console.log("browser check passed: " + file);
}
