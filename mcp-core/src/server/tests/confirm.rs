//! Human confirmation: a person's yes before a tool acts, in every form the clients allow.

use serde_json::{Value as J, json};

use crate::registry::Confirm;
use crate::schema::Param;
use crate::server::*;
use crate::{Args, Evidence, Level, Output, Reply, ToolResult};

#[derive(Default)]
struct Dev {
    reboots: u32,
    relay_on: bool,
    relay_writes: u32,
    /// The relay's interlock refuses `on` while the door is open.
    door_open: bool,
}

fn reboot(d: &mut Dev, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.reboots += 1;
    Ok(Output::bool(true).with_evidence(Evidence::new(Level::Scheduled)))
}

fn relay(d: &mut Dev, a: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    if a.bool("on")? && d.door_open {
        let refused = r.error_with(|w| {
            w.text("Refused by interlock \"door-closed\": the door reads open; the relay was not switched");
        });
        let evidence = Evidence::new(Level::NotApplied).commanded(crate::Reading::Bool(true));
        return Err(refused.with_evidence(evidence));
    }
    d.relay_on = a.bool("on")?;
    d.relay_writes += 1;
    Ok(Output::bool(true))
}

const REBOOT: Tool<Dev> =
    Tool::new("self.reboot", "Reboot", reboot).confirm(Confirm::new("Reboot the device?"));
const RELAY: Tool<Dev> = Tool::new("self.relay.set", "Relay", relay)
    .params(&[Param::boolean("on", "On")])
    .confirm(Confirm::new("Switch the heater on?").when(|a| a.bool("on") == Ok(true)));

type S = Server<'static, Dev, Caps<4>>;

struct T {
    s: S,
    dev: Dev,
    out: Vec<u8>,
    principal: Principal,
    /// The clock `poll` was last given.
    now: u64,
}

impl T {
    fn new() -> Self {
        Self::with(
            Config::new("c", "1")
                .confirm_min_shown(0)
                .confirm_timeout(30_000),
        )
    }

    fn with(config: Config) -> Self {
        let mut s = S::new(config);
        s.register(&REBOOT).unwrap().register(&RELAY).unwrap();
        s.set_entropy([7; 16]);
        T {
            s,
            dev: Dev::default(),
            out: vec![0; 2048],
            principal: Principal::Model,
            now: 0,
        }
    }

    fn send(&mut self, msg: &J) -> (Option<J>, bool) {
        let bytes = msg.to_string();
        let input = Input::new(bytes.as_bytes(), self.principal);
        super::exchange(&mut self.s, input, &mut self.dev, &mut self.out)
    }

    fn ask(&mut self, msg: J) -> J {
        self.send(&msg).0.expect("an answer")
    }

    fn poll(&mut self, now: u64) -> Option<J> {
        self.polled(now).0
    }

    /// `poll_with`: the message, and whom it is for and what ran.
    fn polled(&mut self, now: u64) -> (Option<J>, Polled) {
        self.now = now;
        let p = self.s.poll_with(now, &mut self.dev, &mut self.out);
        let v = (p.len > 0).then(|| serde_json::from_slice(&self.out[..p.len]).unwrap());
        (v, p)
    }

    /// A press of the device's button at `at`, answering the question the device shows now.
    fn press(&mut self, yes: bool, at: u64) -> bool {
        let shown = self.s.confirmation().expect("a question").approval;
        self.s.confirm_on_device(shown, yes, at)
    }

    fn init(&mut self, rev: &str, caps: J) {
        self.ask(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":rev,"capabilities":caps,"clientInfo":{"name":"t","version":"1"}}}));
    }
}

/// One engine serving several clients (MCP over MQTT), each with its own session.
struct Clients {
    t: T,
    sessions: Vec<(Peer, Session)>,
}

impl Clients {
    fn new(config: Config) -> Self {
        Clients {
            t: T::with(config),
            sessions: Vec::new(),
        }
    }

    /// A message from client `name`: its answer, and whether the call's answer comes later.
    fn from(&mut self, name: &str, msg: &J) -> (Option<J>, bool) {
        let peer = Peer::named(name.as_bytes());
        let session = match self.sessions.iter().find(|(p, _)| *p == peer) {
            Some(&(_, s)) => s,
            None => self.t.s.new_session(),
        };
        let bytes = msg.to_string();
        let input = Input::new(bytes.as_bytes(), Principal::Model)
            .peer(peer)
            .session(session);
        let h = self
            .t
            .s
            .handle_with(input, &mut self.t.dev, &mut self.t.out, &mut |_: &[u8]| {})
            .unwrap();
        let after = h.session.expect("the lent session comes back");
        match self.sessions.iter_mut().find(|(p, _)| *p == peer) {
            Some(entry) => entry.1 = after,
            None => self.sessions.push((peer, after)),
        }
        let v = (h.len > 0).then(|| serde_json::from_slice(&self.t.out[..h.len]).unwrap());
        (v, h.deferred)
    }

    fn init(&mut self, name: &str, rev: &str, caps: J) {
        let r = self.from(name, &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":rev,"capabilities":caps,"clientInfo":{"name":name,"version":"1"}}}));
        assert!(r.0.unwrap()["result"].is_object());
    }
}

fn call(id: J, tool: &str, args: J) -> J {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}})
}

/// With `hold_answer_ms` 0 a call held for the button is answered at once that it waits, and
/// the outcome follows as a notification.
#[test]
fn without_elicitation_the_device_asks_and_the_outcome_follows_as_a_notification() {
    let mut t = T::with(
        Config::new("c", "1")
            .confirm_min_shown(0)
            .confirm_timeout(30_000)
            .hold_answer(0),
    );
    t.init("2024-11-05", json!({}));
    t.poll(1_000);
    let r = t.ask(call(json!(1), "self.reboot", json!({})));
    assert_eq!(r["result"].get("isError"), None, "{r}");
    assert_eq!(
        r["result"]["structuredContent"]["status"],
        "awaiting_confirmation"
    );
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("press the button")
    );
    assert_eq!(t.dev.reboots, 0, "nothing ran");
    let pending = t.s.confirmation().unwrap();
    assert_eq!((pending.tool, pending.on_device), ("self.reboot", true));
    assert_eq!(pending.message, "Reboot the device?");
    assert_eq!(pending.shown_ms, None, "not on the device before a poll");
    // Another call that needs a person meanwhile is refused.
    let busy = t.ask(call(json!(2), "self.relay.set", json!({"on":true})));
    assert_eq!(busy["result"]["isError"], true);
    // Switching off needs no confirmation and runs.
    t.ask(call(json!(3), "self.relay.set", json!({"on":false})));
    assert_eq!(t.dev.relay_writes, 1);
    // Nothing happens until the button.
    assert_eq!(t.poll(2_000), None);
    assert_eq!(t.s.confirmation().unwrap().shown_ms, Some(2_000));
    assert!(t.press(true, 2_050));
    let (note, polled) = t.polled(2_100);
    let note = note.unwrap();
    assert_eq!(note["method"], "notifications/message");
    assert_eq!(note["params"]["logger"], "confirmation");
    assert_eq!(note["params"]["data"]["tool"], "self.reboot");
    assert_eq!(note["params"]["data"]["confirmed"], true);
    assert_eq!(note["params"]["data"]["result"].get("isError"), None);
    assert_eq!(polled.ran, Some("self.reboot"), "the run is reported");
    assert_eq!(polled.to, Some(Peer::ONLY), "for the caller");
    assert_eq!(t.dev.reboots, 1, "ran once, after the press");
    assert!(t.s.confirmation().is_none());
    assert!(
        !t.s.confirm_on_device(pending.approval, true, 2_200),
        "nothing waits any more"
    );
    // A "no" on the device: nothing runs.
    t.ask(call(json!(4), "self.reboot", json!({})));
    t.poll(2_150);
    assert!(t.press(false, 2_160));
    let note = t.poll(2_200).unwrap();
    assert_eq!(note["params"]["data"]["confirmed"], false);
    assert!(
        note["params"]["data"]["reason"]
            .as_str()
            .unwrap()
            .contains("declined")
    );
    assert_eq!(t.dev.reboots, 1);
    // No answer within the timeout: nothing runs.
    t.ask(call(json!(5), "self.reboot", json!({})));
    assert_eq!(t.poll(10_000), None);
    let note = t.poll(32_300).unwrap();
    assert_eq!(note["params"]["data"]["confirmed"], false);
    assert_eq!(t.dev.reboots, 1);
    // A person at the console needs no second yes.
    t.principal = Principal::User;
    let r = t.ask(call(json!(6), "self.reboot", json!({})));
    assert_eq!(
        r["result"]["content"][0]["text"],
        "true — scheduled, not done yet"
    );
    assert_eq!(t.dev.reboots, 2);
}

/// A client that can neither ask its user nor follow a task (a xiaozhi backend, which
/// hands the model only the call's answer and waits 30 s for it) gets the real outcome, with its
/// evidence, as the call's answer when the person answers within the budget; past the budget,
/// the answer says it waits, and the outcome follows as a notification.
#[test]
fn a_call_held_for_the_button_is_answered_with_its_outcome_within_the_budget() {
    let mut t = T::new();
    assert_eq!(t.s.config().hold_answer_ms, 25_000, "the default");
    t.init("2024-11-05", json!({}));
    t.poll(1_000);
    let (r, deferred) = t.send(&call(json!(1), "self.reboot", json!({})));
    assert_eq!(r, None, "no answer yet: it is held inside the call");
    assert!(deferred);
    assert_eq!(t.poll(5_000), None, "still held");
    assert!(t.press(true, 5_010));
    let (answer, polled) = t.polled(5_020);
    let answer = answer.unwrap();
    assert_eq!(answer["id"], 1, "the call's own answer: {answer}");
    assert_eq!(answer["result"].get("isError"), None);
    assert_eq!(
        answer["result"]["_meta"]["io.github.mcu-mcp/evidence"]["level"], "scheduled",
        "{answer}"
    );
    assert_eq!(
        (polled.ran, polled.to),
        (Some("self.reboot"), Some(Peer::ONLY))
    );
    assert_eq!(t.dev.reboots, 1);
    // A refusal within the budget is the call's answer too (with `error` for xiaozhi).
    t.send(&call(json!(2), "self.reboot", json!({})));
    t.poll(6_000);
    assert!(t.press(false, 6_001));
    let refused = t.poll(6_002).unwrap();
    assert_eq!(refused["id"], 2);
    assert_eq!(refused["result"]["isError"], true);
    assert!(
        refused["result"]["error"]
            .as_str()
            .unwrap()
            .contains("declined")
    );
    // Past the budget: the answer that it waits (with the time left), then the outcome as a
    // notification. The time left counts from when the client hears it — at least the 20 s
    // margin, not the 5 s the 30 s timeout left after the 25 s budget — and the device waits
    // that long.
    t.send(&call(json!(3), "self.reboot", json!({})));
    assert_eq!(t.poll(7_000), None);
    let waits = t.poll(32_000).unwrap();
    assert_eq!(waits["id"], 3);
    assert_eq!(
        waits["result"]["structuredContent"]["status"],
        "awaiting_confirmation"
    );
    assert_eq!(
        waits["result"]["structuredContent"]["confirm_on_device_within_s"],
        20
    );
    let text = waits["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("within 20 s"), "{text}");
    assert_eq!(t.s.confirmation().unwrap().deadline_ms, 52_000);
    assert_eq!(t.poll(40_000), None, "still waiting past the 30 s timeout");
    assert!(t.press(true, 51_000));
    let note = t.poll(51_001).unwrap();
    assert_eq!(note["method"], "notifications/message");
    assert_eq!(note["params"]["data"]["confirmed"], true);
    assert_eq!(t.dev.reboots, 2);
    // With a confirmation timeout shorter than the budget the answer comes at the timeout.
    let mut t = T::with(
        Config::new("c", "1")
            .confirm_min_shown(0)
            .confirm_timeout(2_000),
    );
    t.init("2024-11-05", json!({}));
    t.poll(0);
    let (r, _) = t.send(&call(json!(9), "self.reboot", json!({})));
    assert_eq!(r, None);
    let late = t.poll(2_000).unwrap();
    assert_eq!(late["id"], 9);
    assert_eq!(late["result"]["isError"], true, "{late}");
    assert_eq!(t.dev.reboots, 0);
}

/// A press answers the question the device shows, and only a press after it was
/// shown: not one up to a few ms before the question, nor one meant for an earlier question.
#[test]
fn a_press_answers_only_the_question_shown_before_it() {
    let mut t = T::with(Config::new("c", "1").confirm_min_shown(0).hold_answer(0));
    t.init("2024-11-05", json!({}));
    t.poll(1_000);
    t.ask(call(json!(1), "self.reboot", json!({})));
    let first = t.s.confirmation().unwrap();
    // Before the device showed it (no poll since it was held): no press counts.
    assert!(!t.s.confirm_on_device(first.approval, true, 1_001));
    t.poll(1_010);
    let shown = t.s.confirmation().unwrap();
    assert_eq!(shown.shown_ms, Some(1_010));
    assert_eq!(shown.approval, first.approval);
    // A press from before the question was shown, or at the same instant: not an answer.
    assert!(!t.s.confirm_on_device(first.approval, true, 1_000));
    assert!(!t.s.confirm_on_device(first.approval, true, 1_010));
    assert_eq!(t.poll(1_020), None);
    assert_eq!(t.dev.reboots, 0);
    // The question is dropped (a no); a new one is asked: an answer to the old one does not
    // count for it.
    assert!(t.s.confirm_on_device(first.approval, false, 1_030));
    t.poll(1_040);
    t.ask(call(json!(2), "self.reboot", json!({})));
    t.poll(1_050);
    let second = t.s.confirmation().unwrap();
    assert_ne!(
        second.approval, first.approval,
        "every question has its own number"
    );
    assert!(!t.s.confirm_on_device(first.approval, true, 1_060));
    assert_eq!(t.poll(1_070), None);
    assert_eq!(t.dev.reboots, 0);
    assert!(t.s.confirm_on_device(second.approval, true, 1_080));
    assert!(
        !t.s.confirm_on_device(second.approval, true, 1_081),
        "one answer per question"
    );
    t.poll(1_090);
    assert_eq!(t.dev.reboots, 1);
}

/// A press once the question's time is up answers nothing: the call was already refused (or is
/// about to be, at the next poll), and the device must not run it anyway.
#[test]
fn a_press_after_the_deadline_answers_nothing() {
    // (No margin after the answer: the deadline is the timeout's.)
    let config = Config::new("c", "1")
        .confirm_min_shown(0)
        .confirm_timeout(1_000)
        .hold_answer(0);
    let mut t = T::with(config.heard_margin(0));
    t.init("2024-11-05", json!({}));
    t.poll(0);
    t.ask(call(json!(1), "self.reboot", json!({})));
    t.poll(10);
    let shown = t.s.confirmation().unwrap();
    assert_eq!(shown.deadline_ms, 1_000);
    // At the deadline and after it, before any poll settled the timeout: refused.
    assert!(!t.s.confirm_on_device(shown.approval, true, 1_000));
    assert!(!t.s.confirm_on_device(shown.approval, true, 5_000));
    let (late, p) = t.polled(5_000);
    // The call was answered at once (no budget to hold it): the outcome is a notification.
    let late = late.expect("the timeout's outcome");
    assert_eq!(late["params"]["data"]["confirmed"], false, "{late}");
    assert_eq!(p.ran, None);
    assert_eq!(t.dev.reboots, 0);
    // Just before the deadline a press still counts.
    t.ask(call(json!(2), "self.reboot", json!({})));
    t.poll(5_010);
    let next = t.s.confirmation().unwrap();
    assert!(t.s.confirm_on_device(next.approval, true, next.deadline_ms - 1));
    let (_, p) = t.polled(next.deadline_ms - 1);
    assert_eq!(p.ran, Some("self.reboot"));
    assert_eq!(t.dev.reboots, 1);
}

/// One engine, two clients (MCP over MQTT). Elicitation support is each
/// client's own: bob declaring it changes nothing for alice, whose call waits for the device;
/// an answer from bob — even with the right id — never settles alice's call, and its outcome
/// goes to alice.
#[test]
fn only_the_caller_answers_its_confirmation_and_hears_the_outcome() {
    let mut c = Clients::new(Config::new("c", "1").confirm_min_shown(0).hold_answer(0));
    c.init("alice", "2024-11-05", json!({}));
    c.init("bob", "2025-06-18", json!({"elicitation":{}}));
    let alice = Peer::named(b"alice");
    c.t.poll(1_000);
    let (r, _) = c.from("alice", &call(json!(1), "self.reboot", json!({})));
    let r = r.unwrap();
    assert_eq!(
        r["result"]["structuredContent"]["status"], "awaiting_confirmation",
        "alice declared no elicitation: the device asks ({r})"
    );
    let pending = c.t.s.confirmation().unwrap();
    assert!(pending.on_device);
    assert_eq!(pending.owner, alice);
    // Bob's accept, with any id, is nobody's answer.
    let id = format!("confirm-{:016x}", pending.approval.get());
    for id in [json!("confirm-1"), json!(id)] {
        let (none, _) = c.from(
            "bob",
            &json!({"jsonrpc":"2.0","id":id,"result":{"action":"accept","content":{"confirm":true}}}),
        );
        assert_eq!(none, None);
    }
    assert_eq!(c.t.dev.reboots, 0);
    assert!(c.t.s.confirmation().is_some());
    // The press: the outcome is for alice.
    c.t.poll(1_100);
    assert!(c.t.press(true, 1_200));
    let (note, polled) = c.t.polled(1_300);
    assert_eq!(note.unwrap()["params"]["data"]["confirmed"], true);
    assert_eq!(polled.to, Some(alice));
    assert_eq!(c.t.dev.reboots, 1);

    // Carol declared elicitation: her question goes to her, with an id nobody can guess, and
    // only her answer counts.
    c.init("carol", "2025-06-18", json!({"elicitation":{}}));
    let (ask, deferred) = c.from("carol", &call(json!(1), "self.reboot", json!({})));
    let ask = ask.unwrap();
    assert!(deferred);
    assert_eq!(ask["method"], "elicitation/create");
    let id = ask["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("confirm-") && id.len() == 24, "{id}");
    let yes =
        json!({"jsonrpc":"2.0","id":id,"result":{"action":"accept","content":{"confirm":true}}});
    assert_eq!(c.from("bob", &yes).0, None, "bob's copy of carol's answer");
    assert_eq!(c.t.dev.reboots, 1);
    let done = c.from("carol", &yes).0.unwrap();
    assert_eq!(done["id"], 1);
    assert_eq!(done["result"].get("isError"), None);
    assert_eq!(c.t.dev.reboots, 2);
    // The next question has another id, not the next number.
    let (ask, _) = c.from("carol", &call(json!(2), "self.reboot", json!({})));
    let next = ask.unwrap()["id"].as_str().unwrap().to_string();
    assert_ne!(next, id);
    assert_ne!(next, "confirm-2");
}

/// Each client's session is its own: one client's `initialize` does not change the revision the
/// engine speaks to another.
#[test]
fn each_client_keeps_its_own_revision() {
    let mut c = Clients::new(Config::new("c", "1").confirm_min_shown(0));
    c.init("old", "2024-11-05", json!({}));
    c.init("new", "2025-11-25", json!({}));
    let bad = call(json!(5), "self.relay.set", json!({"on":"yes"}));
    let (old, _) = c.from("old", &bad);
    assert_eq!(
        old.unwrap()["error"]["code"],
        -32602,
        "2024-11-05: a protocol error"
    );
    let (new, _) = c.from("new", &bad);
    assert_eq!(
        new.unwrap()["result"]["isError"],
        true,
        "2025-11-25: a tool result"
    );
    assert_eq!(
        c.t.s.revision(),
        None,
        "the engine's own client never initialized"
    );
}

/// A client that is gone leaves nothing waiting: its held call is dropped.
#[test]
fn a_call_of_a_client_that_is_gone_is_dropped() {
    let mut c = Clients::new(Config::new("c", "1").confirm_min_shown(0).hold_answer(0));
    c.init("alice", "2024-11-05", json!({}));
    c.from("alice", &call(json!(1), "self.reboot", json!({})));
    assert!(!c.t.s.forget_confirmation(Peer::named(b"bob")));
    assert!(c.t.s.forget_confirmation(Peer::named(b"alice")));
    assert!(c.t.s.confirmation().is_none());
    c.t.poll(1_000);
    assert_eq!(c.t.poll(40_000), None, "no outcome for anyone");
    assert_eq!(c.t.dev.reboots, 0);
}

#[test]
fn with_elicitation_the_client_asks_and_the_call_answers_after_the_person() {
    let mut t = T::new();
    t.init("2025-06-18", json!({"elicitation":{}}));
    let (ask, deferred) = t.send(&call(json!(7), "self.relay.set", json!({"on":true})));
    let ask = ask.unwrap();
    assert!(deferred, "the call's own response comes later");
    assert_eq!(ask["method"], "elicitation/create");
    let id = ask["id"].clone();
    // The question, and who asks: the name its client gave and its session's tag.
    let tag = t.s.confirmation().unwrap().client.tag;
    let question = format!("Switch the heater on? (asked by client #{tag:04x} \"t\")");
    assert_eq!(ask["params"]["message"], question);
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["confirm"]["type"],
        "boolean"
    );
    assert_eq!(
        ask["params"]["requestedSchema"]["required"],
        json!(["confirm"])
    );
    assert_eq!(t.dev.relay_writes, 0);
    // A response to another id is not the answer.
    let (none, _) = t.send(&json!({"jsonrpc":"2.0","id":"confirm-9","result":{"action":"accept","content":{"confirm":true}}}));
    assert_eq!(none, None);
    // Yes: the call's response is the answer to the client's response.
    let done = t.ask(
        json!({"jsonrpc":"2.0","id":id,"result":{"action":"accept","content":{"confirm":true}}}),
    );
    assert_eq!(done["id"], 7);
    assert_eq!(done["result"].get("isError"), None);
    assert_eq!((t.dev.relay_writes, t.dev.relay_on), (1, true));
    // Decline, cancel, an error, accept with false: nothing runs, the call says why.
    for (n, answer) in [
        json!({"result":{"action":"decline"}}),
        json!({"result":{"action":"cancel"}}),
        json!({"error":{"code":-32600,"message":"Elicitation not supported"}}),
        json!({"result":{"action":"accept","content":{"confirm":false}}}),
    ]
    .into_iter()
    .enumerate()
    {
        let (ask, _) = t.send(&call(json!(10 + n), "self.relay.set", json!({"on":true})));
        let id = ask.unwrap()["id"].clone();
        let mut response = answer.clone();
        response["jsonrpc"] = json!("2.0");
        response["id"] = id;
        let refused = t.ask(response);
        assert_eq!(refused["id"], 10 + n);
        assert_eq!(refused["result"]["isError"], true, "{answer}");
        assert!(
            refused["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("Not confirmed")
        );
    }
    assert_eq!(t.dev.relay_writes, 1);
    // No answer: the call is refused when the time is up.
    t.poll(1_000);
    t.send(&call(json!(20), "self.relay.set", json!({"on":true})));
    let late = t.poll(40_000).unwrap();
    assert_eq!(late["id"], 20);
    assert_eq!(late["result"]["isError"], true);
    assert_eq!(t.dev.relay_writes, 1);
}

#[cfg(feature = "modern")]
fn modern_call(id: i64, args: J, caps: J, extra: J) -> J {
    let mut params = json!({"name":"self.relay.set","arguments":args,"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":caps}});
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params})
}

#[cfg(feature = "modern")]
#[test]
fn on_the_stateless_wire_the_question_travels_in_an_input_required_result() {
    let mut t = T::new();
    let on = json!({"on":true});
    // Without elicitation: the capability is named.
    let r = t.ask(modern_call(1, on.clone(), json!({}), json!({})));
    assert_eq!(r["error"]["code"], -32021);
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"],
        json!({"elicitation":{}})
    );
    let caps = json!({"elicitation":{}});
    let r = t.ask(modern_call(2, on.clone(), caps.clone(), json!({})));
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    let question = &r["result"]["inputRequests"]["confirm"];
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(question["params"]["mode"], "form");
    let state = r["result"]["requestState"].as_str().unwrap().to_string();
    assert_eq!(t.dev.relay_writes, 0);
    let yes = json!({"confirm":{"action":"accept","content":{"confirm":true}}});
    // A tampered state, or the state with other arguments: refused, nothing runs.
    let last = if state.ends_with('0') { "1" } else { "0" };
    let tampered = format!("{}{last}", &state[..state.len() - 1]);
    let r = t.ask(modern_call(
        3,
        on.clone(),
        caps.clone(),
        json!({"requestState":tampered,"inputResponses":yes}),
    ));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    // The state binds the arguments as sent: the same values spelled otherwise are another call.
    let spaced = modern_call(
        3,
        on.clone(),
        caps.clone(),
        json!({"requestState":state,"inputResponses":yes}),
    )
    .to_string()
    .replace(
        r#""arguments":{"on":true}"#,
        r#""arguments":{ "on": true }"#,
    );
    assert!(spaced.contains(r#"{ "on": true }"#));
    let h =
        t.s.handle(spaced.as_bytes(), Principal::Model, &mut t.dev, &mut t.out)
            .unwrap();
    let r: J = serde_json::from_slice(&t.out[..h.len]).unwrap();
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(t.dev.relay_writes, 0);
    // A valid state without the answer: asked again.
    let r = t.ask(modern_call(
        4,
        on.clone(),
        caps.clone(),
        json!({"requestState":state}),
    ));
    assert_eq!(r["result"]["resultType"], "input_required");
    // Declined: nothing runs.
    let no = json!({"confirm":{"action":"decline"}});
    let r = t.ask(modern_call(
        5,
        on.clone(),
        caps.clone(),
        json!({"requestState":state,"inputResponses":no}),
    ));
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(t.dev.relay_writes, 0);
    // Yes: it runs.
    let r = t.ask(modern_call(
        6,
        on.clone(),
        caps,
        json!({"requestState":state,"inputResponses":yes}),
    ));
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(r["result"].get("isError"), None);
    assert_eq!((t.dev.relay_writes, t.dev.relay_on), (1, true));
}

/// An accepted 2026-07-28 approval is good for one call. The same state and
/// answer again — with new ids, from anyone — is refused until it expires, and nothing runs.
#[cfg(feature = "modern")]
#[test]
fn a_stateless_approval_is_used_once() {
    let mut t = T::new();
    let on = json!({"on":true});
    let caps = json!({"elicitation":{}});
    let r = t.ask(modern_call(1, on.clone(), caps.clone(), json!({})));
    let state = r["result"]["requestState"].as_str().unwrap().to_string();
    let yes = json!({"confirm":{"action":"accept","content":{"confirm":true}}});
    let retry = |id| {
        modern_call(
            id,
            on.clone(),
            caps.clone(),
            json!({"requestState":state,"inputResponses":yes}),
        )
    };
    let r = t.ask(retry(2));
    assert_eq!(r["result"].get("isError"), None, "{r}");
    for id in 3..8 {
        let r = t.ask(retry(id));
        assert_eq!(r["error"]["code"], -32602, "{r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("used already"),
            "{r}"
        );
    }
    assert_eq!(t.dev.relay_writes, 1, "ran once");
    // A fresh question has its own state, good once too; it is not the same as the first.
    let r = t.ask(modern_call(9, on.clone(), caps.clone(), json!({})));
    let second = r["result"]["requestState"].as_str().unwrap().to_string();
    assert_ne!(second, state);
    let r = t.ask(modern_call(
        10,
        on.clone(),
        caps.clone(),
        json!({"requestState":second,"inputResponses":yes}),
    ));
    assert_eq!(r["result"].get("isError"), None, "{r}");
    assert_eq!(t.dev.relay_writes, 2);
}

/// An `accept` whose content lacks the boolean the question asked for (the conformance suite
/// answers `{"ok":true}`) is not understood: nothing runs, and the refusal does not say the
/// person declined. `confirm: false` is still a decline.
#[test]
fn an_accept_without_the_boolean_is_not_reported_as_a_decline() {
    const NOT_UNDERSTOOD: &str =
        "Not confirmed: the client's answer was not understood; nothing was done";
    const DECLINED: &str = "Not confirmed: the person declined; nothing was done";
    let cases = [
        (
            json!({"action":"accept","content":{"ok":true}}),
            NOT_UNDERSTOOD,
        ),
        (
            json!({"action":"accept","content":{"confirm":"yes"}}),
            NOT_UNDERSTOOD,
        ),
        (json!({"action":"accept"}), NOT_UNDERSTOOD),
        (
            json!({"action":"accept","content":{"confirm":false}}),
            DECLINED,
        ),
    ];
    // 2025-06-18: the answer to `elicitation/create`.
    let mut t = T::new();
    t.init("2025-06-18", json!({"elicitation":{}}));
    for (n, (answer, why)) in cases.iter().enumerate() {
        let (ask, _) = t.send(&call(json!(n), "self.reboot", json!({})));
        let id = ask.unwrap()["id"].clone();
        let refused = t.ask(json!({"jsonrpc":"2.0","id":id,"result":answer}));
        assert_eq!(refused["result"]["isError"], true, "{answer}");
        // (A refusal is a failure like any other: the evidence says nothing was applied.)
        let said = format!("{why} — not applied");
        assert_eq!(refused["result"]["content"][0]["text"], said, "{answer}");
        assert_eq!(
            refused["result"]["_meta"]["io.github.mcu-mcp/evidence"]["level"],
            "not_applied"
        );
    }
    assert_eq!(t.dev.reboots, 0);
    // 2026-07-28: the retry's `inputResponses`.
    #[cfg(feature = "modern")]
    {
        let mut t = T::new();
        let on = json!({"on":true});
        let caps = json!({"elicitation":{}});
        let r = t.ask(modern_call(1, on.clone(), caps.clone(), json!({})));
        let state = r["result"]["requestState"].clone();
        for (n, (answer, why)) in cases.iter().enumerate() {
            let extra = json!({"requestState":state,"inputResponses":{"confirm":answer}});
            let r = t.ask(modern_call(2 + n as i64, on.clone(), caps.clone(), extra));
            assert_eq!(r["result"]["resultType"], "complete", "{r}");
            // (With what the call commanded: the relay `on`.)
            let said = format!("{why} — not applied (commanded true)");
            assert_eq!(r["result"]["content"][0]["text"], said, "{answer}");
        }
        assert_eq!(t.dev.relay_writes, 0);
    }
}

/// Members of `inputResponses` other than the engine's `confirm` are ignored (SEP-2322: a server
/// ignores what it does not recognise); the answer under `confirm` decides.
#[cfg(feature = "modern")]
#[test]
fn other_input_responses_beside_the_answer_are_ignored() {
    let mut t = T::new();
    let on = json!({"on":true});
    let caps = json!({"elicitation":{}});
    let r = t.ask(modern_call(1, on.clone(), caps.clone(), json!({})));
    let state = r["result"]["requestState"].clone();
    let responses = json!({
        "user_name":{"action":"accept","content":{"name":"Alice"}},
        "confirm":{"action":"accept","content":{"confirm":true}},
        "extra":12345,
    });
    let r = t.ask(modern_call(
        2,
        on,
        caps,
        json!({"requestState":state,"inputResponses":responses}),
    ));
    assert_eq!(r["result"].get("isError"), None, "{r}");
    assert_eq!(t.dev.relay_writes, 1);
}

/// A long-running tool that asks first: the question, then — after the yes — the task
/// (`CreateTaskResult`, which carries no `requestState`).
#[cfg(feature = "modern")]
#[test]
fn a_confirmed_long_running_tool_starts_its_task_after_the_yes() {
    use crate::{TaskHooks, TaskInfo, TaskPoll, TaskSupport};
    fn start(d: &mut Dev, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
        d.reboots += 1;
        Ok(Output::task(0))
    }
    fn poll(_: &mut Dev, _: &TaskInfo) -> TaskPoll {
        TaskPoll::Working(None)
    }
    const FLASH: Tool<Dev> = Tool::new("self.flash", "Flash the firmware", start)
        .long_running(
            TaskSupport::Required,
            TaskHooks {
                poll,
                stop: None,
                timeout_ms: 60_000,
            },
        )
        .confirm(Confirm::new("Flash the new firmware?"));
    let mut t = T::new();
    t.s.register(&FLASH).unwrap();
    let caps = json!({"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}});
    let flash = |id: i64, extra: J| {
        let mut c = modern_call(id, json!({}), caps.clone(), extra);
        c["params"]["name"] = json!("self.flash");
        c
    };
    let r = t.ask(flash(1, json!({})));
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    assert!(r["result"].get("taskId").is_none());
    let yes = json!({"confirm":{"action":"accept","content":{"confirm":true}}});
    let extra = json!({"requestState":r["result"]["requestState"],"inputResponses":yes});
    let r = t.ask(flash(2, extra));
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    assert!(r["result"]["taskId"].is_string());
    assert!(r["result"].get("requestState").is_none());
    assert_eq!(t.dev.reboots, 1);
}

/// At 2024-11-05 a refused call's reason is also in `result.error`, where xiaozhi's backends read
/// it (they speak "the tool failed, no details" otherwise) — as for any failed call, so for the
/// refusals of the confirmation gate too.
#[test]
fn a_xiaozhi_backend_hears_why_a_confirmed_call_was_refused() {
    let mut t = T::new();
    t.init("2024-11-05", json!({}));
    t.send(&call(json!(1), "self.reboot", json!({})));
    let busy = t.ask(call(json!(2), "self.relay.set", json!({"on":true})));
    let text = busy["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Another action is waiting"), "{busy}");
    assert_eq!(busy["result"]["isError"], true);
    assert_eq!(busy["result"]["error"], text, "{busy}");
    assert_eq!(t.dev.relay_writes, 0);
    // Later revisions keep the result as the specification has it.
    let mut t = T::new();
    t.init("2025-11-25", json!({}));
    t.send(&call(json!(1), "self.reboot", json!({})));
    let busy = t.ask(call(json!(2), "self.relay.set", json!({"on":true})));
    assert_eq!(busy["result"]["isError"], true);
    assert!(busy["result"].get("error").is_none(), "{busy}");
}

fn upgrade(d: &mut Dev, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.reboots += 1;
    Ok(Output::bool(true))
}

/// An upgrade whose question names the image it approves.
const UPGRADE: Tool<Dev> = Tool::new("self.upgrade_firmware", "Upgrade", upgrade)
    .params(&[
        Param::integer("size", "Bytes").range(1, 1 << 20),
        Param::string("sha256", "SHA-256").length(64, 64),
    ])
    .confirm(Confirm::new(
        "Upgrade the device's firmware to the {size}-byte image with SHA-256 {sha256:8}?",
    ));

const EVIL: &str = "6666666666666666666666666666666666666666666666666666666666666666";
const GOOD: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

fn upgrade_call(id: i64, size: u32, sha: &str) -> J {
    call(
        json!(id),
        "self.upgrade_firmware",
        json!({"size":size,"sha256":sha}),
    )
}

/// A server (one session's engine, as a host keeps one per HTTP session) with the upgrade tool.
fn with_upgrade(config: Config) -> T {
    let mut t = T::with(config);
    t.s.register(&UPGRADE).unwrap();
    t
}

/// Two sessions ask to upgrade (an attacker first, with its image's hash): a person must be able
/// to tell the questions apart, or a press meant for the user's upgrade approves the attacker's.
/// A question names what it approves — the size and the first hash digits, from the validated
/// arguments — and which client asks (the name it gave, escaped and capped, and a tag of its
/// session), on the device, in the elicitation and on the xiaozhi wire: one text in every form.
#[test]
fn a_question_names_what_it_approves_and_which_client_asks() {
    let config = || Config::new("c", "1").confirm_min_shown(0).hold_answer(0);
    // The attacker's session and the user's, each on its engine; neither can elicit.
    let mut evil = with_upgrade(config());
    let mut user = with_upgrade(config());
    let init = |t: &mut T, name: &str| {
        t.ask(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":name,"version":"1"}}}));
    };
    init(&mut evil, "xiaozhi");
    init(&mut user, "xiaozhi");
    let waits_evil = evil.ask(upgrade_call(1, 6_666, EVIL));
    let waits_user = user.ask(upgrade_call(1, 524_288, GOOD));
    evil.poll(10);
    user.poll(10);
    let (q_evil, q_user) = (
        evil.s.question().unwrap().to_string(),
        user.s.question().unwrap().to_string(),
    );
    let (p_evil, p_user) = (
        evil.s.confirmation().unwrap(),
        user.s.confirmation().unwrap(),
    );
    assert_eq!(
        q_evil,
        format!(
            "Upgrade the device's firmware to the 6666-byte image with SHA-256 66666666…? (asked by client #{:04x} \"xiaozhi\")",
            p_evil.client.tag
        )
    );
    assert_eq!(
        q_user,
        format!(
            "Upgrade the device's firmware to the 524288-byte image with SHA-256 9f86d081…? (asked by client #{:04x} \"xiaozhi\")",
            p_user.client.tag
        )
    );
    // Same tool, same client name: the questions still differ in what they approve (and the
    // sessions' tags tell the clients apart: each is a keyed hash of the client's peer).
    assert_ne!(q_evil, q_user);
    assert_eq!(p_evil.client.name.as_str(), "xiaozhi");
    assert_eq!(p_evil.message, UPGRADE.confirmation().unwrap().message());
    // On the xiaozhi wire the waiting answer says the same question, in its first text (all a
    // backend hands its model) and as `question`.
    let text = waits_evil["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(&q_evil), "{text}");
    assert_eq!(
        waits_evil["result"]["structuredContent"]["question"],
        q_evil
    );
    assert_eq!(
        waits_user["result"]["structuredContent"]["question"],
        q_user
    );

    // The waiting answer written when the hold budget runs out (from `poll`, the arguments read
    // again from the held message) says it too.
    let mut t = with_upgrade(
        Config::new("c", "1")
            .confirm_min_shown(0)
            .hold_answer(1_000),
    );
    t.init("2024-11-05", json!({}));
    let (r, deferred) = t.send(&upgrade_call(3, 4096, GOOD));
    assert!(r.is_none() && deferred, "held inside the call");
    let late = t.poll(1_000).unwrap();
    let question = t.s.question().unwrap().to_string();
    assert!(
        question.contains("4096-byte image with SHA-256 9f86d081…?"),
        "{question}"
    );
    assert!(
        question.ends_with(" \"t\")") && question.contains("(asked by client #"),
        "{question}"
    );
    assert_eq!(
        late["result"]["structuredContent"]["question"], question,
        "{late}"
    );

    // The elicitation asks the client's user the same question.
    let mut t = with_upgrade(Config::new("c", "1").confirm_min_shown(0));
    t.ask(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"python-sdk","version":"2.3"}}}));
    let ask = t.ask(upgrade_call(4, 4096, GOOD));
    let question = t.s.question().unwrap().to_string();
    assert!(question.ends_with(" \"python-sdk\")"), "{question}");
    assert_eq!(ask["params"]["message"], question, "{ask}");
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["confirm"]["description"],
        question
    );
}

/// The name a client gives is its own text: escaped for a display (no line breaks, terminal
/// escapes or bidi overrides reach it) and capped; a client without one is its tag alone.
#[test]
fn a_client_name_is_escaped_and_capped_in_the_question() {
    let mut t = with_upgrade(Config::new("c", "1").confirm_min_shown(0).hold_answer(0));
    let name = "Claude\n\u{1b}[31m\u{202e}Desktop and a very long tail";
    t.ask(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":name,"version":"1"}}}));
    t.ask(upgrade_call(1, 10, GOOD));
    let p = t.s.confirmation().unwrap();
    let shown = p.client.name.as_str();
    assert_eq!(
        shown, r"Claude\n\u{1b}[31m…",
        "whole escapes only, then the ellipsis"
    );
    assert!(shown.len() <= ClientName::MAX_LEN);
    assert!(
        !shown.chars().any(|c| c.is_control() || c == '\u{202e}'),
        "{shown}"
    );
    let q = t.s.question().unwrap().to_string();
    assert!(
        q.ends_with(&format!(
            "(asked by client #{:04x} \"{shown}\")",
            p.client.tag
        )),
        "{q}"
    );

    // Without initialize (as xiaozhi backends may call): the tag alone.
    let mut t = with_upgrade(Config::new("c", "1").confirm_min_shown(0).hold_answer(0));
    t.ask(upgrade_call(1, 10, GOOD));
    let q = t.s.question().unwrap().to_string();
    assert!(
        q.contains("(asked by client #") && q.ends_with(')') && !q.contains('"'),
        "{q}"
    );
}

/// A name cannot imitate the device-made tag: the tag comes first, the client's own name after
/// it in quotes, a quote in the name escaped, its zero-width and bidi characters escaped — a
/// client called `bob #3fa2) (asked by eve` shows as one quoted name after the real tag.
#[test]
fn a_client_name_cannot_imitate_the_tag_in_the_question() {
    for (name, shown) in [
        ("bob #3fa2) (asked by eve", r#""bob #3fa2) (asked by …""#),
        (
            r#"bob" (asked by client #3fa2 "eve"#,
            r#""bob\" (asked by clien…""#,
        ),
        ("b\u{200b}o\u{200d}b\u{202e}", r#""b\u{200b}o\u{200d}b…""#),
    ] {
        let mut t = with_upgrade(Config::new("c", "1").confirm_min_shown(0).hold_answer(0));
        t.ask(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":name,"version":"1"}}}));
        t.ask(upgrade_call(1, 10, GOOD));
        let p = t.s.confirmation().unwrap();
        let q = t.s.question().unwrap().to_string();
        let asked = format!(" (asked by client #{:04x} {shown})", p.client.tag);
        assert!(q.ends_with(&asked), "{name:?}: {q}");
        // Exactly one device-made tag, and it comes before anything of the client's.
        assert_eq!(q.matches(" (asked by client #").count(), 1, "{q}");
        assert!(
            !q.chars()
                .any(|c| matches!(c, '\u{200b}'..='\u{200d}' | '\u{202e}')),
            "{q}"
        );
    }
}

/// On 2026-07-28 the client asks its own user: the question names what it approves (there is no
/// session to name the client by).
#[cfg(feature = "modern")]
#[test]
fn on_the_stateless_wire_the_question_names_the_image() {
    let mut t = with_upgrade(Config::new("c", "1"));
    let mut c = modern_call(
        1,
        json!({"size":4096,"sha256":GOOD}),
        json!({"elicitation":{}}),
        json!({}),
    );
    c["params"]["name"] = json!("self.upgrade_firmware");
    let r = t.ask(c);
    let message = &r["result"]["inputRequests"]["confirm"]["params"]["message"];
    assert_eq!(
        message,
        "Upgrade the device's firmware to the 4096-byte image with SHA-256 9f86d081…?"
    );
    // Without elicitation the refusal names it too.
    let mut c = modern_call(1, json!({"size":7,"sha256":EVIL}), json!({}), json!({}));
    c["params"]["name"] = json!("self.upgrade_firmware");
    let r = t.ask(c);
    let m = r["error"]["message"].as_str().unwrap();
    assert!(m.contains("7-byte image with SHA-256 66666666…?"), "{m}");
}

/// Registration refuses a question whose placeholder names no parameter.
#[test]
fn a_question_with_an_unknown_placeholder_is_refused_at_registration() {
    const BAD: Tool<Dev> = Tool::new("self.bad", "Bad", reboot)
        .params(&[Param::integer("size", "Bytes")])
        .confirm(Confirm::new("Flash {sise} bytes?"));
    let mut s = S::new(Config::new("c", "1"));
    let e = s.register(&BAD).unwrap_err();
    assert_eq!(e.kind, crate::registry::RegisterErrorKind::BadQuestion);
}

/// On the engine's clock (no sleeps): a press counts only once the question
/// was shown for `confirm_min_shown_ms` (default 1 s), and a press within that time of the
/// previous press is a bounce — so the second half of a quick double press never approves the
/// question that came up in between.
#[test]
fn a_press_counts_only_after_the_question_was_shown_long_enough() {
    let mut t = T::with(Config::new("c", "1").hold_answer(0));
    assert_eq!(t.s.config().confirm_min_shown_ms, 1_000, "the default");
    t.init("2024-11-05", json!({}));
    t.ask(call(json!(1), "self.reboot", json!({})));
    t.poll(100);
    assert_eq!(t.s.confirmation().unwrap().min_shown_ms, 1_000);
    // Shown for exactly the minimum, the first press: it counts.
    assert!(t.press(true, 1_100));
    t.poll(1_110);
    assert_eq!(t.dev.reboots, 1);

    // Too early, then a bounce of that press, then a press a second later: only the last.
    t.ask(call(json!(2), "self.reboot", json!({})));
    t.poll(3_000);
    assert!(!t.press(true, 3_999), "shown for 999 ms");
    assert!(!t.press(true, 4_500), "within 1 s of the last press");
    t.poll(4_600);
    assert_eq!(t.dev.reboots, 1, "nothing ran");
    assert!(t.press(true, 5_500));
    t.poll(5_510);
    assert_eq!(t.dev.reboots, 2);

    // The double press: its first half answers the reboot; the relay question comes up 20 ms
    // later; the second half, 30 ms after that, answers nothing.
    t.ask(call(json!(3), "self.reboot", json!({})));
    t.poll(7_000);
    assert!(t.press(true, 8_000));
    t.poll(8_010);
    assert_eq!(t.dev.reboots, 3);
    t.ask(call(json!(4), "self.relay.set", json!({"on":true})));
    t.poll(8_020);
    assert!(!t.press(true, 8_050), "the second half of the double press");
    t.poll(8_060);
    assert_eq!(t.dev.relay_writes, 0, "the relay was not switched");
    // Read and pressed for: it runs.
    assert!(t.press(true, 9_100));
    t.poll(9_110);
    assert_eq!((t.dev.relay_writes, t.dev.relay_on), (1, true));
}

/// An outcome that comes after the call was answered "waiting" — a
/// press, a refusal, a timeout — is a `notifications/message` whose `data.text` is the sentence a
/// person hears (the tool, the value, the evidence, what was commanded), and `poll_with` says
/// where that sentence is ([`Polled::heard`]), so that a transport whose client only speaks what
/// it is told (xiaozhi) can send it on; a refusal within the call's budget is the call's own
/// answer, with the same evidence.
#[test]
fn an_outcome_after_the_answer_is_heard_with_its_value_and_evidence() {
    // (Presses count at once here: the minimum a question is shown is another test's.)
    let mut t = T::with(Config::new("c", "1").hold_answer(0).confirm_min_shown(0));
    t.init("2024-11-05", json!({}));
    t.poll(0);
    // Answered at once: it waits.
    let waits = t.ask(call(json!(1), "self.relay.set", json!({"on": true})));
    assert_eq!(
        waits["result"]["structuredContent"]["status"],
        "awaiting_confirmation"
    );
    t.poll(10);
    assert!(t.press(true, 20));
    let (note, p) = t.polled(30);
    let note = note.expect("the outcome");
    let heard = p.heard.expect("a heard outcome");
    assert_eq!(
        (heard.outcome, heard.tool),
        (Later::Confirmed, "self.relay.set")
    );
    let said = core::str::from_utf8(heard.sentence(&t.out[..p.len]).raw()).unwrap();
    assert_eq!(said, "self.relay.set, confirmed: true");
    assert_eq!(note["params"]["data"]["text"], said, "{note}");
    assert_eq!(
        note["params"]["data"]["result"]["content"][0]["text"],
        "true"
    );
    assert_eq!(t.dev.relay_writes, 1);

    // A "no" on the device after the answer: not applied, with what was commanded.
    t.ask(call(json!(2), "self.relay.set", json!({"on": true})));
    t.poll(40);
    assert!(t.press(false, 50));
    let (note, p) = t.polled(60);
    let heard = p.heard.expect("a heard refusal");
    assert_eq!(heard.outcome, Later::Refused);
    let said = core::str::from_utf8(heard.sentence(&t.out[..p.len]).raw()).unwrap();
    assert_eq!(
        said,
        "self.relay.set: Not confirmed: the person declined; nothing was done — not applied \
         (commanded true)"
    );
    assert_eq!(note.unwrap()["params"]["data"]["confirmed"], false);

    // No answer in time (20 s, the margin after the answer): the same, said.
    t.ask(call(json!(3), "self.relay.set", json!({"on": true})));
    t.poll(100);
    // (The call came at 60, the clock of the last poll: 30 s from then.)
    assert_eq!(
        t.s.confirmation().unwrap().deadline_ms,
        30_060,
        "30 s timeout"
    );
    let (note, p) = t.polled(30_060);
    let said = core::str::from_utf8(p.heard.unwrap().sentence(&t.out[..p.len]).raw()).unwrap();
    assert!(
        said.contains("no answer in time") && said.contains("(commanded true)"),
        "{said}"
    );
    assert_eq!(note.unwrap()["params"]["data"]["text"], said);
    assert_eq!(t.dev.relay_writes, 1);

    // An answer held inside the call is the call's own: nothing is "heard" besides it.
    let mut t = T::new();
    t.init("2024-11-05", json!({}));
    t.poll(0);
    t.send(&call(json!(4), "self.relay.set", json!({"on": true})));
    t.poll(10);
    assert!(t.press(false, 20));
    let (answer, p) = t.polled(30);
    let answer = answer.unwrap();
    assert_eq!(answer["id"], 4);
    assert_eq!(p.heard, None);
    assert_eq!(
        answer["result"]["error"],
        "Not confirmed: the person declined; nothing was done — not applied (commanded true)"
    );
    assert_eq!(
        answer["result"]["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level": "not_applied", "commanded": true})
    );
}

/// A confirmed call that then fails (its interlock refuses, the hardware fails) is heard as what
/// happened, in order: the person confirmed it, then it failed, and the failure's own words
/// (nothing switched, what was commanded) — never "confirmed: Refused by …".
#[test]
fn a_confirmed_call_that_fails_is_heard_as_confirmed_then_failed() {
    let mut t = T::with(Config::new("c", "1").hold_answer(0).confirm_min_shown(0));
    t.init("2024-11-05", json!({}));
    t.poll(0);
    t.dev.door_open = true;
    t.ask(call(json!(1), "self.relay.set", json!({"on": true})));
    t.poll(10);
    assert!(t.press(true, 20));
    let (note, p) = t.polled(30);
    let heard = p.heard.expect("a heard outcome");
    assert_eq!(heard.outcome, Later::Confirmed);
    let said = note.unwrap()["params"]["data"]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        said,
        "self.relay.set: the person confirmed it, then it failed: Refused by interlock \
         \"door-closed\": the door reads open; the relay was not switched — not applied \
         (commanded true)"
    );
    assert_eq!((t.dev.relay_writes, t.dev.relay_on), (0, false));
}

/// Answered at once that it waits, the person has at least the margin
/// (20 s by default) from then, whatever the confirmation timeout; the text says how long.
#[test]
fn a_waiting_answer_leaves_the_person_the_margin_from_when_it_is_heard() {
    let mut t = T::with(Config::new("c", "1").hold_answer(0).confirm_timeout(4_000));
    t.init("2024-11-05", json!({}));
    t.poll(1_000);
    let waits = t.ask(call(json!(1), "self.reboot", json!({})));
    let text = waits["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("within 20 s"), "{text}");
    assert_eq!(t.s.confirmation().unwrap().deadline_ms, 21_000);
    // A longer timeout stays as it is.
    let mut t = T::with(Config::new("c", "1").hold_answer(0).heard_margin(5_000));
    t.init("2024-11-05", json!({}));
    t.poll(1_000);
    let waits = t.ask(call(json!(1), "self.reboot", json!({})));
    let text = waits["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("within 30 s"), "{text}");
}

/// `holds_call` says when a transport must not end this engine's session
/// to make room: from the moment a call is held, through the press, until it ran.
#[test]
fn an_engine_holds_a_call_from_the_question_until_it_ran() {
    let mut t = T::with(
        Config::new("c", "1")
            .confirm_timeout(30_000)
            .hold_answer(0)
            .confirm_min_shown(0),
    );
    t.init("2024-11-05", json!({}));
    assert!(!t.s.holds_call());
    t.ask(call(json!(1), "self.reboot", json!({})));
    assert!(t.s.holds_call(), "asked on the device");
    t.poll(1_000);
    assert!(t.press(true, 1_050));
    assert!(t.s.holds_call(), "answered, runs at the next poll");
    t.poll(1_100);
    assert_eq!(t.dev.reboots, 1);
    assert!(!t.s.holds_call());
    // Timed out: nothing held any more.
    t.ask(call(json!(2), "self.reboot", json!({})));
    assert!(t.s.holds_call());
    t.poll(40_000);
    assert!(!t.s.holds_call());
}

/// A host names the client of every call, held or not, as the device names the client of a
/// question: the label of a client (its own session or one lent with its message) is the label
/// the question of its held call carries; and the held call's id links the question, and later
/// its outcome, to the call.
#[test]
fn every_client_is_named_as_its_questions_name_it_and_a_held_call_keeps_its_id() {
    // The engine's own client.
    let mut t = T::with(Config::new("c", "1").confirm_min_shown(0).hold_answer(0));
    t.init("2024-11-05", json!({}));
    let own = t.s.client_label(Peer::ONLY, None);
    assert_eq!(own.name.as_str(), "t");
    assert_eq!(t.s.confirmation_id(), None, "nothing held");
    t.ask(call(json!("call-7"), "self.reboot", json!({})));
    assert_eq!(t.s.confirmation().unwrap().client, own);
    assert_eq!(t.s.confirmation_id(), Some(&br#""call-7""#[..]));
    t.poll(10);
    assert!(t.press(true, 20));
    t.poll(20);
    assert_eq!(t.s.confirmation_id(), None, "answered: nothing held");

    // Clients that share one engine, each with its session lent with its messages.
    let mut c = Clients::new(Config::new("c", "1").confirm_min_shown(0).hold_answer(0));
    c.init("alice", "2025-06-18", json!({}));
    c.init("bob", "2025-06-18", json!({}));
    let session = |c: &Clients, who: &str| {
        let peer = Peer::named(who.as_bytes());
        let s = c.sessions.iter().find(|(p, _)| *p == peer).unwrap().1;
        c.t.s.client_label(peer, Some(&s))
    };
    let (alice, bob) = (session(&c, "alice"), session(&c, "bob"));
    assert_eq!((alice.name.as_str(), bob.name.as_str()), ("alice", "bob"));
    assert_ne!(alice.tag, bob.tag, "two sessions, two tags");
    c.from("bob", &call(json!(3), "self.reboot", json!({})));
    assert_eq!(c.t.s.confirmation().unwrap().client, bob);
    assert_eq!(c.t.s.confirmation_id(), Some(&b"3"[..]));

    // An engine none of whose tools asks a person names its client too.
    let mut plain = S::new(Config::new("c", "1"));
    let (mut dev, mut out) = (Dev::default(), [0u8; 1024]);
    let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"kitchen","version":"1"}}}"#;
    plain
        .handle(init, Principal::Model, &mut dev, &mut out)
        .unwrap();
    assert_eq!(
        plain.client_label(Peer::ONLY, None).name.as_str(),
        "kitchen"
    );
}
