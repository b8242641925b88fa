//! The Streamable HTTP host through real HTTP requests against a server on an ephemeral port.
#![allow(clippy::restriction, reason = "a test")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use mcp_core::registry::Tool;
use mcp_core::{
    Args, Config, Confirm, Output, Param, Progress, Reply, TaskHooks, TaskInfo, TaskPoll,
    TaskSupport, ToolResult,
};
use mcp_host::{Board, Engine, HostCaps, HttpHost, HttpOptions};
use serde_json::{Value, json};

#[derive(Default)]
struct Lab {
    ticks: u64,
    /// The device's confirmation button: presses so far.
    presses: u32,
    /// Times `switch` ran.
    switched: u32,
}

impl Board for Lab {
    fn tick(&mut self, _: u64) {
        self.ticks += 1;
    }

    fn confirm_presses(&self) -> u32 {
        self.presses
    }
}

fn hello(_: &mut Lab, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::text("hi"))
}

fn steps(_: &mut Lab, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    for i in 0..3 {
        r.progress(f64::from(i), Some(2.0), None);
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Output::text("stepped"))
}

fn slow(_: &mut Lab, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    std::thread::sleep(Duration::from_millis(50));
    Ok(Output::text("slow done"))
}

fn start_move(_: &mut Lab, a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::task(a.int("ms")?))
}

fn poll_move(_: &mut Lab, t: &TaskInfo) -> TaskPoll {
    let elapsed = i64::try_from(t.now_ms - t.started_ms).unwrap();
    if elapsed >= t.data {
        return TaskPoll::Done(Ok(Output::int(t.data)));
    }
    TaskPoll::Working(Some(Progress {
        progress: elapsed as f64,
        total: Some(t.data as f64),
    }))
}

fn switch(lab: &mut Lab, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    lab.switched += 1;
    Ok(Output::bool(true))
}

static HELLO: Tool<Lab> = Tool::new("hello", "Says hi", hello);
/// Asks a person first: with a client that cannot ask, the device's button answers.
static SWITCH: Tool<Lab> = Tool::new("switch", "Switches the relay on", switch)
    .confirm(Confirm::new("Switch the relay on?"));
static STEPS: Tool<Lab> = Tool::new("steps", "Reports progress three times", steps);
static SLOW: Tool<Lab> = Tool::new("slow", "Takes 50 ms", slow);
static MOVE: Tool<Lab> = Tool::new("move", "A long-running move", start_move)
    .params(&[Param::integer("ms", "How long").range(1, 10_000)])
    .long_running(
        TaskSupport::Optional,
        TaskHooks {
            poll: poll_move,
            stop: None,
            timeout_ms: 20_000,
        },
    );

fn engine() -> Box<Engine<Lab, HostCaps<8, 4>>> {
    let mut e = Box::new(Engine::new(Config::new("lab", "1")));
    for t in [&HELLO, &STEPS, &SLOW, &MOVE] {
        e.register(t).unwrap();
    }
    e
}

/// [`engine`] with the confirmed `switch`, answering a client that cannot ask its user at once
/// ("press the button"), as `device-sim --confirm --hold-answer 0` does.
fn confirming_engine() -> Box<Engine<Lab, HostCaps<8, 4>>> {
    let mut e = Box::new(Engine::new(Config::new("lab", "1").hold_answer(0)));
    for t in [&HELLO, &STEPS, &SLOW, &MOVE, &SWITCH] {
        e.register(t).unwrap();
    }
    e
}

struct Rig {
    url: String,
    http: reqwest::Client,
    board: Arc<Mutex<Lab>>,
}

async fn start(opts: HttpOptions) -> Rig {
    start_with(opts, engine).await
}

async fn start_with(opts: HttpOptions, factory: fn() -> Box<Engine<Lab, HostCaps<8, 4>>>) -> Rig {
    let board = Arc::new(Mutex::new(Lab::default()));
    let host = HttpHost::new(opts, Arc::new(factory), board.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(host.serve(listener));
    Rig {
        url: format!("http://{addr}/mcp"),
        http: reqwest::Client::new(),
        board,
    }
}

fn default_opts() -> HttpOptions {
    HttpOptions::default()
        .close_early(&["slow"])
        .max_body(4096)
        .retry_ms(250)
}

const BOTH: &str = "application/json, text/event-stream";

impl Rig {
    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        self.http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", BOTH)
            .body(body.to_string())
    }

    async fn initialize(&self, version: &str) -> String {
        let r = self
            .post(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":version,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
        assert!(sid.bytes().all(|b| (0x21..=0x7e).contains(&b)));
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["result"]["protocolVersion"], version);
        let r = self
            .post(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", version)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
        assert!(r.bytes().await.unwrap().is_empty());
        sid
    }

    fn in_session(&self, sid: &str, body: &Value) -> reqwest::RequestBuilder {
        self.post(body)
            .header("mcp-session-id", sid)
            .header("mcp-protocol-version", "2025-11-25")
    }

    fn get(&self, sid: &str) -> reqwest::RequestBuilder {
        self.http
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", sid)
            .header("mcp-protocol-version", "2025-11-25")
    }

    fn raw(&self, body: &Value, headers: &[(&str, &str)]) -> reqwest::RequestBuilder {
        let mut r = self.http.post(&self.url).body(body.to_string());
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        r
    }

    fn modern(&self, method: &str, name: Option<&str>, params: Value) -> reqwest::RequestBuilder {
        self.modern_as(method, method, name, params)
    }

    /// A 2026-07-28 request whose `Mcp-Method` header says `header_method`.
    fn modern_as(
        &self,
        method: &str,
        header_method: &str,
        name: Option<&str>,
        mut params: Value,
    ) -> reqwest::RequestBuilder {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let mut r = self
            .post(&json!({"jsonrpc":"2.0","id":9,"method":method,"params":params}))
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", header_method);
        if let Some(n) = name {
            r = r.header("Mcp-Name", n);
        }
        r
    }
}

/// One SSE event: its id, retry and data lines.
#[derive(Debug, Default, Clone)]
struct Event {
    id: Option<String>,
    retry: Option<String>,
    data: String,
}

/// Reads SSE events until the stream ends, `enough` says stop, or ten seconds pass.
async fn events(r: reqwest::Response, enough: impl Fn(&[Event]) -> bool) -> Vec<Event> {
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let mut stream = r.bytes_stream();
    let mut buf = String::new();
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            if block.starts_with(':') {
                continue;
            }
            let mut e = Event::default();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    e.id = Some(v.into());
                } else if let Some(v) = line.strip_prefix("retry: ") {
                    e.retry = Some(v.into());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    e.data = v.into();
                }
            }
            out.push(e);
        }
        if enough(&out) {
            return out;
        }
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(Ok(chunk))) => buf.push_str(std::str::from_utf8(&chunk).unwrap()),
            _ => return out,
        }
    }
}

fn data(e: &Event) -> Value {
    serde_json::from_str(&e.data).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_session_from_initialize_to_delete() {
    let rig = start(default_opts()).await;
    let sid = rig.initialize("2025-11-25").await;
    let r = rig
        .in_session(&sid, &json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["result"]["tools"].as_array().unwrap().len(), 4);
    let v: Value = rig
        .in_session(&sid, &json!({"jsonrpc":"2.0","id":2,"method":"ping"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["result"], json!({}));
    // Without a session: initialize only.
    let r = rig
        .post(&json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    // An unknown session: 404.
    let r = rig
        .in_session("nope", &json!({"jsonrpc":"2.0","id":4,"method":"ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // A version header the session does not speak: 400.
    let r = rig
        .post(&json!({"jsonrpc":"2.0","id":5,"method":"ping"}))
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", "1999-01-01")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    // DELETE ends it; afterwards 404.
    let r = rig
        .http
        .delete(&rig.url)
        .header("mcp-session-id", &sid)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = rig
        .in_session(&sid, &json!({"jsonrpc":"2.0","id":6,"method":"ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // The timer ticks the board.
    assert!(rig.board.lock().unwrap().ticks > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_origin_media_types_and_size_are_checked_first() {
    let rig = start(default_opts()).await;
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}});
    let r = rig
        .post(&init)
        .header("Host", "evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = rig
        .post(&init)
        .header("Origin", "http://evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let port = rig
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    let r = rig
        .post(&init)
        .header("Host", format!("localhost:{port}"))
        .header("Origin", format!("http://localhost:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let big = json!({"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"y".repeat(5000)}});
    assert_eq!(rig.post(&big).send().await.unwrap().status(), 413);
    // A body larger than the limit without a Content-Length (chunked) is refused too.
    let chunks =
        futures_util::stream::iter((0..10).map(|_| Ok::<_, std::io::Error>(vec![b' '; 1000])));
    let r = rig
        .http
        .post(&rig.url)
        .header("content-type", "application/json")
        .header("accept", BOTH)
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    let r = rig
        .raw(&init, &[("content-type", "text/plain"), ("accept", BOTH)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 415);
    let r = rig
        .raw(
            &init,
            &[
                ("content-type", "application/json"),
                ("accept", "application/json"),
            ],
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 406);
    // GET and DELETE without a session, other methods: 405 with Allow.
    let r = rig
        .http
        .get(&rig.url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(r.headers()["allow"], "POST");
    let r = rig.http.put(&rig.url).send().await.unwrap();
    assert_eq!(r.status(), 405);
    // Another path: 404.
    let r = rig
        .http
        .post(rig.url.replace("/mcp", "/other"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stateless_path_checks_headers_and_streams_notifications() {
    let rig = start(default_opts()).await;
    let r = rig
        .modern("server/discover", None, json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("mcp-session-id").is_none());
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["result"]["resultType"], "complete");
    assert_eq!(v["result"]["supportedVersions"][0], "2026-07-28");
    // Header rules: a mismatched method, a missing name.
    let r = rig
        .modern_as("tools/list", "prompts/list", None, json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (json!(9), json!(-32020))
    );
    let r = rig
        .modern("tools/call", None, json!({"name":"hello","arguments":{}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    // The header says 2026-07-28 but the body has no _meta: -32602.
    let r = rig
        .post(&json!({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}))
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/list")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], -32602);
    // Removed methods: 404.
    let r = rig.modern("ping", None, json!({})).send().await.unwrap();
    assert_eq!(r.status(), 404);
    // A call that reports progress: SSE, notifications before the response, no ids (no
    // resumption on this revision).
    let mut params = json!({"name":"steps","arguments":{}});
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "progressToken": "p1",
    });
    let r = rig
        .post(&json!({"jsonrpc":"2.0","id":"c","method":"tools/call","params":params}))
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "steps")
        .send()
        .await
        .unwrap();
    let ev = events(r, |_| false).await;
    assert_eq!(ev.len(), 4, "{ev:?}");
    assert!(ev.iter().all(|e| e.id.is_none() && e.retry.is_none()));
    for (i, e) in ev[..3].iter().enumerate() {
        assert_eq!(data(e)["params"]["progress"], i as f64);
    }
    let last = data(&ev[3]);
    assert_eq!(last["id"], "c");
    assert_eq!(last["result"]["resultType"], "complete");
    // A plain call: JSON.
    let r = rig
        .modern("tools/call", Some("hello"), json!({"name":"hello"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["content-type"], "application/json");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_streams_prime_store_and_replay_after_last_event_id() {
    let rig = start(default_opts()).await;
    let sid = rig.initialize("2025-11-25").await;
    let call = json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
        "params":{"name":"steps","arguments":{},"_meta":{"progressToken":5}}});
    let r = rig.in_session(&sid, &call).send().await.unwrap();
    assert_eq!(r.headers()["mcp-session-id"], sid.as_str());
    let ev = events(r, |_| false).await;
    // Priming event first: an id, retry, empty data. Then 3 notifications, then the response.
    assert_eq!(ev.len(), 5, "{ev:?}");
    assert_eq!(ev[0].retry.as_deref(), Some("250"));
    assert!(ev[0].data.is_empty());
    let stream = ev[0].id.clone().unwrap();
    let stream = stream.split('-').next().unwrap().to_string();
    assert_eq!(data(&ev[4])["id"], 7);
    for (i, e) in ev.iter().enumerate() {
        assert_eq!(e.id.as_deref(), Some(format!("{stream}-{i}").as_str()));
    }
    // Reconnect after the second notification: the rest is replayed, on this stream only.
    let r = rig
        .get(&sid)
        .header("last-event-id", format!("{stream}-2"))
        .send()
        .await
        .unwrap();
    let replay = events(r, |_| false).await;
    assert_eq!(
        replay
            .iter()
            .map(|e| e.id.clone().unwrap())
            .collect::<Vec<_>>(),
        [format!("{stream}-3"), format!("{stream}-4")]
    );
    assert_eq!(data(&replay[1])["result"]["content"][0]["text"], "stepped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_early_tool_delivers_its_result_on_reconnection() {
    let rig = start(default_opts()).await;
    let sid = rig.initialize("2025-11-25").await;
    let call = json!({"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{"name":"slow","arguments":{}}});
    let r = rig.in_session(&sid, &call).send().await.unwrap();
    let ev = events(r, |_| false).await;
    assert_eq!(ev.len(), 1, "only the priming event: {ev:?}");
    let last = ev[0].id.clone().unwrap();
    let r = rig
        .get(&sid)
        .header("last-event-id", &last)
        .send()
        .await
        .unwrap();
    let ev = events(r, |e| !e.is_empty()).await;
    let v = data(&ev[0]);
    assert_eq!(v["id"], "r1");
    assert_eq!(v["result"]["content"][0]["text"], "slow done");
    // Older sessions get no priming event and no early close.
    let old = rig.initialize("2025-06-18").await;
    let r = rig
        .post(&call)
        .header("mcp-session-id", &old)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["content-type"], "application/json");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_tasks_park_tasks_result_and_send_status_on_the_get_stream() {
    let rig = start(default_opts()).await;
    let sid = rig.initialize("2025-11-25").await;
    let get = rig.get(&sid).send().await.unwrap();
    assert_eq!(get.status(), 200);
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params":{"name":"move","arguments":{"ms":300},"task":{"ttl":60000}}});
    let v: Value = rig
        .in_session(&sid, &call)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let task = v["result"]["task"]["taskId"].as_str().unwrap().to_string();
    assert_eq!(v["result"]["task"]["status"], "working");
    // tasks/result waits for the end: an SSE stream that gets the response from the timer.
    let r = rig
        .in_session(
            &sid,
            &json!({"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":task}}),
        )
        .send()
        .await
        .unwrap();
    let ev = events(r, |e| e.iter().any(|e| !e.data.is_empty())).await;
    let v = data(ev.iter().find(|e| !e.data.is_empty()).unwrap());
    assert_eq!(v["id"], 2);
    assert_eq!(v["result"]["structuredContent"]["value"], 300);
    // The status notification went to the GET stream (and only there).
    let ev = events(get, |e| e.iter().any(|e| !e.data.is_empty())).await;
    let note = data(ev.iter().find(|e| !e.data.is_empty()).unwrap());
    assert_eq!(note["method"], "notifications/tasks/status");
    assert_eq!(note["params"]["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_posts_each_get_their_own_answer_and_sessions_are_bounded() {
    let rig = start(default_opts().max_sessions(2)).await;
    let sid = rig.initialize("2025-11-25").await;
    let calls = (0..3).map(|i| {
        rig.in_session(
            &sid,
            &json!({"jsonrpc":"2.0","id":1000 + i,"method":"tools/list","params":{}}),
        )
        .send()
    });
    let answers = futures_util::future::join_all(calls).await;
    let mut ids: Vec<i64> = Vec::new();
    for a in answers {
        let a = a.unwrap();
        assert_eq!(a.status(), 200);
        let v: Value = a.json().await.unwrap();
        ids.push(v["id"].as_i64().unwrap());
    }
    ids.sort_unstable();
    assert_eq!(ids, [1000, 1001, 1002]);
    // A third session ends the least recently used one.
    let b = rig.initialize("2025-11-25").await;
    let c = rig.initialize("2025-11-25").await;
    let ping = json!({"jsonrpc":"2.0","id":1,"method":"ping"});
    assert_eq!(
        rig.in_session(&sid, &ping).send().await.unwrap().status(),
        404
    );
    assert_eq!(
        rig.in_session(&b, &ping).send().await.unwrap().status(),
        200
    );
    assert_eq!(
        rig.in_session(&c, &ping).send().await.unwrap().status(),
        200
    );
}

/// Any localhost origin was accepted, so a page from another local server could call
/// the device. A browser's `Origin` must be the endpoint's own (the same host and port as its
/// `Host`) or one allowed by name; requests without `Origin` are not a browser's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_endpoints_own_origin_and_those_allowed_by_name_are_served() {
    let rig = start(default_opts().allow_origins(&["http://localhost:6274"])).await;
    let init = json!({"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25"}});
    let authority = rig
        .url
        .strip_prefix("http://")
        .unwrap()
        .strip_suffix("/mcp")
        .unwrap();
    let port = authority.rsplit(':').next().unwrap();
    let status = |host: String, origin: Option<String>| {
        let mut r = rig.post(&init).header("Host", host);
        if let Some(o) = origin {
            r = r.header("Origin", o);
        }
        async move { r.send().await.unwrap() }
    };
    for (host, origin, want) in [
        (
            authority.to_string(),
            Some("http://localhost:3000".to_string()),
            403,
        ),
        (
            format!("localhost:{port}"),
            Some("http://localhost:3000".to_string()),
            403,
        ),
        (
            authority.to_string(),
            Some(format!("http://localhost:{port}")),
            403,
        ),
        (
            authority.to_string(),
            Some(format!("https://{authority}")),
            403,
        ),
        (
            authority.to_string(),
            Some("http://localhost:6275".to_string()),
            403,
        ),
        (
            authority.to_string(),
            Some(format!("http://{authority}")),
            200,
        ),
        (
            format!("localhost:{port}"),
            Some(format!("http://localhost:{port}")),
            200,
        ),
        (
            authority.to_string(),
            Some("http://localhost:6274".to_string()),
            200,
        ),
        (
            authority.to_string(),
            Some("HTTP://LOCALHOST:6274".to_string()),
            200,
        ),
        (authority.to_string(), None, 200),
    ] {
        let r = status(host.clone(), origin.clone()).await;
        let code = r.status();
        let body: Value = r.json().await.unwrap();
        assert_eq!(code, want, "Host {host}, Origin {origin:?}: {body}");
        if want == 403 {
            assert_eq!(body["error"]["code"], -32600, "{body}");
            assert_eq!(
                body["error"]["message"],
                "Forbidden: Origin is not this device"
            );
        } else {
            assert_eq!(body["id"], 7, "{body}");
        }
    }
    // The page allowed by name is another origin: its browser asks first (CORS), and may read
    // the answers, the session id included.
    let preflight = |origin: &'static str| {
        rig.http
            .request(reqwest::Method::OPTIONS, &rig.url)
            .header("Origin", origin)
            .header("Access-Control-Request-Method", "POST")
            .header(
                "Access-Control-Request-Headers",
                "content-type, mcp-protocol-version",
            )
            .send()
    };
    let r = preflight("http://localhost:6274").await.unwrap();
    assert_eq!(r.status(), 204);
    let h = r.headers();
    assert_eq!(h["access-control-allow-origin"], "http://localhost:6274");
    assert_eq!(h["access-control-allow-methods"], "POST");
    assert_eq!(
        h["access-control-allow-headers"],
        "content-type, mcp-protocol-version"
    );
    assert_eq!(
        preflight("http://localhost:3000").await.unwrap().status(),
        403
    );
    let r = rig
        .post(&init)
        .header("Origin", "http://localhost:6274")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let h = r.headers();
    assert_eq!(h["access-control-allow-origin"], "http://localhost:6274");
    let exposed = h["access-control-expose-headers"].to_str().unwrap();
    assert!(exposed.contains("mcp-session-id"), "{exposed}");
    // The endpoint's own pages, and clients without Origin, need no CORS headers.
    let r = rig
        .post(&init)
        .header("Origin", format!("http://{authority}"))
        .send()
        .await
        .unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
    // Without the name, the inspector's page is another origin too.
    let plain = start(default_opts()).await;
    let r = plain
        .post(&init)
        .header("Origin", "http://localhost:6274")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn media_types_and_origins_are_parsed_not_substring_matched() {
    let rig = start(default_opts()).await;
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}});
    let status = |ct: &'static str, accept: &'static str| {
        let r = rig.raw(&init, &[("content-type", ct), ("accept", accept)]);
        async move { r.send().await.unwrap().status() }
    };
    // A media type whose parameter mentions JSON is not JSON.
    assert_eq!(status("text/plain; x=application/json", BOTH).await, 415);
    assert_eq!(status("application/jsonx", BOTH).await, 415);
    assert_eq!(status("application/json; charset=utf-8", BOTH).await, 200);
    // Accept: a parameter naming a type accepts nothing; q=0 excludes.
    let sneaky = "text/html; x=application/json, text/event-stream";
    assert_eq!(status("application/json", sneaky).await, 406);
    let refused = "application/json, text/event-stream;q=0";
    assert_eq!(status("application/json", refused).await, 406);
    assert_eq!(
        status("application/json", "application/*, text/*").await,
        200
    );
    // An origin with userinfo names another host; a path is no serialized origin.
    let port = rig
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    for (origin, want) in [
        (format!("http://localhost:{port}@evil.com"), 403),
        (format!("http://localhost:{port}/@evil.com"), 403),
        ("http://[::1]@evil.com".to_string(), 403),
        (format!("http://LOCALHOST:{port}"), 200),
        (format!("http://localhost.:{port}"), 200),
        (format!("http://[::1]:{port}"), 403),
    ] {
        let r = rig
            .post(&init)
            .header("Host", format!("localhost:{port}"))
            .header("Origin", &origin)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), want, "Origin {origin}");
    }
    let r = rig
        .post(&init)
        .header("Host", format!("localhost:{port}@evil.com"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    // A GET stream's Accept is parsed the same way.
    let sid = rig.initialize("2025-11-25").await;
    let r = rig
        .http
        .get(&rig.url)
        .header("accept", "text/html; x=text/event-stream")
        .header("mcp-session-id", &sid)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 406);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_session_table_refuses_new_sessions_instead_of_ending_live_ones() {
    let mut opts = default_opts().max_sessions(4);
    // Notice a closed stream soon (a keep-alive comment finds a dead connection).
    opts.keepalive = Duration::from_millis(100);
    let rig = start(opts).await;
    // Two sessions each run a 10 s move as a task; two others hold their GET stream open.
    let mut moving = Vec::new();
    for i in 0..2 {
        let sid = rig.initialize("2025-11-25").await;
        let call = json!({"jsonrpc":"2.0","id":i,"method":"tools/call",
            "params":{"name":"move","arguments":{"ms":10_000},"task":{"ttl":60000}}});
        let v: Value = rig
            .in_session(&sid, &call)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(v["result"]["task"]["status"], "working", "{v}");
        let task = v["result"]["task"]["taskId"].as_str().unwrap().to_string();
        moving.push((sid, task));
    }
    let mut streams = Vec::new();
    for _ in 0..2 {
        let sid = rig.initialize("2025-11-25").await;
        let get = rig.get(&sid).send().await.unwrap();
        assert_eq!(get.status(), 200);
        streams.push((sid, get));
    }
    // A fifth client: 503 with Retry-After and a JSON-RPC error, nobody's session ended.
    let init = json!({"jsonrpc":"2.0","id":"fifth","method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let r = rig.post(&init).send().await.unwrap();
    assert_eq!(r.status(), 503);
    assert!(r.headers().get("mcp-session-id").is_none());
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["id"], "fifth");
    assert_eq!(v["error"]["code"], -32000);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("session limit"),
        "{v}"
    );
    // The old sessions still work: their tasks answer tasks/get, the streams stay open.
    for (sid, task) in &moving {
        let get = json!({"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":task}});
        let r = rig.in_session(sid, &get).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["result"]["status"], "working", "{v}");
    }
    let ping = json!({"jsonrpc":"2.0","id":8,"method":"ping"});
    for (sid, _) in &streams {
        let r = rig.in_session(sid, &ping).send().await.unwrap();
        assert_eq!(r.status(), 200);
    }
    // Once a client closes its stream its session is idle: the next initialize takes its place.
    let (closed, get) = streams.pop().unwrap();
    drop(get);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let r = rig.post(&init).send().await.unwrap();
        if r.status() == 200 {
            break;
        }
        assert_eq!(r.status(), 503);
        assert!(tokio::time::Instant::now() < deadline, "never made room");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let r = rig.in_session(&closed, &ping).send().await.unwrap();
    assert_eq!(r.status(), 404, "the idle session was the one ended");
    let others = moving
        .iter()
        .map(|(s, _)| s)
        .chain(streams.iter().map(|(s, _)| s));
    for sid in others {
        let r = rig.in_session(sid, &ping).send().await.unwrap();
        assert_eq!(r.status(), 200);
    }
}

/// A flood of unauthenticated `initialize` must not end the session whose
/// call waits for a press of the device's button (a held call is in use, like a running task
/// or an open stream): its question stays, and the press runs the call. When every session
/// holds something, a new one gets 503 + `Retry-After`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_new_sessions_never_ends_one_whose_call_waits_for_a_press() {
    let rig = start_with(default_opts().max_sessions(4), confirming_engine).await;
    let call = |id: i64| {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"switch","arguments":{}}})
    };
    // Alice calls the confirmed tool and is told to press the button; she holds no stream.
    let alice = rig.initialize("2025-11-25").await;
    let r = rig.in_session(&alice, &call(1)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("button"), "{v}");
    // 33 initialize from nobody in particular (the table holds 4).
    for i in 0..33 {
        let init = json!({"jsonrpc":"2.0","id":i,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"flood","version":"1"}}});
        let r = rig.post(&init).send().await.unwrap();
        assert_eq!(
            r.status(),
            200,
            "idle flood sessions make room for each other"
        );
    }
    // Alice's session is still there, her call still waits: the press runs it.
    let ping = json!({"jsonrpc":"2.0","id":2,"method":"ping"});
    let r = rig.in_session(&alice, &ping).send().await.unwrap();
    assert_eq!(r.status(), 200, "the session with a held call was ended");
    // A press counts once the question was shown for the engine's minimum (1 s by default).
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    rig.board.lock().unwrap().presses += 1;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while rig.board.lock().unwrap().switched == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the press answered nothing"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(rig.board.lock().unwrap().switched, 1);

    // Every session holds a call: a new one is refused, nobody's call is dropped.
    let rig = start_with(default_opts().max_sessions(2), confirming_engine).await;
    let mut holders = Vec::new();
    for i in 0..2 {
        let sid = rig.initialize("2025-11-25").await;
        let r = rig.in_session(&sid, &call(i)).send().await.unwrap();
        assert_eq!(r.status(), 200);
        holders.push(sid);
    }
    let init = json!({"jsonrpc":"2.0","id":"late","method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let r = rig.post(&init).send().await.unwrap();
    assert_eq!(r.status(), 503);
    assert!(r.headers().get("retry-after").is_some());
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["id"], "late");
    assert_eq!(v["error"]["code"], -32000);
    for sid in &holders {
        let r = rig.in_session(sid, &ping).send().await.unwrap();
        assert_eq!(r.status(), 200);
    }
}

/// `value` nested `depth` objects deep.
fn nested(depth: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..depth {
        v = json!({ "a": v });
    }
    v
}

/// A request nested deeper than the engine reads, in a 2025 session, got
/// 202 and no body (taken for a client's response); every request with an id is answered,
/// -32700 with that id, in and out of a session and on the 2026-07-28 path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_nested_too_deep_is_answered_with_its_id() {
    let rig = start(default_opts().max_body(64 * 1024)).await;
    let sid = rig.initialize("2025-06-18").await;
    let deep = json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
        "params":{"name":"hello","arguments":nested(40)}});
    let r = rig.in_session(&sid, &deep).send().await.unwrap();
    let status = r.status();
    let body = r.text().await.unwrap();
    assert!(!body.is_empty(), "{status}: no answer");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["id"], 7, "{v}");
    assert_eq!(v["error"]["code"], -32700, "{v}");
    // The session still works.
    let ping = json!({"jsonrpc":"2.0","id":8,"method":"ping"});
    let r = rig.in_session(&sid, &ping).send().await.unwrap();
    assert_eq!(r.status(), 200);
    // A deep notification is still only acknowledged.
    let note = json!({"jsonrpc":"2.0","method":"notifications/progress","params":nested(40)});
    let r = rig.in_session(&sid, &note).send().await.unwrap();
    assert_eq!(r.status(), 202);
    // Without a session: a deep initialize is refused with its id, and opens nothing.
    let init = json!({"jsonrpc":"2.0","id":"i","method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":nested(40)}});
    let r = rig.post(&init).send().await.unwrap();
    assert!(r.headers().get("mcp-session-id").is_none());
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (json!("i"), json!(-32700))
    );
    // The 2026-07-28 path.
    let r = rig
        .modern(
            "tools/call",
            Some("hello"),
            json!({"name":"hello","arguments":nested(40)}),
        )
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (json!(9), json!(-32700))
    );
}

/// Reads from `s` until the server closes the connection or `within` passes; returns what came
/// and whether the connection was closed.
async fn read_until_closed(s: &mut tokio::net::TcpStream, within: Duration) -> (String, bool) {
    use tokio::io::AsyncReadExt;
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + within;
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&got).into(), true),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&got).into(), false),
        }
    }
}

async fn connect(rig: &Rig) -> (tokio::net::TcpStream, String) {
    let addr = rig
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    (
        tokio::net::TcpStream::connect(addr).await.unwrap(),
        addr.to_string(),
    )
}

/// A complete `initialize` POST, written by hand (keep-alive).
fn init_request(addr: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_heads_short_bodies_and_idle_connections_are_closed_in_time() {
    use tokio::io::AsyncWriteExt;
    let opts = default_opts()
        .header_timeout(Duration::from_millis(600))
        .body_timeout(Duration::from_millis(600));
    let rig = start(opts).await;
    let started = tokio::time::Instant::now();
    // Slowloris: a head that never ends.
    let (mut slow, addr) = connect(&rig).await;
    slow.write_all(format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nX-A: b\r\n").as_bytes())
        .await
        .unwrap();
    // A silent connection.
    let (mut silent, _) = connect(&rig).await;
    // A body shorter than its Content-Length.
    let (mut short, _) = connect(&rig).await;
    short
        .write_all(
            format!(
                "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\""
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    // A kept-alive connection after one request.
    let (mut kept, _) = connect(&rig).await;
    kept.write_all(init_request(&addr).as_bytes())
        .await
        .unwrap();
    for (name, s) in [
        ("slowloris", &mut slow),
        ("silent", &mut silent),
        ("short body", &mut short),
        ("idle keep-alive", &mut kept),
    ] {
        let (got, closed) = read_until_closed(s, Duration::from_secs(3)).await;
        assert!(closed, "{name}: still open after 3 s; got {got:?}");
        match name {
            "short body" => assert!(got.starts_with("HTTP/1.1 408"), "{got}"),
            "idle keep-alive" => assert!(got.starts_with("HTTP/1.1 200"), "{got}"),
            _ => assert!(got.is_empty() || got.starts_with("HTTP/1.1 408"), "{got}"),
        }
    }
    assert!(started.elapsed() < Duration::from_secs(3));
    // And the server still serves.
    let r = rig
        .post(&json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beyond_the_connection_limit_a_client_waits_until_one_closes() {
    use tokio::io::AsyncWriteExt;
    let rig = start(default_opts().max_connections(8)).await;
    // Eight clients, each with a kept-alive connection after one answered request.
    let mut held = Vec::new();
    for _ in 0..8 {
        let (mut s, addr) = connect(&rig).await;
        s.write_all(init_request(&addr).as_bytes()).await.unwrap();
        let mut buf = [0u8; 1024];
        let n = tokio::time::timeout(Duration::from_secs(5), async {
            use tokio::io::AsyncReadExt;
            s.read(&mut buf).await.unwrap()
        })
        .await
        .expect("served within the limit");
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
        held.push(s);
    }
    // The ninth is not served while the eight stay open...
    let (mut ninth, addr) = connect(&rig).await;
    ninth
        .write_all(init_request(&addr).as_bytes())
        .await
        .unwrap();
    let mut buf = [0u8; 1024];
    let early = tokio::time::timeout(Duration::from_millis(500), async {
        use tokio::io::AsyncReadExt;
        ninth.read(&mut buf).await
    })
    .await;
    assert!(
        early.is_err(),
        "the ninth connection was served beyond the limit"
    );
    // ... and is once one of them closes.
    drop(held.pop());
    let n = tokio::time::timeout(Duration::from_secs(5), async {
        use tokio::io::AsyncReadExt;
        ninth.read(&mut buf).await.unwrap()
    })
    .await
    .expect("served once a connection closed");
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
}
