#!/usr/bin/env node
// A browser for an OAuth client that opens one (the Inspector's CLI, through `open` and
// xdg-open's $BROWSER): `node headless_browser.mjs URL` logs a person in on the authorization
// server's pages (oauth_login.mjs fills in its forms), then follows the redirect back to the
// client's own callback page, as a browser would, which hands the client the code. Writes what it
// did to $HEADLESS_BROWSER_LOG when set.

import { appendFileSync } from "node:fs";
import { logIn } from "./oauth_login.mjs";

const url = process.argv[2];
const log = (line) => {
  if (process.env.HEADLESS_BROWSER_LOG) appendFileSync(process.env.HEADLESS_BROWSER_LOG, `${line}\n`);
};
try {
  log(`open ${url}`);
  const { redirect, steps } = await logIn(url);
  log(`login: ${steps.join("; ")}`);
  const res = await fetch(redirect, { redirect: "follow" });
  log(`callback ${redirect.origin}${redirect.pathname} -> ${res.status}`);
} catch (e) {
  log(`failed: ${e?.stack ?? e}`);
  process.exit(1);
}
