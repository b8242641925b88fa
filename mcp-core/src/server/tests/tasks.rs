//! MCP Tasks through the wire protocol: both forms, progress, cancel with safe-stop, stall,
//! timeout, a full table, expiry.

use serde_json::{Value as J, json};

use crate::schema::Param;
use crate::server::*;
use crate::{
    Args, Evidence, Level, Output, Progress, Reading, Reply, TaskHooks, TaskInfo, TaskPoll,
    TaskSupport, ToolError, ToolResult,
};

/// A motor that moves 1 unit per ms from where it was when the move started.
#[derive(Default)]
struct Motor {
    position: i64,
    from: i64,
    target: i64,
    started_ms: u64,
    moving: bool,
    stall_at: Option<i64>,
    starts: usize,
    stops: usize,
    /// The device's own clock (the rig keeps it equal to the engine's).
    now: u64,
}

impl Motor {
    fn at(&self, now: u64) -> i64 {
        if !self.moving {
            return self.position;
        }
        let travelled = i64::try_from(now - self.started_ms).unwrap();
        let dir = (self.target - self.from).signum();
        let mut p = self.from + dir * travelled.min((self.target - self.from).abs());
        if let Some(s) = self.stall_at
            && (p - s) * dir >= 0
        {
            p = s;
        }
        p
    }
}

fn move_to(m: &mut Motor, a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    let target = a.int("position")?;
    if target == m.position && !m.moving {
        let e = Evidence::new(Level::Measured)
            .commanded(Reading::Int(target))
            .observed(Reading::Int(target));
        return Ok(Output::int(target).with_evidence(e));
    }
    m.starts += 1;
    m.started_ms = m.now;
    m.from = m.position;
    m.target = target;
    m.moving = true;
    Ok(Output::task(target))
}

fn poll(m: &mut Motor, t: &TaskInfo) -> TaskPoll {
    let p = m.at(t.now_ms);
    let ev = Evidence::new(Level::Measured)
        .commanded(Reading::Int(t.data))
        .observed(Reading::Int(p));
    if p == t.data {
        m.position = p;
        m.moving = false;
        return TaskPoll::Done(Ok(Output::int(p).with_evidence(ev)));
    }
    if m.stall_at == Some(p) {
        m.position = p;
        return TaskPoll::Done(Err(ToolError::new(
            "Motor stalled before reaching its target",
        )
        .with_evidence(ev)));
    }
    let total = (t.data - m.from).abs() as f64;
    TaskPoll::Working(Some(Progress {
        progress: (p - m.from).abs() as f64,
        total: Some(total),
    }))
}

fn stop(m: &mut Motor, t: &TaskInfo) -> Result<(), ToolError> {
    m.position = m.at(t.now_ms);
    m.moving = false;
    m.stops += 1;
    Ok(())
}

fn plain(_: &mut Motor, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::bool(true))
}

const HOOKS: TaskHooks<Motor> = TaskHooks {
    poll,
    stop: Some(stop),
    timeout_ms: 5_000,
};
const MOVE: Tool<Motor> = Tool::new("self.motor.move_to", "Move", move_to)
    .params(&[Param::integer("position", "Target").range(0, 10_000)])
    .long_running(TaskSupport::Optional, HOOKS);
const MOVE_REQUIRED: Tool<Motor> = Tool::new("self.motor.move_required", "Move", move_to)
    .params(&[Param::integer("position", "Target").range(0, 10_000)])
    .long_running(TaskSupport::Required, HOOKS);
const PLAIN: Tool<Motor> = Tool::new("self.plain", "Plain", plain);
static STATUS: Tool<Motor> = status_tool();

/// The id of the `n`-th task a server with the default (zero) entropy key creates.
fn tid(n: u64) -> String {
    use core::hash::Hasher as _;
    let mut h = siphasher::sip::SipHasher13::new_with_keys(0, 0);
    h.write_u64(n);
    format!("task-{:016x}", h.finish())
}

struct Rig<const T: usize> {
    server: Server<'static, Motor, Caps<8, T>>,
    motor: Motor,
    out: Vec<u8>,
    now: u64,
}

impl<const T: usize> Rig<T> {
    /// A plain call of a long-running tool answered at once (`hold_answer_ms` 0).
    fn new() -> Self {
        Self::with(
            Config::new("m", "1")
                .task_ttl(60_000, 120_000)
                .hold_answer(0),
        )
    }

    fn with(config: Config) -> Self {
        let mut server = Server::new(config);
        for t in [&MOVE, &MOVE_REQUIRED, &PLAIN, &STATUS] {
            server.register(t).unwrap();
        }
        Rig {
            server,
            motor: Motor::default(),
            out: vec![0; 4096],
            now: 0,
        }
    }

    fn send(&mut self, msg: &str) -> Option<J> {
        let n = self
            .server
            .handle(
                msg.as_bytes(),
                Principal::Model,
                &mut self.motor,
                &mut self.out,
            )
            .unwrap()
            .len;
        (n > 0).then(|| serde_json::from_slice(&self.out[..n]).unwrap())
    }

    fn ask(&mut self, id: i64, method: &str, params: J) -> J {
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string())
            .unwrap()
    }

    /// Advances the clock and collects every message the engine emits.
    fn poll_at(&mut self, now: u64) -> Vec<J> {
        self.now = now;
        self.motor.now = now;
        let mut msgs = Vec::new();
        loop {
            let n = self.server.poll(now, &mut self.motor, &mut self.out);
            if n == 0 {
                return msgs;
            }
            msgs.push(serde_json::from_slice(&self.out[..n]).unwrap());
        }
    }

    fn status(&mut self, task: &str) -> J {
        let r = self.ask(
            99,
            "tools/call",
            json!({"name":"self.tasks.get_status","arguments":{"task_id":task}}),
        );
        assert_eq!(r["result"].get("isError"), None, "{r}");
        r["result"]["structuredContent"].clone()
    }

    /// The status tool's first text (what a xiaozhi backend hands the model).
    fn status_text(&mut self, task: &str) -> String {
        let r = self.ask(
            99,
            "tools/call",
            json!({"name":"self.tasks.get_status","arguments":{"task_id":task}}),
        );
        assert_eq!(
            r["result"]["content"].as_array().map(Vec::len),
            Some(1),
            "{r}"
        );
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

/// A client that can follow no task (xiaozhi's backend hands the model only the call's
/// answer) gets the action's outcome, with its evidence, as the call's own answer when the action
/// ends within `hold_answer_ms`; past it, the answer says what was started (the task id, how to
/// follow it). A client that declared `tasks` is answered at once.
#[test]
fn a_plain_call_keeps_its_answer_until_the_action_ends_within_the_budget() {
    // A rig whose answers may be held 3 s, after the client's `initialize`.
    let initialized = |initialize: J| {
        let mut rig: Rig<2> = Rig::with(
            Config::new("m", "1")
                .task_ttl(60_000, 120_000)
                .hold_answer(3_000),
        );
        rig.ask(0, "initialize", initialize);
        rig.poll_at(1000);
        rig
    };
    let mut rig = initialized(json!({"protocolVersion":"2024-11-05","capabilities":{}}));
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"self.motor.move_to","arguments":{"position":500}}});
    assert_eq!(rig.send(&call.to_string()), None, "the answer is held back");
    assert!(rig.poll_at(1200).is_empty(), "still moving");
    let done = rig.poll_at(1500);
    assert_eq!(done.len(), 1, "{done:?}");
    let r = &done[0];
    assert_eq!(r["id"], 1, "the call's own answer: {r}");
    assert_eq!(r["result"].get("isError"), None);
    assert_eq!(r["result"]["structuredContent"], json!({"value":500}));
    assert_eq!(
        r["result"]["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level":"measured","commanded":500,"observed":500})
    );
    // A retransmission meanwhile is not run again: it is answered from the task table.
    let again = rig.send(&call.to_string()).unwrap();
    assert_eq!(
        again["result"]["_meta"]["io.github.mcu-mcp/evidence"]["level"], "measured",
        "{again}"
    );
    assert_eq!(rig.motor.starts, 1);
    // Past the budget: what was started, then the status tool.
    let far = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"self.motor.move_to","arguments":{"position":9000}}});
    assert_eq!(rig.send(&far.to_string()), None);
    assert!(rig.poll_at(3000).is_empty());
    let started = rig.poll_at(4500);
    assert_eq!(started.len(), 1, "{started:?}");
    assert_eq!(started[0]["id"], 2);
    assert_eq!(
        started[0]["result"]["structuredContent"]["status"],
        "working"
    );
    assert_eq!(
        started[0]["result"]["_meta"]["io.github.mcu-mcp/evidence"]["level"],
        "scheduled"
    );
    let task = started[0]["result"]["structuredContent"]["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(rig.poll_at(5000).is_empty(), "answered once");
    assert_eq!(rig.status(&task)["status"], "working");

    // A client that follows tasks is answered at once.
    let mut rig = initialized(json!({"protocolVersion":"2025-11-25","capabilities":{"tasks":{}}}));
    let r = rig.send(&call.to_string()).unwrap();
    assert_eq!(r["result"]["structuredContent"]["status"], "working");
}

#[test]
fn task_less_call_answers_at_once_and_the_status_tool_reports_the_end() {
    let mut rig: Rig<2> = Rig::new();
    rig.poll_at(1000);
    let r = rig.ask(
        1,
        "tools/call",
        json!({"name":"self.motor.move_to","arguments":{"position":500}}),
    );
    assert_eq!(
        r["result"],
        json!({
            "content": [
                {"type":"text","text": format!("self.motor.move_to started as task {} — scheduled, not done yet; for the outcome, call self.tasks.get_status with this task_id", tid(1))},
            ],
            "structuredContent": {"task_id": tid(1),"status":"working","poll_with":"self.tasks.get_status"},
            "_meta": {"io.github.mcu-mcp/evidence": {"level":"scheduled"}}
        })
    );
    assert!(
        rig.poll_at(1200).is_empty(),
        "no token, not augmented: nothing is pushed"
    );
    let s = rig.status(&tid(1));
    assert_eq!(s["status"], "working");
    assert_eq!(s["progress"], 200);
    assert_eq!(s["total"], 500);
    // What a client that reads only the first text hears: status, progress, evidence so far.
    assert_eq!(
        rig.status_text(&tid(1)),
        "self.motor.move_to working (200 of 500) — scheduled, not done yet"
    );
    rig.poll_at(1500);
    assert_eq!(
        rig.status_text(&tid(1)),
        "self.motor.move_to completed: 500 — measured: 500"
    );
    let s = rig.status(&tid(1));
    assert_eq!(
        s,
        json!({
            "task_id": tid(1),"tool":"self.motor.move_to","status":"completed",
            "started":{"level":"scheduled"},
            "result":500,
            "evidence":{"level":"measured","commanded":500,"observed":500}
        })
    );
    assert_eq!(rig.motor.position, 500);
    assert_eq!((rig.motor.starts, rig.motor.stops), (1, 0));
    // Already there: answered at once, no task.
    let r = rig.ask(
        2,
        "tools/call",
        json!({"name":"self.motor.move_to","arguments":{"position":500}}),
    );
    assert_eq!(r["result"]["structuredContent"], json!({"value":500}));
    assert_eq!(
        r["result"]["_meta"]["io.github.mcu-mcp/evidence"]["level"],
        "measured"
    );
    let r = rig.ask(
        3,
        "tools/call",
        json!({"name":"self.tasks.get_status","arguments":{"task_id": tid(9)}}),
    );
    assert_eq!(r["result"]["isError"], true);
}

/// A 2025-11-25 session at 10 s; then `self.motor.move_to` 300 as a task (request id 1) with
/// `token` for its progress. Returns the answer.
fn move_with_progress(rig: &mut Rig<2>, token: &str) -> J {
    rig.ask(
        0,
        "initialize",
        json!({"protocolVersion":"2025-11-25","capabilities":{}}),
    );
    rig.poll_at(10_000);
    rig.ask(
        1,
        "tools/call",
        json!({"name":"self.motor.move_to","arguments":{"position":300},"task":{"ttl":30000},"_meta":{"progressToken":token}}),
    )
}

#[test]
fn augmented_call_with_progress_and_a_parked_result() {
    let mut rig: Rig<2> = Rig::new();
    let r = move_with_progress(&mut rig, "p-1");
    assert_eq!(
        r["result"],
        json!({"task":{
            "taskId": tid(1),"status":"working","statusMessage":"The action is in progress",
            "createdAt":"1970-01-01T00:00:10.000Z","lastUpdatedAt":"1970-01-01T00:00:10.000Z",
            "ttl":30000,"pollInterval":500
        }})
    );
    // tasks/result before the end is parked: no answer yet.
    assert!(
        rig.send(
            &json!({"jsonrpc":"2.0","id":"wait","method":"tasks/result","params":{"taskId": tid(1)}}).to_string()
        )
        .is_none()
    );
    let msgs = rig.poll_at(10_100);
    assert_eq!(
        msgs,
        [
            json!({"jsonrpc":"2.0","method":"notifications/progress","params":{
                "progressToken":"p-1","progress":100,"total":300,
                "_meta":{"io.modelcontextprotocol/related-task":{"taskId": tid(1)}}
            }})
        ]
    );
    assert!(
        rig.poll_at(10_100).is_empty(),
        "hooks run once per time step; nothing new is owed"
    );
    let get = rig.ask(5, "tasks/get", json!({"taskId": tid(1)}));
    assert_eq!(
        get["result"]["statusMessage"],
        "The action is in progress (100 of 300)"
    );
    assert_eq!(get["result"]["lastUpdatedAt"], "1970-01-01T00:00:10.100Z");
    let msgs = rig.poll_at(10_300);
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert_eq!(
        msgs[0],
        json!({"jsonrpc":"2.0","id":"wait","result":{
            "content":[{"type":"text","text":"300 — measured: 300"}],
            "structuredContent":{"value":300},
            "_meta":{
                "io.github.mcu-mcp/evidence":{"level":"measured","commanded":300,"observed":300},
                "io.modelcontextprotocol/related-task":{"taskId": tid(1)}
            }
        }})
    );
    assert_eq!(msgs[1]["method"], "notifications/tasks/status");
    assert_eq!(msgs[1]["params"]["status"], "completed");
    assert_eq!(msgs[1]["params"]["statusMessage"], "300 — measured: 300");
    // A terminal task answers tasks/result at once, and lists.
    let again = rig.ask(6, "tasks/result", json!({"taskId": tid(1)}));
    assert_eq!(again["result"]["structuredContent"], json!({"value":300}));
    let list = rig.ask(7, "tasks/list", json!({}));
    assert_eq!(list["result"]["tasks"].as_array().unwrap().len(), 1);
    // Cancelling a finished task is invalid params.
    let c = rig.ask(8, "tasks/cancel", json!({"taskId": tid(1)}));
    assert_eq!(c["error"]["code"], -32602);
    // Wall clock.
    rig.server.set_unix_time(1_764_677_400_000);
    let get = rig.ask(9, "tasks/get", json!({"taskId": tid(1)}));
    assert_eq!(get["result"]["createdAt"], "2025-12-02T12:09:59.700Z");
}

#[test]
fn cancel_issues_the_safe_stop_in_both_forms() {
    let mut rig: Rig<2> = Rig::new();
    rig.poll_at(0);
    rig.ask(
        1,
        "tools/call",
        json!({"name":"self.motor.move_to","arguments":{"position":1000},"task":{}}),
    );
    assert!(
        rig.send(
            &json!({"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId": tid(1)}})
                .to_string()
        )
        .is_none()
    );
    rig.poll_at(250);
    let c = rig.ask(3, "tasks/cancel", json!({"taskId": tid(1)}));
    assert_eq!(c["result"]["status"], "cancelled");
    assert_eq!(
        c["result"]["statusMessage"],
        "Cancelled by request; safe-stop issued"
    );
    assert_eq!(
        (rig.motor.stops, rig.motor.position, rig.motor.moving),
        (1, 250, false)
    );
    // The parked tasks/result is answered with the cancellation.
    let msgs = rig.poll_at(300);
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(msgs[0]["id"], 2);
    assert_eq!(msgs[0]["result"]["isError"], true);
    assert_eq!(
        msgs[0]["result"]["content"][0]["text"],
        "Cancelled by request; safe-stop issued"
    );
    assert_eq!(rig.motor.stops, 1, "stopped once");

    // Task-less: cancel by tasks/cancel as well (the id came back in the answer).
    let r = rig.ask(
        4,
        "tools/call",
        json!({"name":"self.motor.move_to","arguments":{"position":0}}),
    );
    let task = r["result"]["structuredContent"]["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    rig.poll_at(400);
    rig.ask(5, "tasks/cancel", json!({"taskId":task}));
    assert_eq!(rig.motor.stops, 2);
    assert_eq!(rig.status(&task)["stop"], "issued");
}

#[test]
fn a_stall_fails_the_task_and_stops_the_actuator() {
    let mut rig: Rig<2> = Rig::new();
    rig.motor.stall_at = Some(120);
    rig.poll_at(0);
    rig.ask(
        1,
        "tools/call",
        json!({"name":"self.motor.move_to","arguments":{"position":400},"task":{}}),
    );
    rig.poll_at(100);
    let msgs = rig.poll_at(200);
    assert_eq!(msgs[0]["params"]["status"], "failed");
    assert_eq!(
        msgs[0]["params"]["statusMessage"],
        "Motor stalled before reaching its target — measured: 120 (commanded 400); safe-stop issued"
    );
    assert_eq!(rig.motor.stops, 1);
    let r = rig.ask(2, "tasks/result", json!({"taskId": tid(1)}));
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(
        r["result"]["content"][0]["text"],
        "Motor stalled before reaching its target — measured: 120 (commanded 400); safe-stop issued"
    );
    assert_eq!(
        r["result"]["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level":"measured","commanded":400,"observed":120})
    );
}

#[test]
fn a_timeout_fails_the_task_and_stops_the_actuator() {
    let mut rig: Rig<2> = Rig::new();
    rig.poll_at(0);
    rig.ask(
        1,
        "tools/call",
        json!({"name":"self.motor.move_to","arguments":{"position":9000}}),
    );
    rig.poll_at(4_999);
    assert_eq!(rig.motor.stops, 0);
    rig.poll_at(5_000);
    assert_eq!(rig.motor.stops, 1);
    let s = rig.status(&tid(1));
    assert_eq!(s["status"], "failed");
    assert_eq!(
        s["error"],
        "Timed out before the action finished; safe-stop issued"
    );
    assert_eq!(s["stop"], "issued");
}

#[test]
fn a_full_table_refuses_before_starting_and_never_evicts_running_tasks() {
    let mut rig: Rig<1> = Rig::new();
    rig.poll_at(0);
    rig.ask(
        1,
        "tools/call",
        json!({"name":"self.motor.move_to","arguments":{"position":900}}),
    );
    let r = rig.ask(
        2,
        "tools/call",
        json!({"name":"self.motor.move_to","arguments":{"position":10}}),
    );
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(
        r["result"]["content"][0]["text"],
        "Device busy: every task slot holds a running action; nothing was started — not applied \
         (commanded 10)"
    );
    let r = rig.ask(
        3,
        "tools/call",
        json!({"name":"self.motor.move_to","arguments":{"position":10},"task":{}}),
    );
    assert_eq!(r["error"]["code"], -32603);
    assert_eq!(rig.motor.starts, 1, "the refused calls started nothing");
    assert_eq!(rig.motor.target, 900);
    assert_eq!(rig.status(&tid(1))["status"], "working");
    // Once finished, its slot is reused (the finished task is evicted, the new one runs).
    rig.poll_at(900);
    let r = rig.ask(
        4,
        "tools/call",
        json!({"name":"self.motor.move_to","arguments":{"position":10}}),
    );
    assert_eq!(r["result"]["structuredContent"]["task_id"], tid(2).as_str());
    let r = rig.ask(5, "tasks/get", json!({"taskId": tid(1)}));
    assert_eq!(r["error"]["code"], -32602);
}

#[test]
fn expiry_unknown_ids_and_task_support_rules() {
    let mut rig: Rig<2> = Rig::new();
    rig.poll_at(0);
    rig.ask(
        1,
        "tools/call",
        json!({"name":"self.motor.move_to","arguments":{"position":10},"task":{"ttl":999999999}}),
    );
    let g = rig.ask(2, "tasks/get", json!({"taskId": tid(1)}));
    assert_eq!(g["result"]["ttl"], 120_000, "ttl is capped");
    rig.poll_at(10);
    rig.poll_at(119_999);
    assert_eq!(
        rig.ask(3, "tasks/get", json!({"taskId": tid(1)}))["result"]["status"],
        "completed"
    );
    rig.poll_at(120_000);
    for id in [
        json!(tid(1)),
        json!(tid(7)),
        json!("x"),
        json!(1),
        json!(null),
    ] {
        let r = rig.ask(4, "tasks/get", json!({"taskId":id}));
        assert_eq!(r["error"]["code"], -32602, "{id}");
    }
    let r = rig.ask(
        5,
        "tools/call",
        json!({"name":"self.plain","arguments":{},"task":{}}),
    );
    assert_eq!(r["error"]["code"], -32601);
    let r = rig.ask(
        6,
        "tools/call",
        json!({"name":"self.motor.move_required","arguments":{"position":5}}),
    );
    assert_eq!(r["error"]["code"], -32601);
    let r = rig.ask(
        7,
        "tools/call",
        json!({"name":"self.motor.move_to","arguments":{"position":5},"task":5}),
    );
    assert_eq!(r["error"]["code"], -32602);
    let r = rig.ask(
        8,
        "tools/call",
        json!({"name":"self.motor.move_to","arguments":{"position":5},"task":{"ttl":-1}}),
    );
    assert_eq!(r["error"]["code"], -32602);
    // Validation comes before any task is made.
    let r = rig.ask(
        9,
        "tools/call",
        json!({"name":"self.motor.move_to","arguments":{"position":-5},"task":{}}),
    );
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(rig.motor.starts, 1);
}

#[test]
fn a_retransmitted_start_does_not_start_twice() {
    let mut rig: Rig<2> = Rig::new();
    let msg = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"self.motor.move_to","arguments":{"position":50}}}"#;
    let a = rig.send(msg).unwrap();
    let b = rig.send(msg).unwrap();
    assert_eq!(a, b);
    assert_eq!(rig.motor.starts, 1);
}

#[test]
fn tasks_capability_is_advertised_from_2025_11_25() {
    let mut rig: Rig<2> = Rig::new();
    let r = rig.ask(1, "initialize", json!({"protocolVersion":"2025-11-25"}));
    assert_eq!(
        r["result"]["capabilities"]["tasks"],
        json!({"list":{},"cancel":{},"requests":{"tools":{"call":{}}}})
    );
    let r = rig.ask(1, "initialize", json!({"protocolVersion":"2025-06-18"}));
    assert!(r["result"]["capabilities"].get("tasks").is_none());
    let list = rig.ask(2, "tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    assert_eq!(tools[0]["execution"], json!({"taskSupport":"optional"}));
    assert_eq!(tools[1]["execution"], json!({"taskSupport":"required"}));
    assert!(tools[2].get("execution").is_none());
    // Without a task table, long-running tools cannot be registered and tasks/* do not exist.
    let mut none: Server<'static, Motor, Caps<4, 0>> = Server::new(Config::new("m", "1"));
    assert_eq!(
        none.register(&MOVE).unwrap_err().kind,
        crate::registry::RegisterErrorKind::NoTaskTable
    );
    let mut out = [0u8; 512];
    let n = none
        .handle(
            br#"{"jsonrpc":"2.0","id":1,"method":"tasks/list"}"#,
            Principal::Model,
            &mut Motor::default(),
            &mut out,
        )
        .unwrap()
        .len;
    assert!(core::str::from_utf8(&out[..n]).unwrap().contains("-32601"));
}

#[test]
fn a_long_running_tool_must_support_tasks() {
    const FORBIDDEN: Tool<Motor> =
        Tool::new("m", "m", move_to).long_running(TaskSupport::Forbidden, HOOKS);
    let mut s: Server<'static, Motor, Caps<2>> = Server::new(Config::new("m", "1"));
    assert_eq!(
        s.register(&FORBIDDEN).unwrap_err().kind,
        crate::registry::RegisterErrorKind::BadTaskSupport
    );
}

#[test]
fn a_replayed_task_start_is_the_original_response() {
    let mut rig: Rig<2> = Rig::new();
    let msg = r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"self.motor.move_to","arguments":{"position":5},"task":{}}}"#;
    let first = rig.send(msg).unwrap();
    // The task ends; poll writes a status notification into the same buffer.
    let notes = rig.poll_at(100);
    assert_eq!(notes.len(), 1, "{notes:?}");
    let again = rig.send(msg).unwrap();
    assert_eq!(first, again);
}

#[test]
fn has_running_tasks_is_true_exactly_while_a_task_works() {
    let mut rig: Rig<2> = Rig::new();
    rig.poll_at(1000);
    assert!(!rig.server.has_running_tasks());
    let call = json!({"name":"self.motor.move_to","arguments":{"position":300}});
    rig.ask(1, "tools/call", call);
    assert!(rig.server.has_running_tasks());
    rig.poll_at(1100);
    assert!(rig.server.has_running_tasks());
    rig.poll_at(1300);
    assert!(
        !rig.server.has_running_tasks(),
        "completed: no longer running"
    );
}

/// Evidence with every field set.
const FULL: Evidence = Evidence::new(Level::Measured)
    .commanded(Reading::Int(500))
    .observed(Reading::Int(498))
    .tolerance(2)
    .unit("steps");

/// `full` answers by its `mode`: 0 `true` with [`FULL`], 1 a failure with it, 2 a task started
/// with it, which ends with it.
fn full(_: &mut Motor, a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    match a.int("mode")? {
        0 => Ok(Output::bool(true).with_evidence(FULL)),
        1 => Err(ToolError::new("Mismatch").with_evidence(FULL)),
        _ => Ok(Output::task(0).with_evidence(FULL)),
    }
}

fn full_done(_: &mut Motor, _: &TaskInfo) -> TaskPoll {
    TaskPoll::Done(Ok(Output::int(498).with_evidence(FULL)))
}

const FULL_TOOL: Tool<Motor> = Tool::new("full", "Every evidence field", full)
    .params(&[Param::integer("mode", "What to answer").range(0, 2)])
    .long_running(
        TaskSupport::Optional,
        TaskHooks {
            poll: full_done,
            stop: None,
            timeout_ms: 5_000,
        },
    );

/// The JSON an evidence must be rendered as, from its fields, and the words its sentence must
/// contain, one per field. Every field is taken ([`Evidence::fields`]): a field added to
/// `Evidence` does not compile here until this test expects it, and then every path below must
/// render it.
fn expected(e: &Evidence) -> (J, Vec<String>) {
    let (level, commanded, observed, tolerance, unit) = e.fields();
    let reading = |r: Reading| match r {
        Reading::Bool(b) => json!(b),
        Reading::Int(i) => json!(i),
        #[cfg(feature = "float")]
        Reading::Number(n) => json!(n),
        Reading::Str(s) => json!(s),
    };
    let unit_words = unit.map(|u| format!(" {u}")).unwrap_or_default();
    let mut j = json!({"level": level.as_str()});
    let mut words = vec![
        match level {
            Level::Unknown => "state unknown",
            Level::NotApplied => "not applied",
            Level::Scheduled => "scheduled",
            Level::Applied => "applied",
            Level::ReadBack => "read back",
            Level::Measured => "measured",
        }
        .to_string(),
    ];
    if let Some(c) = commanded {
        j["commanded"] = reading(c);
        words.push(format!("commanded {}{unit_words}", reading(c)));
    }
    if let Some(o) = observed {
        j["observed"] = reading(o);
        words.push(format!(": {}{unit_words}", reading(o)));
    }
    if tolerance > 0 {
        j["tolerance"] = json!(tolerance);
        words.push(format!("±{tolerance}{unit_words}"));
    }
    if let Some(u) = unit {
        j["unit"] = json!(u);
    }
    (j, words)
}

/// A server with the `full` tool and the status tool.
struct FullRig {
    s: Server<'static, Motor, Caps<4, 2>>,
    motor: Motor,
    out: Vec<u8>,
}

impl FullRig {
    fn new() -> Self {
        // The task start of a plain call is one of the paths: answered at once.
        let mut s = Server::new(Config::new("m", "1").hold_answer(0));
        s.register(&FULL_TOOL).unwrap();
        s.register(&STATUS).unwrap();
        FullRig {
            s,
            motor: Motor::default(),
            out: vec![0; 4096],
        }
    }

    fn ask(&mut self, body: J) -> J {
        let msg = body.to_string();
        let (motor, out) = (&mut self.motor, &mut self.out);
        let n = self
            .s
            .handle(msg.as_bytes(), Principal::Model, motor, out)
            .unwrap()
            .len;
        serde_json::from_slice(&self.out[..n]).unwrap()
    }

    /// The first message `poll` emits, if any.
    fn poll(&mut self, now: u64) -> Option<J> {
        let n = self.s.poll(now, &mut self.motor, &mut self.out);
        (n > 0).then(|| serde_json::from_slice(&self.out[..n]).unwrap())
    }
}

fn call_full(id: i64, mode: i64) -> J {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"full","arguments":{"mode":mode}}})
}

/// Evidence is rendered by one writer for JSON and one for words; every path that emits it —
/// a call's answer (success and failure, with xiaozhi's `error`), a task's start, the status
/// tool's report while working and once done, `tasks/result` and its status notification, the
/// 2026-07-28 `tasks/get` — must carry every field of it.
#[test]
fn every_path_renders_every_evidence_field() {
    let (json_form, words) = expected(&FULL);
    // The evidence as data where the SDKs keep it, the result's `_meta`, and only there (the
    // Python SDK drops a member its model does not know).
    let as_data = |result: &J, what: &str| {
        assert_eq!(
            result["_meta"]["io.github.mcu-mcp/evidence"], json_form,
            "{what}: {result}"
        );
        assert!(result.get("evidence").is_none(), "{what}: {result}");
    };
    let says_all = |text: &J, what: &str| {
        let text = text.as_str().unwrap_or_else(|| panic!("{what}: no text"));
        for w in &words {
            assert!(text.contains(w.as_str()), "{what}: {w:?} not in {text:?}");
        }
    };

    // A call's answer (no initialize: xiaozhi's 2024-11-05 rules, with the `error` member).
    let mut rig = FullRig::new();
    let r = rig.ask(call_full(1, 0));
    as_data(&r["result"], "answer");
    says_all(&r["result"]["content"][0]["text"], "answer's first text");
    let r = rig.ask(call_full(2, 1));
    assert_eq!(r["result"]["isError"], true, "{r}");
    as_data(&r["result"], "failure");
    says_all(&r["result"]["content"][0]["text"], "failure's first text");
    says_all(&r["result"]["error"], "failure's error member");
    // A task's start, and the status tool's report on it.
    let r = rig.ask(call_full(3, 2));
    as_data(&r["result"], "start");
    says_all(&r["result"]["content"][0]["text"], "start's first text");
    let task = r["result"]["structuredContent"]["task_id"].clone();
    let status = json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"self.tasks.get_status","arguments":{"task_id":task}}});
    let r = rig.ask(status.clone());
    assert_eq!(
        r["result"]["structuredContent"]["started"], json_form,
        "{r}"
    );
    says_all(&r["result"]["content"][0]["text"], "status (working)");
    // Its end, told to the client whose call was answered already.
    let note = rig.poll(1).expect("the task's end");
    assert_eq!(note["method"], "notifications/message", "{note}");
    says_all(&note["params"]["data"]["text"], "the plain task's end");
    let r = rig.ask(status);
    assert_eq!(
        r["result"]["structuredContent"]["status"], "completed",
        "{r}"
    );
    assert_eq!(
        r["result"]["structuredContent"]["evidence"], json_form,
        "{r}"
    );
    says_all(&r["result"]["content"][0]["text"], "status (completed)");

    // 2025-11-25: the status notification and tasks/result.
    let mut rig = FullRig::new();
    rig.ask(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}));
    let mut augmented = call_full(2, 2);
    augmented["params"]["task"] = json!({});
    let r = rig.ask(augmented);
    let task = r["result"]["task"]["taskId"].clone();
    let note = rig.poll(1).expect("a status notification");
    says_all(&note["params"]["statusMessage"], "status notification");
    let r =
        rig.ask(json!({"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":task}}));
    as_data(&r["result"], "tasks/result");
    assert_eq!(
        r["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], task,
        "one _meta, both entries: {r}"
    );
    says_all(&r["result"]["content"][0]["text"], "tasks/result");
    // tasks/get of the finished task: the evidence as data beside its status message.
    let g = rig.ask(json!({"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":task}}));
    as_data(&g["result"], "tasks/get");

    // 2026-07-28: tasks/get carries the result.
    #[cfg(feature = "modern")]
    {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        });
        let mut rig = FullRig::new();
        let mut started = call_full(1, 2);
        started["params"]["_meta"] = meta.clone();
        let r = rig.ask(started);
        let task = r["result"]["taskId"].clone();
        rig.poll(1);
        let g = rig.ask(json!({"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":task,"_meta":meta}}));
        as_data(&g["result"]["result"], "2026 tasks/get's result");
        as_data(&g["result"], "2026 tasks/get");
        assert_eq!(
            g["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "m",
            "one _meta, both entries: {g}"
        );
        // A 2026-07-28 task start that ended at once (its flat task result): one `_meta` with the
        // evidence and the server identity, and `resultType` outside it.
        let mut plain = call_full(3, 0);
        plain["params"]["_meta"] = meta.clone();
        let r = rig.ask(plain);
        as_data(&r["result"], "2026 task start");
        assert_eq!(r["result"]["resultType"], "task", "{r}");
        assert!(
            r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"].is_object(),
            "{r}"
        );
        says_all(
            &g["result"]["result"]["content"][0]["text"],
            "2026 tasks/get",
        );
        says_all(&g["result"]["statusMessage"], "2026 statusMessage");
    }
}

#[test]
fn a_progress_token_up_to_its_limit_is_echoed_and_a_longer_one_only_goes_unreported() {
    use crate::server::MAX_PROGRESS_TOKEN_LEN;
    // The raw token includes its quotes: 62 characters make 64 bytes, the most kept.
    for (chars, echoed) in [
        (MAX_PROGRESS_TOKEN_LEN - 2, true),
        (MAX_PROGRESS_TOKEN_LEN - 1, false),
    ] {
        let token = "t".repeat(chars);
        let mut rig: Rig<2> = Rig::new();
        let r = move_with_progress(&mut rig, &token);
        assert_eq!(r["result"]["task"]["taskId"], tid(1), "{r}");
        let msgs = rig.poll_at(10_100);
        if echoed {
            assert_eq!(msgs.len(), 1, "{msgs:?}");
            assert_eq!(msgs[0]["params"]["progressToken"], token);
        } else {
            assert!(msgs.is_empty(), "{msgs:?}");
        }
        // Either way the task runs to its end.
        let get = rig.ask(2, "tasks/get", json!({"taskId": tid(1)}));
        assert_eq!(get["result"]["status"], "working", "{get}");
        rig.poll_at(10_300);
        let get = rig.ask(3, "tasks/get", json!({"taskId": tid(1)}));
        assert_eq!(get["result"]["status"], "completed", "{get}");
    }
}

/// A plain call's client whose answer was given before the action ended (past
/// the hold budget, or at once) hears how it ended: a `notifications/message` (logger `task`)
/// whose `data.text` is the status tool's sentence, and `poll_with` says where it is
/// ([`Polled::heard`]). A failure without evidence of its own (a timeout) states what the start
/// did; a client still waiting for its held answer hears the end there, and nothing else.
#[test]
fn the_end_of_a_task_whose_call_was_answered_is_heard() {
    let mut rig: Rig<2> = Rig::with(
        Config::new("m", "1")
            .task_ttl(60_000, 120_000)
            .hold_answer(1_000),
    );
    rig.poll_at(0);
    let call = |id: i64, position: i64| {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"self.motor.move_to","arguments":{"position":position}}}).to_string()
    };
    assert_eq!(rig.send(&call(1, 1_500)), None, "held");
    let started = rig.poll_at(1_000);
    assert_eq!(started[0]["id"], 1, "past the budget: what started");
    rig.now = 1_500;
    rig.motor.now = 1_500;
    let p = rig.server.poll_with(1_500, &mut rig.motor, &mut rig.out);
    let note: J = serde_json::from_slice(&rig.out[..p.len]).unwrap();
    let heard = p.heard.expect("the end is heard");
    assert_eq!(heard.outcome, Later::TaskEnded(TaskStatus::Completed));
    assert_eq!(heard.tool, "self.motor.move_to");
    let said = core::str::from_utf8(heard.sentence(&rig.out[..p.len]).raw()).unwrap();
    assert_eq!(said, "self.motor.move_to completed: 1500 — measured: 1500");
    assert_eq!(note["params"]["logger"], "task", "{note}");
    assert_eq!(note["params"]["data"]["text"], said);
    assert_eq!(note["params"]["data"]["status"], "completed");
    assert_eq!(note["params"]["data"]["task_id"], tid(1));
    assert!(rig.poll_at(1_600).is_empty(), "said once");

    // A move that times out (5 s) after its answer: the failure, with the start's evidence.
    assert_eq!(rig.send(&call(2, 9_000)), None);
    assert_eq!(rig.poll_at(2_600).len(), 1, "what started");
    let end = rig.poll_at(6_600);
    assert_eq!(end.len(), 1, "{end:?}");
    let text = end[0]["params"]["data"]["text"].as_str().unwrap();
    assert_eq!(
        text,
        "self.motor.move_to failed: Timed out before the action finished — scheduled, not done \
         yet; safe-stop issued"
    );

    // Within the budget the call's own answer has the outcome; nothing more is sent.
    // (The timed-out move stopped at 6500.)
    assert_eq!(rig.send(&call(3, 7_000)), None);
    let done = rig.poll_at(7_100);
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(done[0]["id"], 3);
    assert_eq!(
        done[0]["result"]["_meta"]["io.github.mcu-mcp/evidence"]["level"],
        "measured"
    );
    assert!(rig.poll_at(9_000).is_empty());
}
