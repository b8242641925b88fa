// What the Node.js interop clients share (the Python ones share harness.py): where the npm packages
// and device-sim are, the check tally and its summary, and starting device-sim over HTTP with its
// --ui JSON API (the person next to the device).
//
// Environment: INTEROP_NODE_DIR (the folder whose node_modules hold the clients; default
// target/interop/node), DEVICE_SIM (the binary; default target/debug/device-sim), INTEROP_STRICT=1
// (a known finding counts as a failure).

import { spawn, spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
/** The repository's root. */
export const repo = path.resolve(here, "..", "..");
/** The folder whose node_modules hold the SDKs and the Inspector. */
export const nodeDir = process.env.INTEROP_NODE_DIR ?? path.join(repo, "target", "interop", "node");
/** `require` resolving from nodeDir's node_modules. */
export const require = createRequire(path.join(nodeDir, "package.json"));
/** The device-sim binary. */
export const DEVICE_SIM = process.env.DEVICE_SIM ?? path.join(repo, "target", "debug", "device-sim");
/** With INTEROP_STRICT=1 a known finding fails. */
export const STRICT = process.env.INTEROP_STRICT === "1";

/** device-sim's own tools a model sees, in listing order, as it says itself (`--list-tools`: the
 * demo board's table), not a copy of it. */
export function modelTools() {
  return JSON.parse(spawnSync(DEVICE_SIM, ["--list-tools"], { encoding: "utf8" }).stdout)
    .tools.filter((t) => t.audience === "model").map((t) => t.name);
}

/** The names of device-sim's `--extra-tools n` fillers, in listing order. */
export const fillerNames = (n) =>
  Array.from({ length: n }, (_, i) => `self.extra.filler_${String(i + 1).padStart(3, "0")}`);

const tally = { passed: 0, failed: 0, started: Date.now() };

/** Records one check: prints `ok` or `FAIL` with the detail (cut at 1,500 characters). */
export function check(name, ok, detail = "") {
  if (ok) {
    tally.passed++;
    console.log(`ok   - ${name}`);
  } else {
    tally.failed++;
    let text = typeof detail === "string" ? detail : JSON.stringify(detail);
    if (text && text.length > 1500) text = text.slice(0, 1500) + "...";
    console.log(`FAIL - ${name}: ${text}`);
  }
  return !!ok;
}

/** A check that records a reported finding: KNOWN unless INTEROP_STRICT=1. */
export function known(name, ok, detail = "") {
  if (ok || STRICT) return check(name, ok, detail);
  console.log(`KNOWN - ${name}: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
  return false;
}

/** Prints the summary line for `label` and exits: non-zero on any failure, or when nothing passed. */
export function finish(label) {
  const secs = ((Date.now() - tally.started) / 1000).toFixed(1);
  console.log(`${label}: ${tally.passed} passed, ${tally.failed} failed (${secs} s)`);
  process.exit(tally.failed || !tally.passed ? 1 : 0);
}

/** The text of every text content of a tool result, one per line. */
export const texts = (r) => (r?.content ?? []).map((c) => c.text ?? "").join("\n");
export const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
/** Equal as JSON (key order counts). */
export const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
// A tool result's evidence as data: its `_meta`, under the device's own key.
export const evidence = (r) => r?._meta?.["io.github.mcu-mcp/evidence"];

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts connections on 127.0.0.1:`port`; rejects when `child` exits
 * first or `ms` pass. */
export async function waitForPort(port, child, ms = 15000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`device-sim exited with ${child.exitCode}`);
    const ok = await new Promise((res) => {
      const s = net.connect(port, "127.0.0.1", () => { s.destroy(); res(true); });
      s.on("error", () => res(false));
    });
    if (ok) return;
    await sleep(100);
  }
  throw new Error(`nothing listens on 127.0.0.1:${port} after ${ms} ms`);
}

/** device-sim's --ui JSON API at `addr` (host:port): the person next to the device. */
export function simApi(addr) {
  const call = async (method, pathname, body) => {
    const res = await fetch(`http://${addr}${pathname}`, {
      method,
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`${method} ${pathname}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const api = {
    addr,
    state: () => call("GET", "/sim/state"),
    sensor: (values) => call("POST", "/sim/sensor", values),
    // A press counts only for a question shown for a second, and not within a second of the
    // last press: wait until the question shown may be answered.
    press: async () => {
      const deadline = Date.now() + 5000;
      for (;;) {
        const c = (await call("GET", "/sim/state")).confirmation;
        if (!c || c.press_counts_in_ms == null || c.press_counts_in_ms === 0 || Date.now() > deadline) break;
        await sleep(20);
      }
      return call("POST", "/sim/button");
    },
    relayOn: async () => (await api.state()).relay.on,
    async ready(ms = 15000) {
      const deadline = Date.now() + ms;
      for (;;) {
        try {
          return await call("GET", "/sim/state");
        } catch (e) {
          if (Date.now() > deadline) throw e;
          await sleep(50);
        }
      }
    },
    /** Polls the state until `ok` holds (or `ms` pass); resolves to [held, last state]. */
    async until(ok, ms = 5000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const s = await api.state();
        if (ok(s) || Date.now() > deadline) return [!!ok(s), s];
        await sleep(20);
      }
    },
  };
  return api;
}

/** Starts device-sim with `--ui 127.0.0.1:0 --http 127.0.0.1:0 ARGS`; resolves when it says where,
 * to `{ child, api, url, stderr }` (`api`: simApi of its UI; `stderr`: its lines so far). */
export function startHttpSim(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(DEVICE_SIM, ["--ui", "127.0.0.1:0", "--http", "127.0.0.1:0", ...args],
      { stdio: ["ignore", "ignore", "pipe"] });
    const lines = [];
    let ui;
    let url;
    let buf = "";
    const timer = setTimeout(() => reject(new Error(`device-sim did not start: ${lines.slice(-5)}`)), 15000);
    child.on("exit", (code) => reject(new Error(`device-sim exited with ${code}: ${lines.slice(-5)}`)));
    child.stderr.on("data", (d) => {
      buf += String(d);
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        lines.push(line);
        if (line.startsWith("device-sim: UI at http://")) ui = line.slice("device-sim: UI at http://".length).replace(/\/$/, "");
        if (line.startsWith("device-sim: serving MCP (Streamable HTTP) at ")) url = line.slice("device-sim: serving MCP (Streamable HTTP) at ".length);
        if (ui && url) {
          clearTimeout(timer);
          resolve({ child, api: simApi(ui), url, stderr: lines });
        }
      }
    });
  });
}

// --- The demo board's live resources and its question ----------------------------------------------

export const TEMPERATURE = "device://sensors/temperature";
export const BATTERY = "device://sensors/battery";
/** The resources device-sim lists, in order. */
export const LIVE = [TEMPERATURE, BATTERY, "device://buttons/main"];
/** The tool that asks a person first (with --confirm) when it switches the load on. */
export const RELAY = "self.relay.set";
/** What it asks. */
export const QUESTION = "Switch the relay-controlled load on?";
/** The relay's question as a device asks it: then which client asks (`… (asked by NAME #TAG)`)
 * where the call came with a session; just the question on the stateless 2026-07-28 wire. */
export const asksRelay = (text) => text === QUESTION || (typeof text === "string" && text.startsWith(`${QUESTION} (asked by `));

/** The JSON of a resources/read result's first content, or undefined. */
export const reading = (r) => {
  try {
    return JSON.parse(r.contents[0].text);
  } catch {
    return undefined;
  }
};

/** The person at the client: answers elicitation/create as told (`p.answer`: accept, accept-false,
 * decline, cancel or throw), remembers the questions (`p.asked`); `p.handler` is the handler. */
export function person() {
  const p = { answer: "accept", asked: [] };
  p.handler = async (request) => {
    p.asked.push(request.params);
    switch (p.answer) {
      case "accept": return { action: "accept", content: { confirm: true } };
      case "accept-false": return { action: "accept", content: { confirm: false } };
      case "throw": throw new Error("the dialog could not be shown");
      default: return { action: p.answer };
    }
  };
  return p;
}

/** `true` when an elicitation's params are the relay's question as a form with one boolean. */
export const questionOk = (params) => params?.mode === "form" && asksRelay(params?.message)
  && params?.requestedSchema?.properties?.confirm?.type === "boolean"
  && same(params?.requestedSchema?.required, ["confirm"]);
