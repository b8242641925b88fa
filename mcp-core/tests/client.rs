//! `mcp_core::testing::Client` against the engine in every form a firmware author's host test
//! meets: each revision's handshake, every `tools/list` page, a person's answer in each form the
//! engine asks it, the device's button with the answer held back or given, tasks on the test
//! clock, and clients of one engine told apart.
#![cfg(all(feature = "confirm", feature = "modern"))]
#![allow(missing_docs, clippy::restriction, reason = "a test")]

use mcp_core::server::Peer;
use mcp_core::testing::Client;
use mcp_core::{
    Args, Caps, Config, Confirm, Output, Param, Reply, Server, TaskHooks, TaskInfo, TaskPoll,
    TaskSupport, Tool, ToolResult,
};
use serde_json::json;

#[derive(Default)]
struct Lamp {
    on: bool,
    switched: u32,
}

fn switch(lamp: &mut Lamp, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    lamp.on = args.bool("on")?;
    lamp.switched += 1;
    Ok(Output::bool(lamp.on))
}

fn dim(_: &mut Lamp, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::task(args.int("level")?))
}

/// Done 100 ms after the start.
fn dimmed(_: &mut Lamp, task: &TaskInfo) -> TaskPoll {
    if task.now_ms >= task.started_ms + 100 {
        TaskPoll::Done(Ok(Output::bool(true)))
    } else {
        TaskPoll::Working(None)
    }
}

const SWITCH: Tool<Lamp> = Tool::new("self.lamp.set", "Switch the lamp", switch)
    .params(&[Param::boolean("on", "On")])
    .confirm(Confirm::new("Switch the lamp on?").when(|a| a.bool("on") == Ok(true)));
const DIM: Tool<Lamp> = Tool::new("self.lamp.dim", "Dim the lamp slowly", dim)
    .params(&[Param::integer("level", "Level").range(0, 100)])
    .long_running(
        TaskSupport::Optional,
        TaskHooks {
            poll: dimmed,
            stop: None,
            timeout_ms: 10_000,
        },
    );

fn lamp(config: Config) -> Client<'static, Lamp, Caps<16>> {
    let mut server = Server::new(config);
    server.register_all(&[&SWITCH, &DIM]).unwrap();
    for i in 0..12 {
        let name: &'static str = Box::leak(format!("self.filler_{i}").into_boxed_str());
        let tool: &'static Tool<Lamp> = Box::leak(Box::new(Tool::new(name, "x", switch)));
        server.register(tool).unwrap();
    }
    Client::new(server, Lamp::default())
}

#[test]
fn every_page_of_tools_list_and_each_revisions_handshake() {
    let mut client = lamp(Config::new("lamp", "1").page_bytes(600));
    for revision in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let init = client.initialize(revision);
        assert_eq!(init.result().unwrap()["protocolVersion"], revision);
        let names: Vec<_> = client
            .list_tools()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names.len(), 14, "{revision}");
        assert_eq!(names[..2], ["self.lamp.set", "self.lamp.dim"]);
    }
    let discovered = client.initialize("2026-07-28");
    assert_eq!(
        discovered.result().unwrap()["supportedVersions"][0],
        "2026-07-28"
    );
    // Every later request carries the stateless `_meta`: a result with its members.
    let off = client.call("self.lamp.set", json!({"on": false}));
    assert_eq!(off.result_type(), Some("complete"), "{off}");
    assert_eq!(client.list_tools().len(), 14);
}

#[test]
fn a_question_answered_in_every_form() {
    // 2025-06-18 with elicitation: `elicitation/create`, answered by its response.
    let mut client = lamp(Config::new("lamp", "1")).with_elicitation();
    client.initialize("2025-06-18");
    let asked = client.call("self.lamp.set", json!({"on": true}));
    assert!(asked.deferred && asked.method() == Some("elicitation/create"));
    // The question, and which client asks (the name its initialize gave, a tag of its session).
    let question = asked.question().unwrap();
    assert!(
        question.starts_with("Switch the lamp on? (asked by client #")
            && question.ends_with(" \"mcp_core::testing\")"),
        "{question}"
    );
    let declined = client.decline(&asked);
    assert!(
        declined.is_error() && declined.text().contains("declined"),
        "{declined}"
    );
    let asked = client.call("self.lamp.set", json!({"on": true}));
    assert_eq!(client.accept(&asked).text(), "true");
    assert!(client.board().on);
    // 2026-07-28: `input_required`, answered by the call again with the state.
    client.initialize("2026-07-28");
    let asked = client.call("self.lamp.set", json!({"on": true}));
    assert_eq!(asked.question(), Some("Switch the lamp on?"));
    let cancelled = client.cancel(&asked);
    assert!(cancelled.text().contains("dismissed"), "{cancelled}");
    let done = client.accept(&asked);
    assert_eq!(
        (done.result_type(), done.text()),
        (Some("complete"), "true")
    );
    // The state is good once.
    let again = client.accept(&asked);
    assert_eq!(again.error_code(), Some(-32602), "{again}");
    assert_eq!(client.board().switched, 2);
}

#[test]
fn the_button_answers_a_held_call_or_one_answered_already() {
    // The answer held back until the press: the call's own answer.
    let mut client = lamp(Config::new("lamp", "1"));
    client.initialize("2024-11-05");
    let held = client.call("self.lamp.set", json!({"on": true}));
    assert!(held.is_empty() && held.deferred);
    let outcome = client.press(true);
    assert_eq!(outcome.message["id"], held.sent.unwrap()["id"]);
    assert_eq!(outcome.text(), "true");
    // Answered at once that it waits; the outcome follows as a notification.
    let mut client = lamp(Config::new("lamp", "1").hold_answer(0));
    let waiting = client.call("self.lamp.set", json!({"on": true}));
    assert!(waiting.text().contains("press the button"), "{waiting}");
    let refused = client.press(false);
    assert_eq!(refused.method(), Some("notifications/message"));
    let said = &refused.message["params"]["data"];
    assert_eq!(said["confirmed"], false, "{refused}");
    assert!(
        said["reason"]
            .as_str()
            .unwrap()
            .starts_with("Not confirmed")
    );
    assert!(!client.board().on);
    // A yes runs it: the notification carries the call's result.
    client.call("self.lamp.set", json!({"on": true}));
    let ran = client.press(true);
    assert_eq!((ran.is_error(), ran.text()), (false, "true"));
    assert!(client.board().on);
}

#[test]
fn a_task_on_the_test_clock() {
    let mut client = lamp(Config::new("lamp", "1")).with_tasks();
    client.initialize("2025-11-25");
    let created = client.call_with("self.lamp.dim", json!({"level": 30}), json!({"task": {}}));
    let task = created.task_id().unwrap().to_string();
    let working = client.request("tasks/get", json!({"taskId": task}));
    assert_eq!(working.result().unwrap()["status"], "working");
    let said = client.advance(200);
    assert!(
        said.iter()
            .any(|m| m.method() == Some("notifications/tasks/status")),
        "{said:?}"
    );
    assert_eq!(client.now(), 200);
    let result = client.request("tasks/result", json!({"taskId": task}));
    assert_eq!(result.text(), "true");
}

#[test]
fn clients_of_one_engine_keep_their_own_sessions() {
    let mut client = lamp(Config::new("lamp", "1"))
        .with_elicitation()
        .with_peer(Peer::named(b"alice"));
    client.initialize("2025-06-18");
    // Bob never initialized: no elicitation for him, the device's button instead.
    client.set_peer(Peer::named(b"bob"));
    let bobs = client.call("self.lamp.set", json!({"on": true}));
    assert!(bobs.deferred && bobs.is_empty(), "{bobs}");
    assert_eq!(
        client.server().confirmation().unwrap().owner,
        Peer::named(b"bob")
    );
}
