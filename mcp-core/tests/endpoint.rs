//! The MCP endpoint link's rules through the real engine, with the frames the xiaozhi endpoint
//! sends (ids rewritten to `"<uuid>_n_<k>"`, reused): ids of any shape echoed byte for byte, a
//! reused id never answered from another request's remembered answer, every `tools/list` page
//! under one id, a new `initialize` a new agent session, a call on a fresh link without one.
#![allow(missing_docs, clippy::restriction, reason = "a test")]

use mcp_core::transport::endpoint::Sessions;
use mcp_core::{Args, Caps, Config, Output, Param, Principal, Reply, Server, Tool, ToolResult};
use serde_json::{Value, json};

#[derive(Default)]
struct Board {
    volume: i64,
    writes: u32,
}

fn set_volume(b: &mut Board, a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    b.volume = a.int("volume")?;
    b.writes += 1;
    Ok(Output::bool(true))
}

fn filler(_: &mut Board, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::bool(true))
}

const VOLUME: Tool<Board> = Tool::new(
    "self.audio_speaker.set_volume",
    "Set the volume",
    set_volume,
)
.params(&[Param::integer("volume", "Volume in percent").range(0, 100)]);

const LONG: &str = "A tool with a long description, so that the listing takes several pages of a small budget: \
    it says what it does at length, as some firmware authors do, and the engine must page it by bytes.";

static FILLERS: [Tool<Board>; 12] = {
    const NAMES: [&str; 12] = [
        "self.f01", "self.f02", "self.f03", "self.f04", "self.f05", "self.f06", "self.f07",
        "self.f08", "self.f09", "self.f10", "self.f11", "self.f12",
    ];
    let mut tools = [Tool::new("", LONG, filler); 12];
    let mut i = 0;
    while i < 12 {
        tools[i] = Tool::new(NAMES[i], LONG, filler);
        i += 1;
    }
    tools
};

type Engine = Server<'static, Board, Caps<16>>;

struct Link {
    engine: Engine,
    board: Board,
    sessions: Sessions,
    out: Vec<u8>,
}

impl Link {
    fn new() -> Link {
        let config = Config::new("relay-board", "1.0")
            .page_bytes(1500)
            .answers_only(true);
        let mut engine = Engine::new(config);
        engine.register(&VOLUME).unwrap();
        for t in &FILLERS {
            engine.register(t).unwrap();
        }
        Link {
            engine,
            board: Board::default(),
            sessions: Sessions::new(0),
            out: vec![0; 8192],
        }
    }

    /// One text frame from the endpoint; the frame sent back, if any.
    fn frame(&mut self, text: &str) -> Option<String> {
        let input = self.sessions.input(text.as_bytes(), Principal::Model);
        let handled = self
            .engine
            .handle_with(input, &mut self.board, &mut self.out, &mut |_: &[u8]| {})
            .unwrap();
        let len = self
            .sessions
            .handled(&handled, &mut self.engine, &mut self.out);
        (len > 0).then(|| String::from_utf8(self.out[..len].to_vec()).unwrap())
    }

    fn ask(&mut self, msg: Value) -> Value {
        serde_json::from_str(&self.frame(&msg.to_string()).unwrap()).unwrap()
    }
}

fn initialize(id: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{"protocolVersion":"2024-11-05",
        "capabilities":{"roots":{"listChanged":true},"sampling":{}},
        "clientInfo":{"name":"XiaozhiMCPEndpointClient","version":"1.0.0"}}})
}

fn volume(id: &str, v: i64) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"self.audio_speaker.set_volume","arguments":{"volume":v}}})
}

#[test]
fn ids_of_any_shape_are_echoed_byte_for_byte() {
    let mut link = Link::new();
    for id in [
        r#""3f6e2a0c-9c1b-4a55-8f3e-1d2c3b4a5f60_n_1""#,
        r#""3f6e2a0c-9c1b-4a55-8f3e-1d2c3b4a5f60_s_abc_1""#,
        r#""a\u00e9_s_\"q\"_7""#,
    ] {
        let msg = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        let answer = link.frame(&msg).unwrap();
        assert!(
            answer.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result""#)),
            "{answer}"
        );
    }
}

/// `initialize` and the first `tools/call` of a session share an id; every page of `tools/list`
/// comes under one id; a new session reuses the ids of the last. None of it is answered from
/// another request's remembered answer, and a retransmission in the same session still is.
#[test]
fn a_reused_id_never_returns_another_requests_answer() {
    let mut link = Link::new();
    let u = "9d0f6c7e-0000-4000-8000-000000000001";
    let init = link.ask(initialize(&format!("{u}_n_1")));
    assert_eq!(init["result"]["protocolVersion"], "2024-11-05");
    assert!(
        link.frame(r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}"#)
            .is_none()
    );
    // Every page under `_n_2`, the cursor walking the whole table.
    let mut names = Vec::new();
    let mut page = json!({"jsonrpc":"2.0","id":format!("{u}_n_2"),"method":"tools/list"});
    loop {
        let answer = link.ask(page.clone());
        assert_eq!(answer["id"], format!("{u}_n_2"));
        for t in answer["result"]["tools"].as_array().unwrap() {
            names.push(t["name"].as_str().unwrap().to_string());
        }
        match answer["result"]["nextCursor"].as_str() {
            Some(c) => page["params"] = json!({"cursor": c}),
            None => break,
        }
    }
    assert_eq!(names.len(), 13, "every tool, once: {names:?}");
    assert!(names.len() > 3);
    // The first call shares the initialize's id; it runs.
    let first = link.ask(volume(&format!("{u}_n_1"), 40));
    assert_eq!(first["result"]["content"][0]["text"], "true");
    assert_eq!((link.board.volume, link.board.writes), (40, 1));
    // The same request again in the same session: a retransmission, answered, not run.
    let again = link.ask(volume(&format!("{u}_n_1"), 40));
    assert_eq!(again, first);
    assert_eq!(link.board.writes, 1);
    // A new agent session with the very same ids: its call runs.
    link.ask(initialize(&format!("{u}_n_1")));
    let fresh = link.ask(volume(&format!("{u}_n_1"), 40));
    assert_eq!(fresh["result"]["content"][0]["text"], "true");
    assert_eq!(link.board.writes, 2, "a new session's call is its own");
    assert_eq!(link.sessions.count(), 2);
}

/// After the device restarts (a fresh engine and link), the backend's agent session goes on:
/// it sends `tools/call` with no `initialize`, and the call is served under 2024-11-05.
#[test]
fn a_call_on_a_fresh_link_without_initialize_is_served_under_2024_11_05() {
    let mut link = Link::new();
    let answer = link.ask(volume("77_n_5", 150));
    // 2024-11-05 reports a refused argument as -32602 (a later revision as isError).
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(answer["id"], "77_n_5");
    let answer = link.ask(volume("77_n_6", 30));
    assert_eq!(answer["result"]["content"][0]["text"], "true");
    assert_eq!(link.board.volume, 30);
    assert_eq!(link.engine.effective_revision().as_str(), "2024-11-05");
}
