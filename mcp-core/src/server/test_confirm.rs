//! Human confirmation: a person's yes before a tool acts, in every form the clients allow.

use serde_json::{Value as J, json};

use super::*;
use crate::registry::Confirm;
use crate::schema::Param;
use crate::{Args, Evidence, Level, Output, Reply, ToolResult};

#[derive(Default)]
struct Dev {
    reboots: u32,
    relay_on: bool,
    relay_writes: u32,
}

fn reboot(d: &mut Dev, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.reboots += 1;
    Ok(Output::bool(true).with_evidence(Evidence::new(Level::Scheduled)))
}

fn relay(d: &mut Dev, a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.relay_on = a.bool("on")?;
    d.relay_writes += 1;
    Ok(Output::bool(true))
}

const REBOOT: Tool<Dev> =
    Tool::new("self.reboot", "Reboot", reboot).confirm(Confirm::new("Reboot the device?"));
const RELAY: Tool<Dev> = Tool::new("self.relay.set", "Relay", relay)
    .params(&[Param::boolean("on", "On")])
    .confirm(Confirm::new("Switch the heater on?").when(|a| a.bool("on") == Ok(true)));

type S = Server<'static, Dev, 4>;

struct T {
    s: S,
    dev: Dev,
    out: Vec<u8>,
    principal: Principal,
}

impl T {
    fn new() -> Self {
        let mut s = S::new(Config::new("c", "1").confirm_timeout(30_000));
        s.register(&REBOOT).unwrap().register(&RELAY).unwrap();
        s.set_entropy([7; 16]);
        T {
            s,
            dev: Dev::default(),
            out: vec![0; 2048],
            principal: Principal::Model,
        }
    }

    fn send(&mut self, msg: &J) -> (Option<J>, bool) {
        let bytes = msg.to_string();
        let h = self
            .s
            .handle(
                bytes.as_bytes(),
                self.principal,
                &mut self.dev,
                &mut self.out,
            )
            .unwrap();
        let v = (h.len > 0).then(|| serde_json::from_slice(&self.out[..h.len]).unwrap());
        (v, h.deferred)
    }

    fn ask(&mut self, msg: J) -> J {
        self.send(&msg).0.expect("an answer")
    }

    fn poll(&mut self, now: u64) -> Option<J> {
        let n = self.s.poll(now, &mut self.dev, &mut self.out);
        (n > 0).then(|| serde_json::from_slice(&self.out[..n]).unwrap())
    }

    fn init(&mut self, rev: &str, caps: J) {
        self.ask(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":rev,"capabilities":caps,"clientInfo":{"name":"t","version":"1"}}}));
    }
}

fn call(id: J, tool: &str, args: J) -> J {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}})
}

#[test]
fn without_elicitation_the_device_asks_and_the_outcome_follows_as_a_notification() {
    let mut t = T::new();
    t.init("2024-11-05", json!({}));
    t.poll(1_000);
    let r = t.ask(call(json!(1), "self.reboot", json!({})));
    assert_eq!(r["result"]["isError"], false, "{r}");
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
    // Another call that needs a person meanwhile is refused.
    let busy = t.ask(call(json!(2), "self.relay.set", json!({"on":true})));
    assert_eq!(busy["result"]["isError"], true);
    // Switching off needs no confirmation and runs.
    t.ask(call(json!(3), "self.relay.set", json!({"on":false})));
    assert_eq!(t.dev.relay_writes, 1);
    // Nothing happens until the button.
    assert_eq!(t.poll(2_000), None);
    assert!(t.s.confirm_on_device(true));
    let note = t.poll(2_100).unwrap();
    assert_eq!(note["method"], "notifications/message");
    assert_eq!(note["params"]["logger"], "confirmation");
    assert_eq!(note["params"]["data"]["tool"], "self.reboot");
    assert_eq!(note["params"]["data"]["confirmed"], true);
    assert_eq!(note["params"]["data"]["result"]["isError"], false);
    assert_eq!(t.dev.reboots, 1, "ran once, after the press");
    assert!(t.s.confirmation().is_none());
    assert!(!t.s.confirm_on_device(true), "nothing waits any more");
    // A "no" on the device: nothing runs.
    t.ask(call(json!(4), "self.reboot", json!({})));
    t.s.confirm_on_device(false);
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

#[test]
fn with_elicitation_the_client_asks_and_the_call_answers_after_the_person() {
    let mut t = T::new();
    t.init("2025-06-18", json!({"elicitation":{}}));
    let (ask, deferred) = t.send(&call(json!(7), "self.relay.set", json!({"on":true})));
    let ask = ask.unwrap();
    assert!(deferred, "the call's own response comes later");
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["id"], "confirm-1");
    assert_eq!(ask["params"]["message"], "Switch the heater on?");
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
    let done = t.ask(json!({"jsonrpc":"2.0","id":"confirm-1","result":{"action":"accept","content":{"confirm":true}}}));
    assert_eq!(done["id"], 7);
    assert_eq!(done["result"]["isError"], false);
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
    assert_eq!(r["result"]["isError"], false);
    assert_eq!((t.dev.relay_writes, t.dev.relay_on), (1, true));
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
        assert_eq!(refused["result"]["content"][0]["text"], *why, "{answer}");
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
            assert_eq!(r["result"]["content"][0]["text"], *why, "{answer}");
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
    assert_eq!(r["result"]["isError"], false, "{r}");
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
    t.ask(call(json!(1), "self.reboot", json!({})));
    let busy = t.ask(call(json!(2), "self.relay.set", json!({"on":true})));
    let text = busy["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Another action is waiting"), "{busy}");
    assert_eq!(busy["result"]["isError"], true);
    assert_eq!(busy["result"]["error"], text, "{busy}");
    assert_eq!(t.dev.relay_writes, 0);
    // Later revisions keep the result as the specification has it.
    let mut t = T::new();
    t.init("2025-11-25", json!({}));
    t.ask(call(json!(1), "self.reboot", json!({})));
    let busy = t.ask(call(json!(2), "self.relay.set", json!({"on":true})));
    assert_eq!(busy["result"]["isError"], true);
    assert!(busy["result"].get("error").is_none(), "{busy}");
}
