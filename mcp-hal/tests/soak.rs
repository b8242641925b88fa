//! A deterministic soak: 100,000 `tools/call` messages (and the other messages of a session)
//! through the engine to a simulated board wired to every
//! kit, with random fault sets injected, retransmissions, malformed messages and notifications
//! mixed in, on a simulated clock.
//!
//! Checked at every step:
//! - **responses = requests**: every request gets exactly one response (a parked `tasks/result`
//!   gets it later from `poll`), notifications and peer responses none, and ids are echoed;
//! - **at most once**: each distinct action request changes the simulated hardware's counters
//!   (codec write attempts, backlight writes, relay writes, motor starts, reboots scheduled) by
//!   exactly what one execution does; a retransmission (same id, tool and arguments from the same
//!   peer, with no call of that tool run in between, within the engine's 4 remembered calls)
//!   changes nothing and gets the byte-identical response; a malformed message,
//!   a notification, a refused or invalid call changes nothing;
//! - **evidence follows the fault**: each answer's `isError`, evidence level, commanded and
//!   observed values are what the active fault set implies (predicted from the board's state
//!   before the call, not read from the answer), and every task's final state agrees with it.
//!
//! Fault sets change between epochs of 400 messages; between epochs the clock runs 20 s so that
//! every action finishes, and every task's final state is checked through the status tool.
//!
//! The board is `sim::DemoBoard`, which exists only with the feature `tasks` (its tool set has the
//! long-running `self.motor.move_to`), and the soak predicts and checks tasks throughout: without
//! `tasks` there is nothing here to run.
#![cfg(all(feature = "sim", feature = "tasks"))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "a test"
)]

use std::collections::{HashSet, VecDeque};
use std::time::Instant;

use mcp_core::{Caps, Config, Principal, Server};
use mcp_hal::sim::{DemoBoard, Fault, Faults, SimBoard, SimCodec, SimMotor};
use serde_json::{Value, json};

/// The demo board: the sim devices behind every kit, with the door-sensor interlock.
type Board = DemoBoard;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// What the simulated hardware has done, by counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Hw {
    codec_attempts: u32,
    codec_writes: u32,
    backlight_writes: u32,
    relay_writes: u32,
    motor_starts: u32,
    reboots: u32,
}

fn hw(b: &SimBoard) -> Hw {
    Hw {
        codec_attempts: b.codec.attempts(),
        codec_writes: b.codec.writes(),
        backlight_writes: b.backlight.writes(),
        relay_writes: b.relay.writes(),
        motor_starts: b.motor.starts(),
        reboots: b.system.schedules(),
    }
}

/// An action call: the tool and its one argument.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Action {
    Volume(i64),
    Brightness(i64),
    Relay(bool),
    Move(i64),
    Reboot,
}

impl Action {
    fn tool(self) -> &'static str {
        match self {
            Action::Volume(_) => "self.audio_speaker.set_volume",
            Action::Brightness(_) => "self.screen.set_brightness",
            Action::Relay(_) => "self.relay.set",
            Action::Move(_) => "self.motor.move_to",
            Action::Reboot => "self.reboot",
        }
    }
    fn arguments(self) -> String {
        match self {
            Action::Volume(v) => format!(r#"{{"volume":{v}}}"#),
            Action::Brightness(v) => format!(r#"{{"brightness":{v}}}"#),
            Action::Relay(on) => format!(r#"{{"on":{on}}}"#),
            Action::Move(p) => format!(r#"{{"position":{p}}}"#),
            Action::Reboot => "{}".to_string(),
        }
    }
}

/// The answer an action must get, predicted from the fault set and the board before the call.
#[derive(Debug, PartialEq)]
struct Cell {
    error: bool,
    level: Option<&'static str>,
    commanded: Value,
    observed: Value,
    /// The answer starts a task (a plain call's `task_id`).
    task: bool,
}

fn cell(r: &Value) -> Cell {
    let level = r["_meta"]["io.github.mcu-mcp/evidence"]["level"]
        .as_str()
        .map(|l| match l {
            "unknown" => "unknown",
            "not_applied" => "not_applied",
            "scheduled" => "scheduled",
            "applied" => "applied",
            "read_back" => "read_back",
            "measured" => "measured",
            other => panic!("unknown level {other}"),
        });
    assert!(r["content"].is_array(), "a CallToolResult: {r}");
    Cell {
        // (`isError` is written when the call failed; absent, it is false.)
        error: r["isError"] == true,
        level,
        commanded: r["_meta"]["io.github.mcu-mcp/evidence"]["commanded"].clone(),
        observed: r["_meta"]["io.github.mcu-mcp/evidence"]["observed"].clone(),
        task: r["structuredContent"]["task_id"].is_string(),
    }
}

fn c(
    error: bool,
    level: Option<&'static str>,
    commanded: Value,
    observed: Value,
    task: bool,
) -> Cell {
    Cell {
        error,
        level,
        commanded,
        observed,
        task,
    }
}

const N: Value = Value::Null;

/// The codec's read-back of a stored volume under `faults`.
fn reported(stored: i64, faults: Faults) -> i64 {
    if faults.contains(Fault::ReadbackMismatch) {
        (stored + 7) % 101
    } else {
        stored
    }
}

/// The expected answer and hardware effect of `action`, from the faults and the board now.
fn predict(action: Action, b: &Board) -> (Cell, Hw) {
    let f = b.sim.faults();
    let mut d = Hw::default();
    let cell = match action {
        Action::Volume(v) => {
            d.codec_attempts = 1;
            // A failure says what was commanded and how much took effect (a NACK: nothing; a
            // timeout: unknown).
            if f.contains(Fault::CodecNack) {
                c(true, Some("not_applied"), json!(v), N, false)
            } else if f.contains(Fault::Timeout) {
                c(true, Some("unknown"), json!(v), N, false)
            } else {
                d.codec_writes = 1;
                let stored = if f.contains(Fault::CodecClamp) {
                    v.min(63)
                } else {
                    v
                };
                let stored = if f.contains(Fault::CodecQuantized) {
                    let p = mcp_hal::Percent::new(stored as u8).unwrap();
                    let level = SimCodec::quantize(SimCodec::percent_to_register(p));
                    i64::from(SimCodec::register_to_percent(level).get())
                } else {
                    stored
                };
                let tolerance = if f.contains(Fault::CodecQuantized) {
                    2
                } else {
                    0
                };
                // Under `slow` the register still shows the settled value when read back at once.
                let visible = if f.contains(Fault::Slow) {
                    i64::from(b.sim.codec.stored_volume().get())
                } else {
                    stored
                };
                let observed = reported(visible, f);
                if (observed - v).abs() <= tolerance {
                    c(false, Some("read_back"), json!(v), json!(observed), false)
                } else if f.contains(Fault::Slow) {
                    c(false, Some("applied"), json!(v), N, true)
                } else {
                    c(true, Some("read_back"), json!(v), json!(observed), false)
                }
            }
        }
        Action::Brightness(v) => {
            d.backlight_writes = 1;
            c(false, Some("applied"), json!(v), N, false)
        }
        Action::Relay(on) => {
            if on && b.door_open {
                c(true, Some("not_applied"), json!(on), N, false)
            } else {
                d.relay_writes = 1;
                let contacts = if f.contains(Fault::RelayStuck) {
                    false
                } else if f.contains(Fault::Slow) {
                    b.sim.relay.contacts()
                } else {
                    on
                };
                if contacts == on {
                    c(false, Some("measured"), json!(on), json!(on), false)
                } else if f.contains(Fault::Slow) {
                    // 2000 ms declared, beyond the 200 ms call budget: a task.
                    c(false, Some("applied"), json!(on), N, true)
                } else {
                    // Stuck, 20 ms declared: waited out in the call, then a failure.
                    c(true, Some("measured"), json!(on), json!(contacts), false)
                }
            }
        }
        Action::Move(p) => {
            let m = b.sim.motor.motion();
            if !m.moving && (i64::from(m.position) - p).unsigned_abs() <= 2 {
                c(false, Some("measured"), json!(p), json!(m.position), false)
            } else if f.contains(Fault::QueueFull) {
                c(true, Some("not_applied"), json!(p), N, false)
            } else {
                d.motor_starts = 1;
                c(false, Some("scheduled"), json!(p), N, true)
            }
        }
        Action::Reboot => {
            if f.contains(Fault::QueueFull) {
                c(true, Some("not_applied"), N, N, false)
            } else {
                d.reboots = 1;
                c(false, Some("scheduled"), N, N, false)
            }
        }
    };
    (cell, d)
}

fn add(a: Hw, d: Hw) -> Hw {
    Hw {
        codec_attempts: a.codec_attempts + d.codec_attempts,
        codec_writes: a.codec_writes + d.codec_writes,
        backlight_writes: a.backlight_writes + d.backlight_writes,
        relay_writes: a.relay_writes + d.relay_writes,
        motor_starts: a.motor_starts + d.motor_starts,
        reboots: a.reboots + d.reboots,
    }
}

/// The engine's default cached response size (`Server`'s `CACHE_BYTES`).
const CACHE_BYTES: usize = 384;

/// A task started by a plain call, to be checked once it has finished.
#[derive(Debug)]
struct Task {
    id: String,
    action: Action,
    faults: Faults,
    /// Another command reached the same device while the task was running.
    superseded: bool,
    /// The motor's position when the task started.
    from: i32,
}

/// An executed action request, kept for retransmission while it is in the engine's window.
#[derive(Debug, Clone)]
struct Executed {
    id: i64,
    action: Action,
    bytes: Vec<u8>,
    response: Vec<u8>,
}

#[derive(Debug, Default)]
struct Figures {
    /// Messages handed to the engine.
    messages: u64,
    /// Of which `tools/call` (valid or not, retransmitted or not).
    calls: u64,
    requests: u64,
    responses: u64,
    notifications: u64,
    actions: u64,
    reads: u64,
    retransmissions: u64,
    id_reuses: u64,
    malformed: u64,
    invalid_arguments: u64,
    refused_for_model: u64,
    busy: u64,
    unreplayable: u64,
    tasks: u64,
    fault_sets: u64,
    faulty_actions: u64,
}

struct Soak {
    rng: Rng,
    server: Server<'static, Board, Caps<16>>,
    board: Board,
    out: Vec<u8>,
    now: u64,
    next_id: i64,
    /// The engine remembers 4 executed action calls; retransmit from the last 3 whose tool has
    /// not run since.
    window: VecDeque<Executed>,
    tasks: Vec<Task>,
    /// The hardware counters as the executed requests so far account for them.
    expected_hw: Hw,
    legacy_errors: bool,
    /// The last response's bytes.
    last: Vec<u8>,
    /// (id, tool, arguments) of every action call sent.
    sent: HashSet<(i64, &'static str, String)>,
    f: Figures,
}

impl Soak {
    fn new(seed: u64) -> Soak {
        // Every request is answered in its own turn here (the soak checks each answer at once):
        // a plain call of a long-running tool is answered with its task at once.
        let mut server = Server::new(Config::new("soak", "1").hold_answer(0));
        server.register_all(Board::TOOLS).unwrap();
        Soak {
            rng: Rng(seed),
            server,
            board: Board::new(Faults::NONE, false),
            out: vec![0; 8192],
            now: 0,
            next_id: 1,
            window: VecDeque::new(),
            tasks: Vec::new(),
            expected_hw: Hw::default(),
            legacy_errors: true,
            last: Vec::new(),
            sent: HashSet::new(),
            f: Figures::default(),
        }
    }

    /// Sends one message; returns the response bytes (empty for none).
    fn send(&mut self, bytes: &[u8], principal: Principal) -> Vec<u8> {
        self.f.messages += 1;
        if bytes.windows(12).any(|w| w == b"\"tools/call\"") {
            self.f.calls += 1;
        }
        let n = self
            .server
            .handle(bytes, principal, &mut self.board, &mut self.out)
            .unwrap()
            .len;
        assert!(n <= self.out.len());
        // A call that waited for a settle time advanced the board's clock: keep up with it.
        self.now = self.now.max(self.board.sim.now_ms());
        if n > 0 {
            self.f.responses += 1;
        }
        self.last = self.out[..n].to_vec();
        self.last.clone()
    }

    fn request(&mut self, bytes: &[u8], principal: Principal, id: &str) -> Value {
        self.f.requests += 1;
        let out = self.send(bytes, principal);
        assert!(
            !out.is_empty(),
            "no answer to {}",
            String::from_utf8_lossy(bytes)
        );
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["jsonrpc"], "2.0");
        assert_eq!(
            v["id"].to_string(),
            id,
            "id echo for {}",
            String::from_utf8_lossy(bytes)
        );
        assert!(v.get("result").is_some() ^ v.get("error").is_some(), "{v}");
        v
    }

    fn fresh_id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    fn call_bytes(id: i64, tool: &str, args: &str) -> Vec<u8> {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#
        )
        .into_bytes()
    }

    fn assert_hw(&self, what: &str) {
        assert_eq!(
            hw(&self.board.sim),
            self.expected_hw,
            "hardware counters after {what} (faults {})",
            self.board.sim.faults()
        );
    }

    /// Advances the clock and delivers what the engine owes.
    fn tick(&mut self, ms: u64) {
        self.now += ms;
        self.board.sim.set_time(self.now);
        loop {
            let n = self.server.poll(self.now, &mut self.board, &mut self.out);
            if n == 0 {
                break;
            }
            let v: Value = serde_json::from_slice(&self.out[..n]).unwrap();
            assert!(
                v["method"].is_string(),
                "poll emitted a response nobody waits for: {v}"
            );
        }
        // A reboot the board executes is consumed (it does not restart the simulation).
        let _ = self.board.sim.system.take_reboot();
    }

    fn random_action(&mut self) -> Action {
        match self.rng.below(10) {
            0..=2 => Action::Volume(self.rng.below(101) as i64),
            3..=4 => Action::Brightness(self.rng.below(101) as i64),
            5..=6 => Action::Relay(self.rng.chance(50)),
            7..=8 => Action::Move(self.rng.below(1001) as i64),
            _ => Action::Reboot,
        }
    }

    /// A fresh action request, checked against the prediction.
    fn action(&mut self, action: Action, id: i64) {
        // Finished tasks are checked before a new one could evict them from the task table.
        if !matches!(action, Action::Brightness(_) | Action::Reboot) {
            self.resolve_tasks(false);
        }
        self.f.actions += 1;
        assert!(
            self.sent.insert((id, action.tool(), action.arguments())),
            "not a distinct request: {id} {action:?}"
        );
        let bytes = Self::call_bytes(id, action.tool(), &action.arguments());
        let (expected, delta) = predict(action, &self.board);
        let start_position = self.board.sim.motor.motion().position;
        let v = self.request(&bytes, Principal::User, &id.to_string());
        let r = &v["result"];
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        if text.starts_with("Device busy") {
            // Refused before the handler ran (every task slot holds a running action): no effect,
            // not cached.
            assert_eq!(r["isError"], true);
            self.f.busy += 1;
            self.assert_hw("a busy refusal");
            return;
        }
        let got = cell(r);
        assert_eq!(
            got,
            expected,
            "{action:?} under {} (door open {}): {v}",
            self.board.sim.faults(),
            self.board.door_open
        );
        self.expected_hw = add(self.expected_hw, delta);
        self.assert_hw(&format!("{action:?}"));
        let same_device = |a: Action| std::mem::discriminant(&a) == std::mem::discriminant(&action);
        if delta != Hw::default() {
            for t in self.tasks.iter_mut().filter(|t| same_device(t.action)) {
                t.superseded = true;
            }
        }
        if !self.board.sim.faults().is_empty() {
            self.f.faulty_actions += 1;
        }
        if got.task {
            self.f.tasks += 1;
            self.tasks.push(Task {
                id: r["structuredContent"]["task_id"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                action,
                faults: self.board.sim.faults(),
                superseded: false,
                from: start_position,
            });
        }
        let response = self.last.clone();
        // The handler ran: every remembered answer of this tool is dropped (its evidence may no
        // longer hold), so none of them is a retransmission any more.
        self.window.retain(|e| e.action.tool() != action.tool());
        self.window.push_back(Executed {
            id,
            action,
            bytes,
            response,
        });
        while self.window.len() > 3 {
            self.window.pop_front();
        }
    }

    fn retransmit(&mut self) {
        let Some(e) = self
            .window
            .get(self.rng.below(self.window.len() as u64) as usize)
            .cloned()
        else {
            return;
        };
        self.f.retransmissions += 1;
        self.f.requests += 1;
        let out = self.send(&e.bytes, Principal::User);
        if out != e.response {
            // Too large for a cache slot. A task start is answered from the task table (the
            // task's answer as it stands now); otherwise, or once the finished task was evicted
            // for newer ones, -32603 says the call already ran. Either way nothing runs again
            // (the hardware counters below).
            assert!(
                e.response.len() > CACHE_BYTES,
                "a retransmission of {:?} got another answer: {} instead of {}",
                e.action,
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&e.response)
            );
            let v: Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(v["id"], e.id);
            let ran = v["error"]["code"] == -32603
                && v["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("a call that already ran"));
            assert!(
                v["result"].is_object() || ran,
                "the task's answer, or that the call already ran: {v}"
            );
            self.f.unreplayable += 1;
        }
        self.assert_hw("a retransmission");
    }

    /// Same id as an executed call, other arguments: a distinct request (xiaozhi reuses ids).
    fn reuse_id(&mut self) {
        let Some(e) = self.window.back().cloned() else {
            return;
        };
        // Other arguments than every call sent with this id so far.
        let action = loop {
            let a = self.random_action();
            if !self.sent.contains(&(e.id, a.tool(), a.arguments())) {
                break a;
            }
        };
        self.f.id_reuses += 1;
        self.action(action, e.id);
    }

    fn read(&mut self) {
        self.f.reads += 1;
        let id = self.fresh_id();
        if self.rng.chance(70) || self.tasks.is_empty() {
            let bytes = Self::call_bytes(id, "self.get_device_status", "{}");
            let v = self.request(&bytes, Principal::Model, &id.to_string());
            let f = self.board.sim.faults();
            let r = &v["result"];
            if f.contains(Fault::CodecNack) || f.contains(Fault::Timeout) {
                assert_eq!(r["isError"], true, "{v}");
            } else {
                assert_eq!(r.get("isError"), None, "{v}");
                let s = &r["structuredContent"];
                let stored = i64::from(self.board.sim.codec.stored_volume().get());
                assert_eq!(s["audio_speaker"]["volume"], reported(stored, f), "{v}");
                assert_eq!(s["relay"]["on"], self.board.sim.relay.contacts(), "{v}");
                assert_eq!(
                    s["motor"]["position"],
                    self.board.sim.motor.motion().position,
                    "{v}"
                );
                assert_eq!(
                    s["screen"]["brightness"],
                    self.board.sim.backlight.level().get(),
                    "{v}"
                );
            }
        } else {
            let t = &self.tasks[self.rng.below(self.tasks.len() as u64) as usize];
            let args = format!(r#"{{"task_id":"{}"}}"#, t.id);
            let bytes = Self::call_bytes(id, "self.tasks.get_status", &args);
            let v = self.request(&bytes, Principal::Model, &id.to_string());
            assert_eq!(v["result"].get("isError"), None, "{v}");
        }
        self.assert_hw("a read");
    }

    /// A message that must not act: malformed, invalid, refused, or a notification.
    fn noise(&mut self) {
        let id = self.fresh_id();
        let action = self.random_action();
        let good = Self::call_bytes(id, action.tool(), &action.arguments());
        match self.rng.below(12) {
            0 => {
                // Cut short: never valid JSON.
                self.f.malformed += 1;
                let cut = 1 + self.rng.below(good.len() as u64 - 2) as usize;
                let v = self.request(&good[..cut], Principal::User, "null");
                assert_eq!(v["error"]["code"], -32700);
            }
            1 => {
                self.f.malformed += 1;
                let mut bad = good.clone();
                bad.insert(self.rng.below(bad.len() as u64) as usize, 0xFF);
                let v = self.request(&bad, Principal::User, "null");
                assert_eq!(v["error"]["code"], -32700);
            }
            2 => {
                self.f.malformed += 1;
                let msg = format!(
                    r#"{{"jsonrpc":"1.0","id":{id},"method":"tools/call","params":{{"name":"{}","arguments":{}}}}}"#,
                    action.tool(),
                    action.arguments()
                );
                let v = self.request(msg.as_bytes(), Principal::User, &id.to_string());
                assert_eq!(v["error"]["code"], -32600);
            }
            3 => {
                self.f.malformed += 1;
                let msg = format!(r#"[{}]"#, String::from_utf8_lossy(&good));
                let v = self.request(msg.as_bytes(), Principal::User, "null");
                assert_eq!(v["error"]["code"], -32600);
            }
            4 => {
                self.f.malformed += 1;
                let msg = format!(
                    r#"{{"jsonrpc":"2.0","id":{id}.5,"method":"tools/call","params":{{"name":"{}","arguments":{}}}}}"#,
                    action.tool(),
                    action.arguments()
                );
                let v = self.request(msg.as_bytes(), Principal::User, "null");
                assert_eq!(v["error"]["code"], -32600);
            }
            5 => {
                // Invalid arguments: wrong type, out of range, unknown or duplicate key.
                self.f.invalid_arguments += 1;
                let args = match self.rng.below(5) {
                    0 => r#"{"volume":"50"}"#.to_string(),
                    1 => r#"{"volume":101}"#.to_string(),
                    2 => r#"{"volume":50.5}"#.to_string(),
                    3 => r#"{"volume":5,"mute":true}"#.to_string(),
                    _ => r#"{"volume":5,"volume":6}"#.to_string(),
                };
                let bytes = Self::call_bytes(id, "self.audio_speaker.set_volume", &args);
                let v = self.request(&bytes, Principal::User, &id.to_string());
                if self.legacy_errors {
                    assert_eq!(v["error"]["code"], -32602, "{v}");
                } else {
                    assert_eq!(v["result"]["isError"], true, "{v}");
                }
            }
            6 => {
                self.f.malformed += 1;
                let bytes =
                    Self::call_bytes(id, "self.audio_speaker.set_volum", &action.arguments());
                let v = self.request(&bytes, Principal::User, &id.to_string());
                assert_eq!(v["error"]["code"], -32602);
            }
            7 => {
                self.f.refused_for_model += 1;
                let bytes = Self::call_bytes(id, "self.reboot", "{}");
                let v = self.request(&bytes, Principal::Model, &id.to_string());
                assert_eq!(v["error"]["code"], -32602);
            }
            8 => {
                // The same call as a notification (no id): never executed, never answered.
                self.f.notifications += 1;
                let msg = format!(
                    r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"{}","arguments":{}}}}}"#,
                    action.tool(),
                    action.arguments()
                );
                assert!(self.send(msg.as_bytes(), Principal::User).is_empty());
            }
            9 => {
                self.f.notifications += 1;
                let msg = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
                assert!(self.send(msg, Principal::User).is_empty());
            }
            10 => {
                // A peer response: ignored.
                self.f.notifications += 1;
                let msg = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
                assert!(self.send(msg.as_bytes(), Principal::User).is_empty());
            }
            _ => {
                self.f.malformed += 1;
                let msg = format!(r#"{{"jsonrpc":"2.0","id":"s{id}","method":"resources/lisst"}}"#);
                let v = self.request(msg.as_bytes(), Principal::User, &format!("\"s{id}\""));
                assert_eq!(v["error"]["code"], -32601);
            }
        }
        self.assert_hw("a message that must not act");
    }

    /// Runs the clock until every action has finished, then checks every task's final state.
    fn settle(&mut self) {
        for _ in 0..100 {
            self.tick(200);
        }
        self.resolve_tasks(true);
        // Retransmissions across the pause would be just as valid; keep the window simple.
        self.window.clear();
    }

    /// Asks the status tool for every tracked task; checks and forgets the finished ones.
    fn resolve_tasks(&mut self, all_done: bool) {
        let tasks = std::mem::take(&mut self.tasks);
        for t in tasks {
            let id = self.fresh_id();
            let args = format!(r#"{{"task_id":"{}"}}"#, t.id);
            let bytes = Self::call_bytes(id, "self.tasks.get_status", &args);
            let v = self.request(&bytes, Principal::User, &id.to_string());
            assert_eq!(v["result"].get("isError"), None, "{t:?}: {v}");
            let s = &v["result"]["structuredContent"];
            let status = s["status"].as_str().unwrap_or_else(|| panic!("{v}"));
            if status == "working" {
                assert!(!all_done, "task {t:?} still working after 20 s: {v}");
                self.tasks.push(t);
                continue;
            }
            check_final(&t, status, s, &v);
        }
    }

    fn run(&mut self, calls: u64) {
        let mut step = 0u64;
        while self.f.calls < calls {
            step += 1;
            if step % 400 == 1 {
                self.settle();
                // A new fault set: usually none or one fault, sometimes two or three.
                let mut faults = Faults::NONE;
                for _ in 0..self.rng.below(4) {
                    faults.insert(Fault::ALL[self.rng.below(Fault::ALL.len() as u64) as usize]);
                }
                if self.rng.chance(25) {
                    faults = Faults::NONE;
                }
                self.board.sim.set_faults(faults);
                self.board.door_open = self.rng.chance(20);
                self.f.fault_sets += 1;
                if self.rng.chance(30) {
                    // A client (re)initializes: the revision decides how invalid arguments answer.
                    let rev =
                        ["2024-11-05", "2025-06-18", "2025-11-25"][self.rng.below(3) as usize];
                    let id = self.fresh_id();
                    let msg = format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"{rev}","capabilities":{{}}}}}}"#
                    );
                    let v = self.request(msg.as_bytes(), Principal::User, &id.to_string());
                    assert_eq!(v["result"]["protocolVersion"], rev);
                    self.legacy_errors = rev != "2025-11-25";
                }
            }
            let ms = self.rng.below(250);
            self.tick(ms);
            match self.rng.below(100) {
                0..=49 => {
                    let a = self.random_action();
                    let id = self.fresh_id();
                    self.action(a, id);
                }
                50..=64 => self.retransmit(),
                65..=69 => self.reuse_id(),
                70..=79 => self.read(),
                _ => self.noise(),
            }
        }
        self.settle();
    }
}

/// A finished task's final state agrees with its command and the faults of its epoch.
fn check_final(t: &Task, status: &str, s: &Value, v: &Value) {
    let ev = &s["evidence"];
    let f = t.faults;
    match (t.action, status) {
        (Action::Volume(vol), "completed") => {
            assert_eq!(ev["level"], "read_back", "{v}");
            assert_eq!(ev["commanded"], vol, "{v}");
            // Exact, or within the quantized codec's declared step.
            let tolerance = ev["tolerance"].as_i64().unwrap_or(0);
            assert_eq!(
                tolerance,
                if f.contains(Fault::CodecQuantized) {
                    2
                } else {
                    0
                },
                "{v}"
            );
            let observed = ev["observed"].as_i64().unwrap();
            assert!((observed - vol).abs() <= tolerance, "{v}");
            assert!(
                vol <= 63 + tolerance
                    || !f.contains(Fault::CodecClamp)
                    || f.contains(Fault::ReadbackMismatch),
                "{t:?}: a clamped codec confirmed {vol}: {v}"
            );
        }
        (Action::Volume(vol), "failed") => {
            assert_eq!(ev["level"], "read_back", "{v}");
            assert_eq!(ev["commanded"], vol, "{v}");
            let tolerance = ev["tolerance"].as_i64().unwrap_or(0);
            assert!(
                (ev["observed"].as_i64().unwrap() - vol).abs() > tolerance,
                "{t:?} failed with a matching read-back: {v}"
            );
            assert!(
                t.superseded
                    || f.contains(Fault::CodecClamp)
                    || f.contains(Fault::ReadbackMismatch),
                "{t:?} failed without a fault or a later command to explain it: {v}"
            );
        }
        (Action::Relay(on), "completed") => {
            assert_eq!(ev["level"], "measured", "{v}");
            assert_eq!(
                (&ev["commanded"], &ev["observed"]),
                (&json!(on), &json!(on)),
                "{v}"
            );
            assert!(
                !(on && f.contains(Fault::RelayStuck)),
                "{t:?}: a stuck relay confirmed on: {v}"
            );
        }
        (Action::Relay(on), "failed") => {
            assert_eq!(ev["level"], "measured", "{v}");
            assert_eq!(
                (&ev["commanded"], &ev["observed"]),
                (&json!(on), &json!(!on)),
                "{v}"
            );
            assert!(t.superseded || f.contains(Fault::RelayStuck), "{t:?} {v}");
        }
        (Action::Move(p), "completed") => {
            assert_eq!(ev["level"], "measured", "{v}");
            assert_eq!(ev["commanded"], p, "{v}");
            let at = ev["observed"].as_i64().unwrap();
            assert!(
                (at - p).abs() <= 2,
                "{t:?}: completed {at} away from the target: {v}"
            );
            // A stalling motor still completes a move short enough to stop within tolerance.
            let stall_at = SimMotor::stall_point(t.from, i32::try_from(p).unwrap());
            assert!(
                !f.contains(Fault::MotorStall) || (i64::from(stall_at) - p).abs() <= 2,
                "{t:?}: completed although stalling at {stall_at}: {v}"
            );
        }
        (Action::Move(p), "failed") => {
            assert_eq!(ev["level"], "measured", "{v}");
            assert_eq!(ev["commanded"], p, "{v}");
            assert_eq!(
                s["stop"], "issued",
                "a failed move issues the safe-stop: {v}"
            );
            assert!(t.superseded || f.contains(Fault::MotorStall), "{t:?} {v}");
        }
        (a, s) => panic!("unexpected final state {s} for {a:?}: {v}"),
    }
}

#[test]
fn soak_100k_calls_with_faults_retransmissions_and_noise() {
    let calls = if cfg!(miri) { 500 } else { 100_000 };
    let started = Instant::now();
    let mut soak = Soak::new(0x00C0_FFEE_50A4_0001);
    soak.run(calls);
    let f = &soak.f;
    println!(
        "soak: {f:?}, hardware {:?}, {:?}",
        hw(&soak.board.sim),
        started.elapsed()
    );
    // Responses = requests: every request got exactly one answer, nothing else did.
    assert_eq!(f.responses, f.requests, "{f:?}");
    assert_eq!(f.messages, f.requests + f.notifications, "{f:?}");
    // The mix really happened.
    assert!(f.calls >= calls);
    assert!(f.retransmissions * 10 > f.messages, "{f:?}");
    assert!(
        f.malformed * 20 > f.messages && f.notifications * 50 > f.messages,
        "{f:?}"
    );
    assert!(
        f.fault_sets >= calls / 700 && f.faulty_actions * 3 > f.actions,
        "{f:?}"
    );
    assert!(f.tasks > 1000 && f.invalid_arguments > 500, "{f:?}");
}
