// The device speaks first on the 2026-07-28 wire, driven by the official TypeScript SDK's v2 client
// (@modelcontextprotocol/client 2.4.0, unmodified): the v1 package @modelcontextprotocol/sdk 1.32.2
// (ts_sdk.mjs) stops at 2025-11-25 and has no subscriptions/listen or input_required.
//
// device-sim runs with --confirm and --ui (its JSON API plays the person next to the device:
// POST /sim/sensor moves the thermometer, GET /sim/state shows the relay and what was sent), over
// stdio and Streamable HTTP; the client negotiates with versionNegotiation { mode: "auto" }
// (server/discover), so every check here is on 2026-07-28:
//
// 1. resources/list and read: a reading says ttlMs 0, and a read after a move is not served from the
//    SDK's response cache. client.listen({ resourceSubscriptions }) (subscriptions/listen):
//    acknowledged, a move arrives through setNotificationHandler("notifications/resources/updated")
//    tagged with the listen's subscription id, the read shows it; subscription.close() ends it
//    (on the device too, over HTTP) and a later move reaches no one.
// 2. self.relay.set on: true through the SDK's input_required auto-fulfilment, answered by
//    setRequestHandler("elicitation/create"): accept(true) switches the relay on (measured);
//    decline, accept(false), cancel leave it off and say why; a throwing handler fails the call and
//    nothing runs.
// 3. Manual mode (inputRequired: { autoFulfill: false }, allowInputRequired): the first round is an
//    input_required result (an elicitation/create, a requestState; nothing ran), a tampered
//    requestState is refused (-32602), the echoed one with a yes runs it. A client that declares no
//    elicitation is told it needs it (-32021), nothing ran.
//
// Usage: INTEROP_NODE_DIR=<dir with node_modules> DEVICE_SIM=<binary> node ts_sdk_v2.mjs [stdio|http|both]
// Prints one line per check and a summary; exits non-zero on any failure.

import { readFileSync } from "node:fs";
import path from "node:path";

import {
  DEVICE_SIM, LIVE, QUESTION, RELAY, TEMPERATURE, check, evidence, finish, freePort, nodeDir, person, questionOk,
  reading, require, same, simApi, sleep, startHttpSim, texts,
} from "./harness.mjs";

const { Client, StreamableHTTPClientTransport, ProtocolError } = require("@modelcontextprotocol/client");
const { StdioClientTransport } = require("@modelcontextprotocol/client/stdio");
const SDK_VERSION = JSON.parse(readFileSync(path.join(nodeDir, "node_modules", "@modelcontextprotocol", "client", "package.json"), "utf8")).version;

const MODERN = "2026-07-28";
const SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId";

const timeline = (s, kind, after = 0) => (s.timeline ?? []).filter((e) => e.kind === kind && (e.seq ?? 0) > after);

/** A v2 Client negotiating with server/discover; `elicit` declares form elicitation. */
function newClient({ elicit = true, autoFulfill = true } = {}) {
  return new Client({ name: "interop-ts-sdk-v2", version: SDK_VERSION }, {
    capabilities: elicit ? { elicitation: { form: {} } } : {},
    versionNegotiation: { mode: "auto" },
    inputRequired: { autoFulfill },
  });
}

/** One device-sim for the whole of `body(sim)`: over stdio a fresh child per client (its transport
 *  starts it), over HTTP one server all clients of the transport share. */
async function withDevice(transportName, body) {
  if (transportName === "stdio") {
    const connect = async (client) => {
      const api = simApi(`127.0.0.1:${await freePort()}`);
      await client.connect(new StdioClientTransport({ command: DEVICE_SIM,
        args: ["--stdio", "--confirm", "--ui", api.addr], stderr: "ignore" }));
      await api.ready();
      return api;
    };
    return body({ connect });
  }
  const sim = await startHttpSim(["--confirm"]);
  try {
    const connect = async (client) => {
      await client.connect(new StreamableHTTPClientTransport(new URL(sim.url)));
      return sim.api;
    };
    return await body({ connect, http: true });
  } finally {
    sim.child.kill("SIGTERM");
  }
}

async function autoSession(dev, tag) {
  const client = newClient();
  const updates = [];
  client.setNotificationHandler("notifications/resources/updated", (n) => { updates.push(n); });
  const p = person();
  client.setRequestHandler("elicitation/create", p.handler);
  const api = await dev.connect(client);
  try {
    check(`${tag} negotiated ${MODERN} through server/discover`, client.getNegotiatedProtocolVersion() === MODERN,
      client.getNegotiatedProtocolVersion());
    const listed = await client.listResources();
    check(`${tag} resources/list: the three live resources, application/json`,
      same(listed.resources.map((r) => r.uri), LIVE) && listed.resources.every((r) => r.mimeType === "application/json"),
      listed);

    // The SDK caches resources/read by the server's hints: a reading must never be served stale.
    let r = await client.readResource({ uri: TEMPERATURE });
    check(`${tag} resources/read: 21.5 °C, not cacheable (ttlMs 0)`, same(reading(r), { celsius: 21.5 }) && r.ttlMs === 0, r);
    await api.sensor({ temperature: 25.0 });
    r = await client.readResource({ uri: TEMPERATURE });
    check(`${tag} a move, then a read through the SDK's response cache: 25.0 °C, not the cached 21.5`,
      same(reading(r), { celsius: 25 }), r);

    const sub = await client.listen({ resourceSubscriptions: [TEMPERATURE] });
    check(`${tag} client.listen (subscriptions/listen) acknowledged, the temperature honoured`,
      same(sub.honoredFilter?.resourceSubscriptions, [TEMPERATURE]), sub.honoredFilter);
    const mark = updates.length;
    await api.sensor({ temperature: 31.5 });
    const t0 = Date.now();
    let note;
    while (!(note = updates.slice(mark).find((n) => n.params?.uri === TEMPERATURE)) && Date.now() - t0 < 5000) await sleep(20);
    const id = note?.params?._meta?.[SUBSCRIPTION_ID];
    check(`${tag} the move arrives through setNotificationHandler, tagged with the listen's subscription id `
      + `(${Date.now() - t0} ms)`, note !== undefined && typeof id === "string" && id.length > 0, updates.slice(mark));
    r = await client.readResource({ uri: TEMPERATURE });
    check(`${tag} the read after the update: 31.5 °C`, same(reading(r), { celsius: 31.5 }), r);

    await sub.close();
    check(`${tag} subscription.close(): closed locally`, (await sub.closed) === "local");
    if (dev.http) {
      // The device's log of listen streams: this one (its id is the SDK's string id) ended.
      const [closed, s] = await api.until((s) => timeline(s, "listen").some((e) => e.id === JSON.stringify(id) && e.open === false));
      check(`${tag} ...and the stream ended on the device`, closed, timeline(s, "listen"));
    }
    let s = await api.state();
    const seq = s.next_seq - 1;
    const after = updates.length;
    await sleep(1100); // past the temperature's 1 s minimum interval
    await api.sensor({ temperature: 36.0 });
    await sleep(1500);
    s = await api.state();
    check(`${tag} after close a move reaches no one (no update sent, none received)`,
      updates.length === after && timeline(s, "update", seq).length === 0,
      { received: updates.slice(after), sent: timeline(s, "update", seq) });
    r = await client.readResource({ uri: TEMPERATURE });
    check(`${tag} ...though the thermometer moved: 36.0 °C`, same(reading(r), { celsius: 36 }), r);

    // The confirmed tool through the SDK's input_required auto-fulfilment.
    check(`${tag} the relay starts off`, (await api.relayOn()) === false);
    p.answer = "accept";
    r = await client.callTool({ name: RELAY, arguments: { on: true } });
    let on = await api.relayOn();
    check(`${tag} self.relay.set on: the input_required driver asks the person (form mode, the relay's question, one boolean)`,
      p.asked.length === 1 && questionOk(p.asked[0]), p.asked);
    check(`${tag} accept(true): the retried call switched the relay on, measured by its feedback contact`,
      !r.isError && same(r.structuredContent, { value: true })
        && same(evidence(r), { level: "measured", commanded: true, observed: true }) && on === true, { r, on });
    let asked = p.asked.length;
    r = await client.callTool({ name: RELAY, arguments: { on: false } });
    check(`${tag} switching off asks nothing and runs`, !r.isError && p.asked.length === asked
      && (await api.relayOn()) === false, r);
    for (const [answer, words] of [["decline", "declined"], ["accept-false", "declined"], ["cancel", "dismissed the question"]]) {
      p.answer = answer;
      asked = p.asked.length;
      r = await client.callTool({ name: RELAY, arguments: { on: true } });
      on = await api.relayOn();
      check(`${tag} the person answers ${answer}: asked once, nothing ran (relay off), the result says "${words}"`,
        p.asked.length === asked + 1 && r.isError === true && texts(r).includes(words)
          && texts(r).includes("nothing was done") && r.structuredContent === undefined && on === false,
        { r, on, asked: p.asked.length - asked });
    }
    p.answer = "throw";
    asked = p.asked.length;
    let thrown;
    try {
      r = await client.callTool({ name: RELAY, arguments: { on: true } });
    } catch (e) {
      thrown = e;
    }
    on = await api.relayOn();
    check(`${tag} a handler that throws: the SDK fails the call with its error, does not retry, nothing ran (relay off)`,
      thrown !== undefined && String(thrown?.message ?? thrown).includes("could not be shown")
        && p.asked.length === asked + 1 && on === false, { thrown: String(thrown), r, on });
    // What the device did, call by call: each "on" is asked first (input_required); only the yes ran.
    s = await api.state();
    const calls = timeline(s, "call").filter((e) => e.tool === RELAY).map((e) => [e.outcome, e.evidence ?? e.text]);
    const asks = ["input_required", QUESTION];
    // (A refusal is a failure like any other: its evidence is `not_applied`.)
    const expected = [asks, ["ok", "measured"], ["ok", "measured"],
      asks, ["failed", "not_applied"],
      asks, ["failed", "not_applied"],
      asks, ["failed", "not_applied"],
      asks];
    check(`${tag} the device's timeline: on asked, yes ran, off ran, three refusals, and the failed handler's call never came back`,
      same(calls, expected), calls);
  } finally {
    await client.close().catch(() => {});
  }
}

async function manualSession(dev, tag) {
  const client = newClient({ autoFulfill: false });
  const api = await dev.connect(client);
  const call = (params) => client.callTool(params, { allowInputRequired: true });
  try {
    check(`${tag} negotiated ${MODERN}`, client.getNegotiatedProtocolVersion() === MODERN, client.getNegotiatedProtocolVersion());
    const first = await call({ name: RELAY, arguments: { on: true } });
    const ask = first?.inputRequests?.confirm;
    check(`${tag} self.relay.set on: input_required with an elicitation/create for the relay's question, a requestState, `
      + "and nothing ran", first?.resultType === "input_required" && ask?.method === "elicitation/create"
      && questionOk(ask?.params) && typeof first?.requestState === "string" && first.requestState.startsWith("v2.")
      && (await api.relayOn()) === false, first);
    const state = first?.requestState ?? "";
    const yes = { confirm: { action: "accept", content: { confirm: true } } };
    const tampered = state.slice(0, -1) + (state.endsWith("0") ? "1" : "0");
    try {
      const r = await call({ name: RELAY, arguments: { on: true }, inputResponses: yes, requestState: tampered });
      check(`${tag} a tampered requestState is refused (-32602)`, false, r);
    } catch (e) {
      check(`${tag} a tampered requestState is refused (-32602), nothing ran`,
        e?.code === -32602 && (await api.relayOn()) === false, String(e));
    }
    const r = await call({ name: RELAY, arguments: { on: true }, inputResponses: yes, requestState: state });
    check(`${tag} the echoed requestState with a yes: the relay switched on, measured`,
      !r?.isError && same(r?.structuredContent, { value: true }) && (await api.relayOn()) === true, r);
    await call({ name: RELAY, arguments: { on: false } });
  } finally {
    await client.close().catch(() => {});
  }

  const bare = newClient({ elicit: false });
  const api2 = await dev.connect(bare);
  try {
    const r = await bare.callTool({ name: RELAY, arguments: { on: true } });
    check(`${tag} a client without elicitation: -32021, it needs elicitation`, false, r);
  } catch (e) {
    check(`${tag} a client without elicitation: -32021, it needs elicitation (nothing ran)`,
      e?.code === -32021 && /elicitation/.test(e?.message ?? "") && (await api2.relayOn()) === false, String(e));
  } finally {
    await bare.close().catch(() => {});
  }
}

async function session(transportName) {
  const tag = `[ts sdk v2, ${transportName}, ${MODERN}, --confirm]`;
  try {
    await withDevice(transportName, async (dev) => {
      await autoSession(dev, tag);
      await manualSession(dev, `${tag}[manual]`);
    });
  } catch (e) {
    check(`${tag} the session ran to the end`, false, `${e?.stack ?? e}`);
  }
}

const which = process.argv[2] ?? "both";
if (which === "stdio" || which === "both") await session("stdio");
if (which === "http" || which === "both") await session("streamable http");
finish(`ts sdk v2 (@modelcontextprotocol/client ${SDK_VERSION})`);
