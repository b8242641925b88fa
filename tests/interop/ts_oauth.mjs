#!/usr/bin/env node
// device-sim as an OAuth resource server (--oauth-issuer) driven by the official TypeScript SDK
// (@modelcontextprotocol/sdk@1.32.2) and its OAuth client: StreamableHTTPClientTransport with an
// `authProvider`, against a real authorization server on loopback (oidc-provider, oauth_server.mjs).
//
// 1. The SDK meets the 401, reads the protected-resource metadata, finds the authorization server
//    in it, registers a client there (dynamic registration), and sends the person to log in (PKCE,
//    resource=the device's URL, scope from the challenge); the person logs in and approves on the
//    server's own pages (headless: oauth_login.mjs fills in its forms); finishAuth trades the code
//    for an access token (a JWT, ES256, then again with RS256); the SDK connects with it, lists the
//    tools and calls self.relay.set, and the relay — read through --ui's state, not through MCP —
//    is on only after that call.
// 2. Refused: no token, a token for another resource (the same server, resource=another URL), one
//    without the scope, a forged one (the right claims, signed by another key), an expired one is
//    not made here (the Rust tests cover exp with signed tokens).
// 3. A device with only a pre-shared token answers the SDK's follow-up paths (/register, the
//    server metadata) with a JSON OAuth error that says so.
//
// Usage: INTEROP_NODE_DIR=<dir with node_modules> DEVICE_SIM=<binary> node ts_oauth.mjs

import { check, finish, modelTools, require, startHttpSim } from "./harness.mjs";
import { logIn, startAuthServer } from "./oauth_login.mjs";

const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { UnauthorizedError } = require("@modelcontextprotocol/sdk/client/auth.js");

const MODEL_TOOLS = modelTools();
const REDIRECT = "http://127.0.0.1:9/callback";
const SCOPE = "mcp:tools";

/** An OAuthClientProvider whose "browser" is a person logging in headlessly. */
class HeadlessProvider {
  constructor() {
    this.store = {};
    this.redirects = [];
    this.code = undefined;
  }
  get redirectUrl() { return REDIRECT; }
  get clientMetadata() {
    return {
      client_name: "interop-ts-oauth",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  state() { return "st-" + Math.random().toString(36).slice(2); }
  clientInformation() { return this.store.client; }
  saveClientInformation(c) { this.store.client = c; }
  tokens() { return this.store.tokens; }
  saveTokens(t) { this.store.tokens = t; }
  saveCodeVerifier(v) { this.store.verifier = v; }
  codeVerifier() { return this.store.verifier; }
  async redirectToAuthorization(url) {
    this.redirects.push(url);
    const { redirect, steps } = await logIn(url.href, REDIRECT);
    this.steps = steps;
    this.code = redirect.searchParams.get("code");
    this.returnedState = redirect.searchParams.get("state");
    this.sentState = url.searchParams.get("state");
  }
}

/** The claims of a JWT (not verified: to see what the server issued). */
const claimsOf = (jwt) => JSON.parse(Buffer.from(jwt.split(".")[1], "base64url").toString());
const headerOf = (jwt) => JSON.parse(Buffer.from(jwt.split(".")[0], "base64url").toString());

async function login(sim, alg) {
  const tag = `[ts sdk oauth, ${alg}]`;
  const provider = new HeadlessProvider();
  const first = new StreamableHTTPClientTransport(new URL(sim.url), { authProvider: provider });
  const client = new Client({ name: "interop-ts-oauth", version: "1.0.0" });
  let error;
  try {
    await client.connect(first);
  } catch (e) {
    error = e;
  }
  await client.close().catch(() => {});
  check(`${tag} the first connect stops for the login (UnauthorizedError)`, error instanceof UnauthorizedError,
    String(error?.stack ?? error));
  check(`${tag} the SDK registered a client at the authorization server`, !!provider.store.client?.client_id,
    provider.store.client);
  const auth = provider.redirects[0];
  check(`${tag} it sent the person to the server's authorization endpoint`,
    auth?.href.startsWith(`${sim.issuer}/auth`), auth?.href);
  check(`${tag} with PKCE (S256), resource = the device's endpoint, the scope it asked for`,
    auth?.searchParams.get("code_challenge_method") === "S256" && auth?.searchParams.get("resource") === sim.url &&
      auth?.searchParams.get("scope") === SCOPE, auth?.href);
  check(`${tag} the person logged in and approved on the server's pages`, !!provider.code &&
    provider.returnedState === provider.sentState, provider.steps);
  await first.finishAuth(provider.code);
  const at = provider.store.tokens?.access_token;
  check(`${tag} finishAuth got an access token`, typeof at === "string", provider.store.tokens);
  const header = headerOf(at);
  const claims = claimsOf(at);
  check(`${tag} a JWT signed ${alg}, for this device`, header.alg === alg && claims.aud === sim.url &&
    claims.iss === sim.issuer && claims.scope.split(" ").includes(SCOPE), { header, claims });

  const s0 = await sim.api.state();
  check(`${tag} the relay is off before the call`, s0.relay.on === false, s0.relay);
  const transport = new StreamableHTTPClientTransport(new URL(sim.url), { authProvider: provider });
  const c2 = new Client({ name: "interop-ts-oauth", version: "1.0.0" });
  try {
    await c2.connect(transport);
    check(`${tag} connected with the token`, c2.getServerVersion()?.name === "device-sim", c2.getServerVersion());
    const names = (await c2.listTools()).tools.map((t) => t.name);
    check(`${tag} listed the tools`, JSON.stringify(names) === JSON.stringify(MODEL_TOOLS), names);
    const r = await c2.callTool({ name: "self.relay.set", arguments: { on: true } });
    check(`${tag} self.relay.set ran`, !r.isError, r);
    const [on, s] = await sim.api.until((st) => st.relay.on === true);
    check(`${tag} the relay is on on the device`, on, s.relay);
    await c2.callTool({ name: "self.relay.set", arguments: { on: false } });
  } catch (e) {
    check(`${tag} the session ran`, false, String(e?.stack ?? e));
  } finally {
    await c2.close().catch(() => {});
  }
  return at;
}

/** A raw initialize with `token`: the status and the challenge. */
async function raw(sim, token) {
  const res = await fetch(sim.url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }),
  });
  await res.text();
  return { status: res.status, challenge: res.headers.get("www-authenticate") ?? "" };
}

/** A token from the authorization server for `resource` and `scope`, as the SDK's flow gets it. */
async function tokenFor(sim, resource, scope) {
  const provider = new HeadlessProvider();
  const { discoverAuthorizationServerMetadata, registerClient, startAuthorization, exchangeAuthorization } =
    require("@modelcontextprotocol/sdk/client/auth.js");
  const metadata = await discoverAuthorizationServerMetadata(sim.issuer);
  const client = await registerClient(sim.issuer, { metadata, clientMetadata: provider.clientMetadata });
  const { authorizationUrl, codeVerifier } = await startAuthorization(sim.issuer, {
    metadata, clientInformation: client, redirectUrl: REDIRECT, scope, resource: new URL(resource), state: "s",
  });
  const { redirect } = await logIn(authorizationUrl.href, REDIRECT);
  const tokens = await exchangeAuthorization(sim.issuer, {
    metadata, clientInformation: client, authorizationCode: redirect.searchParams.get("code"), codeVerifier,
    redirectUri: REDIRECT, resource: new URL(resource),
  });
  return tokens.access_token;
}

async function refusals(sim, good) {
  const tag = "[ts sdk oauth, refused]";
  const none = await raw(sim);
  check(`${tag} no token: 401 naming the metadata and the scope`, none.status === 401 &&
    none.challenge.includes("resource_metadata=") && none.challenge.includes(`scope="${SCOPE}"`), none);
  const other = sim.url.replace(/:(\d+)\/mcp$/, (_, p) => `:${Number(p) + 1}/mcp`);
  const foreign = await tokenFor(sim, other, SCOPE);
  check(`${tag} the server issued a token for another resource`, claimsOf(foreign).aud === other, claimsOf(foreign));
  const r1 = await raw(sim, foreign);
  check(`${tag} a token for another resource: 401 invalid_token`, r1.status === 401 &&
    r1.challenge.includes('error="invalid_token"'), r1);
  const unscoped = await tokenFor(sim, sim.url, "openid");
  const r2 = await raw(sim, unscoped);
  check(`${tag} a token without ${SCOPE}: 403 insufficient_scope`, r2.status === 403 &&
    r2.challenge.includes('error="insufficient_scope"'), { r2, claims: claimsOf(unscoped) });
  // The right token with one claim changed: its signature no longer holds.
  const [h, , s] = good.split(".");
  const claims = { ...claimsOf(good), scope: `${SCOPE} admin`, exp: claimsOf(good).exp + 86400 };
  const forged = `${h}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.${s}`;
  const r3 = await raw(sim, forged);
  check(`${tag} a token whose claims were changed: 401`, r3.status === 401, r3);
  const r4 = await raw(sim, good);
  check(`${tag} the good token still admits`, r4.status === 200, r4);
  const st = await sim.api.state();
  check(`${tag} nothing ran on the device`, st.relay.on === false, st.relay);
}

async function preShared() {
  const tag = "[ts sdk, pre-shared token only]";
  const sim = await startHttpSim(["--token", "interop-Token_0123456789"]);
  try {
    const base = sim.url.replace(/\/mcp$/, "");
    for (const [method, p, status] of [
      ["GET", "/.well-known/oauth-authorization-server", 404],
      ["GET", "/.well-known/openid-configuration", 404],
      ["POST", "/register", 400],
      ["POST", "/token", 400],
      ["GET", "/authorize", 400],
    ]) {
      const res = await fetch(base + p, { method, headers: { "content-type": "application/json" },
        body: method === "POST" ? "{}" : undefined });
      const body = await res.json().catch(() => undefined);
      check(`${tag} ${method} ${p}: ${status}, a JSON OAuth error that says so`, res.status === status &&
        body?.error === "invalid_request" && /pre-shared bearer token/.test(body?.error_description), { status: res.status, body });
    }
    // The SDK's own flow against it ends with that message, not a bare 404.
    const provider = new HeadlessProvider();
    const transport = new StreamableHTTPClientTransport(new URL(sim.url), { authProvider: provider });
    const client = new Client({ name: "interop-ts-oauth", version: "1.0.0" });
    let error;
    try {
      await client.connect(transport);
    } catch (e) {
      error = e;
    }
    await client.close().catch(() => {});
    check(`${tag} the SDK's OAuth flow fails with the device's words`, /pre-shared bearer token/.test(String(error)),
      String(error));
  } finally {
    sim.child.kill();
  }
}

let as;
let sim;
try {
  for (const alg of ["ES256", "RS256"]) {
    as = await startAuthServer(alg);
    sim = await startHttpSim(["--oauth-issuer", as.issuer, "--oauth-scope", SCOPE]);
    sim.issuer = as.issuer;
    const token = await login(sim, alg);
    if (alg === "ES256") await refusals(sim, token);
    sim.child.kill();
    as.child.kill();
    sim = as = undefined;
  }
  await preShared();
} catch (e) {
  check("the sessions ran to the end", false, String(e?.stack ?? e));
} finally {
  sim?.child.kill();
  as?.child.kill();
}
finish("ts sdk oauth against oidc-provider (@modelcontextprotocol/sdk 1.32.2)");
