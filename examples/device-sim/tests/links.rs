//! Links that survive: the real device-sim binary in `--xiaozhi-ws` mode against a
//! backend on an ephemeral loopback port that misbehaves the way a flaky or hostile one does — it
//! goes silent, never upgrades, sends messages far beyond what a device holds, names its session
//! with a megabyte, drops the device's early hello, turns the device away right after the
//! upgrade. Each time the device must notice, recover by itself (reconnect, hello again, with a
//! backoff that grows while no session comes) and then serve `initialize` and `tools/list` as
//! before.
#![allow(clippy::restriction, reason = "a test")]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Running, Ws, device_sim, log_text, next_text, xiaozhi_ask, xiaozhi_handshake};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message;

/// The device-sim process, its stderr collected on a thread.
struct Sim {
    _running: Running,
    stderr: Arc<Mutex<String>>,
}

impl Sim {
    fn start(url: &str, args: &[&str]) -> Sim {
        let mut child = device_sim(&[&["--xiaozhi-ws", url], args].concat(), false);
        let stderr = log_text(&mut child);
        Sim {
            _running: Running(child),
            stderr,
        }
    }

    fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

/// A backend listening on loopback, and device-sim connecting to it with `args`.
async fn connecting(args: &[&str]) -> (TcpListener, Sim) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/xiaozhi/v1/", listener.local_addr().unwrap());
    (listener, Sim::start(&url, args))
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

/// What a backend does first on every connection, as xinnan's does: initialize, then list.
async fn initialize_and_list(ws: &mut Ws, sid: &str) {
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05",
        "capabilities":{},"clientInfo":{"name":"backend","version":"1"}}});
    let answer = xiaozhi_ask(ws, sid, init).await;
    assert_eq!(answer["session_id"], sid, "{answer}");
    assert_eq!(answer["payload"]["result"]["protocolVersion"], "2024-11-05");
    let answer = xiaozhi_ask(
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
    let (listener, sim) =
        connecting(&["--ws-ping-interval", "0.2", "--ws-dead-after", "0.8"]).await;
    let mut ws = xiaozhi_handshake(
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
    let mut again = xiaozhi_handshake(tcp, "s-2").await;
    initialize_and_list(&mut again, "s-2").await;
    drop(ws);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_that_never_upgrades_hits_the_handshake_timeout_and_is_retried() {
    let (listener, sim) = connecting(&["--ws-connect-timeout", "0.4"]).await;
    // The first attempt: TCP accepted, the upgrade request never answered.
    let stuck = next_tcp(&listener, Duration::from_secs(10), &sim).await;
    let since = tokio::time::Instant::now();
    let tcp = next_tcp(&listener, Duration::from_secs(5), &sim).await;
    assert!(since.elapsed() >= Duration::from_millis(300));
    let log = sim.log();
    assert!(log.contains("connection attempt timed out"), "{log}");
    let mut ws = xiaozhi_handshake(tcp, "s-1").await;
    initialize_and_list(&mut ws, "s-1").await;
    drop(stuck);
}

/// Reads until the device's close frame; returns its code and reason.
async fn close_frame<S>(ws: &mut S) -> (u16, String)
where
    S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
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
    // Defaults: the limit is four pages (4 x 8000 bytes).
    let (listener, sim) = connecting(&[]).await;
    let tcp = next_tcp(&listener, Duration::from_secs(10), &sim).await;
    let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
    assert_eq!(
        next_text(&mut ws, Duration::from_secs(10)).await["type"],
        "hello"
    );
    // A hello whose session_id is a megabyte: far beyond what a device holds.
    // The device may close before all of it is written (the send then fails with a broken
    // pipe): it is sent from its own task while its close frame is read.
    let huge = json!({"type":"hello","transport":"websocket","session_id": "x".repeat(1 << 20)});
    let (mut sink, mut stream) = ws.split();
    let sending = tokio::spawn(async move {
        let _ = sink.send(Message::text(huge.to_string())).await;
    });
    assert_eq!(
        close_frame(&mut stream).await,
        (1009, "message too big".to_string())
    );
    sending.await.unwrap();
    // It reconnects by itself, says hello again, and serves a sane backend normally; a message
    // just under the limit is fine.
    let tcp = next_tcp(&listener, Duration::from_secs(5), &sim).await;
    let log = sim.log();
    assert!(log.contains("1009 message too big"), "{log}");
    assert!(log.len() < 16 * 1024, "the log grew to {} bytes", log.len());
    let mut ws = xiaozhi_handshake(tcp, "s-2").await;
    initialize_and_list(&mut ws, "s-2").await;
    let padded = json!({"session_id":"s-2","type":"mcp","padding":"p".repeat(30_000),
        "payload":{"jsonrpc":"2.0","id":3,"method":"ping"}});
    ws.send(Message::text(padded.to_string())).await.unwrap();
    assert_eq!(
        next_text(&mut ws, Duration::from_secs(10)).await["payload"]["id"],
        3
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unusable_session_ids_are_never_echoed_or_logged() {
    // A limit high enough to let a 1 MiB session_id through to the envelope parser.
    let (listener, sim) = connecting(&["--ws-max-message", "4194304"]).await;
    let tcp = next_tcp(&listener, Duration::from_secs(10), &sim).await;
    let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
    assert_eq!(
        next_text(&mut ws, Duration::from_secs(10)).await["type"],
        "hello"
    );
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
        let answer = next_text(&mut ws, Duration::from_secs(10)).await;
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

/// Waits for the device's close frame, reading past anything else; `None` when the connection
/// ended without one within `within`.
async fn closed_by_device(ws: &mut Ws, within: Duration) -> Option<(u16, String)> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, ws.next()).await {
            Ok(Some(Ok(Message::Close(Some(f))))) => {
                return Some((f.code.into(), f.reason.to_string()));
            }
            Ok(Some(Ok(_))) => {}
            _ => return None,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_hello_is_recovered_within_15_s_with_the_default_hello_timeout() {
    // xinnan's backend drops a message that arrives while it still loads the device's
    // configuration (it waits 1 s for it): here the device's first hello. Defaults only: the
    // device waits its 10 s for the backend's hello, closes, reconnects after the first backoff
    // step (0.5-1 s), and this time gets a session.
    let (listener, sim) = connecting(&[]).await;
    let tcp = next_tcp(&listener, Duration::from_secs(10), &sim).await;
    let accepted = tokio::time::Instant::now();
    let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
    let hello = next_text(&mut ws, Duration::from_secs(10)).await;
    assert_eq!(hello["type"], "hello");
    assert!(
        accepted.elapsed() < Duration::from_secs(1),
        "an early hello"
    );
    // Dropped: no answer. The device gives up on this connection after its hello timeout.
    let close = closed_by_device(&mut ws, Duration::from_secs(12)).await;
    let gave_up = accepted.elapsed();
    assert_eq!(close, Some((1000, "no hello".to_string())), "{}", sim.log());
    assert!(gave_up >= Duration::from_millis(9_900), "{gave_up:?}");
    let tcp = next_tcp(&listener, Duration::from_secs(3), &sim).await;
    let mut ws = xiaozhi_handshake(tcp, "s-2").await;
    initialize_and_list(&mut ws, "s-2").await;
    let recovered = accepted.elapsed();
    assert!(recovered < Duration::from_secs(15), "{recovered:?}");
    let log = sim.log();
    assert!(
        log.contains("no hello from the backend within 10000 ms"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_then_close_forever_backs_off_to_the_cap() {
    // A backend that turns the device away after the upgrade — xinnan's, when the Device-Id
    // header is missing, sends a line of text and closes — gives no session: every such
    // connection makes the next wait longer, up to the cap (short steps here: 0.1 s doubling
    // to 0.8 s; the defaults are 1 s to 30 s).
    let (listener, sim) =
        connecting(&["--ws-backoff-first", "0.1", "--ws-backoff-max", "0.8"]).await;
    let mut accepted = Vec::new();
    for _ in 0..7 {
        let tcp = next_tcp(&listener, Duration::from_secs(5), &sim).await;
        accepted.push(tokio::time::Instant::now());
        let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
        ws.send(Message::text("port ok, use test_page.html"))
            .await
            .unwrap();
        ws.close(None).await.unwrap();
    }
    let gaps: Vec<Duration> = accepted.windows(2).map(|w| w[1] - w[0]).collect();
    // Steps 0.1, 0.2, 0.4, 0.8, 0.8, 0.8 s; each wait between half of its step and all of it.
    let at_least = [50, 100, 200, 400, 400, 400].map(Duration::from_millis);
    for (gap, least) in gaps.iter().zip(at_least) {
        assert!(*gap >= least, "{gaps:?}");
    }
    assert!(gaps[0] < Duration::from_millis(400), "{gaps:?}");
    // The waits the device logged, in ms: they grew to the cap and stayed there.
    let log = sim.log();
    let waits: Vec<u64> = log
        .lines()
        .filter_map(|l| l.split("reconnecting in ").nth(1))
        .map(|w| w.trim_end_matches(" ms").parse().unwrap())
        .collect();
    assert!(waits.len() >= 6, "{log}");
    assert!(waits[0] <= 100, "{waits:?}");
    assert!(
        waits[3..6].iter().all(|w| (400..=800).contains(w)),
        "{waits:?}"
    );
}

#[test]
fn the_stdio_envelope_bounds_session_ids_too() {
    use std::io::{BufRead, BufReader, Write};
    let mut child = device_sim(&["--envelope", "xiaozhi"], true);
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
