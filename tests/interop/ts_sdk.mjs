#!/usr/bin/env node
// device-sim driven by the official TypeScript SDK (@modelcontextprotocol/sdk@1.32.2), unmodified:
// Client over StdioClientTransport (device-sim --stdio) and StreamableHTTPClientTransport
// (device-sim --http 127.0.0.1:PORT, endpoint /mcp).
//
// In each session: initialize (the SDK offers 2025-11-25), every tools/list page (each tool once, in
// order), every listed tool called with valid arguments, evidence (the SDK's result schema keeps
// unknown members, so `evidence` arrives as sent), structuredContent of self.get_device_status
// validated by the SDK against the listed outputSchema and here with Ajv's JSON Schema 2020-12
// validator, validation failures as isError results (2025-11-25), the motor move both as a task-less
// call (task id + status tool) and as an MCP Task through the SDK's experimental callToolStream.
//
// Usage: INTEROP_NODE_DIR=<dir with node_modules> DEVICE_SIM=<binary> node ts_sdk.mjs [stdio|http|both]
// Prints one line per check and a summary; exits non-zero on any failure.

import { spawn, spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..", "..");
const nodeDir = process.env.INTEROP_NODE_DIR ?? path.join(repo, "target", "interop", "node");
const require = createRequire(path.join(nodeDir, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { McpError } = require("@modelcontextprotocol/sdk/types.js");
const Ajv2020 = require("ajv/dist/2020").default;

const DEVICE_SIM = process.env.DEVICE_SIM ?? path.join(repo, "target", "debug", "device-sim");
const EXTRA_TOOLS = 40;
const PAGING = ["--extra-tools", String(EXTRA_TOOLS), "--page-bytes", "4000"];
const MODEL_TOOLS = [
  "self.get_device_status",
  "self.audio_speaker.set_volume",
  "self.screen.set_brightness",
  "self.screen.set_theme",
  "self.relay.set",
  "self.motor.move_to",
  "self.tasks.get_status",
];
const FILLERS = Array.from({ length: EXTRA_TOOLS }, (_, i) => `self.extra.filler_${String(i + 1).padStart(3, "0")}`);
const EXPECTED = [...MODEL_TOOLS, ...FILLERS];
const STRICT = process.env.INTEROP_STRICT === "1";

let passed = 0;
let failed = 0;
const started = Date.now();

function check(name, ok, detail = "") {
  if (ok) {
    passed++;
    console.log(`ok   - ${name}`);
  } else {
    failed++;
    let text = typeof detail === "string" ? detail : JSON.stringify(detail);
    if (text && text.length > 1500) text = text.slice(0, 1500) + "...";
    console.log(`FAIL - ${name}: ${text}`);
  }
  return !!ok;
}

/** A check that records a reported finding: KNOWN unless INTEROP_STRICT=1. */
function known(name, ok, detail = "") {
  if (ok || STRICT) return check(name, ok, detail);
  console.log(`KNOWN - ${name}: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
  return false;
}

const texts = (r) => (r.content ?? []).map((c) => c.text ?? "").join("\n");
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** Records every message the server sends, without touching the SDK: a setter on the transport. */
function tap(transport) {
  const received = [];
  let handler;
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get: () => handler,
    set: (fn) => {
      handler = fn && ((msg, extra) => {
        received.push(msg);
        fn(msg, extra);
      });
    },
  });
  return received;
}

async function listAll(client, tag) {
  const names = [];
  const cursors = [];
  let page = await client.listTools();
  const tools = [];
  for (;;) {
    tools.push(...page.tools);
    names.push(...page.tools.map((t) => t.name));
    if (page.nextCursor === undefined) break;
    if (cursors.includes(page.nextCursor) || cursors.length > 50) {
      check(`${tag} cursors never repeat`, false, cursors);
      break;
    }
    cursors.push(page.nextCursor);
    page = await client.listTools({ cursor: page.nextCursor });
  }
  check(`${tag} tools/list: ${names.length} tools over ${cursors.length + 1} pages, every tool once, in order`,
    same(names, EXPECTED) && cursors.length >= 3, names);
  return tools;
}

function fillerArgs(i) {
  if (i % 3 === 0) return {};
  if (i % 3 === 1) return { level: i % 11 };
  return { level: 10, label: `填充工具 ${i}` };
}

async function scenario(client, received, tag) {
  const init = received.find((m) => m.id === 0 && m.result);
  const revision = init?.result?.protocolVersion;
  check(`${tag} initialize: revision ${revision}, server device-sim, tools capability`,
    revision === "2025-11-25" && client.getServerVersion()?.name === "device-sim"
      && client.getServerCapabilities()?.tools !== undefined, init);

  const tools = await listAll(client, tag);
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  check(`${tag} user-only self.reboot is not listed to the model`, !byName["self.reboot"]);

  // The SDK keeps output-schema validators per listTools() call, and clears them on each call: after
  // paging, only the last page's tools are validated. Reported; re-listing page 1 (the first page is
  // what a client without paging support would see) gives the SDK the status tool's schema again.
  known(`${tag} after reading every page the SDK still holds the outputSchema of self.get_device_status`,
    client.getToolOutputValidator("self.get_device_status") !== undefined,
    "Client.cacheToolMetadata() clears its validator cache on every tools/list page");
  await client.listTools();
  check(`${tag} after listing page 1 the SDK holds the status tool's outputSchema validator`,
    client.getToolOutputValidator("self.get_device_status") !== undefined);

  const called = [];
  let r = await client.callTool({ name: "self.audio_speaker.set_volume", arguments: { volume: 40 } });
  check(`${tag} set_volume 40: true, evidence read_back commanded 40 == observed 40`,
    r.isError === false && same(r.structuredContent, { value: true })
      && same(r.evidence, { level: "read_back", commanded: 40, observed: 40 })
      && texts(r).includes("read_back (commanded 40, observed 40)"), r);
  called.push("self.audio_speaker.set_volume");

  r = await client.callTool({ name: "self.screen.set_brightness", arguments: { brightness: 55 } });
  check(`${tag} set_brightness 55: applied (PWM, no read-back)`,
    r.isError === false && r.evidence?.level === "applied" && r.evidence?.commanded === 55, r);
  called.push("self.screen.set_brightness");

  r = await client.callTool({ name: "self.screen.set_theme", arguments: { theme: "dark" } });
  check(`${tag} set_theme dark: applied`, r.isError === false && r.evidence?.level === "applied", r);
  called.push("self.screen.set_theme");

  r = await client.callTool({ name: "self.relay.set", arguments: { on: true } });
  check(`${tag} relay on: measured by the feedback contact`,
    r.isError === false && same(r.evidence, { level: "measured", commanded: true, observed: true }), r);
  called.push("self.relay.set");

  // Task-less: a task id at once, then the status tool.
  r = await client.callTool({ name: "self.motor.move_to", arguments: { position: 600 } });
  const taskId = r.structuredContent?.task_id;
  check(`${tag} move_to 600 (no task requested): task id at once, evidence scheduled`,
    r.isError === false && typeof taskId === "string" && r.structuredContent?.status === "working"
      && r.evidence?.level === "scheduled", r);
  called.push("self.motor.move_to");
  let status = {};
  for (let i = 0; i < 60 && typeof taskId === "string"; i++) {
    const s = await client.callTool({ name: "self.tasks.get_status", arguments: { task_id: taskId } });
    status = s.structuredContent ?? {};
    if (s.isError || status.status !== "working") break;
    await sleep(300);
  }
  check(`${tag} the move completes, measured 600 by the encoder`,
    status.status === "completed" && status.evidence?.level === "measured" && status.evidence?.observed === 600,
    status);
  called.push("self.tasks.get_status");

  // The same move as an MCP Task (2025-11-25), through the SDK's experimental tasks API.
  const events = [];
  let final;
  try {
    for await (const msg of client.experimental.tasks.callToolStream(
      { name: "self.motor.move_to", arguments: { position: 200 } }, undefined, { task: { ttl: 60000 } })) {
      events.push(msg.type);
      if (msg.type === "result") final = msg.result;
      if (msg.type === "error") final = { error: String(msg.error) };
    }
  } catch (e) {
    final = { thrown: String(e) };
  }
  check(`${tag} move_to 200 as an MCP Task: taskCreated, then a result measured at 200 (${events.join(" > ")})`,
    events[0] === "taskCreated" && final?.isError === false && final?.evidence?.level === "measured"
      && final?.evidence?.observed === 200, { events, final });

  // The status: validated by the SDK (it throws when structuredContent does not conform) and here.
  r = await client.callTool({ name: "self.get_device_status", arguments: {} });
  const schema = byName["self.get_device_status"]?.outputSchema;
  const validate = new Ajv2020({ strict: false }).compile(schema ?? { not: {} });
  const conforms = validate(r.structuredContent);
  check(`${tag} get_device_status: structuredContent conforms to outputSchema (Ajv 2020-12)`, conforms,
    validate.errors);
  check(`${tag} get_device_status reads back volume 40, brightness 55, dark, relay on, motor 200`,
    same(r.structuredContent?.audio_speaker, { volume: 40 })
      && same(r.structuredContent?.screen, { brightness: 55, theme: "dark" })
      && same(r.structuredContent?.relay, { on: true })
      && same(r.structuredContent?.motor, { position: 200, moving: false }), r.structuredContent);
  called.push("self.get_device_status");

  const fillers = [];
  for (const [i, name] of FILLERS.entries()) {
    const f = await client.callTool({ name, arguments: fillerArgs(i) });
    fillers.push(f.isError === false && texts(f) === "This filler tool has no effect.");
    called.push(name);
  }
  check(`${tag} all ${FILLERS.length} filler tools answer`, fillers.every(Boolean), fillers);
  check(`${tag} every listed tool was called`, same([...called].sort(), tools.map((t) => t.name).sort()));

  // 2025-11-25: invalid arguments are tool results with isError, so the model can correct itself.
  for (const [args, words] of [
    [{ volume: "loud" }, ['"volume"', "integer", '"loud"']],
    [{ volume: 50.5 }, ["50.5"]],
    [{ volume: -1 }, ["-1"]],
    [{}, ["volume"]],
    [{ volume: 40, loud: true }, ["loud"]],
  ]) {
    let v;
    try {
      v = await client.callTool({ name: "self.audio_speaker.set_volume", arguments: args });
    } catch (e) {
      v = { thrown: String(e) };
    }
    check(`${tag} ${JSON.stringify(args)} refused as an isError result naming ${words.join(", ")}`,
      v.isError === true && words.every((w) => texts(v).includes(w)), v);
  }

  for (const [name, code] of [["self.reboot", -32602], ["self.no_such_tool", -32602]]) {
    let e;
    try {
      e = await client.callTool({ name, arguments: {} });
    } catch (err) {
      e = err;
    }
    check(`${tag} ${name} is a JSON-RPC error ${code}`, e instanceof McpError && e.code === code, String(e));
  }
  try {
    await client.listTools({ cursor: "not-a-cursor" });
    check(`${tag} an unknown cursor is -32602`, false, "no error");
  } catch (e) {
    check(`${tag} an unknown cursor is -32602`, e instanceof McpError && e.code === -32602, String(e));
  }
}

async function stdioSession() {
  const tag = "[ts sdk, stdio]";
  const transport = new StdioClientTransport({ command: DEVICE_SIM, args: ["--stdio", ...PAGING], stderr: "pipe" });
  const stderr = [];
  transport.stderr?.on("data", (d) => stderr.push(String(d)));
  const received = tap(transport);
  const client = new Client({ name: "interop-ts-sdk", version: "1.32.2" });
  try {
    await client.connect(transport);
    await scenario(client, received, tag);
  } catch (e) {
    check(`${tag} the session ran to the end`, false, `${e?.stack ?? e}\n${stderr.join("")}`);
  } finally {
    await client.close();
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function waitForPort(port, child, ms = 15000) {
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

async function httpSession() {
  const tag = "[ts sdk, streamable http]";
  const help = spawnSync(DEVICE_SIM, ["--help"], { encoding: "utf8" }).stdout ?? "";
  if (!help.includes("--http")) {
    check(`${tag} device-sim has an --http option`, false, "not in device-sim --help");
    return;
  }
  const port = await freePort();
  const child = spawn(DEVICE_SIM, ["--http", `127.0.0.1:${port}`, ...PAGING], { stdio: ["ignore", "ignore", "pipe"] });
  const stderr = [];
  child.stderr.on("data", (d) => stderr.push(String(d)));
  const client = new Client({ name: "interop-ts-sdk", version: "1.32.2" });
  try {
    await waitForPort(port, child);
    const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`));
    const received = tap(transport);
    await client.connect(transport);
    check(`${tag} the server gave a session id (stateful revision)`, typeof transport.sessionId === "string"
      && transport.sessionId.length > 0, transport.sessionId);
    await scenario(client, received, tag);
    await transport.terminateSession().catch((e) => console.log(`    (DELETE of the session: ${e})`));
  } catch (e) {
    check(`${tag} the session ran to the end`, false, `${e?.stack ?? e}\n${stderr.join("").slice(-2000)}`);
  } finally {
    await client.close().catch(() => {});
    child.kill("SIGTERM");
  }
}

const which = process.argv[2] ?? "both";
if (which === "stdio" || which === "both") await stdioSession();
if (which === "http" || which === "both") await httpSession();
console.log(`ts sdk (@modelcontextprotocol/sdk 1.32.2): ${passed} passed, ${failed} failed (${((Date.now() - started) / 1000).toFixed(1)} s)`);
process.exit(failed || !passed ? 1 : 0);
