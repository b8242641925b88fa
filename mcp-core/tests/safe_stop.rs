//! A failure after a start calls the tool's safe-stop once, and every form in which a client
//! can see the task's outcome says so: the plain call's status tool, the 2025-11-25 `tasks/get`
//! status message, `notifications/tasks/status` and `tasks/result`, and the 2026-07-28
//! extension's `tasks/get` (status message, and its result or error). Both kinds of failure: a
//! tool failure (`TaskPoll::Done(Err)`, a stall) and a request failure (`TaskPoll::Error`).
// (The status tool takes its `task_id` as a string parameter.)
#![cfg(all(feature = "modern", feature = "strings"))]
#![allow(missing_docs, clippy::restriction, reason = "a test")]

use mcp_core::registry::TaskSupport;
use mcp_core::schema::Param;
use mcp_core::server::status_tool;
use mcp_core::testing::Client;
use mcp_core::{
    Args, Caps, Config, Evidence, Level, Output, Reading, Reply, Server, TaskHooks, TaskInfo,
    TaskPoll, Tool, ToolError, ToolResult,
};
use serde_json::{Value, json};

/// An arm that stalls (or loses its encoder) right after it starts.
#[derive(Default)]
struct Arm {
    stops: u32,
    stop_fails: bool,
}

fn start(_: &mut Arm, a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::task(a.int("mode")?))
}

const STALLED: &str = "The arm stopped before reaching its target";
const LOST: &str = "The encoder stopped answering";

fn poll(_: &mut Arm, t: &TaskInfo) -> TaskPoll {
    if t.data == 0 {
        TaskPoll::Done(Err(ToolError::new(STALLED).with_evidence(
            Evidence::new(Level::Measured)
                .commanded(Reading::Int(90))
                .observed(Reading::Int(30))
                .tolerance(1)
                .unit("°"),
        )))
    } else {
        TaskPoll::Error(LOST)
    }
}

fn stop(arm: &mut Arm, _: &TaskInfo) -> Result<(), ToolError> {
    arm.stops += 1;
    if arm.stop_fails {
        Err(ToolError::new("brake fault"))
    } else {
        Ok(())
    }
}

static MOVE: Tool<Arm> = Tool::new("arm.move", "Moves the arm", start)
    .params(&[Param::integer("mode", "0: stalls, 1: loses its encoder").range(0, 1)])
    .long_running(
        TaskSupport::Optional,
        TaskHooks {
            poll,
            stop: Some(stop),
            timeout_ms: 60_000,
        },
    );
static STATUS: Tool<Arm> = status_tool();

/// A client of the arm's engine. A plain call answers with its task at once here: the status
/// tool's report is checked.
fn client() -> Client<'static, Arm, Caps<4>> {
    let mut server = Server::new(Config::new("arm", "1").hold_answer(0));
    server.register(&MOVE).unwrap().register(&STATUS).unwrap();
    Client::new(server, Arm::default())
}

/// The status tool's report on `task`.
fn status(client: &mut Client<'static, Arm, Caps<4>>, task: &str) -> Value {
    let r = client.call("self.tasks.get_status", json!({"task_id": task}));
    r.structured().unwrap().clone()
}

fn message(mode: i64) -> &'static str {
    if mode == 0 { STALLED } else { LOST }
}

fn with_note(mode: i64) -> String {
    format!("{}; safe-stop issued", message(mode))
}

/// A result's first text: the failure, its evidence (mode 0), then the safe-stop.
fn first_text(mode: i64) -> String {
    if mode == 0 {
        format!("{STALLED} — measured: 30 ° (commanded 90 °, not within ±1 °); safe-stop issued")
    } else {
        with_note(mode)
    }
}

#[test]
fn the_status_tool_says_the_safe_stop_was_issued() {
    for mode in [0, 1] {
        let mut arm = client();
        arm.initialize("2024-11-05");
        let r = arm.call("arm.move", json!({"mode": mode}));
        let task = r.task_id().unwrap();
        arm.advance(10);
        assert_eq!(arm.board().stops, 1, "mode {mode}");
        let s = &status(&mut arm, task);
        assert_eq!(s["status"], "failed", "mode {mode}: {s}");
        assert_eq!(s["stop"], "issued", "mode {mode}: {s}");
        assert_eq!(s["error"], with_note(mode).as_str(), "mode {mode}: {s}");
        if mode == 0 {
            assert_eq!(
                s["evidence"],
                json!({"level":"measured","commanded":90,"observed":30,"tolerance":1,"unit":"°"})
            );
        }
        arm.advance(10);
        assert_eq!(arm.board().stops, 1, "mode {mode}: stopped once");
    }
}

#[test]
fn the_2025_11_25_forms_say_the_safe_stop_was_issued() {
    for mode in [0, 1] {
        let mut arm = client();
        arm.initialize("2025-11-25");
        let created = arm.call_with("arm.move", json!({"mode": mode}), json!({"task": {}}));
        let task = created.task_id().unwrap();
        let parked = arm.request("tasks/result", json!({"taskId": task}));
        assert!(parked.is_empty());
        let msgs = arm.advance(10);
        assert_eq!(arm.board().stops, 1, "mode {mode}");
        let waiter = &parked.sent.unwrap()["id"];
        let result = msgs
            .iter()
            .find(|m| m.message["id"] == *waiter)
            .expect("answered");
        if mode == 0 {
            assert!(result.is_error(), "{result}");
            assert_eq!(result.text(), first_text(mode));
        } else {
            assert_eq!(result.error_code(), Some(-32603), "{result}");
            assert_eq!(result.error_message(), Some(with_note(mode).as_str()));
        }
        let note = &msgs
            .iter()
            .find(|m| m.method() == Some("notifications/tasks/status"))
            .expect("a status notification")
            .message;
        assert_eq!(note["params"]["status"], "failed");
        assert!(
            note["params"]["statusMessage"]
                .as_str()
                .unwrap()
                .ends_with("; safe-stop issued"),
            "{note}"
        );
        let g = arm.request("tasks/get", json!({"taskId": task})).message;
        let status = g["result"]["statusMessage"].as_str().unwrap();
        assert!(status.starts_with(message(mode)), "{g}");
        assert!(status.ends_with("; safe-stop issued"), "{g}");
    }
}

#[test]
fn the_2026_07_28_extension_says_the_safe_stop_was_issued() {
    for mode in [0, 1] {
        let mut arm = client().with_tasks();
        arm.initialize("2026-07-28");
        let created = arm.call("arm.move", json!({"mode": mode}));
        assert_eq!(created.result_type(), Some("task"), "{created}");
        let task = created.task_id().unwrap();
        arm.advance(10);
        assert_eq!(arm.board().stops, 1, "mode {mode}");
        let g = arm.request("tasks/get", json!({"taskId": task}));
        let g = g.result().unwrap();
        assert!(
            g["statusMessage"]
                .as_str()
                .unwrap()
                .ends_with("; safe-stop issued"),
            "{g}"
        );
        if mode == 0 {
            assert_eq!(g["status"], "completed", "{g}");
            assert_eq!(g["result"]["isError"], true, "{g}");
            assert_eq!(g["result"]["content"][0]["text"], first_text(mode).as_str());
        } else {
            assert_eq!(g["status"], "failed", "{g}");
            assert_eq!(
                g["error"],
                json!({"code": -32603, "message": with_note(mode)})
            );
        }
    }
}

#[test]
fn a_failed_safe_stop_is_said_too() {
    let mut arm = client();
    arm.board_mut().stop_fails = true;
    let r = arm.call("arm.move", json!({"mode": 0}));
    let task = r.task_id().unwrap();
    arm.advance(10);
    let s = &status(&mut arm, task);
    assert_eq!(s["stop"], "failed", "{s}");
    assert_eq!(
        s["error"],
        format!("{STALLED}; safe-stop FAILED: the actuator may still be moving").as_str()
    );
}
