//! Firmware upgrades over MCP (mcp-hal's `kits::firmware` on the demo board's simulated flash),
//! driven by hostile clients.
//!
//! Input (`arbitrary`): an image the fuzzer plans, then up to 64 operations from three clients —
//! start an upgrade (of the planned image, with its hash, another hash or any text; any size),
//! send a piece (the planned image's next bytes, any bytes base64-encoded, or any text as
//! `data`; at the next offset or any other), ask the status, cancel the last task, let time pass,
//! restart when a restart is armed, or send one raw message as the model. Asserted against a model of what
//! the kit promises (see `docs/OTA.md`):
//! - no panic, and every answer is one JSON-RPC 2.0 response to its own id;
//! - a piece is taken (`applied`) only from the client that began the receiving upgrade, only at
//!   the next offset, only as standard padded base64 of 1 to 1024 bytes, and only within the
//!   image's size; the bytes taken are exactly the piece's;
//! - a refused piece, status or upgrade changes nothing in the flash;
//! - a restart is armed only into an image whose every byte the upgrade's client sent, whose
//!   SHA-256 is the one that client gave, and whose header names this board and a version (an
//!   image for another board fails its task before any restart); the next
//!   start-up runs it on trial;
//! - the status is always data (`boot`: normal, trial, upgraded, rolled_back with `rollback`),
//!   and says what the model's boot record says: a crash (a start-up nobody armed) rolls back a
//!   trial the firmware did not confirm, `came_up` confirms one, and a later upgrade writing over
//!   the slots never changes what the status says of the last start-up.
#![no_main]

use arbitrary::Arbitrary;
use base64::Engine as _;
use libfuzzer_sys::fuzz_target;
use mcp_core::server::Peer;
use mcp_core::{Caps, Config, Input, Principal, Server};
use mcp_hal::kits::firmware::MAX_CHUNK;
use mcp_hal::sim::{DemoBoard, SimFirmware, write_image_header};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::Mutex;

/// The flash: the boot record and two 2 KiB slots.
const STORAGE: usize = mcp_hal::sim::SimFirmware::RECORD + 2 * 2048;
const SLOT: usize = 2048;
const CLIENTS: u8 = 3;

#[derive(Arbitrary, Debug)]
struct Plan {
    /// The planned image: a header for this board (or another) with a version, then a payload.
    foreign: bool,
    version: u8,
    payload: Vec<u8>,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Upgrade {
        client: u8,
        size: Size,
        hash: Hash,
        model: bool,
    },
    Write {
        client: u8,
        offset: Offset,
        data: Data,
    },
    Status {
        client: u8,
    },
    Cancel {
        client: u8,
    },
    Wait {
        steps: u8,
    },
    Restart,
    /// A start-up nobody armed (power lost, a crash), when no upgrade is under way.
    Crash,
    /// The firmware confirms itself (`came_up`: it answered a tool call).
    Confirm,
    Raw {
        client: u8,
        text: String,
    },
}

#[derive(Arbitrary, Debug)]
enum Size {
    Planned,
    Any(u32),
}

#[derive(Arbitrary, Debug)]
enum Hash {
    Planned,
    /// The planned image's hash with one digit changed.
    Altered(u8),
    Text(String),
}

#[derive(Arbitrary, Debug)]
enum Offset {
    Next,
    Any(u32),
}

#[derive(Arbitrary, Debug)]
enum Data {
    /// The planned image's next `n` bytes (from the model's offset).
    Planned(u16),
    Bytes(Vec<u8>),
    Text(String),
}

/// What the model knows of the last start-up (the boot record's story).
#[derive(Debug, Clone, PartialEq)]
struct Boot {
    running: String,
    /// `normal`, `trial`, `upgraded`, `rolled_back`.
    state: &'static str,
    attempted: Option<String>,
    previous: Option<String>,
    /// What ran before the last upgrade, in full (read from its slot when it runs again).
    before: String,
}

/// The board name and version an image's header carries (`MCPFW1`, a length-prefixed board and
/// version), written from the format's description, not the simulator's code.
fn header(image: &[u8]) -> Option<(String, String)> {
    let rest = image.strip_prefix(b"MCPFW1")?;
    let (&bl, rest) = rest.split_first()?;
    let board = rest.get(..usize::from(bl))?;
    let rest = &rest[usize::from(bl)..];
    let (&vl, rest) = rest.split_first()?;
    let version = std::str::from_utf8(rest.get(..usize::from(vl))?).ok()?;
    let board = std::str::from_utf8(board).ok()?;
    (!version.is_empty()).then(|| (board.to_string(), version.to_string()))
}

/// A version as the boot record keeps it: at most 31 bytes, cut at a character.
fn kept(v: &str) -> String {
    let mut end = v.len().min(31);
    while !v.is_char_boundary(end) {
        end -= 1;
    }
    v[..end].to_string()
}

/// What the model knows of the upgrade in progress.
#[derive(Debug, Clone)]
struct Upgrade {
    owner: u8,
    size: usize,
    expected: [u8; 32],
    taken: Vec<u8>,
    task: Option<String>,
}

struct Device {
    server: Server<'static, DemoBoard, Caps<8>>,
    board: DemoBoard,
    out: Vec<u8>,
    now: u64,
    id: u64,
}

/// The flash, lent to each run's device and taken back (one allocation for the whole session).
static FLASH: Mutex<Option<&'static mut [u8]>> = Mutex::new(None);

impl Device {
    fn boot(storage: &'static mut [u8], now: u64) -> Device {
        let mut server = Server::new(Config::new("ota-fuzz", "1"));
        server
            .register_all(DemoBoard::FIRMWARE_TOOLS)
            .expect("the firmware tools register");
        let mut board = DemoBoard::default();
        board.firmware.slot = SimFirmware::new("demo", "1.0.0");
        board.firmware.slot.attach(storage);
        board.sim.set_time(now);
        let mut dev = Device {
            server,
            board,
            out: vec![0; 4096],
            now,
            id: 0,
        };
        for c in 0..CLIENTS {
            dev.request(
                c,
                Principal::User,
                "initialize",
                json!({"protocolVersion":"2025-11-25","capabilities":{}}),
            );
        }
        dev
    }

    fn flash(&self) -> Vec<u8> {
        self.board.firmware.slot.storage().to_vec()
    }

    /// One message from `client`; its answer, checked as one response to its id.
    fn send(&mut self, client: u8, who: Principal, msg: &str, id: Option<u64>) -> Option<Value> {
        let input = Input::new(msg.as_bytes(), who).peer(Peer::new(u64::from(client)));
        let n = self
            .server
            .handle_with(input, &mut self.board, &mut self.out, &mut |_: &[u8]| {})
            .map(|h| h.len)
            .unwrap_or(0);
        if n == 0 {
            return None;
        }
        let v: Value = serde_json::from_slice(&self.out[..n]).expect("an answer is JSON");
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        if let Some(id) = id {
            assert_eq!(v["id"], id, "the answer is to its own request: {v}");
            assert!(
                v.get("result").is_some() != v.get("error").is_some(),
                "a result or an error: {v}"
            );
        }
        Some(v)
    }

    fn request(&mut self, client: u8, who: Principal, method: &str, params: Value) -> Value {
        self.id += 1;
        let id = self.id;
        let msg = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string();
        self.send(client, who, &msg, Some(id))
            .expect("a request is answered")
    }

    fn call(&mut self, client: u8, who: Principal, tool: &str, args: Value) -> Value {
        self.request(
            client,
            who,
            "tools/call",
            json!({"name":tool,"arguments":args}),
        )
    }

    /// `steps` × 50 ms of time, polling the engine.
    fn wait(&mut self, steps: u8) {
        for _ in 0..steps {
            self.now += 50;
            self.board.sim.set_time(self.now);
            while self.server.poll(self.now, &mut self.board, &mut self.out) > 0 {}
        }
    }
}

fn image(plan: &Plan) -> Vec<u8> {
    let mut img = vec![0u8; 64];
    let board = if plan.foreign { "other" } else { "demo" };
    let version = format!("2.0.{}", plan.version);
    let n = write_image_header(board, &version, &mut img).expect("a header fits 64 bytes");
    img.truncate(n);
    img.extend(plan.payload.iter().take(SLOT - n));
    img
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn is_error(r: &Value) -> bool {
    r.get("error").is_some() || r["result"]["isError"] == true
}

fuzz_target!(|plan: Plan| {
    let storage = FLASH
        .lock()
        .expect("one run at a time")
        .take()
        .unwrap_or_else(|| Box::leak(vec![0u8; STORAGE].into_boxed_slice()));
    storage.fill(0);
    let img = image(&plan);
    let planned_hash: [u8; 32] = Sha256::digest(&img).into();
    let mut dev = Device::boot(storage, 0);
    let mut model: Option<Upgrade> = None;
    let mut boot = Boot {
        running: "1.0.0".into(),
        state: "normal",
        attempted: None,
        previous: None,
        before: String::new(),
    };

    for op in plan.ops.iter().take(64) {
        match op {
            Op::Upgrade {
                client,
                size,
                hash,
                model: by_model,
            } => {
                let client = client % CLIENTS;
                let size = match size {
                    Size::Planned => img.len() as u64,
                    Size::Any(n) => u64::from(*n),
                };
                let text = match hash {
                    Hash::Planned => hex(&planned_hash),
                    Hash::Altered(at) => {
                        let mut h = planned_hash;
                        h[usize::from(*at) % 32] ^= 1;
                        hex(&h)
                    }
                    Hash::Text(t) => t.clone(),
                };
                let who = if *by_model {
                    Principal::Model
                } else {
                    Principal::User
                };
                let before = dev.flash();
                let r = dev.request(
                    client,
                    who,
                    "tools/call",
                    json!({"name":"self.upgrade_firmware","arguments":{"size":size,"sha256":text},
                           "task":{"ttl":600000}}),
                );
                // A task-augmented call whose handler refuses gets a task that failed at once.
                if is_error(&r) || r["result"]["task"]["status"] != "working" {
                    assert_eq!(
                        dev.flash(),
                        before,
                        "a refused upgrade changed the flash: {r}"
                    );
                    continue;
                }
                // Started: by a person, with a size the slot holds and a hash of 64 hex digits.
                assert!(!by_model, "the model started a user-only upgrade: {r}");
                assert!((1..=SLOT as u64).contains(&size), "size {size} taken: {r}");
                let expected: [u8; 32] = (0..32)
                    .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).expect("hex digits"))
                    .collect::<Vec<_>>()
                    .try_into()
                    .expect("32 bytes");
                let task = r["result"]["task"]["taskId"].as_str().map(str::to_owned);
                assert!(task.is_some(), "an upgrade is a task: {r}");
                model = Some(Upgrade {
                    owner: client,
                    size: size as usize,
                    expected,
                    taken: Vec::new(),
                    task,
                });
            }
            Op::Write {
                client,
                offset,
                data,
            } => {
                let client = client % CLIENTS;
                let next = model.as_ref().map_or(0, |u| u.taken.len());
                let offset = match offset {
                    Offset::Next => next as u64,
                    Offset::Any(n) => u64::from(*n),
                };
                let text = match data {
                    Data::Planned(n) => {
                        let from = (offset as usize).min(img.len());
                        let to = (from + usize::from(*n)).min(img.len());
                        base64::engine::general_purpose::STANDARD.encode(&img[from..to])
                    }
                    Data::Bytes(b) => base64::engine::general_purpose::STANDARD.encode(b),
                    Data::Text(t) => t.clone(),
                };
                let before = dev.flash();
                let r = dev.call(
                    client,
                    Principal::User,
                    "self.firmware.write",
                    json!({"offset":offset,"data":text}),
                );
                if is_error(&r) {
                    assert_eq!(
                        dev.flash(),
                        before,
                        "a refused piece changed the flash: {r}"
                    );
                    continue;
                }
                // Taken: check every rule it had to pass.
                let up = model
                    .as_mut()
                    .expect("a piece was taken with no upgrade started");
                assert_eq!(up.owner, client, "another client's piece was taken: {r}");
                assert_eq!(offset as usize, up.taken.len(), "a piece out of order: {r}");
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(&text)
                    .expect("a piece taken is standard padded base64");
                assert!(
                    (1..=MAX_CHUNK).contains(&bytes.len()),
                    "{} bytes taken",
                    bytes.len()
                );
                assert!(
                    up.taken.len() + bytes.len() <= up.size,
                    "a piece past the size"
                );
                assert_eq!(
                    r["result"]["_meta"]["io.github.mcu-mcp/evidence"]["level"], "applied",
                    "{r}"
                );
                up.taken.extend_from_slice(&bytes);
            }
            Op::Status { client } => {
                let before = dev.flash();
                let r = dev.call(
                    client % CLIENTS,
                    Principal::Model,
                    "self.firmware.status",
                    json!({}),
                );
                assert!(
                    r.get("result").is_some(),
                    "the status is a tool result: {r}"
                );
                assert_eq!(dev.flash(), before, "the status changed the flash");
                // Data, and what the boot record says (a later upgrade changes none of it).
                let s = &r["result"]["structuredContent"];
                assert_eq!(r["result"].get("isError"), None, "{r}");
                assert_eq!(s["running"], boot.running.as_str(), "{r}");
                assert_eq!(s["boot"], boot.state, "{r}");
                assert_eq!(s["attempted"].as_str(), boot.attempted.as_deref(), "{r}");
                assert_eq!(s["previous"].as_str(), boot.previous.as_deref(), "{r}");
                let rollback = (boot.state == "rolled_back").then_some("not_confirmed");
                assert_eq!(s["rollback"].as_str(), rollback, "{r}");
                assert_eq!(
                    s.get("upgrade").is_some(),
                    dev.board.firmware.in_progress(),
                    "{r}"
                );
            }
            Op::Cancel { client } => {
                let Some(task) = model.as_ref().and_then(|u| u.task.clone()) else {
                    continue;
                };
                dev.request(
                    client % CLIENTS,
                    Principal::User,
                    "tasks/cancel",
                    json!({"taskId":task}),
                );
            }
            Op::Wait { steps } => dev.wait(steps % 64),
            Op::Restart => {
                if !dev.board.sim.system.take_reboot() {
                    continue;
                }
                // Armed only into the image the upgrade's client sent in full, with its hash.
                let up = model.take().expect("a restart was armed with no upgrade");
                assert_eq!(
                    up.taken.len(),
                    up.size,
                    "a restart into a partly sent image"
                );
                let hash: [u8; 32] = Sha256::digest(&up.taken).into();
                assert_eq!(
                    hash, up.expected,
                    "a restart into an image that does not match"
                );
                // …and only into an image this board starts: its header was checked first.
                let (board, version) =
                    header(&up.taken).expect("a restart into an image without a header");
                assert_eq!(board, "demo", "a restart into another board's image");
                let now = dev.now;
                let storage = dev.board.firmware.slot.detach();
                dev = Device::boot(storage, now);
                boot = Boot {
                    previous: Some(kept(&boot.running)),
                    attempted: Some(kept(&version)),
                    before: boot.running.clone(),
                    running: version,
                    state: "trial",
                };
                let s = dev.call(0, Principal::Model, "self.firmware.status", json!({}));
                assert_eq!(s["result"]["structuredContent"]["boot"], "trial", "{s}");
                assert_eq!(
                    s["result"]["structuredContent"]["running"],
                    boot.running.as_str(),
                    "{s}"
                );
                if up.taken == img {
                    assert!(!plan.foreign, "another board's image restarted the device");
                }
            }
            Op::Crash => {
                if dev.board.firmware.in_progress() {
                    continue;
                }
                model = None;
                let now = dev.now;
                let storage = dev.board.firmware.slot.detach();
                dev = Device::boot(storage, now);
                // A trial that did not confirm itself is rolled back to what ran before.
                if boot.state == "trial" {
                    boot = Boot {
                        attempted: Some(kept(&boot.running)),
                        running: boot.before.clone(),
                        previous: boot.previous.clone(),
                        before: boot.before.clone(),
                        state: "rolled_back",
                    };
                }
            }
            Op::Confirm => {
                mcp_hal::kits::firmware::came_up(&mut dev.board.firmware).expect("confirmed");
                if boot.state == "trial" {
                    boot.state = "upgraded";
                }
            }
            Op::Raw { client, text } => {
                // From the model: it reaches no user-only tool, so the model above stays true (a
                // `tasks/cancel` among these may end the upgrade: its pieces are then refused).
                dev.send(client % CLIENTS, Principal::Model, text, None);
            }
        }
    }

    *FLASH.lock().expect("one run at a time") = Some(dev.board.firmware.slot.detach());
});
