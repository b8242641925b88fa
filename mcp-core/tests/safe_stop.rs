//! A failure after a start calls the tool's safe-stop once, and every form in which a client
//! can see the task's outcome says so: the plain call's status tool, the 2025-11-25 `tasks/get`
//! status message, `notifications/tasks/status` and `tasks/result`, and the 2026-07-28
//! extension's `tasks/get` (status message, and its result or error). Both kinds of failure: a
//! tool failure (`TaskPoll::Done(Err)`, a stall) and a request failure (`TaskPoll::Error`).
#![cfg(feature = "modern")]
#![allow(
    missing_docs,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic
)] // a test

use mcp_core::registry::TaskSupport;
use mcp_core::schema::Param;
use mcp_core::server::status_tool;
use mcp_core::{
    Args, Caps, Config, Evidence, Input, Level, Output, Principal, Reading, Reply, Server,
    TaskHooks, TaskInfo, TaskPoll, Tool, ToolError, ToolResult,
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

struct Rig {
    server: Server<'static, Arm, Caps<4>>,
    arm: Arm,
    out: Vec<u8>,
    now: u64,
    id: i64,
}

impl Rig {
    fn new() -> Rig {
        // A plain call answers with its task at once here: the status tool's report is checked.
        let mut server = Server::new(Config::new("arm", "1").hold_answer(0));
        server.register(&MOVE).unwrap().register(&STATUS).unwrap();
        Rig {
            server,
            arm: Arm::default(),
            out: vec![0; 4096],
            now: 0,
            id: 0,
        }
    }

    /// The status tool's report on `task` (its id, as a JSON string).
    fn status(&mut self, task: &Value) -> Value {
        let r = self
            .request(
                "tools/call",
                json!({"name":"self.tasks.get_status","arguments":{"task_id":task}}),
            )
            .unwrap();
        r["result"]["structuredContent"].clone()
    }

    /// A rig whose client initialized with `revision`.
    fn initialized(revision: &str) -> Rig {
        let mut rig = Rig::new();
        rig.request(
            "initialize",
            json!({"protocolVersion":revision,"capabilities":{}}),
        );
        rig
    }

    fn request(&mut self, method: &str, params: Value) -> Option<Value> {
        self.id += 1;
        let msg = json!({"jsonrpc":"2.0","id":self.id,"method":method,"params":params}).to_string();
        let n = self
            .server
            .handle_with(
                Input::new(msg.as_bytes(), Principal::Model),
                &mut self.arm,
                &mut self.out,
                &mut |_: &[u8]| {},
            )
            .unwrap()
            .len;
        (n > 0).then(|| serde_json::from_slice(&self.out[..n]).unwrap())
    }

    /// Advances 10 ms; returns what the engine owed.
    fn tick(&mut self) -> Vec<Value> {
        self.now += 10;
        let mut msgs = Vec::new();
        loop {
            let n = self.server.poll(self.now, &mut self.arm, &mut self.out);
            if n == 0 {
                return msgs;
            }
            msgs.push(serde_json::from_slice(&self.out[..n]).unwrap());
        }
    }
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
        let mut rig = Rig::initialized("2024-11-05");
        let r = rig
            .request(
                "tools/call",
                json!({"name":"arm.move","arguments":{"mode":mode}}),
            )
            .unwrap();
        let task = r["result"]["structuredContent"]["task_id"].clone();
        rig.tick();
        assert_eq!(rig.arm.stops, 1, "mode {mode}");
        let s = &rig.status(&task);
        assert_eq!(s["status"], "failed", "mode {mode}: {s}");
        assert_eq!(s["stop"], "issued", "mode {mode}: {s}");
        assert_eq!(s["error"], with_note(mode).as_str(), "mode {mode}: {s}");
        if mode == 0 {
            assert_eq!(
                s["evidence"],
                json!({"level":"measured","commanded":90,"observed":30,"tolerance":1,"unit":"°"})
            );
        }
        rig.tick();
        assert_eq!(rig.arm.stops, 1, "mode {mode}: stopped once");
    }
}

#[test]
fn the_2025_11_25_forms_say_the_safe_stop_was_issued() {
    for mode in [0, 1] {
        let mut rig = Rig::initialized("2025-11-25");
        let created = rig
            .request(
                "tools/call",
                json!({"name":"arm.move","arguments":{"mode":mode},"task":{}}),
            )
            .unwrap();
        let task = created["result"]["task"]["taskId"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            rig.request("tasks/result", json!({"taskId": task}))
                .is_none()
        );
        let waiter = rig.id;
        let msgs = rig.tick();
        assert_eq!(rig.arm.stops, 1, "mode {mode}");
        let result = msgs.iter().find(|m| m["id"] == waiter).expect("answered");
        if mode == 0 {
            assert_eq!(result["result"]["isError"], true, "{result}");
            assert_eq!(
                result["result"]["content"][0]["text"],
                first_text(mode).as_str()
            );
        } else {
            assert_eq!(result["error"]["code"], -32603, "{result}");
            assert_eq!(result["error"]["message"], with_note(mode).as_str());
        }
        let note = msgs
            .iter()
            .find(|m| m["method"] == "notifications/tasks/status")
            .expect("a status notification");
        assert_eq!(note["params"]["status"], "failed");
        assert!(
            note["params"]["statusMessage"]
                .as_str()
                .unwrap()
                .ends_with("; safe-stop issued"),
            "{note}"
        );
        let g = rig.request("tasks/get", json!({"taskId": task})).unwrap();
        let status = g["result"]["statusMessage"].as_str().unwrap();
        assert!(status.starts_with(message(mode)), "{g}");
        assert!(status.ends_with("; safe-stop issued"), "{g}");
    }
}

#[test]
fn the_2026_07_28_extension_says_the_safe_stop_was_issued() {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    });
    for mode in [0, 1] {
        let mut rig = Rig::new();
        let created = rig
            .request(
                "tools/call",
                json!({"name":"arm.move","arguments":{"mode":mode},"_meta":meta}),
            )
            .unwrap();
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        let task = created["result"]["taskId"].as_str().unwrap().to_string();
        rig.tick();
        assert_eq!(rig.arm.stops, 1, "mode {mode}");
        let g = rig
            .request("tasks/get", json!({"taskId": task, "_meta": meta}))
            .unwrap();
        let g = &g["result"];
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
    let mut rig = Rig::new();
    rig.arm.stop_fails = true;
    let r = rig
        .request(
            "tools/call",
            json!({"name":"arm.move","arguments":{"mode":0}}),
        )
        .unwrap();
    let task = r["result"]["structuredContent"]["task_id"].clone();
    rig.tick();
    let s = &rig.status(&task);
    assert_eq!(s["stop"], "failed", "{s}");
    assert_eq!(
        s["error"],
        format!("{STALLED}; safe-stop FAILED: the actuator may still be moving").as_str()
    );
}
