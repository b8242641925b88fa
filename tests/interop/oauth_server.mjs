#!/usr/bin/env node
// A real OAuth 2.1 authorization server on loopback for the OAuth interop clients: panva's
// `oidc-provider` (npm), configured, not written here. What the MCP SDKs' OAuth providers need:
//
// - RFC 8414 / OpenID discovery, dynamic client registration (RFC 7591, open), PKCE (S256,
//   required), public clients (token_endpoint_auth_method "none"), authorization code grant;
// - resource indicators (RFC 8707): an access token for `resource=<device URL>` is a JWT
//   (RFC 9068, `typ: at+jwt`) with `aud` = that URL and `scope` "mcp:tools", signed ES256 (or
//   RS256 with OAUTH_ALG=RS256) with the server's keys, which its JWKS publishes;
// - a login a headless client can complete: the provider's own development login and consent
//   pages (HTML forms; any login name is accepted, no password is checked).
//
// Usage: node oauth_server.mjs   (INTEROP_NODE_DIR: where oidc-provider is installed)
// Prints one JSON line on stdout when it listens: {"issuer":"http://127.0.0.1:PORT"}; runs until
// killed. OAUTH_ALG=RS256 signs access tokens RS256 instead of ES256.

import http from "node:http";
import { require } from "./harness.mjs";

const { default: Provider } = await import(require.resolve("oidc-provider"));
const jose = await import(require.resolve("jose"));

const ALG = process.env.OAUTH_ALG === "RS256" ? "RS256" : "ES256";
const SCOPE = "mcp:tools";

const ec = (await jose.generateKeyPair("ES256", { extractable: true })).privateKey;
const rsa = (await jose.generateKeyPair("RS256", { extractable: true, modulusLength: 2048 })).privateKey;
const keys = [
  { ...(await jose.exportJWK(rsa)), kid: "rsa-1", alg: "RS256", use: "sig" },
  { ...(await jose.exportJWK(ec)), kid: "ec-1", alg: "ES256", use: "sig" },
];

let handler = (_req, res) => {
  res.statusCode = 503;
  res.end();
};
const server = http.createServer((req, res) => handler(req, res));
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  jwks: { keys },
  scopes: ["openid", "offline_access", SCOPE],
  clientDefaults: {
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  },
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      useGrantedResource: () => true,
      // Any http(s) resource on loopback: the device under test (and, for the negative cases,
      // another one).
      getResourceServerInfo: (_ctx, resourceIndicator) => {
        const url = new URL(resourceIndicator);
        if (url.hostname !== "127.0.0.1" && url.hostname !== "localhost") {
          throw new Error(`not a loopback resource: ${resourceIndicator}`);
        }
        return {
          scope: SCOPE,
          audience: resourceIndicator,
          accessTokenTTL: 600,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: ALG } },
        };
      },
    },
  },
  pkce: { required: () => true },
  ttl: { AccessToken: 600, AuthorizationCode: 120, Grant: 600, Interaction: 600, Session: 600 },
});
// Plain http on loopback: the provider must not insist on TLS behind a proxy.
provider.proxy = false;
handler = provider.callback();

console.log(JSON.stringify({ issuer, alg: ALG }));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
