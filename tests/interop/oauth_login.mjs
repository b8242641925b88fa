// What the Node OAuth interop clients share: the authorization server (oauth_server.mjs, a real
// oidc-provider) started on loopback, and a person logging in on its pages — headless: the
// authorization URL is followed, each HTML form the server shows (login, consent) is filled in
// and submitted as a browser would, with the server's cookies, until it redirects to the client's
// redirect URI with the code.

import { spawn } from "node:child_process";
import path from "node:path";
import { repo } from "./harness.mjs";

/** Starts oauth_server.mjs (on Node 22 when INSPECTOR_NODE names it; oidc-provider wants 22+);
 * resolves to `{ child, issuer }`. `alg`: "ES256" (default) or "RS256" for its access tokens. */
export function startAuthServer(alg = "ES256") {
  const node = process.env.INSPECTOR_NODE ?? process.execPath;
  return new Promise((resolve, reject) => {
    const child = spawn(node, [path.join(repo, "tests", "interop", "oauth_server.mjs")], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, OAUTH_ALG: alg },
    });
    let out = "";
    let err = "";
    const timer = setTimeout(() => reject(new Error(`the authorization server did not start: ${err}`)), 20000);
    child.on("exit", (code) => reject(new Error(`the authorization server exited with ${code}: ${err}`)));
    child.stderr.on("data", (d) => { err += String(d); });
    child.stdout.on("data", (d) => {
      out += String(d);
      const i = out.indexOf("\n");
      if (i >= 0) {
        clearTimeout(timer);
        resolve({ child, ...JSON.parse(out.slice(0, i)) });
      }
    });
  });
}

/** The attributes of the first `<form>` and its `<input>`s in `html`. */
function firstForm(html) {
  const form = html.match(/<form\b([^>]*)>([\s\S]*?)<\/form>/i);
  if (!form) return undefined;
  const attr = (tag, name) => tag.match(new RegExp(`\\b${name}="([^"]*)"`, "i"))?.[1];
  const inputs = [...form[2].matchAll(/<input\b([^>]*)>/gi)].map((m) => ({
    type: (attr(m[1], "type") ?? "text").toLowerCase(),
    name: attr(m[1], "name"),
    value: attr(m[1], "value") ?? "",
  }));
  return { action: attr(form[1], "action"), method: (attr(form[1], "method") ?? "get").toLowerCase(), inputs };
}

/** A person logs in as `login` on the authorization server's pages, starting at `authUrl`, and
 * approves; resolves to the redirect it ends with (a URL on `redirectUri`; without one, the first
 * URL off the server's origin: the client's callback), and what was done. */
export async function logIn(authUrl, redirectUri, login = "interop-user") {
  const server = new URL(authUrl).origin;
  const done = (u) => (redirectUri ? u.href.startsWith(redirectUri) : u.origin !== server);
  const jar = new Map();
  const steps = [];
  const cookieHeader = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
  const remember = (res) => {
    for (const c of res.headers.getSetCookie?.() ?? []) {
      const [pair] = c.split(";");
      const eq = pair.indexOf("=");
      jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
  };
  let url = new URL(authUrl);
  let init = { method: "GET" };
  for (let hop = 0; hop < 20; hop++) {
    if (done(url)) return { redirect: url, steps };
    const res = await fetch(url, {
      ...init,
      redirect: "manual",
      headers: { ...(init.headers ?? {}), cookie: cookieHeader() },
    });
    remember(res);
    steps.push(`${init.method} ${url.pathname} -> ${res.status}`);
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get("location"), url);
      init = { method: "GET" };
      continue;
    }
    const html = await res.text();
    const form = firstForm(html);
    if (res.status !== 200 || !form) throw new Error(`no form to fill at ${url} (${res.status}): ${html.slice(0, 300)}`);
    const body = new URLSearchParams();
    for (const input of form.inputs) {
      if (!input.name) continue;
      if (input.type === "password") body.set(input.name, "any-password");
      else if (input.type === "text" || input.type === "email") body.set(input.name, login);
      else body.set(input.name, input.value);
    }
    steps.push(`form ${[...body.keys()].join(",")}`);
    url = new URL(form.action ?? url.href, url);
    init = form.method === "post"
      ? { method: "POST", body: body.toString(), headers: { "content-type": "application/x-www-form-urlencoded" } }
      : { method: "GET" };
    if (init.method === "GET") for (const [k, v] of body) url.searchParams.set(k, v);
  }
  throw new Error(`the login did not reach ${redirectUri ?? "the client"}: ${steps.join("; ")}`);
}
