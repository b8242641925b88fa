//! Clients that receive only answers (an MCP endpoint's agent), and the end of a conversation:
//! an outcome that comes after a call's answer begins the first text of that client's next
//! call's answer, only that client's, once; an ended conversation leaves nothing waiting.

use serde_json::{Value as J, json};

use crate::registry::Confirm;
use crate::schema::Param;
use crate::server::*;
use crate::{
    Args, Evidence, Level, Output, Reading, Reply, TaskHooks, TaskInfo, TaskPoll, TaskSupport,
    ToolError, ToolResult,
};

#[derive(Default)]
struct Dev {
    relay_on: bool,
    relay_writes: u32,
    moves: u32,
    now: u64,
}

fn relay(d: &mut Dev, a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.relay_on = a.bool("on")?;
    d.relay_writes += 1;
    let e = Evidence::new(Level::Measured)
        .commanded(Reading::Bool(d.relay_on))
        .observed(Reading::Bool(d.relay_on));
    Ok(Output::bool(true).with_evidence(e))
}

fn status(d: &mut Dev, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::bool(d.relay_on))
}

fn broken(_: &mut Dev, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Err(ToolError::new("The sensor did not answer"))
}

fn move_to(d: &mut Dev, a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.moves += 1;
    Ok(Output::task(a.int("position")?))
}

/// The move ends 100 ms after it started, where it was sent.
fn poll_move(_: &mut Dev, t: &TaskInfo) -> TaskPoll {
    if t.now_ms < t.started_ms + 100 {
        return TaskPoll::Working(None);
    }
    let e = Evidence::new(Level::Measured)
        .commanded(Reading::Int(t.data))
        .observed(Reading::Int(t.data));
    TaskPoll::Done(Ok(Output::int(t.data).with_evidence(e)))
}

const RELAY: Tool<Dev> = Tool::new("self.relay.set", "Relay", relay)
    .params(&[Param::boolean("on", "On")])
    .confirm(Confirm::new("Switch the heater on?").when(|a| a.bool("on") == Ok(true)));
const STATUS: Tool<Dev> = Tool::new("self.get_status", "Status", status)
    .annotations(crate::registry::Annotations::new().read_only(true));
const BROKEN: Tool<Dev> = Tool::new("self.sensor.read", "Read the sensor", broken)
    .annotations(crate::registry::Annotations::new().read_only(true));
const MOVE: Tool<Dev> = Tool::new("self.motor.move_to", "Move", move_to)
    .params(&[Param::integer("position", "Target").range(0, 1000)])
    .long_running(
        TaskSupport::Optional,
        TaskHooks {
            poll: poll_move,
            stop: None,
            timeout_ms: 5_000,
        },
    );
static TASK_STATUS: Tool<Dev> = status_tool();

type S = Server<'static, Dev, Caps<8>>;

/// One engine, the clients an endpoint relays (each an agent session, a peer of its own).
struct T {
    s: S,
    dev: Dev,
    out: Vec<u8>,
    next_id: u64,
    now: u64,
}

const ALICE: Peer = Peer::new(1);
const BOB: Peer = Peer::new(2);

impl T {
    /// `hold_ms`: how long a call may keep its answer back.
    fn new(hold_ms: u32) -> Self {
        let config = Config::new("c", "1")
            .confirm_min_shown(0)
            .confirm_timeout(30_000)
            .heard_margin(20_000)
            .hold_answer(hold_ms)
            .answers_only(true);
        let mut s = S::new(config);
        s.register_all(&[&RELAY, &STATUS, &BROKEN, &MOVE, &TASK_STATUS])
            .unwrap();
        s.set_entropy([7; 16]);
        T {
            s,
            dev: Dev::default(),
            out: vec![0; 4096],
            next_id: 1,
            now: 0,
        }
    }

    /// `tools/call` from `peer`, which receives only answers: the answer, if one came now.
    fn call(&mut self, peer: Peer, tool: &str, args: J) -> Option<J> {
        let id = format!("agent_n_{}", self.next_id);
        self.next_id += 1;
        let msg = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}});
        self.send(peer, &msg)
    }

    fn send(&mut self, peer: Peer, msg: &J) -> Option<J> {
        let bytes = msg.to_string();
        let input = Input::new(bytes.as_bytes(), Principal::Model).peer(peer);
        let mut silent = |_: &[u8]| {};
        let h = self
            .s
            .handle_with(input, &mut self.dev, &mut self.out, &mut silent)
            .unwrap();
        // The transport of a client that receives only answers tells it what it is owed.
        let len = self.s.tell_owed(peer, &mut self.out, h.len);
        (len > 0).then(|| serde_json::from_slice(&self.out[..len]).unwrap())
    }

    /// Polls at `now` until nothing is owed; every message written, and for whom.
    fn poll(&mut self, now: u64) -> Vec<(J, Option<Peer>)> {
        self.now = now;
        self.dev.now = now;
        let mut written = Vec::new();
        loop {
            let p = self.s.poll_with(now, &mut self.dev, &mut self.out);
            if p.len == 0 {
                return written;
            }
            written.push((serde_json::from_slice(&self.out[..p.len]).unwrap(), p.to));
        }
    }

    /// A press of the device's button at `at` on the question it shows.
    fn press(&mut self, at: u64) -> bool {
        let shown = self.s.confirmation().expect("a question").approval;
        self.s.confirm_on_device(shown, true, at)
    }
}

fn text(answer: &J) -> &str {
    answer["result"]["content"][0]["text"].as_str().unwrap()
}

/// A press on a call answered "waiting" switches the relay; an agent that receives only
/// answers learns it first in its next call's answer, once, and no other agent does.
#[test]
fn a_press_after_the_waiting_answer_begins_the_owners_next_answer_once() {
    let mut t = T::new(0);
    let waiting = t
        .call(ALICE, "self.relay.set", json!({"on": true}))
        .unwrap();
    let said = text(&waiting);
    assert!(said.starts_with("Waiting for a person"), "{said}");
    assert!(
        said.contains("it will begin the answer to your next call"),
        "the waiting answer says how the outcome is learned: {said}"
    );
    t.poll(10);
    assert!(t.press(2_000));
    // The relay switches; nothing is sent: nobody could receive it.
    assert_eq!(t.poll(2_000), vec![]);
    assert_eq!((t.dev.relay_on, t.dev.relay_writes), (true, 1));
    // Another agent's call carries nothing of it.
    let bobs = t.call(BOB, "self.get_status", json!({})).unwrap();
    assert_eq!(text(&bobs), "true");
    // The owner's next call, whatever tool: the outcome first, with its evidence, then its own.
    let next = t.call(ALICE, "self.get_status", json!({})).unwrap();
    assert_eq!(
        text(&next),
        "Outcome of an earlier call: self.relay.set, confirmed: true — measured: true. This call: true"
    );
    assert_eq!(next["result"]["structuredContent"], json!({"value": true}));
    // Once.
    let again = t.call(ALICE, "self.get_status", json!({})).unwrap();
    assert_eq!(text(&again), "true");
    assert_eq!(t.dev.relay_writes, 1, "nothing ran twice");
}

#[test]
fn a_refusal_after_the_waiting_answer_is_owed_too_and_an_error_answer_does_not_take_it() {
    let mut t = T::new(0);
    t.call(ALICE, "self.relay.set", json!({"on": true}))
        .unwrap();
    t.poll(10);
    // Nobody presses: the time (20 s from the waiting answer, at least the heard margin) runs
    // out.
    assert_eq!(t.poll(31_000), vec![]);
    assert!(t.s.confirmation().is_none());
    // An unknown tool: an error, which carries nothing.
    let unknown = t.call(ALICE, "self.nothing", json!({})).unwrap();
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Unknown tool")
    );
    // A failed call: its first text and (2024-11-05) its `error`, which a xiaozhi caller
    // speaks, begin with it.
    let failed = t.call(ALICE, "self.sensor.read", json!({})).unwrap();
    let want = "Outcome of an earlier call: self.relay.set: Not confirmed: no answer in time; nothing was done — not applied (commanded true). This call: The sensor did not answer";
    assert_eq!(text(&failed), want);
    assert_eq!(failed["result"]["error"], want);
    assert_eq!(failed["result"]["isError"], true);
    assert!(!t.dev.relay_on);
}

#[test]
fn a_task_that_ends_after_its_started_answer_begins_the_next_answer() {
    let mut t = T::new(0);
    let started = t
        .call(ALICE, "self.motor.move_to", json!({"position": 300}))
        .unwrap();
    assert!(text(&started).contains("started as task"), "{started}");
    // It ends: no notification for a client that cannot receive one.
    assert_eq!(t.poll(50), vec![]);
    assert_eq!(t.poll(200), vec![]);
    let next = t.call(ALICE, "self.get_status", json!({})).unwrap();
    assert_eq!(
        text(&next),
        "Outcome of an earlier call: self.motor.move_to completed: 300 — measured: 300. This call: false"
    );
    assert_eq!(t.dev.moves, 1);
    assert_eq!(
        text(&t.call(ALICE, "self.get_status", json!({})).unwrap()),
        "false"
    );
}

/// The outcome owed is told in the next answer even when that answer is itself held and
/// written by a poll (a second call that waits for the device, confirmed within the budget).
#[test]
fn a_held_answer_written_by_a_poll_carries_what_is_owed() {
    let mut t = T::new(25_000);
    // Held within the budget; the budget runs out: "waiting".
    assert!(
        t.call(ALICE, "self.relay.set", json!({"on": true}))
            .is_none()
    );
    t.poll(10);
    let waiting = t.poll(25_010);
    assert!(text(&waiting[0].0).starts_with("Waiting for a person"));
    assert!(t.press(26_000));
    assert_eq!(t.poll(26_000), vec![]);
    // On again: held, pressed within the budget; the answer (from a poll) begins with the
    // earlier outcome.
    assert!(
        t.call(ALICE, "self.relay.set", json!({"on": true}))
            .is_none()
    );
    t.poll(27_000);
    assert!(t.press(29_000));
    let written = t.poll(29_000);
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(written[0].1, Some(ALICE));
    assert_eq!(
        text(&written[0].0),
        "Outcome of an earlier call: self.relay.set, confirmed: true — measured: true. This call: true — measured: true"
    );
    assert_eq!(t.dev.relay_writes, 2);
}

/// A question whose conversation ended is withdrawn at once, a later press
/// runs nothing, and no outcome goes to anyone.
#[test]
fn an_ended_conversation_withdraws_its_question_and_is_owed_nothing() {
    let mut t = T::new(0);
    t.call(ALICE, "self.relay.set", json!({"on": true}))
        .unwrap();
    t.poll(10);
    let shown = t.s.confirmation().unwrap().approval;
    assert!(t.s.end_conversation(ALICE));
    assert!(t.s.confirmation().is_none(), "withdrawn at once");
    assert!(
        !t.s.confirm_on_device(shown, true, 2_000),
        "a later press runs nothing"
    );
    assert_eq!(t.poll(2_000), vec![]);
    assert!(!t.dev.relay_on);
    // An outcome owed when the conversation ends goes to nobody.
    t.call(ALICE, "self.relay.set", json!({"on": true}))
        .unwrap();
    t.poll(2_010);
    assert!(t.press(4_000));
    t.poll(4_000);
    assert!(t.dev.relay_on);
    assert!(t.s.end_conversation(ALICE));
    assert_eq!(
        text(&t.call(ALICE, "self.get_status", json!({})).unwrap()),
        "true"
    );
    assert_eq!(
        text(&t.call(BOB, "self.get_status", json!({})).unwrap()),
        "true"
    );
    // So is a task's end.
    t.call(ALICE, "self.motor.move_to", json!({"position": 5}))
        .unwrap();
    assert!(t.s.end_conversation(ALICE));
    t.poll(5_000);
    assert_eq!(
        text(&t.call(ALICE, "self.get_status", json!({})).unwrap()),
        "true"
    );
    assert!(!t.s.end_conversation(ALICE), "nothing left");
}
