//! A conversation's end withdraws its question, on the xiaozhi device wire,
//! where a conversation is a connection (a new hello is a new one): session 1 is answered that
//! its call waits, and disconnects; session 2 (a new connection) must not see the question on
//! the device, a press must switch nothing, and no outcome — no `[device_call]`, no
//! notification — may go to session 2. On Streamable HTTP a conversation is the MCP session.
#![allow(clippy::restriction, reason = "a test")]

mod common;

use std::time::{Duration, Instant};

use common::{Running, api_at, device_sim, log_text, xiaozhi_ask, xiaozhi_handshake};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

fn state(ui: &str) -> Value {
    api_at(ui, "GET", "/sim/state", None).1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_whose_connection_ended_is_withdrawn_and_nobody_hears_of_it() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/xiaozhi/v1/", listener.local_addr().unwrap());
    let mut child = device_sim(
        &[
            "--xiaozhi-ws",
            &url,
            "--confirm",
            "--hold-answer",
            "0",
            "--press-after-ms",
            "0",
            "--ws-backoff-first",
            "0.1",
            "--ui",
            "127.0.0.1:0",
        ],
        false,
    );
    let log = log_text(&mut child);
    let _running = Running(child);
    let ui = common::ui_address(&log);
    // Session 1: the call is answered that it waits for the device's button.
    let (tcp, _) = listener.accept().await.unwrap();
    let mut ws = xiaozhi_handshake(tcp, "s-1").await;
    let waiting = xiaozhi_ask(
        &mut ws,
        "s-1",
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"self.relay.set","arguments":{"on":true}}}),
    )
    .await;
    let text = waiting["payload"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.starts_with("Waiting for a person"), "{waiting}");
    let until = Instant::now() + Duration::from_secs(5);
    while state(&ui)["confirmation"].is_null() {
        assert!(Instant::now() < until, "the question is not shown");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Session 1 disconnects; the device connects again: session 2.
    drop(ws);
    let (tcp, _) = tokio::time::timeout(Duration::from_secs(10), listener.accept())
        .await
        .unwrap()
        .unwrap();
    let mut ws = xiaozhi_handshake(tcp, "s-2").await;
    // The question is withdrawn at once, from the device and its page.
    let until = Instant::now() + Duration::from_secs(1);
    while !state(&ui)["confirmation"].is_null() {
        assert!(
            Instant::now() < until,
            "the question outlived its conversation: {}",
            state(&ui)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A press runs nothing.
    let (_, pressed) = api_at(&ui, "POST", "/sim/button", Some(&json!({})));
    assert!(pressed["answers"].is_null(), "{pressed}");
    // Session 2 hears nothing of session 1's call: no `[device_call]`, no outcome notification
    // (a press is still a press: the button's resource update is everyone's news).
    let quiet = tokio::time::timeout(Duration::from_millis(800), async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(t))) => {
                    let v: Value = serde_json::from_str(t.as_str()).unwrap();
                    if v["payload"]["method"] == "notifications/resources/updated" {
                        continue;
                    }
                    return Some(t.to_string());
                }
                Some(Ok(_)) => continue,
                _ => return None,
            }
        }
    })
    .await;
    assert!(
        !matches!(&quiet, Ok(Some(_))),
        "session 2 heard of session 1's call: {quiet:?}"
    );
    assert_eq!(state(&ui)["relay"]["on"], false);
    // And session 2 is served as any.
    let status = xiaozhi_ask(
        &mut ws,
        "s-2",
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"self.get_device_status","arguments":{}}}),
    )
    .await;
    assert!(status["payload"]["result"].is_object(), "{status}");
}

/// On Streamable HTTP a conversation is the MCP session: `DELETE` ends it, and the question its
/// call left on the device goes with it.
#[test]
fn a_question_whose_http_session_ended_is_withdrawn() {
    use common::{ACCEPT, JSON, exchange, header, start};
    let sim = start(&[
        "--http",
        "127.0.0.1:0",
        "--confirm",
        "--hold-answer",
        "0",
        "--press-after-ms",
        "0",
    ]);
    let http = sim.http.clone().unwrap();
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",
        "capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let (status, headers, _) = exchange(&http, "POST", "/mcp", &[JSON, ACCEPT], &init.to_string());
    assert_eq!(status, 200);
    let sid = header(&headers, "mcp-session-id").unwrap().to_string();
    let session = [JSON, ACCEPT, ("Mcp-Session-Id", sid.as_str())];
    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"self.relay.set","arguments":{"on":true}}});
    let (status, _, body) = exchange(&http, "POST", "/mcp", &session, &call.to_string());
    assert_eq!(status, 200);
    assert!(body.contains("Waiting for a person"), "{body}");
    let until = Instant::now() + Duration::from_secs(5);
    while state(&sim.ui)["confirmation"].is_null() {
        assert!(Instant::now() < until, "the question is not shown");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, _, _) = exchange(
        &http,
        "DELETE",
        "/mcp",
        &[("Mcp-Session-Id", sid.as_str())],
        "",
    );
    assert_eq!(status, 200);
    let until = Instant::now() + Duration::from_secs(1);
    while !state(&sim.ui)["confirmation"].is_null() {
        assert!(Instant::now() < until, "{}", state(&sim.ui));
        std::thread::sleep(Duration::from_millis(20));
    }
    let (_, pressed) = api_at(&sim.ui, "POST", "/sim/button", Some(&json!({})));
    assert!(pressed["answers"].is_null(), "{pressed}");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(state(&sim.ui)["relay"]["on"], false);
}
