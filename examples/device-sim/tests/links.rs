//! Links that survive (issue 13): the real device-sim binary in `--xiaozhi-ws` mode against a
//! backend on an ephemeral loopback port that misbehaves the way a flaky or hostile one does — it
//! goes silent, never upgrades, sends messages far beyond what a device holds, names its session
//! with a megabyte. Each time the device must notice, recover by itself (reconnect, hello again)
//! and then serve `initialize` and `tools/list` as before.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // a test

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

type Ws = WebSocketStream<TcpStream>;

/// The device-sim process, its stderr collected on a thread.
struct Sim {
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Sim {
    fn start(url: &str, args: &[&str]) -> Sim {
        let mut child = Command::new(env!("CARGO_BIN_EXE_device-sim"))
            .args(["--xiaozhi-ws", url])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start device-sim");
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = BufReader::new(child.stderr.take().unwrap());
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while pipe.read_line(&mut line).unwrap_or(0) > 0 {
                sink.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Sim { child, stderr }
    }

    fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn listen() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/xiaozhi/v1/", listener.local_addr().unwrap());
    (listener, url)
}

/// The next TCP connection from the device, within `within`.
async fn next_tcp(listener: &TcpListener, within: Duration, sim: &Sim) -> TcpStream {
    match tokio::time::timeout(within, listener.accept()).await {
        Ok(Ok((tcp, _))) => tcp,
        _ => panic!(
            "the device did not connect (again) within {within:?}; its log:\n{}",
            sim.log()
        ),
    }
}

async fn next_text(ws: &mut Ws) -> Value {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a frame within 10 s")
            .unwrap()
            .unwrap();
        if let Message::Text(t) = m {
            return serde_json::from_str(t.as_str()).unwrap();
        }
    }
}

/// Upgrades `tcp`, reads the device's hello and answers with the server hello for `sid`.
async fn handshake(tcp: TcpStream, sid: &str) -> Ws {
    let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
    let hello = next_text(&mut ws).await;
    assert_eq!(hello["type"], "hello");
    assert_eq!(hello["features"]["mcp"], true);
    ws.send(Message::text(
        json!({"type":"hello","transport":"websocket","session_id": sid}).to_string(),
    ))
    .await
    .unwrap();
    ws
}

async fn ask(ws: &mut Ws, sid: &str, payload: Value) -> Value {
    let msg = json!({"session_id": sid, "type": "mcp", "payload": payload});
    ws.send(Message::text(msg.to_string())).await.unwrap();
    next_text(ws).await
}

/// What a backend does first on every connection, as xinnan's does: initialize, then list.
async fn initialize_and_list(ws: &mut Ws, sid: &str) {
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05",
        "capabilities":{},"clientInfo":{"name":"backend","version":"1"}}});
    let answer = ask(ws, sid, init).await;
    assert_eq!(answer["session_id"], sid, "{answer}");
    assert_eq!(answer["payload"]["result"]["protocolVersion"], "2024-11-05");
    let answer = ask(
        ws,
        sid,
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
    )
    .await;
    assert_eq!(answer["session_id"], sid);
    let tools = answer["payload"]["result"]["tools"].as_array().unwrap();
    assert!(tools.len() >= 5, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_backend_is_declared_dead_and_the_device_reconnects() {
    let (listener, url) = listen().await;
    let sim = Sim::start(
        &url,
        &["--ws-ping-interval", "0.2", "--ws-dead-after", "0.8"],
    );
    let mut ws = handshake(
        next_tcp(&listener, Duration::from_secs(10), &sim).await,
        "s-1",
    )
    .await;
    initialize_and_list(&mut ws, "s-1").await;
    // The device pings while the backend reads, and the link stays up past the dead-after time.
    let mut pings = 0;
    let until = tokio::time::Instant::now() + Duration::from_millis(1200);
    while let Ok(Some(Ok(m))) = tokio::time::timeout_at(until, ws.next()).await {
        pings += usize::from(matches!(m, Message::Ping(_)));
    }
    assert!(pings >= 3, "{pings} pings in 1.2 s");
    // Now the backend goes silent: it neither reads nor answers the pings; TCP stays up.
    let silent_since = tokio::time::Instant::now();
    let tcp = next_tcp(&listener, Duration::from_secs(5), &sim).await;
    assert!(silent_since.elapsed() >= Duration::from_millis(700));
    let log = sim.log();
    assert!(log.contains("dead link"), "{log}");
    assert!(log.contains("reconnecting in"), "{log}");
    // The device says hello again and serves the backend as before.
    let mut again = handshake(tcp, "s-2").await;
    initialize_and_list(&mut again, "s-2").await;
    drop(ws);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_that_never_upgrades_hits_the_handshake_timeout_and_is_retried() {
    let (listener, url) = listen().await;
    let sim = Sim::start(&url, &["--ws-connect-timeout", "0.4"]);
    // The first attempt: TCP accepted, the upgrade request never answered.
    let stuck = next_tcp(&listener, Duration::from_secs(10), &sim).await;
    let since = tokio::time::Instant::now();
    let tcp = next_tcp(&listener, Duration::from_secs(5), &sim).await;
    assert!(since.elapsed() >= Duration::from_millis(300));
    let log = sim.log();
    assert!(log.contains("connection attempt timed out"), "{log}");
    let mut ws = handshake(tcp, "s-1").await;
    initialize_and_list(&mut ws, "s-1").await;
    drop(stuck);
}

/// Reads until the device's close frame; returns its code and reason.
async fn close_frame(ws: &mut Ws) -> (u16, String) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::time::timeout_at(deadline, ws.next()).await {
            Ok(Some(Ok(Message::Close(Some(f))))) => return (f.code.into(), f.reason.to_string()),
            Ok(Some(Ok(Message::Close(None)))) => panic!("closed without a code"),
            Ok(Some(Ok(_))) => {}
            other => panic!("no close frame from the device: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_beyond_the_device_limit_is_closed_with_1009_then_the_device_comes_back() {
    let (listener, url) = listen().await;
    // Defaults: the limit is four pages (4 x 8000 bytes).
    let sim = Sim::start(&url, &[]);
    let tcp = next_tcp(&listener, Duration::from_secs(10), &sim).await;
    let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
    assert_eq!(next_text(&mut ws).await["type"], "hello");
    // A hello whose session_id is a megabyte: far beyond what a device holds.
    let huge = json!({"type":"hello","transport":"websocket","session_id": "x".repeat(1 << 20)});
    ws.send(Message::text(huge.to_string())).await.unwrap();
    assert_eq!(
        close_frame(&mut ws).await,
        (1009, "message too big".to_string())
    );
    // It reconnects by itself, says hello again, and serves a sane backend normally; a message
    // just under the limit is fine.
    let tcp = next_tcp(&listener, Duration::from_secs(5), &sim).await;
    let log = sim.log();
    assert!(log.contains("1009 message too big"), "{log}");
    assert!(log.len() < 16 * 1024, "the log grew to {} bytes", log.len());
    let mut ws = handshake(tcp, "s-2").await;
    initialize_and_list(&mut ws, "s-2").await;
    let padded = json!({"session_id":"s-2","type":"mcp","padding":"p".repeat(30_000),
        "payload":{"jsonrpc":"2.0","id":3,"method":"ping"}});
    ws.send(Message::text(padded.to_string())).await.unwrap();
    assert_eq!(next_text(&mut ws).await["payload"]["id"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unusable_session_ids_are_never_echoed_or_logged() {
    let (listener, url) = listen().await;
    // A limit high enough to let a 1 MiB session_id through to the envelope parser.
    let sim = Sim::start(&url, &["--ws-max-message", "4194304"]);
    let tcp = next_tcp(&listener, Duration::from_secs(10), &sim).await;
    let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
    assert_eq!(next_text(&mut ws).await["type"], "hello");
    let megabyte = "m".repeat(1 << 20);
    let control = "s-1\u{1b}[2J\nforged log line";
    for bad in [megabyte.as_str(), control, &"y".repeat(129)] {
        ws.send(Message::text(
            json!({"type":"hello","transport":"websocket","session_id": bad}).to_string(),
        ))
        .await
        .unwrap();
        let msg = json!({"session_id": bad, "type": "mcp", "payload":
            {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05",
            "capabilities":{},"clientInfo":{"name":"b","version":"1"}}}});
        ws.send(Message::text(msg.to_string())).await.unwrap();
        let answer = next_text(&mut ws).await;
        assert!(
            answer.get("session_id").is_none(),
            "echoed: {:.200}",
            answer.to_string()
        );
        assert_eq!(answer["payload"]["id"], 1);
        assert!(answer.to_string().len() < 4096);
    }
    // A usable one (128 bytes of printable ASCII) is echoed as ever.
    let ok = "k".repeat(128);
    ws.send(Message::text(
        json!({"type":"hello","transport":"websocket","session_id": ok}).to_string(),
    ))
    .await
    .unwrap();
    initialize_and_list(&mut ws, &ok).await;
    let log = sim.log();
    assert!(log.len() < 16 * 1024, "the log grew to {} bytes", log.len());
    assert!(
        !log.contains("mmmmmmmm") && !log.contains("forged"),
        "{log:.2000}"
    );
    assert!(
        log.contains("ignored a session_id of 1048576 bytes"),
        "{log}"
    );
}

#[test]
fn the_stdio_envelope_bounds_session_ids_too() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_device-sim"))
        .args(["--envelope", "xiaozhi"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"hello\""), "{line}");
    let bad = "z".repeat(200);
    let msgs = [
        json!({"type":"hello","session_id": bad}),
        json!({"session_id": bad, "type":"mcp","payload":{"jsonrpc":"2.0","id":5,"method":"ping"}}),
    ];
    for m in msgs {
        writeln!(stdin, "{m}").unwrap();
    }
    line.clear();
    stdout.read_line(&mut line).unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert!(answer.get("session_id").is_none(), "{answer}");
    assert_eq!(answer["payload"]["id"], 5);
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(!log.contains("zzzzzzzz"), "{log}");
    assert!(log.contains("ignored a session_id of 200 bytes"), "{log}");
}
