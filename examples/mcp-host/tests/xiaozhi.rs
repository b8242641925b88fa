//! The xiaozhi WebSocket client mode against a backend-style WebSocket server on an ephemeral
//! port: hello exchange, MCP in the envelope (before and after the hello), notifications in order,
//! clean exit when the backend closes.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::result_large_err
)] // a test (tungstenite's handshake callback returns its large error type)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use mcp_core::registry::Tool;
use mcp_core::{Args, Config, Output, Reply, ToolResult};
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
    let mut engine: Box<Engine<Lamp, 4, 1>> = Box::new(Engine::new(Config::new("lamp", "1")));
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
    let engine: Box<Engine<Lamp, 4, 1>> = Box::new(Engine::new(Config::new("lamp", "1")));
    let opts = xiaozhi::Options::new("not a url");
    let r = xiaozhi::run(&opts, engine, Arc::new(Mutex::new(Lamp))).await;
    assert!(r.is_err());
}
