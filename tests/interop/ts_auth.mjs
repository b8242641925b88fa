#!/usr/bin/env node
// device-sim --http --token T driven by the official TypeScript SDK (@modelcontextprotocol/sdk@1.32.2),
// unmodified: Client over StreamableHTTPClientTransport.
//
// 1. Without the token, and with a wrong one: connect() rejects with the SDK's StreamableHTTPError
//    carrying 401; every HTTP answer was 401 (recorded through the transport's `fetch` option); the
//    challenge says invalid_token only when a token was sent. The SDK's own OAuth discovery
//    (extractWWWAuthenticateParams, discoverOAuthProtectedResourceMetadata) reads the metadata URL
//    from the challenge and parses the device's RFC 9728 document, which names this endpoint.
// 2. With the token (requestInit: { headers: { Authorization: "Bearer T" } }): initialize, list the
//    tools, call self.relay.set; the relay, read through --ui's state (not through MCP), is on only
//    after that call.
//
// Usage: INTEROP_NODE_DIR=<dir with node_modules> DEVICE_SIM=<binary> node ts_auth.mjs
// Prints one line per check and a summary; exits non-zero on any failure.

import { check, finish, modelTools, require, startHttpSim } from "./harness.mjs";

const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport, StreamableHTTPError } =
  require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { extractWWWAuthenticateParams, discoverOAuthProtectedResourceMetadata } =
  require("@modelcontextprotocol/sdk/client/auth.js");

const MODEL_TOOLS = modelTools();
const TOKEN = "interop-Token_0123456789.abc~+/";

/** A fetch for the transport that keeps every response it got (their headers are read here; the
 * bodies are the SDK's). */
function recorder() {
  const responses = [];
  const fetchFn = async (input, init) => {
    const res = await fetch(input, init);
    responses.push(res);
    return res;
  };
  return { responses, fetchFn };
}

async function refused(sim, token) {
  const tag = `[ts sdk, ${token === undefined ? "no token" : "a wrong token"}]`;
  const rec = recorder();
  const opts = { fetch: rec.fetchFn };
  if (token !== undefined) opts.requestInit = { headers: { Authorization: `Bearer ${token}` } };
  const transport = new StreamableHTTPClientTransport(new URL(sim.url), opts);
  const client = new Client({ name: "interop-ts-auth", version: "1.0.0" });
  let error;
  try {
    await client.connect(transport);
    await client.listTools();
  } catch (e) {
    error = e;
  } finally {
    await client.close().catch(() => {});
  }
  check(`${tag} connect() rejects`, error !== undefined, "it connected");
  check(`${tag} with the SDK's StreamableHTTPError 401`, error instanceof StreamableHTTPError && error.code === 401,
    String(error));
  check(`${tag} whose message is the device's`, String(error?.message).includes("Unauthorized"), String(error));
  const statuses = rec.responses.map((r) => r.status);
  check(`${tag} every answer was 401`, statuses.length > 0 && statuses.every((s) => s === 401), statuses);
  const first = rec.responses[0];
  const params = first ? extractWWWAuthenticateParams(first) : {};
  const expected = sim.url.replace(/\/mcp$/, "/.well-known/oauth-protected-resource/mcp");
  check(`${tag} the SDK reads resource_metadata from the challenge`, params.resourceMetadataUrl?.href === expected,
    params);
  check(`${tag} error=invalid_token exactly when a token was sent`,
    (params.error === "invalid_token") === (token !== undefined), params);
  const s = await sim.api.state();
  check(`${tag} the relay is untouched`, s.relay.on === false, s.relay);
  return params.resourceMetadataUrl;
}

async function discovery(sim, metadataUrl) {
  const tag = "[ts sdk, discovery]";
  try {
    const doc = await discoverOAuthProtectedResourceMetadata(sim.url, { resourceMetadataUrl: metadataUrl });
    check(`${tag} the SDK fetches and parses the metadata without a token`,
      doc.resource === sim.url && JSON.stringify(doc.bearer_methods_supported) === '["header"]', doc);
    check(`${tag} no authorization server (a pre-shared token)`, doc.authorization_servers === undefined, doc);
  } catch (e) {
    check(`${tag} the SDK fetches and parses the metadata without a token`, false, String(e));
  }
  // Without the challenge's URL the SDK tries the well-known paths itself.
  try {
    const doc = await discoverOAuthProtectedResourceMetadata(sim.url);
    check(`${tag} found at the path-suffixed well-known URL too`, doc.resource === sim.url, doc);
  } catch (e) {
    check(`${tag} found at the path-suffixed well-known URL too`, false, String(e));
  }
}

async function admitted(sim) {
  const tag = "[ts sdk, the token]";
  const rec = recorder();
  const transport = new StreamableHTTPClientTransport(new URL(sim.url), {
    fetch: rec.fetchFn,
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
  });
  const client = new Client({ name: "interop-ts-auth", version: "1.0.0" });
  try {
    await client.connect(transport);
    check(`${tag} initialized`, client.getServerVersion()?.name === "device-sim", client.getServerVersion());
    const names = (await client.listTools()).tools.map((t) => t.name);
    check(`${tag} listed the tools`, JSON.stringify(names) === JSON.stringify(MODEL_TOOLS), names);
    const r = await client.callTool({ name: "self.relay.set", arguments: { on: true } });
    check(`${tag} self.relay.set ran`, !r.isError, r);
    const [on, s] = await sim.api.until((st) => st.relay.on === true);
    check(`${tag} the relay is on on the device`, on, s.relay);
  } catch (e) {
    check(`${tag} the session ran`, false, String(e?.stack ?? e));
  } finally {
    await client.close().catch(() => {});
  }
  const statuses = rec.responses.map((r) => r.status);
  check(`${tag} no answer was 401`, statuses.length > 0 && !statuses.includes(401), statuses);
}

let sim;
try {
  sim = await startHttpSim(["--token", TOKEN]);
  const metadataUrl = await refused(sim, undefined);
  await refused(sim, `wrong-${TOKEN}`);
  await discovery(sim, metadataUrl);
  await admitted(sim);
} catch (e) {
  check("the sessions ran to the end", false, String(e?.stack ?? e));
} finally {
  sim?.child.kill();
}
finish("ts sdk with a bearer token (@modelcontextprotocol/sdk 1.32.2)");
