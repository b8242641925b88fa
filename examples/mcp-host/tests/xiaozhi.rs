//! The xiaozhi WebSocket client mode against a backend-style WebSocket server on an ephemeral
//! port: hello exchange, MCP in the envelope (before and after the hello), notifications in order,
//! clean exit when the backend closes.
#![allow(clippy::restriction, reason = "a test")]
#![allow(
    clippy::result_large_err,
    reason = "tungstenite's handshake callback returns its large error type"
)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use mcp_core::registry::Tool;
use mcp_core::{Args, Caps, Config, Output, Reply, ToolResult};
use mcp_host::{Board, Engine, HostEvent, xiaozhi};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};

struct Lamp;
impl Board for Lamp {}

fn steps(_: &mut Lamp, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    for i in 0..2 {
        r.progress(f64::from(i), Some(1.0), None);
    }
    Ok(Output::bool(true))
}

static STEPS: Tool<Lamp> = Tool::new("self.lamp.steps", "Reports progress twice", steps);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_device_says_hello_and_serves_mcp_in_the_envelope() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/xiaozhi/v1/", listener.local_addr().unwrap());
    let backend = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut device_id = None;
        let mut ws = tokio_tungstenite::accept_hdr_async(tcp, |req: &Request, resp: Response| {
            device_id = req
                .headers()
                .get("device-id")
                .map(|v| v.to_str().unwrap().to_string());
            Ok(resp)
        })
        .await
        .unwrap();
        let hello = next_text(&mut ws).await;
        assert_eq!(hello["type"], "hello");
        assert_eq!(hello["features"]["mcp"], true);
        // An MCP message before the hello exchange completes: answered in its session.
        let early = json!({"session_id":"early","type":"mcp","payload":{"jsonrpc":"2.0","id":1,"method":"ping"}});
        ws.send(Message::text(early.to_string())).await.unwrap();
        let answer = next_text(&mut ws).await;
        assert_eq!(answer["session_id"], "early");
        assert_eq!(answer["payload"]["id"], 1);
        ws.send(Message::text(
            json!({"type":"hello","transport":"websocket","session_id":"s-1"}).to_string(),
        ))
        .await
        .unwrap();
        let init = json!({"session_id":"s-1","type":"mcp","payload":{"jsonrpc":"2.0","id":1,"method":"initialize",
            "params":{"protocolVersion":"2024-11-05","capabilities":{"vision":{"url":"http://backend/explain","token":"t"}},
            "clientInfo":{"name":"xiaozhi-backend","version":"1"}}}});
        ws.send(Message::text(init.to_string())).await.unwrap();
        let answer = next_text(&mut ws).await;
        assert_eq!(answer["type"], "mcp");
        assert_eq!(answer["session_id"], "s-1");
        assert_eq!(answer["payload"]["result"]["protocolVersion"], "2024-11-05");
        // Audio frames and other message types are not MCP: ignored.
        ws.send(Message::binary(vec![0u8; 32])).await.unwrap();
        ws.send(Message::text(r#"{"type":"listen","state":"start"}"#))
            .await
            .unwrap();
        let call = json!({"session_id":"s-1","type":"mcp","payload":{"jsonrpc":"2.0","id":2,"method":"tools/call",
            "params":{"name":"self.lamp.steps","arguments":{},"_meta":{"progressToken":"p"}}}});
        ws.send(Message::text(call.to_string())).await.unwrap();
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(next_text(&mut ws).await["payload"].clone());
        }
        assert_eq!(got[0]["method"], "notifications/progress");
        assert_eq!(got[1]["params"]["progress"], 1.0);
        assert_eq!(got[2]["id"], 2);
        assert_eq!(got[2]["result"]["content"][0]["text"], "true");
        ws.close(None).await.unwrap();
        device_id
    });
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let opts = xiaozhi::Options::new(url)
        .header("Device-Id", "aa:bb:cc:dd:ee:ff")
        .on_event(Arc::new(move |e: &HostEvent| {
            seen.lock().unwrap().push(e.clone())
        }));
    let mut engine: Box<Engine<Lamp, Caps<4, 1>>> = Box::new(Engine::new(Config::new("lamp", "1")));
    engine.register(&STEPS).unwrap();
    let run = tokio::time::timeout(
        Duration::from_secs(10),
        xiaozhi::run(&opts, engine, Arc::new(Mutex::new(Lamp))),
    )
    .await
    .unwrap();
    assert!(run.is_ok(), "{run:?}");
    assert_eq!(backend.await.unwrap().as_deref(), Some("aa:bb:cc:dd:ee:ff"));
    let events = events.lock().unwrap();
    assert!(events.contains(&HostEvent::Hello {
        session_id: Some("s-1".into())
    }));
    assert!(events.iter().any(|e| matches!(e,
        HostEvent::Initialized { vision_url: Some(u), .. } if u == "http://backend/explain")));
}

async fn next_text(ws: &mut tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>) -> Value {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let Message::Text(t) = m {
            return serde_json::from_str(t.as_str()).unwrap();
        }
    }
}

#[tokio::test]
async fn a_bad_url_is_an_error_not_a_panic() {
    let engine: Box<Engine<Lamp, Caps<4, 1>>> = Box::new(Engine::new(Config::new("lamp", "1")));
    let opts = xiaozhi::Options::new("not a url");
    let r = xiaozhi::run(&opts, engine, Arc::new(Mutex::new(Lamp))).await;
    assert!(r.is_err());
}

type ServerWs = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// Events the client reports, kept for the test.
fn recorder() -> (mcp_host::EventHook, Arc<Mutex<Vec<HostEvent>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    (
        Arc::new(move |e: &HostEvent| seen.lock().unwrap().push(e.clone())),
        events,
    )
}

/// The client's reconnection waits and why each connection ended, in order.
fn disconnects(events: &Mutex<Vec<HostEvent>>) -> Vec<(String, Duration)> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            HostEvent::Disconnected {
                reason,
                retry_in: Some(wait),
            } => Some((reason.clone(), *wait)),
            _ => None,
        })
        .collect()
}

/// Runs the client with `opts` until the test drops the handle.
fn spawn_client(opts: xiaozhi::Options) -> tokio::task::JoinHandle<Result<(), xiaozhi::Error>> {
    let mut engine: Box<Engine<Lamp, Caps<4, 1>>> = Box::new(Engine::new(Config::new("lamp", "1")));
    engine.register(&STEPS).unwrap();
    tokio::spawn(async move { xiaozhi::run(&opts, engine, Arc::new(Mutex::new(Lamp))).await })
}

async fn accept(listener: &tokio::net::TcpListener, within: Duration) -> ServerWs {
    let (tcp, _) = tokio::time::timeout(within, listener.accept())
        .await
        .expect("the device connects (again)")
        .unwrap();
    tokio_tungstenite::accept_async(tcp).await.unwrap()
}

/// Answers the device's hello with the server hello, then initializes as xinnan's backend does.
async fn greet_and_initialize(ws: &mut ServerWs, sid: &str) {
    assert_eq!(next_text(ws).await["type"], "hello");
    let hello = json!({"type":"hello","transport":"websocket","session_id": sid});
    ws.send(Message::text(hello.to_string())).await.unwrap();
    let init = json!({"type":"mcp","payload":{"jsonrpc":"2.0","id":1,"method":"initialize",
        "params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}});
    ws.send(Message::text(init.to_string())).await.unwrap();
    let answer = next_text(ws).await;
    assert_eq!(answer["session_id"], sid, "{answer}");
    assert_eq!(answer["payload"]["result"]["protocolVersion"], "2024-11-05");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_hello_is_recovered_after_the_hello_timeout() {
    // xinnan's backend drops a hello that arrives while it still loads the device's
    // configuration (in its first second), then waits for messages that never come. The
    // device gives up on the connection after its hello timeout and connects again.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/xiaozhi/v1/", listener.local_addr().unwrap());
    let (hook, events) = recorder();
    let timeout = Duration::from_millis(600);
    let client = spawn_client(
        xiaozhi::Options::new(url)
            .hello_timeout(timeout)
            .reconnect(xiaozhi::Backoff::new(
                Duration::from_millis(100),
                Duration::from_secs(1),
            ))
            .on_event(hook),
    );
    let mut first = accept(&listener, Duration::from_secs(10)).await;
    let since = tokio::time::Instant::now();
    assert_eq!(next_text(&mut first).await["type"], "hello"); // dropped: no answer
    // The device closes with a reason, after the timeout.
    let close = loop {
        match tokio::time::timeout(Duration::from_secs(5), first.next()).await {
            Ok(Some(Ok(Message::Close(f)))) => break f,
            Ok(Some(Ok(_))) => {}
            other => panic!("no close frame from the device: {other:?}"),
        }
    };
    let waited = since.elapsed();
    let close = close.expect("a close frame with a code");
    assert_eq!(
        (u16::from(close.code), close.reason.as_str()),
        (1000, "no hello")
    );
    assert!(waited >= timeout - Duration::from_millis(50), "{waited:?}");
    // The next connection gets its hello answered: a session, MCP served.
    let mut second = accept(&listener, Duration::from_secs(5)).await;
    greet_and_initialize(&mut second, "s-2").await;
    assert!(
        since.elapsed() < Duration::from_secs(3),
        "{:?}",
        since.elapsed()
    );
    let ends = disconnects(&events);
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert!(ends[0].0.contains("no hello"), "{ends:?}");
    assert!(events.lock().unwrap().contains(&HostEvent::Hello {
        session_id: Some("s-2".into())
    }));
    client.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_then_close_backs_off_and_only_a_session_resets_the_backoff() {
    // A backend that turns the device away after the upgrade (xinnan's, when the Device-Id
    // header is missing: a line of text, then close) is no progress: the waits grow to the
    // cap. A connection that gets the backend's hello resets them.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/xiaozhi/v1/", listener.local_addr().unwrap());
    let (hook, events) = recorder();
    let (first, max) = (Duration::from_millis(100), Duration::from_millis(800));
    let client = spawn_client(
        xiaozhi::Options::new(url)
            .reconnect(xiaozhi::Backoff::new(first, max))
            .on_event(hook),
    );
    let mut accepted = Vec::new();
    for _ in 0..6 {
        let mut ws = accept(&listener, Duration::from_secs(5)).await;
        accepted.push(tokio::time::Instant::now());
        ws.send(Message::text("port ok, use test_page.html"))
            .await
            .unwrap();
        ws.close(None).await.unwrap();
    }
    // Then one that answers the hello: a session; it closes once initialized.
    let mut ws = accept(&listener, Duration::from_secs(5)).await;
    greet_and_initialize(&mut ws, "s-1").await;
    ws.close(None).await.unwrap();
    let _again = accept(&listener, Duration::from_secs(5)).await;
    let ends = disconnects(&events);
    assert!(ends.len() >= 7, "{ends:?}");
    // The steps before jitter: 100, 200, 400, 800, 800, 800 ms; each wait between half of its
    // step and all of it.
    let steps = [100u64, 200, 400, 800, 800, 800, 100];
    for (i, ((reason, wait), step)) in ends.iter().zip(steps).enumerate() {
        let step = Duration::from_millis(step);
        assert!(
            *wait >= step / 2 && *wait <= step,
            "end {i} ({reason}): waited {wait:?}, step {step:?}: {ends:?}"
        );
    }
    assert!(ends[6].0.contains("closed"), "{ends:?}");
    // And the device really waited that long between connections.
    for (i, pair) in accepted.windows(2).enumerate() {
        let gap = pair[1] - pair[0];
        assert!(gap >= ends[i].1, "gap {i}: {gap:?} < {:?}", ends[i].1);
    }
    assert!(accepted[5] - accepted[4] >= Duration::from_millis(400));
    client.abort();
}

#[test]
fn the_default_backoff_grows_to_30_s_on_connections_without_a_session() {
    let b = xiaozhi::Backoff::DEFAULT;
    let steps: Vec<u64> = (1..=8).map(|n| b.delay(n).as_secs()).collect();
    assert_eq!(steps, [1, 2, 4, 8, 16, 30, 30, 30]);
    assert_eq!(
        xiaozhi::Options::new("ws://x/").hello_timeout,
        Duration::from_secs(10)
    );
}
