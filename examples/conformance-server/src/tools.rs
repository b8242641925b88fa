//! The fixture's tools, resources and prompts, named and shaped as the conformance scenarios
//! expect, and the engine that holds them. Everything is served by the engine: the fixture only
//! registers what a device would (handlers, readers, confirmation questions).

use std::time::Duration;

use mcp_core::registry::{LiveResource, Prompt, PromptArgument, Resource, Tool};
use mcp_core::{
    Args, Config, Confirm, LogLevel, Output, Param, Progress, Reply, TaskHooks, TaskInfo, TaskPoll,
    TaskSupport, ToolError, ToolResult,
};

use crate::fixtures::{PNG, WAV};

/// The fixture has no hardware: its tools act on nothing.
#[derive(Debug, Default)]
pub struct Fixture;

impl mcp_host::Board for Fixture {}

/// Tool capacity and task slots (the suite's task scenarios share one stateless engine).
pub type Engine = mcp_host::Engine<Fixture, mcp_host::HostCaps<32, 32>>;

fn simple_text(_: &mut Fixture, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::text("This is a simple text response for testing."))
}

fn image(_: &mut Fixture, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    r.image("image/png", &PNG)
}

fn audio(_: &mut Fixture, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    r.content(|c| {
        c.audio("audio/wav", &WAV);
    })
}

fn embedded(_: &mut Fixture, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    r.content(|c| {
        c.resource(
            "test://embedded-resource",
            "text/plain",
            "This is an embedded resource content.",
        );
    })
}

fn mixed(_: &mut Fixture, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    r.content(|c| {
        c.text("Multiple content types test:")
            .image("image/png", &PNG)
            .resource(
                "test://mixed-content-resource",
                "application/json",
                r#"{"test":"data","value":123}"#,
            );
    })
}

fn failing(_: &mut Fixture, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Err(ToolError::new(
        "This tool intentionally returns an error for testing",
    ))
}

/// The pause between a tool's notifications (handlers run on a blocking thread of the host).
const STEP: Duration = Duration::from_millis(50);

fn with_logging(_: &mut Fixture, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    for (i, step) in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    .into_iter()
    .enumerate()
    {
        if i > 0 {
            std::thread::sleep(STEP);
        }
        r.log(LogLevel::Info, Some("conformance"), format_args!("{step}"));
    }
    Ok(Output::text("Tool with logging executed successfully"))
}

fn with_progress(_: &mut Fixture, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    let mut sent = 0;
    for (i, p) in [0u32, 50, 100].into_iter().enumerate() {
        if i > 0 {
            std::thread::sleep(STEP);
        }
        let msg = format!("Completed step {p} of 100");
        sent += u32::from(r.progress(f64::from(p), Some(100.0), Some(&msg)));
    }
    r.text(format_args!("Progress reported: {sent} notifications"))
}

fn reconnection(_: &mut Fixture, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    // Long enough that the POST stream is gone before the result exists.
    std::thread::sleep(Duration::from_millis(100));
    Ok(Output::text(
        "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.",
    ))
}

fn ok(_: &mut Fixture, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::text("ok"))
}

fn streaming(_: &mut Fixture, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    r.progress(0.0, Some(1.0), Some("started"));
    Ok(Output::text(
        "Done without asking the client anything: this server sends no requests on a response stream",
    ))
}

fn logging_tool(_: &mut Fixture, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    r.log(
        LogLevel::Info,
        Some("conformance"),
        format_args!("test_logging_tool ran"),
    );
    Ok(Output::text(
        "Logged one info message (sent only when asked for)",
    ))
}

fn greet(_: &mut Fixture, a: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    let name = a.str("name")?;
    r.text(format_args!("Hello, {name}!"))
}

/// `slow_compute`: `seconds` of work. Zero answers at once; otherwise a task (the task word is
/// the duration in ms).
fn slow_compute(_: &mut Fixture, a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    let ms = (a.number("seconds")? * 1000.0).round();
    if ms < 1.0 {
        return Ok(Output::text("Computed at once (0 s)"));
    }
    // `seconds` is at most 600 (the schema says so), so this fits.
    Ok(Output::task(ms as i64))
}

fn elapsed(t: &TaskInfo) -> i64 {
    i64::try_from(t.now_ms.saturating_sub(t.started_ms)).unwrap_or(i64::MAX)
}

fn poll_compute(_: &mut Fixture, t: &TaskInfo) -> TaskPoll {
    if elapsed(t) >= t.data {
        return TaskPoll::Done(Ok(Output::text("slow_compute finished its work")));
    }
    TaskPoll::Working(Some(Progress {
        progress: elapsed(t) as f64,
        total: Some(t.data as f64),
    }))
}

fn stop_nothing(_: &mut Fixture, _: &TaskInfo) -> Result<(), ToolError> {
    Ok(())
}

fn start_job(_: &mut Fixture, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::task(1000))
}

fn poll_failing(_: &mut Fixture, t: &TaskInfo) -> TaskPoll {
    if elapsed(t) >= t.data {
        return TaskPoll::Done(Err(ToolError::new(
            "failing_job failed, as it is designed to",
        )));
    }
    TaskPoll::Working(None)
}

fn start_broken(_: &mut Fixture, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::task(300))
}

fn poll_broken(_: &mut Fixture, t: &TaskInfo) -> TaskPoll {
    if elapsed(t) >= t.data {
        return TaskPoll::Error("protocol_error_job ended with a JSON-RPC error, as designed");
    }
    TaskPoll::Working(None)
}

fn confirm_delete(_: &mut Fixture, a: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    // Runs only after the person's yes (the engine asks before the handler; it does not park a
    // running task for input, so `tasks-mrtr-input` is not run). The fixture has no files.
    let filename = a.str("filename")?;
    r.text(format_args!(
        "Confirmed; this fixture has no files, so {filename} needed no deleting"
    ))
}

/// The handler behind the 2026-07-28 `input-required-result-*` fixtures: it runs only once the
/// engine verified the `requestState` and read a yes in `inputResponses.confirm`.
fn confirmed(_: &mut Fixture, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::text(
        "state-ok: the requestState verified and the person confirmed",
    ))
}

const JSON_SCHEMA_2020_12: &str = concat!(
    r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","##,
    r##""$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"##,
    r##""properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"##,
    r##""contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},"##,
    r##""allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],"##,
    r##""if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"##,
    r##""then":{"required":["phone"]},"else":{"required":["email"]},"##,
    r##""additionalProperties":false}"##
);

static SIMPLE_TEXT: Tool<Fixture> = Tool::new(
    "test_simple_text",
    "Returns a simple text response",
    simple_text,
);
static IMAGE: Tool<Fixture> = Tool::new("test_image_content", "Returns a 1x1 PNG image", image);
static AUDIO: Tool<Fixture> = Tool::new(
    "test_audio_content",
    "Returns a short WAV audio clip",
    audio,
);
static EMBEDDED: Tool<Fixture> = Tool::new(
    "test_embedded_resource",
    "Returns an embedded text resource",
    embedded,
);
static MIXED: Tool<Fixture> = Tool::new(
    "test_multiple_content_types",
    "Returns text, an image and an embedded resource",
    mixed,
);
static ERROR: Tool<Fixture> = Tool::new(
    "test_error_handling",
    "Always fails with a tool error (isError: true)",
    failing,
);
static LOGGING: Tool<Fixture> = Tool::new(
    "test_tool_with_logging",
    "Sends three info log messages while it runs",
    with_logging,
);
static PROGRESS: Tool<Fixture> = Tool::new(
    "test_tool_with_progress",
    "Reports progress 0, 50 and 100 of 100 while it runs",
    with_progress,
);
static RECONNECTION: Tool<Fixture> = Tool::new(
    "test_reconnection",
    "Its response stream closes before the result; the result arrives on reconnection (SSE polling)",
    reconnection,
);
static JSON_SCHEMA: Tool<Fixture> = Tool::new(
    "json_schema_2020_12_tool",
    "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
    ok,
)
.input_schema(JSON_SCHEMA_2020_12);
static MISSING_CAPABILITY: Tool<Fixture> = Tool::new(
    "test_missing_capability",
    "Needs the client's sampling capability",
    ok,
)
.requires_client_capability("sampling");
static STREAMING: Tool<Fixture> = Tool::new(
    "test_streaming_elicitation",
    "Streams a progress notification, never a request",
    streaming,
);
static LOGGING_TOOL: Tool<Fixture> = Tool::new(
    "test_logging_tool",
    "Logs at info, which is sent only to requests that ask for logs",
    logging_tool,
);
static GREET: Tool<Fixture> = Tool::new("greet", "Greets someone by name", greet)
    .params(&[Param::string("name", "Who to greet").length(0, 256)]);

const HOOKS_COMPUTE: TaskHooks<Fixture> = TaskHooks {
    poll: poll_compute,
    stop: Some(stop_nothing),
    timeout_ms: 700_000,
};
static SLOW_COMPUTE: Tool<Fixture> = Tool::new(
    "slow_compute",
    "Computes for the given number of seconds (a task for clients with the tasks extension)",
    slow_compute,
)
.params(&[
    Param::number("seconds", "How long to compute").range_f64(0.0, 600.0),
    Param::string("label", "A label for the computation")
        .length(0, 256)
        .optional(),
])
.long_running(TaskSupport::Optional, HOOKS_COMPUTE);
static FAILING_JOB: Tool<Fixture> = Tool::new(
    "failing_job",
    "A task-only job that ends with a tool error after about a second",
    start_job,
)
.long_running(
    TaskSupport::Required,
    TaskHooks {
        poll: poll_failing,
        stop: None,
        timeout_ms: 60_000,
    },
);
static PROTOCOL_ERROR_JOB: Tool<Fixture> = Tool::new(
    "protocol_error_job",
    "A job that ends with a JSON-RPC error (task status failed)",
    start_broken,
)
.long_running(
    TaskSupport::Optional,
    TaskHooks {
        poll: poll_broken,
        stop: None,
        timeout_ms: 60_000,
    },
);
static CONFIRM_DELETE: Tool<Fixture> = Tool::new(
    "confirm_delete",
    "Deletes a file once the user confirms (asked before the call, not from a running task)",
    confirm_delete,
)
.params(&[Param::string("filename", "The file to delete").length(1, 256)])
.confirm(Confirm::new("Delete this file?"));

// The 2026-07-28 input-required fixtures. The engine asks exactly one question, a yes/no under
// the key `confirm` (a form with one boolean `confirm`), so these tools stand in only where a
// scenario checks the input_required mechanics (resultType, requestState round trip and
// integrity, re-asking on a missing answer); scenarios that need the suite's own questions
// (a name, sampling, roots, several rounds) are not run (docs/CONFORMANCE.md says which).
static IR_ELICITATION: Tool<Fixture> = Tool::new(
    "test_input_required_result_elicitation",
    "Asks the person a yes/no question (this server asks for confirmations only, not for a name)",
    confirmed,
)
.confirm(Confirm::new("Go ahead?"));
static IR_REQUEST_STATE: Tool<Fixture> = Tool::new(
    "test_input_required_result_request_state",
    "Asks for confirmation; the retry must echo the signed requestState",
    confirmed,
)
.confirm(Confirm::new("Please confirm"));
static IR_TAMPERED_STATE: Tool<Fixture> = Tool::new(
    "test_input_required_result_tampered_state",
    "Asks for confirmation; a retry with an altered requestState is refused (-32602)",
    confirmed,
)
.confirm(Confirm::new("Please confirm"));

/// Every tool, `test_simple_text` first (a 2026-07-28 scenario calls the first listed tool).
static TOOLS: [&Tool<Fixture>; 22] = [
    &SIMPLE_TEXT,
    &IMAGE,
    &AUDIO,
    &EMBEDDED,
    &MIXED,
    &ERROR,
    &LOGGING,
    &PROGRESS,
    &RECONNECTION,
    &JSON_SCHEMA,
    &MISSING_CAPABILITY,
    &STREAMING,
    &LOGGING_TOOL,
    &GREET,
    &SLOW_COMPUTE,
    &FAILING_JOB,
    &PROTOCOL_ERROR_JOB,
    &CONFIRM_DELETE,
    &STATUS,
    &IR_ELICITATION,
    &IR_REQUEST_STATE,
    &IR_TAMPERED_STATE,
];

static STATUS: Tool<Fixture> = mcp_core::server::status_tool();

static RESOURCES: [Resource; 1] = [Resource::new(
    "test://static-text",
    "static-text",
    "text/plain",
    "This is the content of the static text resource.",
)
.description("A static text resource")];

/// `test://watched-resource`, the live resource `resources-subscribe` subscribes to (the fixture
/// has nothing that changes, so it never publishes).
fn watched(_: &mut Fixture, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::text(
        "This resource can be subscribed to; it never changes",
    ))
}

/// `test://static-binary`: the suite's PNG, read through the engine's binary contents (`blob`).
fn static_binary(_: &mut Fixture, r: &mut Reply<'_>) -> ToolResult {
    r.image("image/png", &PNG)
}

static WATCHED: LiveResource<Fixture> = LiveResource::new(
    "test://watched-resource",
    "watched-resource",
    "text/plain",
    watched,
)
.description("A resource clients can subscribe to");
static STATIC_BINARY: LiveResource<Fixture> = LiveResource::new(
    "test://static-binary",
    "static-binary",
    "image/png",
    static_binary,
)
.description("A 1x1 PNG");
static LIVE: [&LiveResource<Fixture>; 2] = [&WATCHED, &STATIC_BINARY];

static PROMPTS: [Prompt; 2] = [
    Prompt::new(
        "test_simple_prompt",
        "A simple prompt without arguments",
        "This is a simple prompt for testing.",
    ),
    Prompt::new(
        "test_prompt_with_arguments",
        "A prompt with two arguments",
        "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'",
    )
    .arguments(&[
        PromptArgument::new("arg1", "First test argument")
            .required()
            .suggest(&["test", "testing", "tested"]),
        PromptArgument::new("arg2", "Second test argument").required(),
    ]),
];

/// The engine with every tool registered (the host builds one per session and one for the
/// stateless path).
pub fn engine() -> Box<Engine> {
    let mut config = Config::new("mcu-mcp-conformance-server", env!("CARGO_PKG_VERSION"))
        .log_level(Some(LogLevel::Info))
        .page_bytes(48 * 1024)
        .resources(&RESOURCES)
        .prompts(&PROMPTS);
    config.task_poll_interval_ms = 200;
    let mut engine = Box::new(Engine::new(config));
    for tool in TOOLS {
        // The table is sized for these tools and each is checked by the tests below.
        if let Err(e) = engine.register(tool) {
            eprintln!("conformance-server: {e}");
        }
    }
    for resource in LIVE {
        // Four live resources fit mcp-host's engine; the tests below read each.
        if let Err(r) = engine.register_resource(resource) {
            eprintln!(
                "conformance-server: live resource {} not registered",
                r.uri()
            );
        }
    }
    engine
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test

    use super::*;
    use mcp_core::Principal;

    fn ask(e: &mut Engine, msg: &str) -> serde_json::Value {
        let mut out = vec![0u8; 64 * 1024];
        let h = e
            .handle(msg.as_bytes(), Principal::Model, &mut Fixture, &mut out)
            .unwrap();
        serde_json::from_slice(&out[..h.len]).unwrap()
    }

    #[test]
    fn every_tool_registers_and_lists_on_one_page() {
        let mut e = engine();
        assert_eq!(e.registry().len(), TOOLS.len());
        let v = ask(&mut e, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        let tools = v["result"]["tools"].as_array().unwrap();
        assert_eq!(tools.len(), TOOLS.len());
        assert_eq!(tools[0]["name"], "test_simple_text");
        assert!(v["result"].get("nextCursor").is_none());
        let schema = &tools[9]["inputSchema"];
        assert_eq!(schema["$defs"]["address"]["$anchor"], "addressDef");
        assert_eq!(schema["additionalProperties"], false);
    }

    #[test]
    fn live_resources_register_and_read_through_the_engine() {
        let mut e = engine();
        let v = ask(
            &mut e,
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/list"}"#,
        );
        let uris: Vec<_> = v["result"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            uris,
            [
                "test://static-text",
                "test://watched-resource",
                "test://static-binary"
            ]
        );
        let v = ask(
            &mut e,
            r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"test://static-binary"}}"#,
        );
        assert_eq!(
            v["result"]["contents"][0],
            serde_json::json!({"uri":"test://static-binary","mimeType":"image/png","blob":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="})
        );
        let v = ask(
            &mut e,
            r#"{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"test://watched-resource"}}"#,
        );
        assert_eq!(v["result"], serde_json::json!({}));
    }

    #[test]
    fn the_input_required_fixtures_ask_the_engines_one_question() {
        let mut e = engine();
        let call = |id: u32, tool: &str, extra: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{}}{extra},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{"elicitation":{{}}}}}}}}}}"#
            )
        };
        let v = ask(
            &mut e,
            &call(1, "test_input_required_result_request_state", ""),
        );
        assert_eq!(v["result"]["resultType"], "input_required", "{v}");
        let question = &v["result"]["inputRequests"]["confirm"];
        assert_eq!(question["params"]["message"], "Please confirm");
        let state = v["result"]["requestState"].as_str().unwrap();
        let yes = format!(
            r#","requestState":"{state}","inputResponses":{{"confirm":{{"action":"accept","content":{{"confirm":true}}}}}}"#
        );
        let v = ask(
            &mut e,
            &call(2, "test_input_required_result_request_state", &yes),
        );
        assert_eq!(v["result"]["resultType"], "complete", "{v}");
        assert!(
            v["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("state-ok")
        );
        // The state is bound to its tool.
        let v = ask(
            &mut e,
            &call(3, "test_input_required_result_tampered_state", &yes),
        );
        assert_eq!(v["error"]["code"], -32602, "{v}");
    }

    #[test]
    fn media_round_trips_to_the_canonical_base64() {
        let mut e = engine();
        let call = |name: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{name}","arguments":{{}}}}}}"#
            )
        };
        let v = ask(&mut e, &call("test_image_content"));
        assert_eq!(
            v["result"]["content"][0]["data"],
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
        );
        let v = ask(&mut e, &call("test_audio_content"));
        assert_eq!(
            v["result"]["content"][0],
            serde_json::json!({"type":"audio","data":"UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=","mimeType":"audio/wav"})
        );
        let v = ask(&mut e, &call("test_multiple_content_types"));
        let kinds: Vec<_> = v["result"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(kinds, ["text", "image", "resource"]);
    }
}
