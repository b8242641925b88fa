#!/usr/bin/env node
// device-sim driven by the official TypeScript SDK (@modelcontextprotocol/sdk@1.32.2), unmodified:
// Client over StdioClientTransport (device-sim --stdio) and StreamableHTTPClientTransport
// (device-sim --http 127.0.0.1:PORT, endpoint /mcp).
//
// In each session: initialize (the SDK offers 2025-11-25), every tools/list page (each tool once, in
// order), every listed tool called with valid arguments, evidence (as data in each result's `_meta`,
// written once: no `evidence` member beside it), structuredContent of self.get_device_status
// validated by the SDK against the listed outputSchema and here with Ajv's JSON Schema 2020-12
// validator, validation failures as isError results (2025-11-25), the motor move both as a task-less
// call (task id + status tool) and as an MCP Task through the SDK's experimental callToolStream.
//
// The device speaks first (device-sim --confirm --ui, its JSON API playing the person next to it),
// over stdio and Streamable HTTP: resources/list and read, subscribeResource to the temperature, a
// sensor move through POST /sim/sensor, the notifications/resources/updated through the SDK's
// setNotificationHandler, the new value read; unsubscribed, no more updates (the subscribed
// battery's still come). self.relay.set on: true asks through the SDK's elicitation handler
// (setRequestHandler(ElicitRequestSchema), form mode): accept(true) switches the relay on
// (measured), decline, accept(false), cancel and a throwing handler leave it off and say why.
//
// Usage: INTEROP_NODE_DIR=<dir with node_modules> DEVICE_SIM=<binary> node ts_sdk.mjs [stdio|http|both]
//        [tools|speaks-first|all]
// Prints one line per check and a summary; exits non-zero on any failure.

import { spawn, spawnSync } from "node:child_process";

import {
  BATTERY, DEVICE_SIM, LIVE, RELAY, TEMPERATURE, check, evidence, fillerNames, finish, freePort, known, modelTools,
  person, questionOk, reading, require, same, simApi, sleep, startHttpSim, texts, waitForPort,
} from "./harness.mjs";

const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { McpError, ElicitRequestSchema, ResourceUpdatedNotificationSchema, LoggingMessageNotificationSchema } =
  require("@modelcontextprotocol/sdk/types.js");
const Ajv2020 = require("ajv/dist/2020").default;

const EXTRA_TOOLS = 40;
const PAGING = ["--extra-tools", String(EXTRA_TOOLS), "--page-bytes", "4000"];
const FILLERS = fillerNames(EXTRA_TOOLS);
const EXPECTED = [...modelTools(), ...FILLERS];

// The plainest arguments a tool's inputSchema admits (each required property at its minimum, its
// first allowed value, false or an empty string): for a tool of the board's table this client has
// no case of its own for (one just added).
const schemaArguments = (schema) => Object.fromEntries((schema?.required ?? []).map((name) => {
  const p = schema.properties?.[name] ?? {};
  if (p.enum) return [name, p.enum[0]];
  if (p.type === "integer" || p.type === "number") return [name, p.minimum ?? 0];
  if (p.type === "boolean") return [name, false];
  return [name, "x".repeat(p.minLength ?? 0)];
}));

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
  const EVIDENCE_KEY = "io.github.mcu-mcp/evidence";
  let r = await client.callTool({ name: "self.audio_speaker.set_volume", arguments: { volume: 40 } });
  check(`${tag} set_volume 40: true, evidence read_back commanded 40 == observed 40`,
    !r.isError && same(r.structuredContent, { value: true })
      && r.content[0]?.text === "true — read back: 40", r);
  // The evidence as data where every SDK keeps a result's metadata, and only there.
  check(`${tag} set_volume 40: the evidence as data in the result's _meta["${EVIDENCE_KEY}"], written once`,
    same(r._meta?.[EVIDENCE_KEY], { level: "read_back", commanded: 40, observed: 40 }) && !("evidence" in r), r);
  called.push("self.audio_speaker.set_volume");

  r = await client.callTool({ name: "self.screen.set_brightness", arguments: { brightness: 55 } });
  check(`${tag} set_brightness 55: applied (PWM, no read-back)`,
    !r.isError && evidence(r)?.level === "applied" && evidence(r)?.commanded === 55, r);
  called.push("self.screen.set_brightness");

  r = await client.callTool({ name: "self.screen.set_theme", arguments: { theme: "dark" } });
  check(`${tag} set_theme dark: applied`, !r.isError && evidence(r)?.level === "applied", r);
  called.push("self.screen.set_theme");

  r = await client.callTool({ name: "self.relay.set", arguments: { on: true } });
  check(`${tag} relay on: measured by the feedback contact`,
    !r.isError && same(evidence(r), { level: "measured", commanded: true, observed: true }), r);
  called.push("self.relay.set");

  // Task-less: the SDK's client declares no `tasks` at initialize, so the device holds the call's
  // answer back until the move ends, and the answer is the encoder's measurement.
  r = await client.callTool({ name: "self.motor.move_to", arguments: { position: 600 } });
  check(`${tag} move_to 600 (no task requested, a client that follows no task): the answer waits for the move, measured 600 by the encoder`,
    !r.isError && r.structuredContent?.value === 600 && evidence(r)?.level === "measured"
      && evidence(r)?.observed === 600, r);
  called.push("self.motor.move_to");
  r = await client.callTool({ name: "self.tasks.get_status", arguments: { task_id: "task-0000000000000000" } });
  check(`${tag} the status tool refuses a task it does not know`, r.isError === true, r);
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
    events[0] === "taskCreated" && !final?.isError && evidence(final)?.level === "measured"
      && evidence(final)?.observed === 200, { events, final });
  check(`${tag} ...its tasks/result carries the evidence as data in _meta, beside the related task`,
    final?._meta?.[EVIDENCE_KEY]?.level === "measured" && final?._meta?.[EVIDENCE_KEY]?.observed === 200
      && typeof final?._meta?.["io.modelcontextprotocol/related-task"]?.taskId === "string", final?._meta);
  // tasks/get of the finished task: the evidence as data too.
  const taskId = final?._meta?.["io.modelcontextprotocol/related-task"]?.taskId;
  let got;
  try {
    got = taskId && await client.experimental.tasks.getTask(taskId);
  } catch (e) {
    got = { thrown: String(e) };
  }
  check(`${tag} tasks/get of the finished move: completed, the evidence as data in its _meta`,
    got?.status === "completed" && got?._meta?.[EVIDENCE_KEY]?.observed === 200, got);

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
    fillers.push(!f.isError && texts(f) === "This filler tool has no effect.");
    called.push(name);
  }
  check(`${tag} all ${FILLERS.length} filler tools answer`, fillers.every(Boolean), fillers);
  for (const t of tools.filter((t) => !called.includes(t.name))) {
    const r = await client.callTool({ name: t.name, arguments: schemaArguments(t.inputSchema) });
    check(`${tag} ${t.name} (no case of its own) answers a success with its evidence`,
      !r.isError && Boolean(evidence(r)?.level), r);
    called.push(t.name);
  }
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

// --- The device speaks first ---------------------------------------------------------------------

async function waitFor(list, ok, ms = 5000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = list.find(ok);
    if (found || Date.now() > deadline) return found;
    await sleep(20);
  }
}

async function speaksFirst(client, api, updates, p, tag) {
  const caps = client.getServerCapabilities()?.resources;
  check(`${tag} resources capability with subscribe`, caps?.subscribe === true, caps);
  const listed = await client.listResources();
  check(`${tag} resources/list: the three live resources, application/json`,
    same(listed.resources.map((r) => r.uri), LIVE) && listed.resources.every((r) => r.mimeType === "application/json"),
    listed);
  const start = (await api.state()).sensors.temperature;
  let r = await client.readResource({ uri: TEMPERATURE });
  check(`${tag} resources/read: the thermometer now (${start} °C)`, same(reading(r), { celsius: start }), r);

  await client.subscribeResource({ uri: TEMPERATURE });
  let mark = updates.length;
  const moved = await api.sensor({ temperature: 31.5 });
  check(`${tag} POST /sim/sensor moves the thermometer to 31.5 °C`, moved.sensors.temperature === 31.5, moved);
  const t0 = Date.now();
  const note = await waitFor(updates, (u, i) => i >= mark && u === TEMPERATURE);
  check(`${tag} subscribed: notifications/resources/updated reaches the SDK's notification handler (${Date.now() - t0} ms)`,
    note === TEMPERATURE, updates.slice(mark));
  r = await client.readResource({ uri: TEMPERATURE });
  check(`${tag} the read after the update: 31.5 °C`, same(reading(r), { celsius: 31.5 }), r);

  await client.subscribeResource({ uri: BATTERY });
  await client.unsubscribeResource({ uri: TEMPERATURE });
  mark = updates.length;
  await api.sensor({ temperature: 36.0, battery: 20 });
  const battery = await waitFor(updates, (u, i) => i >= mark && u === BATTERY, 7000);
  await sleep(1500);
  check(`${tag} unsubscribed: another move brings no temperature update (the subscribed battery's does)`,
    battery === BATTERY && !updates.slice(mark).includes(TEMPERATURE), updates.slice(mark));
  r = await client.readResource({ uri: TEMPERATURE });
  const b = await client.readResource({ uri: BATTERY });
  check(`${tag} ...though the thermometer did move: 36.0 °C, the battery 20 %`,
    same(reading(r), { celsius: 36 }) && same(reading(b), { percent: 20 }), [r, b]);

  const relayOn = async () => (await api.state()).relay.on;
  check(`${tag} the relay starts off`, (await relayOn()) === false);
  p.answer = "accept";
  r = await client.callTool({ name: RELAY, arguments: { on: true } });
  let on = await relayOn();
  check(`${tag} self.relay.set on: the person is asked (form mode, the relay's question, one boolean)`,
    p.asked.length === 1 && questionOk(p.asked[0]), p.asked);
  check(`${tag} accept(true): the relay switched on, measured by its feedback contact`,
    !r.isError && same(r.structuredContent, { value: true })
      && same(evidence(r), { level: "measured", commanded: true, observed: true }) && on === true, { r, on });
  let asked = p.asked.length;
  r = await client.callTool({ name: RELAY, arguments: { on: false } });
  check(`${tag} switching off asks nothing and runs`, !r.isError && p.asked.length === asked
    && (await relayOn()) === false, r);
  for (const [answer, words] of [
    ["decline", "declined"],
    ["accept-false", "declined"],
    ["cancel", "dismissed the question"],
    ["throw", "dismissed the question"],
  ]) {
    p.answer = answer;
    asked = p.asked.length;
    try {
      r = await client.callTool({ name: RELAY, arguments: { on: true } });
    } catch (e) {
      r = { thrown: String(e) };
    }
    on = await relayOn();
    check(`${tag} the person answers ${answer}: asked once, nothing ran (relay off), the result says "${words}"`,
      p.asked.length === asked + 1 && r.isError === true && texts(r).includes(words)
        && texts(r).includes("nothing was done") && r.structuredContent === undefined && on === false,
      { r, on, asked: p.asked.length - asked });
  }
  const s = await api.state();
  const decided = s.timeline.filter((e) => e.kind === "call" && e.tool === RELAY && e.confirmed !== null)
    .map((e) => e.confirmed);
  check(`${tag} the device's timeline: one yes, then four refusals`, same(decided, [true, false, false, false, false]),
    s.timeline.filter((e) => e.kind === "call"));
}

async function speaksFirstSession(transportName) {
  const tag = `[ts sdk, ${transportName}, --confirm]`;
  let sim;
  let transport;
  let api;
  try {
    if (transportName === "stdio") {
      api = simApi(`127.0.0.1:${await freePort()}`);
      transport = new StdioClientTransport({ command: DEVICE_SIM, args: ["--stdio", "--confirm", "--ui", api.addr],
        stderr: "ignore" });
    } else {
      sim = await startHttpSim(["--confirm"]);
      api = sim.api;
      transport = new StreamableHTTPClientTransport(new URL(sim.url));
    }
  } catch (e) {
    check(`${tag} device-sim started`, false, String(e));
    return;
  }
  const client = new Client({ name: "interop-ts-sdk", version: "1.32.2" }, { capabilities: { elicitation: { form: {} } } });
  const updates = [];
  const others = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updates.push(n.params.uri); });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { others.push(n); });
  const p = person();
  client.setRequestHandler(ElicitRequestSchema, p.handler);
  try {
    await client.connect(transport);
    await api.ready();
    await speaksFirst(client, api, updates, p, tag);
    check(`${tag} no log notifications arrived (a client that elicits is never asked on the device)`,
      others.length === 0, others);
  } catch (e) {
    check(`${tag} the session ran to the end`, false, `${e?.stack ?? e}\n${(sim?.stderr ?? []).slice(-10).join("\n")}`);
  } finally {
    await client.close().catch(() => {});
    sim?.child.kill("SIGTERM");
  }
}

const which = process.argv[2] ?? "both";
const part = process.argv[3] ?? "all";
if (part !== "speaks-first") {
  if (which === "stdio" || which === "both") await stdioSession();
  if (which === "http" || which === "both") await httpSession();
}
if (part !== "tools") {
  if (which === "stdio" || which === "both") await speaksFirstSession("stdio");
  if (which === "http" || which === "both") await speaksFirstSession("streamable http");
}
finish("ts sdk (@modelcontextprotocol/sdk 1.32.2)");
