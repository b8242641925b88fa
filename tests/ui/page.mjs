#!/usr/bin/env node
// device-sim's --ui page in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core): the page shows what an MCP client did to the device, a call waiting for the
// device's button, and a timeline; pressing the button on the page confirms the call (the relay
// comes on, the banner goes, the press count and the timeline change); the temperature slider
// moves the sensor. Screenshots before and after the press. Pages served by other local servers
// (issue 22): one cannot press the button (a no-cors POST, which needs no preflight) nor call
// /mcp; one named with --allow-origin can call /mcp (CORS preflight and all) but still not press.
//
// Usage: UI_NODE_DIR=<dir with node_modules/playwright-core> DEVICE_SIM=<binary>
//        UI_ARTIFACTS=<dir for the screenshots> node tests/ui/page.mjs
// Prints one line per check and a summary; exits non-zero on any failure.

import { spawn } from "node:child_process";
import http from "node:http";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..", "..");
const nodeDir = process.env.UI_NODE_DIR ?? path.join(repo, "target", "ui", "node");
const require = createRequire(path.join(nodeDir, "package.json"));
const { chromium } = require("playwright-core");
const DEVICE_SIM = process.env.DEVICE_SIM ?? path.join(repo, "target", "debug", "device-sim");
const ARTIFACTS = process.env.UI_ARTIFACTS ?? path.join(repo, "target", "ui");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

let passed = 0, failed = 0;
function check(name, ok, detail = "") {
  if (ok) { passed++; console.log(`ok   - ${name}`); }
  else { failed++; console.log(`FAIL - ${name}${detail ? `: ${detail}` : ""}`); }
}

/** Starts device-sim and resolves with the addresses it prints. */
function startSim(args) {
  const child = spawn(DEVICE_SIM, args, { stdio: ["ignore", "ignore", "pipe"] });
  return new Promise((resolve, reject) => {
    const found = {};
    const timer = setTimeout(() => reject(new Error("device-sim did not start")), 10000);
    readline.createInterface({ input: child.stderr }).on("line", (line) => {
      let m;
      if ((m = line.match(/UI at (http:\/\/\S+?)\/?$/))) found.ui = m[1];
      if ((m = line.match(/serving MCP \(Streamable HTTP\) at (http:\/\/\S+)$/))) found.mcp = m[1];
      if (found.ui && found.mcp && !found.done) {
        found.done = true;
        clearTimeout(timer);
        resolve({ child, ...found });
      }
    });
    child.on("exit", (code) => reject(new Error(`device-sim exited (${code})`)));
  });
}

/** Another local web server (the Inspector's, a dev server on :3000): a page of its own. */
function elsewhere() {
  return new Promise((resolve) => {
    const server = http.createServer((_, res) => {
      res.writeHead(200, { "Content-Type": "text/html" });
      res.end("<!doctype html><title>elsewhere</title>");
    });
    server.listen(0, "127.0.0.1", () => resolve({ server, url: `http://127.0.0.1:${server.address().port}` }));
  });
}

/** In `page`: presses the device's button with a no-cors POST (no preflight), then tries
 *  `initialize` on /mcp; what the page could see of each. */
function fromPage(page, ui, mcp) {
  return page.evaluate(async ({ ui, mcp }) => {
    const out = {};
    try { await fetch(ui + "/sim/button", { method: "POST", mode: "no-cors" }); out.press = "sent"; }
    catch (e) { out.press = "failed: " + e; }
    try {
      const r = await fetch(mcp, { method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize",
          params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "elsewhere", version: "1" } } }) });
      out.mcp = { status: r.status, session: r.headers.get("mcp-session-id"), body: await r.json() };
    } catch (e) { out.mcp = "failed: " + e; }
    return out;
  }, { ui, mcp });
}

/** A 2025-11-25 session without elicitation, over plain fetch. */
async function session(mcp) {
  const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
  const init = await fetch(mcp, {
    method: "POST", headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "ui-page", version: "1" } } }),
  });
  await init.json();
  const h = { ...headers, "Mcp-Session-Id": init.headers.get("mcp-session-id"), "MCP-Protocol-Version": "2025-11-25" };
  await fetch(mcp, { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) });
  let id = 1;
  return async (name, args) => {
    const r = await fetch(mcp, { method: "POST", headers: h,
      body: JSON.stringify({ jsonrpc: "2.0", id: id++, method: "tools/call", params: { name, arguments: args } }) });
    if (!(r.headers.get("content-type") ?? "").startsWith("text/event-stream")) return r.json();
    // A call whose answer waited (for the device's button) comes as an SSE stream: its answer is
    // the event that carries a result.
    const events = (await r.text()).split("\n").filter((l) => l.startsWith("data:"))
      .map((l) => { try { return JSON.parse(l.slice(5)); } catch { return null; } });
    return events.find((e) => e && ("result" in e || "error" in e)) ?? {};
  };
}

const other = await elsewhere();
const named = await elsewhere();
const sim = await startSim(["--http", "127.0.0.1:0", "--ui", "127.0.0.1:0", "--confirm",
  "--allow-origin", named.url]);
const userData = mkdtempSync(path.join(os.tmpdir(), "device-sim-ui-"));
let context;
try {
  mkdirSync(ARTIFACTS, { recursive: true });
  // What a client did before anyone looked: volume, screen, a motor move, a relay waiting.
  const call = await session(sim.mcp);
  await call("self.audio_speaker.set_volume", { volume: 40 });
  await call("self.screen.set_brightness", { brightness: 60 });
  await call("self.screen.set_theme", { theme: "dark" });
  await call("self.motor.move_to", { position: 600 });
  // Switching the relay on waits for the device's button: the call's answer is held back until
  // the person answers (it is the outcome then).
  const held = call("self.relay.set", { on: true });

  context = await chromium.launchPersistentContext(userData, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const page = context.pages()[0] ?? await context.newPage();

  // Pages of other local servers.
  await page.goto(other.url + "/");
  const foreign = await fromPage(page, sim.ui, sim.mcp);
  check("another local page cannot call /mcp", typeof foreign.mcp === "string", JSON.stringify(foreign));
  await page.goto(named.url + "/");
  const allowed = await fromPage(page, sim.ui, sim.mcp);
  check("a page named with --allow-origin calls /mcp and reads its session id",
    allowed.mcp?.status === 200 && allowed.mcp.body?.result?.serverInfo?.name === "device-sim" && !!allowed.mcp.session,
    JSON.stringify(allowed));
  // A press that got through is counted within the debounce (~30 ms): give it ample time.
  await new Promise((r) => setTimeout(r, 500));
  const pressed = (await (await fetch(sim.ui + "/sim/state")).json()).button.presses;
  check("neither page could press the device's button", pressed === 0,
    `presses ${pressed}; ${JSON.stringify({ foreign: foreign.press, allowed: allowed.press })}`);

  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(sim.ui + "/");
  await page.waitForFunction(() => document.getElementById("volume").textContent === "40 %", null, { timeout: 5000 });
  check("the page shows the volume the client set", true);
  check("the page shows the theme", (await page.textContent("#theme")) === "dark");
  await page.waitForSelector("#confirm.show", { timeout: 5000 });
  check("the confirmation banner asks the question",
    (await page.textContent("#confirm-question")).startsWith("Switch the relay-controlled load on? (asked by "));
  check("the relay is off while it waits", (await page.textContent("#relay")) === "off");
  const presses = await page.textContent("#presses");
  check("no press yet", presses === "0", presses);
  const rowsBefore = await page.locator("#timeline tr[data-seq]").count();
  check("the timeline lists the client's calls", rowsBefore >= 4, String(rowsBefore));
  const before = path.join(ARTIFACTS, "page.png");
  await page.screenshot({ path: before, fullPage: true });
  console.log(`screenshot: ${before}`);

  // The person reads the question (a press counts once it was shown for a second: the hint says
  // when), then presses the button on the page.
  await page.waitForFunction(() => document.getElementById("press-hint").textContent.startsWith("pressing confirms"),
    null, { timeout: 5000 });
  await page.click("#press");
  await page.waitForFunction(() => document.getElementById("presses").textContent === "1", null, { timeout: 5000 });
  check("the press count went up", true);
  await page.waitForFunction(() => document.getElementById("relay").textContent === "on", null, { timeout: 5000 });
  check("the press confirmed the relay call: the relay is on", true);
  await page.waitForFunction(() => !document.getElementById("confirm").classList.contains("show"), null, { timeout: 5000 });
  check("the banner is gone", true);
  check("the timeline shows the press",
    (await page.locator('#timeline tr[data-kind="press"]').count()) === 1);
  check("the timeline shows the confirmed outcome with its evidence",
    (await page.locator('#timeline tr[data-kind="call"]', { hasText: "confirmed" }).filter({ hasText: "measured" }).count()) === 1);
  const answer = await held;
  check("the relay call's own answer is the outcome, measured by the feedback contact",
    answer.result?.isError === false && answer.result?.evidence?.level === "measured"
      && answer.result?.evidence?.observed === true, JSON.stringify(answer));

  // The temperature slider moves the sensor.
  await page.$eval("#temp-slider", (el) => { el.value = "35"; el.dispatchEvent(new Event("input")); el.dispatchEvent(new Event("change")); });
  await page.waitForFunction(() => document.getElementById("temperature").textContent === "35.0 °C", null, { timeout: 5000 });
  check("the temperature slider moved the sensor", true);
  const state = await (await fetch(sim.ui + "/sim/state")).json();
  check("GET /sim/state agrees", state.sensors.temperature === 35 && state.relay.on === true && state.button.presses === 1,
    JSON.stringify({ sensors: state.sensors, relay: state.relay, button: state.button }));
  check("no script errors on the page", errors.length === 0, errors.join("; "));
  const after = path.join(ARTIFACTS, "page-after.png");
  await page.screenshot({ path: after, fullPage: true });
  console.log(`screenshot: ${after}`);
} catch (e) {
  check("the run completed", false, e.stack ?? String(e));
} finally {
  if (context) await context.close();
  sim.child.kill();
  other.server.close();
  named.server.close();
  rmSync(userData, { recursive: true, force: true });
}
console.log(`ui: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
