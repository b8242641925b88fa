#!/usr/bin/env node
// device-sim's --ui page in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core): the page shows what an MCP client did to the device (every device of the
// board, the fan and the camera too), a call waiting for the device's button, and a timeline
// that tells the whole story: each call with its client (the name it gave and the device's tag
// of its session, explained on the page), the held call's row while it waits, its outcome with
// the same id and client after the press, session starts and ends. Pressing the button on the
// page confirms the call (the relay comes on, the banner goes, the press count and the timeline
// change); the temperature slider moves the sensor. Then device-sim over MQTT (a mosquitto of the
// test's own, a client speaking MQTT 5 with mqtt.js): its call and its session's start and end
// are on the page too. Screenshots: page.png (the call waiting), page-after.png, page-mqtt.png.
// Pages served by other local servers: one cannot press the button (a no-cors POST, which needs
// no preflight) nor call /mcp; one named with --allow-origin can call /mcp (CORS preflight and
// all) but still not press.
//
// Usage: UI_NODE_DIR=<dir with node_modules/playwright-core and mqtt> DEVICE_SIM=<binary>
//        MOSQUITTO=<binary> UI_ARTIFACTS=<dir for the screenshots> node tests/ui/page.mjs
// Prints one line per check and a summary; exits non-zero on any failure.

import { spawn } from "node:child_process";
import http from "node:http";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
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
const mqtt = require("mqtt");
const DEVICE_SIM = process.env.DEVICE_SIM ?? path.join(repo, "target", "debug", "device-sim");
const ARTIFACTS = process.env.UI_ARTIFACTS ?? path.join(repo, "target", "ui");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const MOSQUITTO = process.env.MOSQUITTO ?? "/usr/sbin/mosquitto";

let passed = 0, failed = 0;
function check(name, ok, detail = "") {
  if (ok) { passed++; console.log(`ok   - ${name}`); }
  else { failed++; console.log(`FAIL - ${name}${detail ? `: ${detail}` : ""}`); }
}

/** Starts device-sim and resolves with the addresses it prints (`ready`: the line that says
 *  its transport is up besides the UI). */
function startSim(args, ready = /serving MCP \(Streamable HTTP\) at (http:\/\/\S+)$/) {
  const child = spawn(DEVICE_SIM, args, { stdio: ["ignore", "ignore", "pipe"] });
  return new Promise((resolve, reject) => {
    const found = {};
    const timer = setTimeout(() => reject(new Error("device-sim did not start")), 10000);
    readline.createInterface({ input: child.stderr }).on("line", (line) => {
      let m;
      if ((m = line.match(/UI at (http:\/\/\S+?)\/?$/))) found.ui = m[1];
      if ((m = line.match(ready))) found.mcp = m[1] ?? m[0];
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

/** A 2025-11-25 session without elicitation, over plain fetch: `call(tool, args)`, and `end()`
 *  (DELETE). */
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
  const end = () => fetch(mcp, { method: "DELETE", headers: h });
  const call = async (name, args) => {
    const r = await fetch(mcp, { method: "POST", headers: h,
      body: JSON.stringify({ jsonrpc: "2.0", id: id++, method: "tools/call", params: { name, arguments: args } }) });
    if (!(r.headers.get("content-type") ?? "").startsWith("text/event-stream")) return r.json();
    // A call whose answer waited (for the device's button) comes as an SSE stream: its answer is
    // the event that carries a result.
    const events = (await r.text()).split("\n").filter((l) => l.startsWith("data:"))
      .map((l) => { try { return JSON.parse(l.slice(5)); } catch { return null; } });
    return events.find((e) => e && ("result" in e || "error" in e)) ?? {};
  };
  return { call, end };
}

/** A loopback port nobody listens on. */
function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** mosquitto on a loopback port of its own (a config file, never the system service). */
async function broker(dir) {
  const port = await freePort();
  const conf = path.join(dir, "mosquitto.conf");
  writeFileSync(conf, `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\n`);
  const child = spawn(MOSQUITTO, ["-c", conf], { stdio: "ignore" });
  for (let i = 0; i < 100; i++) {
    const up = await new Promise((resolve) => {
      const c = net.connect(port, "127.0.0.1", () => { c.destroy(); resolve(true); });
      c.on("error", () => resolve(false));
    });
    if (up) return { child, url: `mqtt://127.0.0.1:${port}` };
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill();
  throw new Error("mosquitto did not start");
}

/** An MCP client over MQTT 5 (EMQX's convention, as device-sim serves it): `id` is its MQTT
 *  client id; it initializes with `device` as `name`. `call(id, tool, args)` resolves with the
 *  answer; `bye()` says goodbye on its presence topic and disconnects. */
async function mqttClient(url, id, device, name) {
  const server = `${device}/devices/device-sim`;
  const DISCONNECTED = '{"jsonrpc":"2.0","method":"notifications/disconnected"}';
  const props = { userProperties: { "MCP-COMPONENT-TYPE": "mcp-client", "MCP-MQTT-CLIENT-ID": id } };
  const c = mqtt.connect(url, { clientId: id, protocolVersion: 5, clean: true, reconnectPeriod: 0,
    will: { topic: `$mcp-client/presence/${id}`, payload: DISCONNECTED, qos: 1, retain: false } });
  const waiting = new Map();
  let online;
  const present = new Promise((r) => { online = r; });
  c.on("message", (topic, payload) => {
    if (topic === `$mcp-server/presence/${server}` && payload.length) online();
    let m;
    try { m = JSON.parse(payload.toString()); } catch { return; }
    if (m && "id" in m && !("method" in m) && waiting.has(JSON.stringify(m.id))) {
      waiting.get(JSON.stringify(m.id))(m);
      waiting.delete(JSON.stringify(m.id));
    }
  });
  await new Promise((resolve, reject) => { c.once("connect", resolve); c.once("error", reject); });
  await c.subscribeAsync(`$mcp-rpc/${id}/+/#`, { qos: 1, nl: true });
  await c.subscribeAsync(`$mcp-server/presence/${server}`, { qos: 1 });
  await present;
  const ask = (topic, msg) => {
    const answer = new Promise((r) => waiting.set(JSON.stringify(msg.id), r));
    c.publish(topic, JSON.stringify(msg), { qos: 1, properties: props });
    return answer;
  };
  const rpc = `$mcp-rpc/${id}/${server}`;
  await ask(`$mcp-server/${server}`, { jsonrpc: "2.0", id: 0, method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name, version: "1" } } });
  c.publish(rpc, JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }), { qos: 1, properties: props });
  return {
    call: (n, tool, args) => ask(rpc, { jsonrpc: "2.0", id: n, method: "tools/call", params: { name: tool, arguments: args } }),
    bye: async () => {
      await c.publishAsync(`$mcp-client/presence/${id}`, DISCONNECTED, { qos: 1, properties: props });
      await c.endAsync();
    },
  };
}

/** The text of each row of the page's timeline, newest first, with its kind and outcome. */
function rows(page) {
  return page.$$eval("#timeline tr[data-seq]", (trs) => trs.map((tr) => ({
    kind: tr.dataset.kind, outcome: tr.dataset.outcome ?? null, event: tr.dataset.event ?? null,
    client: tr.querySelector("td.who")?.textContent ?? "", transport: tr.children[3]?.textContent ?? "",
    text: tr.textContent })));
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
  const { call, end } = await session(sim.mcp);
  await call("self.audio_speaker.set_volume", { volume: 40 });
  await call("self.screen.set_brightness", { brightness: 60 });
  await call("self.screen.set_theme", { theme: "dark" });
  await call("self.motor.move_to", { position: 600 });
  await call("self.fan.set_speed", { percent: 40 });
  await call("self.camera.capture", { width: 16, height: 16 });
  // Switching the relay on waits for the device's button: the call's answer is held back until
  // the person answers (it is the outcome then). It is the session's 7th call: id 7.
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
  await page.waitForSelector('#timeline tr[data-kind="call"][data-outcome="held"]', { timeout: 5000 });
  let tl = await rows(page);
  const heldRow = tl.find((r) => r.kind === "call" && r.outcome === "held");
  const who = heldRow.client;
  check("the held call has its row while it waits, with its id and client",
    heldRow.text.includes("self.relay.set") && heldRow.text.includes("id 7") && /^client #[0-9a-f]{4} "ui-page"$/.test(who),
    JSON.stringify(heldRow));
  check("every call names its client", tl.filter((r) => r.kind === "call").every((r) => r.client === who),
    JSON.stringify(tl.filter((r) => r.kind === "call").map((r) => r.client)));
  check("the session's start names its client",
    tl.some((r) => r.kind === "session" && r.event === "started" && r.client === who), JSON.stringify(tl));
  check("the page explains the client's tag",
    (await page.textContent("#legend")).includes("the device's own tag of that client's session") &&
    (await page.textContent("#confirm-tag")).startsWith(who.slice(who.lastIndexOf("#"))));
  check("the banner names the call it confirms", (await page.textContent("#confirm-id")) === "call id 7");
  check("the fan's tile shows its tachometer", (await page.textContent("#fan-rpm")) === "1200 rpm");
  check("the camera's tile shows the frames taken", (await page.textContent("#camera-frames")) === "1 frame");
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
  tl = await rows(page);
  const outcomeAt = tl.findIndex((r) => r.kind === "call" && r.outcome === "ok" && r.text.includes("self.relay.set"));
  const pressAt = tl.findIndex((r) => r.kind === "press");
  const outcome = tl[outcomeAt];
  check("the outcome carries the held call's id and client, and names the press",
    outcome && outcome.client === who && outcome.text.includes("outcome of the held call id 7") &&
    outcome.text.includes("after press #1"), JSON.stringify(outcome));
  check("the outcome comes after the press (newest first: above it)", outcomeAt >= 0 && outcomeAt < pressAt,
    `outcome row ${outcomeAt}, press row ${pressAt}`);
  const answer = await held;
  check("the relay call's own answer is the outcome, measured by the feedback contact",
    answer.result !== undefined && !answer.result.isError && answer.result._meta?.["io.github.mcu-mcp/evidence"]?.level === "measured"
      && answer.result?._meta?.["io.github.mcu-mcp/evidence"]?.observed === true, JSON.stringify(answer));

  // The temperature slider moves the sensor.
  await page.$eval("#temp-slider", (el) => { el.value = "35"; el.dispatchEvent(new Event("input")); el.dispatchEvent(new Event("change")); });
  await page.waitForFunction(() => document.getElementById("temperature").textContent === "35.0 °C", null, { timeout: 5000 });
  check("the temperature slider moved the sensor", true);
  const state = await (await fetch(sim.ui + "/sim/state")).json();
  check("GET /sim/state agrees", state.sensors.temperature === 35 && state.relay.on === true && state.button.presses === 1,
    JSON.stringify({ sensors: state.sensors, relay: state.relay, button: state.button }));
  // The client ends its session.
  await end();
  await page.waitForSelector('#timeline tr[data-kind="session"][data-event="ended"]', { timeout: 5000 });
  tl = await rows(page);
  check("the session's end is on the timeline with its client",
    tl.some((r) => r.event === "ended" && r.client === who && r.text.includes("DELETE")), JSON.stringify(tl[0]));
  check("no script errors on the page", errors.length === 0, errors.join("; "));
  const after = path.join(ARTIFACTS, "page-after.png");
  await page.screenshot({ path: after, fullPage: true });
  console.log(`screenshot: ${after}`);

  // Over MQTT: the call, and the client's session from start to end.
  const mosquitto = await broker(userData);
  let mqttSim;
  try {
    mqttSim = await startSim(["--mqtt", mosquitto.url, "--device-id", "page", "--confirm", "--ui", "127.0.0.1:0"],
      /connected to MQTT broker/);
    const tablet = await mqttClient(mosquitto.url, "tablet-1", "page", "kitchen-tablet");
    const answer = await tablet.call(3, "self.audio_speaker.set_volume", { volume: 35 });
    check("the MQTT client's call is answered", answer.result !== undefined && !answer.result.isError,
      JSON.stringify(answer));
    await page.goto(mqttSim.ui + "/");
    await page.waitForSelector('#timeline tr[data-kind="call"]', { timeout: 5000 });
    tl = await rows(page);
    const viaMqtt = tl.find((r) => r.kind === "call");
    check("the MQTT call is on the timeline with its transport, id and client",
      viaMqtt.transport === "mqtt" && viaMqtt.text.includes("id 3") && /^client #[0-9a-f]{4} "kitchen-tablet"$/.test(viaMqtt.client),
      JSON.stringify(viaMqtt));
    await tablet.bye();
    await page.waitForSelector('#timeline tr[data-kind="session"][data-event="ended"]', { timeout: 5000 });
    tl = await rows(page);
    check("the MQTT session's start and end are on the timeline",
      tl.some((r) => r.event === "started" && r.client === viaMqtt.client) &&
      tl.some((r) => r.event === "ended" && r.client === viaMqtt.client), JSON.stringify(tl));
    const shot = path.join(ARTIFACTS, "page-mqtt.png");
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`screenshot: ${shot}`);
  } finally {
    mqttSim?.child.kill();
    mosquitto.child.kill();
  }
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
