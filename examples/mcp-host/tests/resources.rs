//! Live resources through the HTTP host: the board says what changed after each tick
//! (`Board::changed`), the host publishes it on every engine, and a subscribed 2025 session gets
//! one `notifications/resources/updated` on its `GET` stream per change.
#![allow(clippy::restriction, reason = "a test")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use mcp_core::registry::LiveResource;
use mcp_core::{Config, Reply, ToolResult};
use mcp_host::{Board, Engine, HostCaps, HttpHost, HttpOptions};
use serde_json::{Value, json};

const URI: &str = "lab://temperature";

/// A board whose reading the test moves; a change is reported once, at the next tick.
#[derive(Default)]
struct Lab {
    millicelsius: i64,
    moved: bool,
    ticks: u64,
}

impl Board for Lab {
    fn tick(&mut self, _: u64) {
        self.ticks += 1;
    }

    fn changed(&mut self, _: u64) -> Vec<&'static str> {
        if std::mem::take(&mut self.moved) {
            vec![URI]
        } else {
            Vec::new()
        }
    }
}

fn read(lab: &mut Lab, r: &mut Reply<'_>) -> ToolResult {
    let t = lab.millicelsius;
    r.json(|o| {
        o.int("millicelsius", t);
    })
}

static TEMPERATURE: LiveResource<Lab> =
    LiveResource::new(URI, "temperature", "application/json", read);

fn engine() -> Box<Engine<Lab, HostCaps<4, 2>>> {
    let mut e = Box::new(Engine::new(Config::new("lab", "1")));
    e.register_resource(&TEMPERATURE).unwrap();
    e
}

const V: &str = "2025-06-18";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribed_session_hears_of_each_change_once_on_its_get_stream() {
    let board = Arc::new(Mutex::new(Lab::default()));
    let host = HttpHost::new(HttpOptions::default(), Arc::new(engine), board.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(host.serve(listener));
    let http = reqwest::Client::new();
    let post = |sid: Option<&str>, body: Value| {
        let mut r = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", V)
            .body(body.to_string());
        if let Some(s) = sid {
            r = r.header("mcp-session-id", s);
        }
        r.send()
    };
    let r = post(
        None,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":V,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}),
    )
    .await
    .unwrap();
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let init: Value = r.json().await.unwrap();
    assert_eq!(
        init["result"]["capabilities"]["resources"],
        json!({"subscribe": true})
    );
    post(
        Some(&sid),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    )
    .await
    .unwrap();
    // A request in the session, and its JSON answer.
    let ask = |body: Value| {
        let sent = post(Some(&sid), body);
        async move { sent.await.unwrap().json::<Value>().await.unwrap() }
    };
    let sub =
        ask(json!({"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":URI}}))
            .await;
    assert_eq!(sub["result"], json!({}));
    let get = http
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", V)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    let mut stream = get.bytes_stream();
    // Let the stream settle, then move the reading.
    tokio::time::sleep(Duration::from_millis(100)).await;
    {
        let mut lab = board.lock().unwrap();
        lab.millicelsius = 31_500;
        lab.moved = true;
    }
    // Collect what the GET stream carries for half a second.
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
    while let Ok(Some(Ok(chunk))) = tokio::time::timeout_at(deadline, stream.next()).await {
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let updates: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(
        updates,
        [json!({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":URI}})],
        "{text}"
    );
    // The client reads the new value.
    let read =
        ask(json!({"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":URI}})).await;
    assert_eq!(
        read["result"]["contents"][0]["text"],
        r#"{"millicelsius":31500}"#
    );
    assert!(board.lock().unwrap().ticks > 10);
}
