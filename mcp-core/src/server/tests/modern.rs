//! The 2026-07-28 (stateless) path next to the legacy one: per-request `_meta`, discover, version
//! and capability errors with their HTTP status class, caching hints, the tasks extension form,
//! static resources and prompts, and hand-written input schemas.
//!
//! The 2026-07-28 tests need feature `modern`, the resource and prompt ones `resources` as well;
//! the legacy ones run in every build.

use serde_json::{Value as J, json};

#[cfg(all(feature = "modern", feature = "resources"))]
use crate::registry::{Prompt, Resource};
use crate::schema::Param;
use crate::server::*;
use crate::{
    Args, Evidence, Level, Output, Reply, TaskHooks, TaskInfo, TaskPoll, TaskSupport, ToolError,
    ToolResult,
};

/// A job that finishes after `ticks` polls.
#[derive(Default)]
struct Jobs {
    polls: u32,
    stops: u32,
    seen_raw: Option<String>,
    logs_sent: bool,
    /// What the last `roomy` call's reply had room for.
    #[cfg(feature = "modern")]
    room: usize,
}

#[cfg(feature = "strings")]
fn greet(_: &mut Jobs, a: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    let name = a.str("name")?;
    r.log(LogLevel::Info, None, format_args!("greeting {name}"));
    r.text(format_args!("Hello, {name}!"))
}

/// Records its room and answers no blocks: its answer is the envelope alone.
#[cfg(feature = "modern")]
fn roomy(j: &mut Jobs, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    j.room = r.content_room();
    r.content(|_| {})
}

fn start(j: &mut Jobs, a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    j.polls = 0;
    Ok(Output::task(a.int("ticks")?))
}

fn poll_ok(j: &mut Jobs, t: &TaskInfo) -> TaskPoll {
    j.polls += 1;
    if i64::from(j.polls) >= t.data {
        TaskPoll::Done(Ok(
            Output::int(t.data).with_evidence(Evidence::new(Level::Measured))
        ))
    } else {
        TaskPoll::Working(None)
    }
}

fn poll_tool_error(_: &mut Jobs, _: &TaskInfo) -> TaskPoll {
    TaskPoll::Done(Err(ToolError::new("the job failed")))
}

fn poll_protocol_error(_: &mut Jobs, _: &TaskInfo) -> TaskPoll {
    TaskPoll::Error("the device lost power")
}

fn stop(j: &mut Jobs, _: &TaskInfo) -> Result<(), ToolError> {
    j.stops += 1;
    Ok(())
}

fn raw(j: &mut Jobs, a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    j.seen_raw = a.raw().map(|v| v.as_text().to_string());
    Ok(Output::bool(true))
}

const TICKS: &[Param] = &[Param::integer("ticks", "Polls until done").range(1, 100)];
#[cfg(feature = "strings")]
const GREET: Tool<Jobs> =
    Tool::new("greet", "Greets", greet).params(&[Param::string("name", "Who").length(1, 32)]);
const JOB: Tool<Jobs> = Tool::new("job", "A job", start).params(TICKS).long_running(
    TaskSupport::Optional,
    TaskHooks {
        poll: poll_ok,
        stop: Some(stop),
        timeout_ms: 60_000,
    },
);
const FAILING: Tool<Jobs> = Tool::new("failing_job", "Fails", start)
    .params(TICKS)
    .long_running(
        TaskSupport::Required,
        TaskHooks {
            poll: poll_tool_error,
            stop: None,
            timeout_ms: 60_000,
        },
    );
const BROKEN: Tool<Jobs> = Tool::new("protocol_error_job", "Errs", start)
    .params(TICKS)
    .long_running(
        TaskSupport::Optional,
        TaskHooks {
            poll: poll_protocol_error,
            stop: None,
            timeout_ms: 60_000,
        },
    );
const SAMPLER: Tool<Jobs> =
    Tool::new("sampler", "Needs sampling", raw).requires_client_capability("sampling");
const RAW: Tool<Jobs> = Tool::new("raw", "Hand-written schema", raw).input_schema(
    r#"{"type":"object","$defs":{"a":{"type":"string"}},"allOf":[{"required":["x"]}]}"#,
);

#[cfg(all(feature = "modern", feature = "resources"))]
static RESOURCES: [Resource; 1] = [Resource::new(
    "device://manual",
    "manual",
    "text/plain",
    "Press the button.",
)
.description("The manual")];
#[cfg(all(feature = "modern", feature = "resources"))]
static PROMPTS: [Prompt; 1] = [Prompt::new(
    "intro",
    "Introduces the device",
    "You are talking to a lamp.",
)];

type S = Server<'static, Jobs, Caps<8>>;

fn server(config: Config) -> S {
    let mut s = S::new(config);
    #[cfg(feature = "strings")]
    s.register(&GREET).unwrap();
    for t in [&JOB, &FAILING, &BROKEN, &RAW, &SAMPLER] {
        s.register(t).unwrap();
    }
    s
}

#[cfg(feature = "modern")]
fn meta(extra: J) -> J {
    let mut m = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    for (k, v) in extra.as_object().unwrap() {
        m[k] = v.clone();
    }
    m
}

#[cfg(feature = "modern")]
const TASKS_CAPS: &str = "io.modelcontextprotocol/clientCapabilities";

#[cfg(feature = "modern")]
fn tasks_meta() -> J {
    meta(json!({TASKS_CAPS: {"extensions": {"io.modelcontextprotocol/tasks": {}}}}))
}

struct Rig {
    s: S,
    j: Jobs,
    out: Vec<u8>,
    now: u64,
}

impl Rig {
    fn new(config: Config) -> Rig {
        Rig {
            s: server(config),
            j: Jobs::default(),
            out: vec![0; 4096],
            now: 0,
        }
    }

    fn raw(&mut self, body: &J, stateless: bool) -> (J, Status, Vec<J>) {
        let bytes = body.to_string();
        let mut notes = Vec::new();
        let h = self
            .s
            .handle_with(
                Input::new(bytes.as_bytes(), Principal::Model).stateless(stateless),
                &mut self.j,
                &mut self.out,
                &mut |m: &[u8]| notes.push(serde_json::from_slice(m).unwrap()),
            )
            .unwrap();
        let v = serde_json::from_slice(&self.out[..h.len]).unwrap_or(J::Null);
        (v, h.status, notes)
    }

    #[cfg(feature = "modern")]
    fn ask(&mut self, id: i64, method: &str, mut params: J, m: J) -> (J, Status) {
        params["_meta"] = m;
        let (v, status, _) = self.raw(
            &json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}),
            false,
        );
        (v, status)
    }

    fn tick(&mut self) {
        self.now += 10;
        while self.s.poll(self.now, &mut self.j, &mut self.out) > 0 {}
    }
}

#[cfg(feature = "modern")]
#[test]
fn discover_and_result_envelope() {
    let config = Config::new("dev", "1.2");
    #[cfg(feature = "resources")]
    let config = config.resources(&RESOURCES).prompts(&PROMPTS);
    let mut rig = Rig::new(config);
    let (v, status) = rig.ask(1, "server/discover", json!({}), meta(json!({})));
    assert_eq!(status, Status::Ok);
    let expected = json!({
        "supportedVersions": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
        "capabilities": {"tools": {}, "logging": {}, "resources": {}, "prompts": {},
                         "extensions": {"io.modelcontextprotocol/tasks": {}}},
        "ttlMs": 300000, "cacheScope": "public",
        "resultType": "complete",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "dev", "version": "1.2"}}
    });
    // Without feature `resources` there are none to publish, and no capability says so.
    #[cfg(not(feature = "resources"))]
    let expected = {
        let mut expected = expected;
        let capabilities = expected["capabilities"].as_object_mut().unwrap();
        capabilities.remove("resources");
        capabilities.remove("prompts");
        expected
    };
    assert_eq!(v["result"], expected);
    let (v, _) = rig.ask(2, "tools/list", json!({}), meta(json!({})));
    assert_eq!(v["result"]["resultType"], "complete");
    assert_eq!(v["result"]["ttlMs"], 300000);
    assert_eq!(v["result"]["cacheScope"], "public");
    assert_eq!(v["result"]["tools"].as_array().unwrap().len(), 6);
    assert_eq!(
        v["result"]["tools"][4]["inputSchema"]["$defs"]["a"]["type"],
        "string"
    );
    // Legacy results carry none of it; ping stays exactly {}.
    let (v, _, _) = rig.raw(&json!({"jsonrpc":"2.0","id":3,"method":"ping"}), false);
    assert_eq!(v["result"], json!({}));
    let (v, _, _) = rig.raw(
        &json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}),
        false,
    );
    assert!(v["result"].get("resultType").is_none() && v["result"].get("ttlMs").is_none());
    // Without initialize, the legacy server/discover is still unknown.
    let (v, _, _) = rig.raw(
        &json!({"jsonrpc":"2.0","id":4,"method":"server/discover"}),
        false,
    );
    assert_eq!(v["error"]["code"], -32601);
}

/// `Reply::content_room` counts the 2026-07-28 envelope (its `resultType` and server identity)
/// exactly: the room is what the buffer holds twice, less the answer without blocks.
#[cfg(feature = "modern")]
#[test]
fn content_room_counts_the_modern_envelope() {
    static ROOMY: Tool<Jobs> = Tool::new("roomy", "Room", roomy);
    let mut rig = Rig::new(Config::new("a-device", "1.2.3"));
    rig.s.register(&ROOMY).unwrap();
    for id in [json!(7), json!("a-longer-string-id")] {
        let mut params = json!({"name": "roomy", "arguments": {}});
        params["_meta"] = meta(json!({}));
        let body =
            json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params}).to_string();
        let h = rig
            .s
            .handle_with(
                Input::new(body.as_bytes(), Principal::Model),
                &mut rig.j,
                &mut rig.out,
                &mut |_: &[u8]| {},
            )
            .unwrap();
        let answer = core::str::from_utf8(&rig.out[..h.len]).unwrap();
        assert!(
            answer.contains(r#""content":[],"resultType":"complete""#),
            "{answer}"
        );
        assert_eq!(rig.j.room, (4096 - h.len) / 2, "{answer}");
    }
}

#[cfg(feature = "modern")]
#[test]
fn malformed_meta_versions_and_removed_methods() {
    let mut rig = Rig::new(Config::new("dev", "1"));
    // Missing clientCapabilities: -32602, HTTP 400.
    let (v, status) = rig.ask(
        1,
        "server/discover",
        json!({}),
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}),
    );
    assert_eq!(
        (v["error"]["code"].clone(), v["id"].clone(), status),
        (json!(-32602), json!(1), Status::BadRequest)
    );
    // The transport says 2026-07-28 and the body has no _meta: -32602, 400.
    let (v, status, _) = rig.raw(
        &json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}),
        true,
    );
    assert_eq!(
        (v["error"]["code"].clone(), status),
        (json!(-32602), Status::BadRequest)
    );
    // clientInfo is optional.
    let (v, status) = rig.ask(3, "tools/list", json!({}), meta(json!({})));
    assert!(v.get("result").is_some() && status == Status::Ok);
    // Unsupported version: -32022 with the supported list and the request echoed.
    let (v, status) = rig.ask(
        4,
        "server/discover",
        json!({}),
        json!({"io.modelcontextprotocol/protocolVersion": "v999.0.0", TASKS_CAPS: {}}),
    );
    assert_eq!(status, Status::BadRequest);
    assert_eq!(v["error"]["code"], -32022);
    assert_eq!(v["error"]["data"]["requested"], "v999.0.0");
    assert_eq!(v["error"]["data"]["supported"][0], "2026-07-28");
    // Methods that 2026-07-28 removed: 404 + -32601.
    for m in [
        "initialize",
        "ping",
        "logging/setLevel",
        "tasks/result",
        "tasks/list",
        "resources/subscribe",
        "no/such",
    ] {
        let (v, status) = rig.ask(5, m, json!({}), tasks_meta());
        assert_eq!(
            (v["error"]["code"].clone(), status),
            (json!(-32601), Status::NotFound),
            "{m}"
        );
    }
    // A bad log level is invalid params.
    let (v, _) = rig.ask(
        6,
        "tools/list",
        json!({}),
        meta(json!({"io.modelcontextprotocol/logLevel": "loud"})),
    );
    assert_eq!(v["error"]["code"], -32602);
}

#[cfg(all(feature = "modern", feature = "strings"))]
#[test]
fn calls_log_and_validate_per_request() {
    let mut rig = Rig::new(Config::new("dev", "1").log_level(Some(LogLevel::Debug)));
    let call = |name: &str, args: J| json!({"name": name, "arguments": args});
    // No logLevel in _meta: no log messages, whatever the config says.
    let mut params = call("greet", json!({"name": "Ada"}));
    params["_meta"] = meta(json!({}));
    let (v, _, notes) = rig.raw(
        &json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":params}),
        false,
    );
    assert!(notes.is_empty());
    assert_eq!(v["result"]["content"][0]["text"], "Hello, Ada!");
    assert_eq!(v["result"]["resultType"], "complete");
    params["_meta"] = meta(json!({"io.modelcontextprotocol/logLevel": "info"}));
    let (_, _, notes) = rig.raw(
        &json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":params}),
        false,
    );
    assert_eq!(
        notes,
        [
            json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"greeting Ada"}})
        ]
    );
    // Invalid arguments are a tool error on this path.
    let (v, _) = rig.ask(
        3,
        "tools/call",
        call("greet", json!({"name": ""})),
        meta(json!({})),
    );
    assert_eq!(v["result"]["isError"], true);
    assert_eq!(v["result"]["resultType"], "complete");
    // The legacy `task` hint is ignored.
    let mut p = call("greet", json!({"name": "x"}));
    p["task"] = json!({"ttl": 60000});
    let (v, _) = rig.ask(4, "tools/call", p, tasks_meta());
    assert_eq!(v["result"]["content"][0]["text"], "Hello, x!");
}

#[cfg(feature = "modern")]
#[test]
fn the_tasks_extension_form() {
    let mut rig = Rig::new(Config::new("dev", "1"));
    // A plain client: a required-task tool needs the capability.
    let (v, status) = rig.ask(
        1,
        "tools/call",
        json!({"name":"failing_job","arguments":{"ticks":1}}),
        meta(json!({})),
    );
    assert_eq!(status, Status::BadRequest);
    assert_eq!(v["error"]["code"], -32021);
    assert_eq!(
        v["error"]["data"],
        json!({"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}})
    );
    // tasks/* without the capability: -32021, checked before the id.
    for m in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let (v, _) = rig.ask(2, m, json!({"taskId":"gate-test"}), meta(json!({})));
        assert_eq!(v["error"]["code"], -32021, "{m}");
    }
    // An optional-task tool from a plain client: the plain form (a normal result).
    let (v, _) = rig.ask(
        3,
        "tools/call",
        json!({"name":"job","arguments":{"ticks":2}}),
        meta(json!({})),
    );
    assert!(v["result"].get("taskId").is_none());
    assert!(v["result"]["structuredContent"]["task_id"].is_string());
    // A declaring client gets a flat CreateTaskResult.
    let (v, _) = rig.ask(
        4,
        "tools/call",
        json!({"name":"job","arguments":{"ticks":3}}),
        tasks_meta(),
    );
    let r = &v["result"];
    assert_eq!(r["resultType"], "task");
    assert_eq!(r["status"], "working");
    assert_eq!(r["ttlMs"], 300000);
    assert_eq!(r["pollIntervalMs"], 500);
    assert!(r.get("task").is_none() && r.get("ttl").is_none() && r.get("pollInterval").is_none());
    let id = r["taskId"].as_str().unwrap().to_string();
    let (g, _) = rig.ask(5, "tasks/get", json!({"taskId": id}), tasks_meta());
    assert_eq!(
        (
            g["result"]["status"].clone(),
            g["result"]["resultType"].clone()
        ),
        (json!("working"), json!("complete"))
    );
    assert!(g["result"].get("result").is_none());
    for _ in 0..5 {
        rig.tick();
    }
    let (g, _) = rig.ask(6, "tasks/get", json!({"taskId": id}), tasks_meta());
    assert_eq!(g["result"]["status"], "completed");
    assert_eq!(
        g["result"]["result"]["structuredContent"],
        json!({"value": 3})
    );
    assert_eq!(g["result"]["result"]["resultType"], "complete");
    assert!(
        g["result"]["result"]["_meta"]
            .get("io.modelcontextprotocol/related-task")
            .is_none()
    );
    // Cancelling a finished task is an empty acknowledgement.
    let (c, _) = rig.ask(7, "tasks/cancel", json!({"taskId": id}), tasks_meta());
    assert_eq!(c["result"]["resultType"], "complete");
    assert!(c["result"].get("status").is_none());
    // A tool error ends `completed` with an isError result.
    let (v, _) = rig.ask(
        8,
        "tools/call",
        json!({"name":"failing_job","arguments":{"ticks":1}}),
        tasks_meta(),
    );
    let failing = v["result"]["taskId"].as_str().unwrap().to_string();
    // A JSON-RPC error ends `failed` with `error` and no `result`.
    let (v, _) = rig.ask(
        9,
        "tools/call",
        json!({"name":"protocol_error_job","arguments":{"ticks":1}}),
        tasks_meta(),
    );
    let broken = v["result"]["taskId"].as_str().unwrap().to_string();
    rig.tick();
    let (g, _) = rig.ask(10, "tasks/get", json!({"taskId": failing}), tasks_meta());
    assert_eq!(
        (
            g["result"]["status"].clone(),
            g["result"]["result"]["isError"].clone()
        ),
        (json!("completed"), json!(true))
    );
    let (g, _) = rig.ask(11, "tasks/get", json!({"taskId": broken}), tasks_meta());
    assert_eq!(g["result"]["status"], "failed");
    assert_eq!(
        g["result"]["error"],
        json!({"code": -32603, "message": "the device lost power"})
    );
    assert!(g["result"].get("result").is_none());
    // Cancel while working: acknowledged, stopped, cancelled.
    let (v, _) = rig.ask(
        12,
        "tools/call",
        json!({"name":"job","arguments":{"ticks":50}}),
        tasks_meta(),
    );
    let long = v["result"]["taskId"].as_str().unwrap().to_string();
    let (c, _) = rig.ask(13, "tasks/cancel", json!({"taskId": long}), tasks_meta());
    assert_eq!(
        c["result"],
        json!({"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"dev","version":"1"}}})
    );
    assert_eq!(rig.j.stops, 1);
    let (g, _) = rig.ask(14, "tasks/get", json!({"taskId": long}), tasks_meta());
    assert_eq!(g["result"]["status"], "cancelled");
    // tasks/update: acknowledged (no task here waits for input); unknown ids are -32602.
    let (u, _) = rig.ask(
        15,
        "tasks/update",
        json!({"taskId": long, "inputResponses": {"x": {}}}),
        tasks_meta(),
    );
    assert_eq!(u["result"]["resultType"], "complete");
    let (u, _) = rig.ask(
        16,
        "tasks/get",
        json!({"taskId": "tasks-conformance-nonexistent-12345"}),
        tasks_meta(),
    );
    assert_eq!(u["error"]["code"], -32602);
}

#[test]
fn legacy_tasks_result_of_a_protocol_error_is_a_json_rpc_error() {
    let mut rig = Rig::new(Config::new("dev", "1"));
    let (v, _, _) = rig.raw(
        &json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"protocol_error_job","arguments":{"ticks":1},"task":{}}}),
        false,
    );
    let id = v["result"]["task"]["taskId"].as_str().unwrap().to_string();
    rig.tick();
    let (v, _, _) = rig.raw(
        &json!({"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId": id}}),
        false,
    );
    assert_eq!(
        v["error"],
        json!({"code": -32603, "message": "the device lost power"})
    );
}

#[cfg(all(feature = "modern", feature = "resources"))]
#[test]
fn static_resources_and_prompts() {
    let mut rig = Rig::new(
        Config::new("dev", "1")
            .resources(&RESOURCES)
            .prompts(&PROMPTS),
    );
    let (v, _) = rig.ask(1, "resources/list", json!({}), meta(json!({})));
    assert_eq!(
        v["result"]["resources"],
        json!([{"uri":"device://manual","name":"manual","description":"The manual","mimeType":"text/plain"}])
    );
    assert_eq!(v["result"]["cacheScope"], "public");
    let (v, _) = rig.ask(
        2,
        "resources/read",
        json!({"uri":"device://manual"}),
        meta(json!({})),
    );
    assert_eq!(v["result"]["contents"][0]["text"], "Press the button.");
    let (v, _) = rig.ask(3, "resources/templates/list", json!({}), meta(json!({})));
    assert_eq!(v["result"]["resourceTemplates"], json!([]));
    let (v, _) = rig.ask(
        4,
        "resources/read",
        json!({"uri":"device://nope"}),
        meta(json!({})),
    );
    assert_eq!(v["error"]["code"], -32602);
    let (v, _, _) = rig.raw(
        &json!({"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"device://nope"}}),
        false,
    );
    assert_eq!(v["error"]["code"], -32002);
    let (v, _) = rig.ask(6, "prompts/get", json!({"name":"intro"}), meta(json!({})));
    assert_eq!(
        v["result"]["messages"][0]["content"]["text"],
        "You are talking to a lamp."
    );
}

/// A device that publishes no resources or prompts (or is built without feature `resources`)
/// does not answer these methods.
#[cfg(feature = "modern")]
#[test]
fn without_resources_and_prompts_their_methods_are_unknown() {
    let mut bare = Rig::new(Config::new("dev", "1"));
    for m in ["resources/list", "prompts/list"] {
        let (v, status) = bare.ask(7, m, json!({}), meta(json!({})));
        assert_eq!(
            (v["error"]["code"].clone(), status),
            (json!(-32601), Status::NotFound),
            "{m}"
        );
    }
}

#[test]
fn hand_written_schemas_are_listed_and_only_shape_checked() {
    let mut rig = Rig::new(Config::new("dev", "1"));
    let (v, _, _) = rig.raw(
        &json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"raw","arguments":[1]}}),
        false,
    );
    assert_eq!(v["error"]["code"], -32602);
    assert_eq!(rig.j.seen_raw, None);
    rig.raw(&json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"raw","arguments":{"x":"y"}}}), false);
    assert_eq!(rig.j.seen_raw.as_deref(), Some(r#"{"x":"y"}"#));
    let mut s: Server<'static, Jobs, Caps<2>> = Server::new(Config::new("d", "1"));
    const BAD: Tool<Jobs> = Tool::new("bad", "b", raw).input_schema(r#"{"type":"array"}"#);
    assert_eq!(
        s.register(&BAD).unwrap_err().kind,
        crate::registry::RegisterErrorKind::BadInputSchema
    );
    const MIXED: Tool<Jobs> = Tool::new("mixed", "m", raw)
        .params(TICKS)
        .input_schema(r#"{"type":"object"}"#);
    assert_eq!(
        s.register(&MIXED).unwrap_err().kind,
        crate::registry::RegisterErrorKind::BadInputSchema
    );
    let _ = rig.j.logs_sent;
}

#[cfg(feature = "modern")]
#[test]
fn a_tool_can_require_a_client_capability() {
    let mut rig = Rig::new(Config::new("dev", "1"));
    let (v, status) = rig.ask(
        1,
        "tools/call",
        json!({"name":"sampler","arguments":{}}),
        meta(json!({})),
    );
    assert_eq!(status, Status::BadRequest);
    assert_eq!(v["error"]["code"], -32021);
    assert_eq!(
        v["error"]["data"],
        json!({"requiredCapabilities":{"sampling":{}}})
    );
    assert_eq!(rig.j.seen_raw, None);
    let (v, _) = rig.ask(
        2,
        "tools/call",
        json!({"name":"sampler","arguments":{}}),
        meta(json!({TASKS_CAPS: {"sampling": {}}})),
    );
    assert_eq!(v["result"].get("isError"), None);
}

/// Every client string an error echoes is bounded, so the error fits [`MIN_OUT_LEN`] whatever
/// the client sent: a 300-character version (with characters that expand when escaped) is
/// answered -32022, its `requested` cut (and marked `…` where there is room), beside a small id
/// and beside the longest id (128 bytes with its quotes).
#[cfg(feature = "modern")]
#[test]
fn an_echoed_version_is_bounded_and_fits_the_smallest_buffer() {
    let mut rig = Rig::new(Config::new("dev", "1"));
    rig.out = vec![0; MIN_OUT_LEN];
    let version = format!("202{}6-07-28", "\u{1}\"é".repeat(100));
    for id in [json!(1), json!("i".repeat(126))] {
        let (v, status, _) = rig.raw(
            &json!({"jsonrpc":"2.0","id":id,"method":"serqer/discover","params":{"_meta":{
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": {}}}}),
            false,
        );
        assert_eq!(v["error"]["code"], -32022, "{v}");
        assert_eq!((&v["id"], status), (&id, Status::BadRequest));
        let requested = v["error"]["data"]["requested"].as_str().unwrap();
        assert!(version.starts_with(requested.trim_end_matches('…')));
        assert!(requested.chars().count() <= 17, "{requested:?}");
        if id == 1 {
            assert!(
                requested.ends_with('…') && requested.len() > 8,
                "{requested:?}"
            );
        }
        assert_eq!(v["error"]["data"]["supported"][0], "2026-07-28");
    }
    // A version of ordinary length is echoed whole.
    let (v, _) = rig.ask(
        2,
        "no/such",
        json!({}),
        json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01", TASKS_CAPS: {}}),
    );
    assert_eq!(v["error"]["data"]["requested"], "2099-01-01");
}

/// `initialize` reads its members in one walk, and a member given twice is read as before: a
/// repeated `clientInfo` leaves the client unnamed, a repeated `protocolVersion` is refused.
#[cfg(feature = "confirm")]
#[test]
fn a_repeated_client_info_leaves_the_client_unnamed() {
    let init = |params: &str| {
        let mut rig = Rig::new(Config::new("dev", "1"));
        let msg = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{params}}}"#);
        let mut out = vec![0u8; 4096];
        let h = rig
            .s
            .handle(msg.as_bytes(), Principal::Model, &mut rig.j, &mut out)
            .unwrap();
        let v: J = serde_json::from_slice(&out[..h.len]).unwrap();
        let label = rig.s.client_label(Peer::ONLY, None).to_string();
        (v, label)
    };
    let (v, label) = init(
        r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bob","version":"1"}}"#,
    );
    assert!(
        v.get("result").is_some() && label.ends_with("\"bob\""),
        "{v} {label}"
    );
    let (v, label) = init(
        r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bob"},"clientInfo":{"name":"eve"}}"#,
    );
    assert!(v.get("result").is_some(), "{v}");
    assert!(!label.contains("bob") && !label.contains("eve"), "{label}");
    let (v, _) = init(
        r#"{"protocolVersion":"2025-11-25","protocolVersion":"2024-11-05","capabilities":{}}"#,
    );
    assert_eq!(v["error"]["code"], -32602, "{v}");
}
