//! The `confirm` target's device and driver: tools that ask a person first, clients that call
//! them and answer (or pretend to), a button, a clock. Every step is handed to the engine as a
//! multi-client transport and a firmware would, then to the reference model
//! ([`crate::approvals`]).
//!
//! Input: one configuration byte, then operations (see [`Flow::run`]); the bytes are read as
//! operation codes and operands, a missing byte reads as 0. `python3 fuzz/make_confirm_seeds.py`
//! writes seeds of the flows.

use mcp_core::registry::{Confirm, Tool};
use mcp_core::schema::Param;
use mcp_core::server::{Approval, Peer};
use mcp_core::{
    Args, Call, Caps, Config, Evidence, Input, Level, Output, Principal, Reply, Server, Session,
    ToolResult,
};

use crate::approvals::{self, Approvals, Polled, Run, Seen, ToolModel};
use crate::model::Val;

/// The device: every handler run, in order.
#[derive(Debug, Default)]
pub struct Dev {
    pub runs: Vec<Run>,
}

fn reboot(d: &mut Dev, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.runs.push(Run { tool: 0, on: None });
    Ok(Output::bool(true).with_evidence(Evidence::new(Level::Scheduled)))
}

fn relay(d: &mut Dev, a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    let on = a.bool("on").expect("validated");
    d.runs.push(Run {
        tool: 1,
        on: Some(on),
    });
    Ok(Output::bool(on))
}

fn plain(d: &mut Dev, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.runs.push(Run { tool: 2, on: None });
    Ok(Output::bool(true))
}

const REBOOT_Q: &str = "Reboot the device?";
/// A question filled from the call's arguments (`on` is `true` whenever it asks).
const RELAY_Q: &str = "Set the heater to {on}?";
const RELAY_PARAMS: &[Param] = &[Param::boolean("on", "On")];

/// The tools, in the order of [`MODEL`].
pub static TOOLS: [Tool<Dev>; 3] = [
    Tool::new("c.reboot", "Reboot", reboot).confirm(Confirm::new(REBOOT_Q)),
    Tool::new("c.relay", "Heater relay", relay)
        .params(RELAY_PARAMS)
        .confirm(Confirm::new(RELAY_Q).when(|a| a.bool("on") == Ok(true))),
    Tool::new("c.plain", "Asks nothing", plain),
];

/// What the model knows of them (written apart from the registrations: the `when` condition
/// is the model's own).
pub static MODEL: [ToolModel; 3] = [
    ToolModel {
        name: "c.reboot",
        params: &[],
        question: Some(REBOOT_Q),
        asked: |_| REBOOT_Q.into(),
        asks: |_| true,
    },
    ToolModel {
        name: "c.relay",
        params: RELAY_PARAMS,
        question: Some(RELAY_Q),
        asked: |v| match v.first() {
            Some(Val::Bool(on)) => format!("Set the heater to {on}?"),
            _ => "Set the heater to ?".into(),
        },
        asks: |v| v.first() == Some(&Val::Bool(true)),
    },
    ToolModel {
        name: "c.plain",
        params: &[],
        question: None,
        asked: |_| String::new(),
        asks: |_| false,
    },
];

/// The server type: 4 tools, 2 tasks, 4 cached answers, a call of up to [`approvals::HOLD`]
/// bytes held (beside its record, `HOLD_RECORD`).
pub type Srv = Server<
    'static,
    Dev,
    Caps<4, 2, 4, 384, 4, 1, { approvals::HOLD + mcp_core::server::HOLD_RECORD }>,
>;

/// The buffers messages are written into: one that leaves room for the answer in front of any
/// held call (`HOLD` bytes), and one where a yes to a long held call finds no room to run it.
const OUTS: [usize; 2] = [1024, 560];
const PEERS: [&[u8]; 3] = [b"alice", b"bob", b"carol"];
const TIMEOUTS: [u32; 4] = [1_000, 3_000, 30_000, 250];
/// How long a question is shown before a press counts (and the bounce time), by the
/// configuration's entropy bit (set: 0, as every confirm seed was written for).
const MIN_SHOWN: [u32; 2] = [1_000, 0];
/// The names clients give in `initialize`, as JSON string contents (`None`: no `clientInfo`; the
/// long one is cut; the first imitates the device's tag and closes a quote).
const NAMES: [Option<&str>; 4] = [
    Some(r#"f\" (asked by client #0000 \"e"#),
    Some("alice-client"),
    None,
    Some("a-very-long-client-name-x"),
];
const BUDGETS: [u32; 4] = [0, 500, 25_000, 2_000];
const ADVANCES: [u64; 8] = [0, 1, 10, 100, 250, 1_000, 5_000, 30_000];
const TOOL_NAMES: [&str; 4] = ["c.reboot", "c.relay", "c.plain", "c.nope"];
/// `arguments` choices (`None`: no member).
const ARGS: [Option<&str>; 8] = [
    None,
    Some("{}"),
    Some(r#"{"on":true}"#),
    Some(r#"{"on":false}"#),
    Some(r#"{ "on" : true }"#),
    Some(r#"{"on":"yes"}"#),
    Some(r#"{"\u006fn":true}"#),
    Some(r#"{"on":true,"on":true}"#),
];
/// Answers to the question (an `ElicitResult`, or what stands in its place).
const REPLIES: [&str; 16] = [
    r#"{"action":"accept","content":{"confirm":true}}"#,
    r#"{"action":"accept","content":{"confirm":false}}"#,
    r#"{"action":"decline"}"#,
    r#"{"action":"cancel"}"#,
    "ERROR",
    r#"{"action":"accept","content":{"ok":true}}"#,
    r#"{"action":"accept","content":{"confirm":"yes"}}"#,
    r#"{"action":"accept"}"#,
    "null",
    r#"{"action":"decline","action":"accept","content":{"confirm":true}}"#,
    r#"{"action":"accept","content":{"confirm":true,"confirm":true}}"#,
    r#"{"action":"acc\u0065pt","content":{"c\u006fnfirm":true}}"#,
    "BOTH",
    r#"{"action":1,"content":{"confirm":true}}"#,
    "TWICE",
    r#"{"action":"acknowledge","content":{"confirm":true}}"#,
];
const YES: &str = r#"{"action":"accept","content":{"confirm":true}}"#;
const VERSIONS: [&str; 6] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
    "1.0",
];
const CAPS: [&str; 5] = [
    "{}",
    r#"{"elicitation":{}}"#,
    r#"{"elicitation":true}"#,
    r#"{"elicitation":{"form":{}},"tasks":{}}"#,
    r#"{"elicitation":{},"elicitation":{}}"#,
];
const MODERN_CAPS: [&str; 4] = [
    "{}",
    r#"{"elicitation":{}}"#,
    r#"{"elicitation":true}"#,
    r#"{"elicitation":{"form":{}},"roots":{}}"#,
];

/// The fuzz input, read a byte at a time (0 once it is used up).
struct Reader<'a> {
    data: &'a [u8],
}

impl Reader<'_> {
    fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    fn take(&mut self, n: usize) -> &[u8] {
        let (head, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        head
    }

    fn done(&self) -> bool {
        self.data.is_empty()
    }
}

/// An id token: small integers and strings, so that ids repeat (retransmissions).
fn id_token(b: u8) -> String {
    match b % 8 {
        n @ 0..5 => n.to_string(),
        n => format!("\"q{n}\""),
    }
}

/// One engine, its device, the clients' sessions and the model.
pub struct Flow {
    pub server: Srv,
    pub dev: Dev,
    pub model: Approvals,
    /// Several clients over one engine (each with its session, lent with its messages), or one
    /// point-to-point client (the engine's own session).
    multi: bool,
    /// Messages and polls go through `handle_async` / `poll_async` (their own code for running a
    /// call a person approved).
    asynch: bool,
    sessions: [Session; 3],
    /// The harness's clock: the latest poll or press.
    clock: u64,
    /// The engine's `confirm_min_shown_ms`.
    min_shown: u64,
    /// The latest press handed to the engine.
    last_press: u64,
    /// Every question the device showed.
    approvals: Vec<Approval>,
    out: Vec<u8>,
    pub steps: u32,
}

impl Flow {
    pub fn new(config: u8) -> Self {
        let timeout = TIMEOUTS[usize::from(config & 3)];
        let budget = BUDGETS[usize::from((config >> 2) & 3)];
        let min_shown = MIN_SHOWN[usize::from((config >> 5) & 1)];
        let mut server = Srv::new(
            Config::new("fuzz", "1")
                .confirm_timeout(timeout)
                .hold_answer(budget)
                .confirm_min_shown(min_shown),
        );
        for t in &TOOLS {
            server.register(t).expect("the confirm tools register");
        }
        server.set_entropy([(config >> 5) & 1; 16]);
        let out = OUTS[usize::from(config >> 7)];
        let session = server.new_session();
        Flow {
            server,
            dev: Dev::default(),
            model: Approvals::new(&MODEL, timeout, budget, out, config & 0x40 != 0, min_shown),
            min_shown: u64::from(min_shown),
            last_press: 0,
            multi: config & 0x10 == 0,
            asynch: config & 0x40 != 0,
            sessions: [session; 3],
            clock: 0,
            approvals: Vec::new(),
            out: vec![0; out],
            steps: 0,
        }
    }

    fn peer(&self, b: u8) -> (Peer, usize) {
        let i = usize::from(b % 3);
        if self.multi {
            (Peer::named(PEERS[i]), i)
        } else {
            (Peer::ONLY, i)
        }
    }

    /// Runs the operations in `data` (after the configuration byte), then lets every held call
    /// end, and checks nothing waits.
    pub fn run(data: &[u8]) -> Flow {
        let mut r = Reader { data };
        let mut flow = Flow::new(r.u8());
        while !r.done() && flow.steps < 48 {
            flow.steps += 1;
            match r.u8() % 8 {
                0 => flow.init(&mut r),
                1 => flow.call(&mut r),
                2 => flow.answer(&mut r),
                3 => flow.press(&mut r),
                4 => flow.poll_op(&mut r),
                5 => flow.modern(&mut r),
                6 => {
                    let (peer, _) = flow.peer(r.u8());
                    let gone = flow.server.forget_confirmation(peer);
                    flow.model.forget(peer, gone, flow.server.confirmation());
                }
                _ => {
                    let (b, flags, len) = (r.u8(), r.u8(), r.u8());
                    let msg = r.take(usize::from(len)).to_vec();
                    let principal = if flags & 1 == 1 {
                        Principal::User
                    } else {
                        Principal::Model
                    };
                    flow.send(b, principal, &msg);
                }
            }
        }
        // Every held call ends: answered, refused or timed out.
        let end = flow.clock + 40_000;
        flow.poll(end);
        flow.poll(end + 1);
        assert!(flow.model.held.is_none(), "a held call never ended");
        flow
    }

    /// Hands one message from client `b` to the engine and to the model.
    pub fn send(&mut self, b: u8, principal: Principal, msg: &[u8]) {
        let (peer, i) = self.peer(b);
        let mut input = Input::new(msg, principal).peer(peer);
        if self.multi {
            input = input.session(self.sessions[i]);
        }
        let before = self.dev.runs.len();
        let handled = if self.asynch {
            block_on(self.server.handle_async(
                input,
                &mut self.dev,
                &mut self.out,
                &mut |_: &[u8]| {},
                async |_: &mut Dev, _: Call<'_, '_>| -> ToolResult { panic!("no async tools") },
            ))
        } else {
            self.server
                .handle_with(input, &mut self.dev, &mut self.out, &mut |_: &[u8]| {})
        }
        .expect("the buffer is large enough");
        assert!(handled.len <= self.out.len());
        let elicits = if self.multi {
            assert_eq!(
                self.server.revision(),
                None,
                "a lent session's initialize changed the engine's own"
            );
            let s = handled.session.expect("the lent session comes back");
            self.sessions[i] = s;
            Some(s.elicits())
        } else {
            assert!(handled.session.is_none(), "no session was lent");
            None
        };
        let pending = self.server.confirmation();
        self.note(pending);
        let seen = Seen {
            out: &self.out[..handled.len],
            deferred: handled.deferred,
            replay: handled.replay.is_some(),
            ran: handled.ran,
            runs: &self.dev.runs[before..],
            pending,
            elicits,
        };
        self.model.message(peer, principal, msg, &seen);
    }

    fn note(&mut self, pending: Option<mcp_core::server::Pending>) {
        if let Some(p) = pending.filter(|p| !self.approvals.contains(&p.approval)) {
            self.approvals.push(p.approval);
        }
    }

    fn init(&mut self, r: &mut Reader<'_>) {
        let (b, v, c, id) = (r.u8(), r.u8(), r.u8(), r.u8());
        // The name, from the high bits of the capabilities byte.
        let info = match NAMES[usize::from(c >> 6)] {
            Some(name) => format!(r#","clientInfo":{{"name":"{name}","version":"1"}}"#),
            None => String::new(),
        };
        let msg = format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"initialize","params":{{"protocolVersion":"{}","capabilities":{}{info}}}}}"#,
            id_token(id),
            VERSIONS[usize::from(v) % VERSIONS.len()],
            CAPS[usize::from(c & 0x3f) % CAPS.len()],
        );
        self.send(b, Principal::Model, msg.as_bytes());
    }

    fn call(&mut self, r: &mut Reader<'_>) {
        let (b, flags, tool, args, pad) = (r.u8(), r.u8(), r.u8(), r.u8(), r.u8());
        let mut msg = format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"{}"{}}}}}"#,
            id_token(flags >> 1),
            TOOL_NAMES[usize::from(tool) % 4],
            arguments(args),
        );
        // JSON whitespace: the same call, longer (past `HOLD` it cannot be held).
        msg.push_str(&" ".repeat(usize::from(pad % 64) * 8));
        let principal = if flags & 1 == 1 {
            Principal::User
        } else {
            Principal::Model
        };
        self.send(b, principal, msg.as_bytes());
    }

    /// A client's response: to the latest question, this client's latest, an older one, a
    /// guessed or altered id, or something else.
    fn answer(&mut self, r: &mut Reader<'_>) {
        let (b, target, reply, idx) = (r.u8(), r.u8(), r.u8(), r.u8());
        // A guess: 8 more bytes (only for this choice, so that the encoding does not depend on
        // what was issued).
        let mut guess = [0u8; 8];
        if target % 8 == 3 {
            let g = r.take(8);
            guess[..g.len()].copy_from_slice(g);
        }
        let guess = format!("\"confirm-{:016x}\"", u64::from_le_bytes(guess));
        let (peer, _) = self.peer(b);
        let ids = &self.model.elicitation_ids;
        let latest = ids.last().map(|(t, _)| t.clone());
        let id = match target % 8 {
            0 => latest,
            1 => ids
                .iter()
                .rev()
                .find(|(_, p)| *p == peer)
                .map(|(t, _)| t.clone())
                .or(latest),
            2 => (!ids.is_empty()).then(|| ids[usize::from(idx) % ids.len()].0.clone()),
            3 => None,
            4 => latest.map(|t| {
                // One hex digit changed.
                let mut t = t.into_bytes();
                let at = 9 + usize::from(idx) % 16;
                t[at] = if t[at] == b'0' { b'1' } else { b'0' };
                String::from_utf8(t).expect("ascii")
            }),
            5 => latest.map(|t| t.replacen("\"c", "\"\\u0063", 1)),
            6 => Some("7".into()),
            _ => Some("\"confirm-1\"".into()),
        }
        .unwrap_or(guess);
        let reply = REPLIES[usize::from(reply) % REPLIES.len()];
        let body = match reply {
            "ERROR" => r#""error":{"code":-32603,"message":"no"}"#.to_string(),
            "BOTH" => format!(r#""result":{YES},"error":{{"code":-1,"message":"x"}}"#),
            "TWICE" => format!(r#""result":{YES},"result":{YES}"#),
            _ => format!(r#""result":{reply}"#),
        };
        let msg = format!(r#"{{"jsonrpc":"2.0","id":{id},{body}}}"#);
        self.send(b, Principal::Model, msg.as_bytes());
    }

    /// A press of the button for the question shown now or an earlier one, at a time around
    /// when it was shown or its deadline.
    fn press(&mut self, r: &mut Reader<'_>) {
        let (target, when, delta, idx) = (r.u8(), r.u8(), r.u8(), r.u8());
        let pending = self.server.confirmation();
        let approval = match (target % 2, pending) {
            (0, Some(p)) => p.approval,
            _ if self.approvals.is_empty() => return,
            _ => self.approvals[usize::from(idx) % self.approvals.len()],
        };
        let shown = pending.and_then(|p| p.shown_ms).unwrap_or(self.clock);
        let deadline = pending.map_or(self.clock, |p| p.deadline_ms);
        let d = u64::from(delta) * 7 + 1;
        let min = self.min_shown;
        let at = match (when >> 1) % 12 {
            0 => shown.saturating_sub(d),
            1 => shown,
            2 => shown + 1,
            3 => self.clock,
            4 => self.clock + d,
            5 => deadline.saturating_sub(1),
            6 => deadline,
            7 => deadline + d,
            // At the edges of the minimum: shown for just under or just the minimum, and the
            // second half of a double press (just under or just the minimum after the last).
            8 => (shown + min).saturating_sub(1),
            9 => shown + min,
            10 => (self.last_press + min).saturating_sub(1),
            _ => self.last_press + min + d % 50,
        };
        let yes = when & 1 == 0;
        let taken = self.server.confirm_on_device(approval, yes, at);
        self.last_press = at;
        self.clock = self.clock.max(at);
        self.model.press(approval.get(), yes, at, taken);
        self.model
            .check_pending(self.server.confirmation(), b"press");
    }

    /// A poll some time later, or at the edges of the held call's deadline or answer budget.
    fn poll_op(&mut self, r: &mut Reader<'_>) {
        let a = r.u8() % 12;
        let times = self.model.times();
        let at = match a {
            0..8 => self.clock + ADVANCES[usize::from(a)],
            8 => times.map_or(0, |t| t.0.saturating_sub(1)),
            9 => times.map_or(0, |t| t.0),
            10 => times.and_then(|t| t.1).map_or(0, |o| o.saturating_sub(1)),
            _ => times.and_then(|t| t.1).unwrap_or(0),
        };
        self.poll(at.max(self.clock));
    }

    /// `poll_with` at `now` until it writes nothing.
    pub fn poll(&mut self, now: u64) {
        self.clock = self.clock.max(now);
        let before = self.dev.runs.len();
        let mut msgs = Vec::new();
        for _ in 0..4 {
            let p = if self.asynch {
                block_on(self.server.poll_async(
                    now,
                    &mut self.dev,
                    &mut self.out,
                    async |_: &mut Dev, _: Call<'_, '_>| -> ToolResult { panic!("no async tools") },
                ))
            } else {
                self.server.poll_with(now, &mut self.dev, &mut self.out)
            };
            if p.len == 0 {
                break;
            }
            assert!(p.len <= self.out.len());
            msgs.push(Polled {
                bytes: self.out[..p.len].to_vec(),
                to: p.to,
                ran: p.ran,
            });
        }
        let pending = self.server.confirmation();
        self.note(pending);
        self.model
            .poll(now, &msgs, &self.dev.runs[before..], pending);
    }

    /// A 2026-07-28 call (or, without `_meta`, a legacy one carrying the same members): with or
    /// without elicitation, a `requestState` the engine issued (the latest, any, altered,
    /// made up) and an answer.
    fn modern(&mut self, r: &mut Reader<'_>) {
        let (b, flags, tool, args, caps) = (r.u8(), r.u8(), r.u8(), r.u8(), r.u8());
        let (state, response, idx, pos) = (r.u8(), r.u8(), r.u8(), r.u8());
        let states = &self.model.states;
        let latest = states.last().map(|s| s.token.clone());
        let state = match state % 10 {
            0 => None,
            1 => latest,
            2 => {
                (!states.is_empty()).then(|| states[usize::from(idx) % states.len()].token.clone())
            }
            3 => latest.map(|t| {
                // One character of the state changed.
                let mut t = t.into_bytes();
                let at = 1 + usize::from(pos) % (t.len() - 2);
                t[at] = if t[at] == b'a' { b'b' } else { b'a' };
                String::from_utf8(t).expect("ascii")
            }),
            4 => latest.map(|t| {
                // Its expiry made later: the MAC no longer matches.
                let mut t = t.into_bytes();
                t[4] = b'f';
                String::from_utf8(t).expect("ascii")
            }),
            5 => Some("\"v2.0000000000000001.0000000000000002.0000000000000003\"".into()),
            6 => Some("\"v1.x\"".into()),
            7 => Some("5".into()),
            // The same state in upper case: not the engine's spelling.
            8 => latest.map(|t| t.to_uppercase().replace("\"V2.", "\"v2.")),
            // The state with a character escaped: the same string, other bytes.
            _ => latest.map(|t| t.replacen("\"v", "\"\\u0076", 1)),
        };
        let mut params = format!(
            r#""name":"{}"{}"#,
            TOOL_NAMES[usize::from(tool) % 4],
            arguments(args)
        );
        if flags & 2 == 0 {
            params.push_str(&format!(
                r#","_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}{}}}"#,
                MODERN_CAPS[usize::from(caps) % 4],
                if flags & 4 == 4 { r#","io.github.mcu-mcp/idempotencyKey":"k1""# } else { "" },
            ));
        }
        if let Some(s) = state {
            params.push_str(&format!(r#","requestState":{s}"#));
        }
        if flags & 0x40 != 0 {
            // `requestState` twice.
            params.push_str(r#","requestState":"v2""#);
        }
        match response % 19 {
            0 => {}
            1 => params.push_str(r#","inputResponses":[]"#),
            2 => params.push_str(&format!(
                r#","inputResponses":{{"confirm":{YES},"confirm":{YES}}}"#
            )),
            n => {
                let reply = match REPLIES[usize::from(n - 3) % REPLIES.len()] {
                    "ERROR" => r#"{"code":-1}"#,
                    "BOTH" => r#"{"action":"accept","content":{"confirm":true},"x":1}"#,
                    "TWICE" => r#"{"action":"accept","content":{},"content":{"confirm":true}}"#,
                    reply => reply,
                };
                params.push_str(&format!(
                    r#","inputResponses":{{"other":1,"confirm":{reply}}}"#
                ));
            }
        }
        let msg = format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{{params}}}}}"#,
            id_token(flags >> 3)
        );
        let principal = if flags & 1 == 1 {
            Principal::User
        } else {
            Principal::Model
        };
        self.send(b, principal, msg.as_bytes());
    }
}

/// Runs a future that never waits (the tools are blocking) to its end.
fn block_on<F: core::future::Future>(f: F) -> F::Output {
    let mut f = core::pin::pin!(f);
    let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
    loop {
        if let core::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// `,"arguments":…` for choice `b` (or nothing).
fn arguments(b: u8) -> String {
    ARGS[usize::from(b) % ARGS.len()].map_or(String::new(), |a| format!(r#","arguments":{a}"#))
}

#[cfg(test)]
mod test {
    use super::*;

    /// Every seed of the target passes the model (`python3 fuzz/make_confirm_seeds.py` writes
    /// them): the flows the model was written for agree with the engine.
    #[test]
    fn the_seeds_pass() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/seeds/confirm");
        let mut failed = Vec::new();
        let mut n = 0;
        let mut confirmed = 0;
        for entry in std::fs::read_dir(dir).expect("seeds/confirm") {
            let path = entry.expect("an entry").path();
            let data = std::fs::read(&path).expect("a seed");
            n += 1;
            match std::panic::catch_unwind(|| Flow::run(&data)) {
                Ok(flow) => {
                    eprintln!(
                        "{:?}: {} steps, {} runs, {} after a yes, {} questions, {} states",
                        path.file_name().expect("a name"),
                        flow.steps,
                        flow.dev.runs.len(),
                        flow.model.confirmed_runs,
                        flow.model.approvals.len(),
                        flow.model.states.len()
                    );
                    confirmed += flow.model.confirmed_runs;
                }
                Err(_) => failed.push(
                    path.file_name()
                        .expect("a name")
                        .to_string_lossy()
                        .into_owned(),
                ),
            }
        }
        assert!(n > 50, "{n} seeds");
        assert!(
            failed.is_empty(),
            "{} of {n} seeds failed: {failed:?}",
            failed.len()
        );
        assert!(
            confirmed >= 40,
            "the seeds reach {confirmed} runs after a yes"
        );
    }
}
