//! What counts as a retransmission, on every transport the simulator speaks: the same
//! request again from the same peer, with nothing in between that touched the same tool. Ids
//! reused across sessions and within one must never be answered with another call's evidence.
//!
//! Each scenario sends `set_volume` 40, 60, 40 with the same id and checks that the device ends
//! at 40 (the third call ran) and that `self.get_device_status` agrees; where a transport has
//! sessions, it also checks that a real retransmission is answered from the first answer without
//! running again.
#![allow(clippy::restriction, reason = "a test")]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{ChildStdin, ChildStdout};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Running, Ws, device_sim, log_text, next_text, xiaozhi_ask, xiaozhi_handshake};
use futures_util::SinkExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

const SET_VOLUME: &str = "self.audio_speaker.set_volume";
const STATUS: &str = "self.get_device_status";

fn call(id: i64, name: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}})
}

fn volume(v: i64) -> Value {
    call(1, SET_VOLUME, json!({ "volume": v }))
}

/// The device-sim process, its stderr collected on a thread.
struct Sim {
    _running: Running,
    stdin: Option<ChildStdin>,
    stdout: Option<BufReader<ChildStdout>>,
    stderr: Arc<Mutex<String>>,
}

impl Sim {
    fn start(args: &[&str]) -> Sim {
        let mut child = device_sim(args, true);
        let stderr = log_text(&mut child);
        Sim {
            stdin: child.stdin.take(),
            stdout: child.stdout.take().map(BufReader::new),
            _running: Running(child),
            stderr,
        }
    }

    fn ask(&mut self, msg: &Value) -> Value {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(format!("{msg}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.as_mut().unwrap().read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Waits until stderr holds `n` occurrences of `needle`.
    fn wait_log(&self, needle: &str, n: usize) -> String {
        for _ in 0..200 {
            let log = self.stderr.lock().unwrap().clone();
            if log.matches(needle).count() >= n {
                return log;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!(
            "{n} x {needle:?} never logged:\n{}",
            self.stderr.lock().unwrap()
        );
    }

    fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

const REPLAYED: &str = "a retransmission answered from the first answer";

fn observed(answer: &Value) -> &Value {
    &answer["result"]["_meta"]["io.github.mcu-mcp/evidence"]["observed"]
}

#[test]
fn stdio_an_id_reused_within_one_session_is_a_new_call_unless_nothing_came_between() {
    let mut sim = Sim::start(&["--stdio"]);
    sim.ask(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}));
    for v in [40, 60, 40] {
        assert_eq!(*observed(&sim.ask(&volume(v))), v);
    }
    let status = sim.ask(&call(2, STATUS, json!({})));
    assert_eq!(
        status["result"]["structuredContent"]["audio_speaker"]["volume"],
        40
    );
    assert!(!sim.log().contains(REPLAYED), "{}", sim.log());
    // The same request again, nothing in between that touched the volume: the first answer.
    let first = sim.ask(&volume(40));
    assert_eq!(sim.ask(&volume(40)), first);
    sim.wait_log(REPLAYED, 1);
    // The relay too: on, off, on with one id ends on.
    for on in [true, false, true] {
        let r = sim.ask(&call(7, "self.relay.set", json!({ "on": on })));
        assert_eq!(
            r["result"]["_meta"]["io.github.mcu-mcp/evidence"]["observed"], on,
            "{r}"
        );
    }
    let status = sim.ask(&call(2, STATUS, json!({})));
    assert_eq!(status["result"]["structuredContent"]["relay"]["on"], true);
}

#[test]
fn xiaozhi_envelope_over_stdio_ids_restart_with_each_backend_session() {
    let mut sim = Sim::start(&["--envelope", "xiaozhi"]);
    let mut line = String::new();
    sim.stdout.as_mut().unwrap().read_line(&mut line).unwrap();
    assert!(line.contains("\"hello\""), "{line}");
    let env =
        |sid: &str, payload: Value| json!({"session_id": sid, "type": "mcp", "payload": payload});
    let hello = |sid: &str| json!({"type":"hello","transport":"websocket","session_id": sid});
    let send = |sim: &mut Sim, msg: Value| {
        let stdin = sim.stdin.as_mut().unwrap();
        stdin.write_all(format!("{msg}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    send(&mut sim, hello("s-1"));
    // Within one backend session: ids reused with other arguments.
    for v in [40, 60, 40] {
        let a = sim.ask(&env("s-1", volume(v)));
        assert_eq!(*observed(&a["payload"]), v, "{a}");
    }
    let first = sim.ask(&env("s-1", volume(70)));
    // A new backend session (the backend reconnected): its ids start again at 1. The same
    // bytes as s-1's last call are a new request here.
    send(&mut sim, hello("s-2"));
    let status = sim.ask(&env("s-2", call(1, STATUS, json!({}))));
    assert_eq!(
        status["payload"]["result"]["structuredContent"]["audio_speaker"]["volume"],
        70
    );
    sim.ask(&env("s-2", volume(20)));
    let again = sim.ask(&env("s-2", volume(70)));
    assert_eq!(*observed(&again["payload"]), 70);
    assert!(!sim.log().contains(REPLAYED), "{}", sim.log());
    // s-2 repeats its last call at once: a retransmission, answered without running.
    assert_eq!(sim.ask(&env("s-2", volume(70))), again);
    sim.wait_log(REPLAYED, 1);
    let _ = first;
}

/// Starts `device-sim --http 127.0.0.1:0` and returns it with its address.
fn start_http() -> (Sim, String) {
    let sim = Sim::start(&["--http", "127.0.0.1:0"]);
    let log = sim.wait_log("serving MCP (Streamable HTTP) at http://", 1);
    let addr = log
        .split("at http://")
        .nth(1)
        .unwrap()
        .split("/mcp")
        .next()
        .unwrap()
        .to_string();
    (sim, addr)
}

/// One HTTP/1.1 POST to /mcp; returns the status, the session header and the JSON body.
fn post(addr: &str, headers: &[(&str, &str)], body: &Value) -> (u16, Option<String>, Value) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = body.to_string();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let session = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id"))
        .map(|(_, v)| v.trim().to_string());
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
    };
    (status, session, body)
}

fn open_session(addr: &str) -> String {
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let (status, sid, _) = post(addr, &[], &init);
    assert_eq!(status, 200);
    sid.unwrap()
}

fn in_session(addr: &str, sid: &str, msg: &Value) -> Value {
    let h = [
        ("Mcp-Session-Id", sid),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let (status, _, body) = post(addr, &h, msg);
    assert_eq!(status, 200, "{body}");
    body
}

fn stateless(addr: &str, msg: &Value, key: Option<&str>) -> Value {
    let mut msg = msg.clone();
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    if let Some(k) = key {
        meta["io.github.mcu-mcp/idempotencyKey"] = json!(k);
    }
    msg["params"]["_meta"] = meta;
    let name = msg["params"]["name"].as_str().unwrap().to_string();
    let h = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", name.as_str()),
    ];
    let (status, _, body) = post(addr, &h, &msg);
    assert_eq!(status, 200, "{body}");
    body
}

fn http_volume(addr: &str) -> Value {
    stateless(addr, &call(9, STATUS, json!({})), None)["result"]["structuredContent"]
        ["audio_speaker"]["volume"]
        .clone()
}

#[test]
fn http_sessions_ids_reused_across_sessions_and_within_one() {
    let (_sim, addr) = start_http();
    let (a, b) = (open_session(&addr), open_session(&addr));
    // Within one session.
    for v in [40, 60, 40] {
        assert_eq!(*observed(&in_session(&addr, &a, &volume(v))), v);
    }
    assert_eq!(http_volume(&addr), 40);
    // Across sessions, same id: a 40, b 60, a 40 again. b's call touched the volume, so a's
    // repeat is not a retransmission: it runs, and the device ends at 40, not 60.
    let first = in_session(&addr, &a, &volume(40));
    in_session(&addr, &b, &volume(60));
    assert_eq!(http_volume(&addr), 60);
    let again = in_session(&addr, &a, &volume(40));
    assert_eq!(*observed(&again), 40);
    assert_eq!(http_volume(&addr), 40);
    // With nothing in between, a's repeat is a retransmission: the same answer, and it did not
    // run (it would have logged nothing else; the log line says it was a replay).
    let _ = first;
    let replay = in_session(&addr, &a, &volume(40));
    assert_eq!(replay, again);
    _sim.wait_log(REPLAYED, 1);
    // The relay: on in a, off in b, on again in a: the relay ends on.
    let relay = |on: bool| call(3, "self.relay.set", json!({ "on": on }));
    in_session(&addr, &a, &relay(true));
    in_session(&addr, &b, &relay(false));
    let r = in_session(&addr, &a, &relay(true));
    assert_eq!(
        r["result"]["_meta"]["io.github.mcu-mcp/evidence"]["observed"], true,
        "{r}"
    );
    let status = stateless(&addr, &call(9, STATUS, json!({})), None);
    assert_eq!(status["result"]["structuredContent"]["relay"]["on"], true);
}

#[test]
fn http_stateless_ids_reused_by_different_clients_and_idempotency_keys() {
    let (sim, addr) = start_http();
    // Two clients on the stateless wire, both at id 1.
    for v in [40, 60, 40] {
        assert_eq!(*observed(&stateless(&addr, &volume(v), None)), v);
    }
    assert_eq!(http_volume(&addr), 40);
    // The same request without a key is never a retransmission: it runs again.
    stateless(&addr, &volume(40), None);
    assert!(!sim.log().contains(REPLAYED), "{}", sim.log());
    // With a key, the repeat is answered from the first answer.
    let first = stateless(&addr, &volume(55), Some("client-a-0001"));
    assert_eq!(stateless(&addr, &volume(55), Some("client-a-0001")), first);
    sim.wait_log(REPLAYED, 1);
    // A session's call in between touches the tool on every engine: the keyed repeat runs.
    let sid = open_session(&addr);
    in_session(&addr, &sid, &volume(10));
    let r = stateless(&addr, &volume(55), Some("client-a-0001"));
    assert_eq!(*observed(&r), 55);
    assert_eq!(http_volume(&addr), 55);
}

async fn accept(listener: &tokio::net::TcpListener, sid: &str) -> Ws {
    let (tcp, _) = tokio::time::timeout(Duration::from_secs(10), listener.accept())
        .await
        .expect("the device connects")
        .unwrap();
    xiaozhi_handshake(tcp, sid).await
}

async fn ask(ws: &mut Ws, sid: &str, payload: Value) -> Value {
    xiaozhi_ask(ws, sid, payload).await["payload"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xiaozhi_websocket_a_call_resent_after_a_reconnect_runs_once_and_is_delivered_again() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/xiaozhi/v1/", listener.local_addr().unwrap());
    let sim = Sim::start(&["--xiaozhi-ws", &url, "--principal", "user"]);
    let mut ws = accept(&listener, "s-1").await;
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"b","version":"1"}}});
    ask(&mut ws, "s-1", init.clone()).await;
    // Ids reused within the session.
    for v in [40, 60, 40] {
        assert_eq!(*observed(&ask(&mut ws, "s-1", volume(v)).await), v);
    }
    // The backend sends a reboot and the link dies before it reads the answer.
    let reboot = call(2, "self.reboot", json!({}));
    let msg = json!({"session_id": "s-1", "type": "mcp", "payload": reboot});
    ws.send(Message::text(msg.to_string())).await.unwrap();
    let first = next_text(&mut ws, Duration::from_secs(10)).await["payload"].clone();
    drop(ws);
    sim.wait_log("self.reboot ran; its answer", 1);
    // The device reconnects by itself; the backend resumes session s-1 and sends the call again
    // (its answer was not seen): answered from the first answer, the reboot runs once.
    let mut ws = accept(&listener, "s-1").await;
    let again = ask(&mut ws, "s-1", reboot.clone()).await;
    assert_eq!(again, first);
    let log = sim.wait_log(REPLAYED, 1);
    assert_eq!(log.matches("self.reboot ran").count(), 1, "{log}");
    assert!(log.contains("reconnecting in"), "{log}");
    drop(ws);
    // A new backend session: ids start again; the same bytes are a new call.
    let mut ws = accept(&listener, "s-2").await;
    ask(&mut ws, "s-2", init).await;
    let fresh = ask(&mut ws, "s-2", reboot).await;
    assert_eq!(fresh["result"].get("isError"), None, "{fresh}");
    let log = sim.wait_log("self.reboot ran", 2);
    assert_eq!(log.matches(REPLAYED).count(), 1, "{log}");
}
