//! The device speaks first, on each wire device-sim serves, driven through `--ui`'s JSON API:
//! a 2026-07-28 `subscriptions/listen` over Streamable HTTP (acknowledged, tagged updates, ended
//! when the client closes the stream), and the xiaozhi envelope — over stdio and over the
//! WebSocket — where the backend hears of every update after its hello without subscribing, and
//! a call held for the device's button completes after `POST /sim/button`.
#![allow(clippy::restriction, reason = "a test")]

mod common;

use std::time::{Duration, Instant};

use common::{Events, Lines, api, press_shown, start, state_until};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

const TEMP: &str = "device://sensors/temperature";
const BATTERY: &str = "device://sensors/battery";
const SUB: &str = "io.modelcontextprotocol/subscriptionId";

fn listen_request(id: &Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"subscriptions/listen","params":{
        "notifications":{"resourceSubscriptions":[TEMP]},
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                 "io.modelcontextprotocol/clientCapabilities":{}}}})
    .to_string()
}

const LISTEN_HEADERS: [(&str, &str); 4] = [
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
    ("MCP-Protocol-Version", "2026-07-28"),
    ("Mcp-Method", "subscriptions/listen"),
];

#[test]
fn a_listen_stream_over_http_is_acknowledged_gets_tagged_updates_and_ends_when_closed() {
    let sim = start(&["--http", "127.0.0.1:0"]);
    let http = sim.http.clone().unwrap();
    let id = json!("l-1");
    let stream = Events::open(&http, "POST", &LISTEN_HEADERS, &listen_request(&id));
    assert_eq!(stream.status, 200);
    assert_eq!(stream.content_type, "text/event-stream");
    let ack = stream.next_where("the acknowledgement", |_| true);
    assert_eq!(
        ack,
        json!({"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{
            "_meta":{SUB:"l-1"},"notifications":{"resourceSubscriptions":[TEMP]}}})
    );
    // The sensor moves: the stream carries the update, tagged with the listen request's id.
    api(
        &sim,
        "POST",
        "/sim/sensor",
        Some(&json!({"temperature": 30.0, "battery": 10})),
    );
    let update = stream.next_where("the temperature update", |_| true);
    assert_eq!(
        update,
        json!({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{
            "_meta":{SUB:"l-1"},"uri":TEMP}})
    );
    // Ids are each client's own. Another client listening with the same id
    // gets a stream of its own; each gets the updates it asked for.
    let other = Events::open(&http, "POST", &LISTEN_HEADERS, &listen_request(&id));
    let ack = other.next_where("the other client's acknowledgement", |_| true);
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    // The first client closes its stream: the host ends that subscription only.
    stream.close();
    let s = state_until(&sim, "the listen stream closed", |s| {
        s["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "listen" && e["open"] == false)
    });
    let listens: Vec<_> = s["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "listen")
        .collect();
    assert_eq!(listens.len(), 3, "{listens:#?}");
    assert_eq!(
        (&listens[0]["id"], &listens[0]["open"]),
        (&json!("\"l-1\""), &json!(true))
    );
    let updates: Vec<_> = s["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "update")
        .collect();
    assert_eq!(
        updates.len(),
        1,
        "the battery was not listened to: {updates:#?}"
    );
    assert_eq!(
        (
            &updates[0]["uri"],
            &updates[0]["subscription"],
            &updates[0]["delivered"]
        ),
        (&json!(TEMP), &json!("\"l-1\""), &json!(true))
    );
    // The other client's stream lives on, and the first client may listen again with its id.
    let again = Events::open(&http, "POST", &LISTEN_HEADERS, &listen_request(&id));
    let ack = again.next_where("the second acknowledgement", |_| true);
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    api(
        &sim,
        "POST",
        "/sim/sensor",
        Some(&json!({"temperature": 35.0})),
    );
    assert_eq!(
        again.next_where("an update", |_| true)["params"]["uri"],
        TEMP
    );
    assert_eq!(
        other.next_where("the other client's update", |_| true)["params"]["uri"],
        TEMP
    );
}

fn envelope(session: &str, payload: Value) -> Value {
    json!({"session_id": session, "type": "mcp", "payload": payload})
}

fn is_update(m: &Value, uri: &str) -> bool {
    m["payload"]["method"] == "notifications/resources/updated"
        && m["payload"]["params"]["uri"] == uri
}

#[test]
fn the_xiaozhi_envelope_over_stdio_carries_updates_after_the_hello_and_confirms_on_the_device() {
    let mut sim = start(&["--envelope", "xiaozhi", "--confirm"]);
    let mut lines = Lines::new(&mut sim);
    let hello = lines.next_where("the device hello", |_| true);
    assert_eq!(hello["type"], "hello");
    lines.send(&json!({"type":"hello","session_id":"s-1"}));
    lines.send(&envelope("s-1", json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"backend","version":"1"}}})));
    let init = lines.next_where("the initialize answer", |m| m["payload"]["id"] == 1);
    assert_eq!(init["payload"]["result"]["protocolVersion"], "2024-11-05");
    // After the hello, without any subscribe: the temperature's update arrives in the envelope.
    let started = Instant::now();
    api(
        &sim,
        "POST",
        "/sim/sensor",
        Some(&json!({"temperature": 33.0})),
    );
    let update = lines.next_where("the temperature update", |m| is_update(m, TEMP));
    assert_eq!(update["session_id"], "s-1");
    assert_eq!(update["type"], "mcp");
    assert!(started.elapsed() < Duration::from_secs(2));
    // A reboot from the model waits for the button; the call's answer is held back (xiaozhi's
    // backend hands the model only the call's answer), and the press completes it: the answer
    // is the real outcome with its evidence.
    lines.send(&envelope(
        "s-1",
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
        "name":"self.reboot","arguments":{}}}),
    ));
    let s = state_until(&sim, "the confirmation shown", |s| {
        s["confirmation"]["tool"] == "self.reboot"
    });
    let question = s["confirmation"]["question"].as_str().unwrap();
    assert!(
        question.starts_with("Reboot the device? (asked by "),
        "{question}"
    );
    assert_eq!(s["confirmation"]["shown"], true);
    let (_, pressed) = press_shown(&sim);
    assert_eq!(pressed["answers"]["tool"], "self.reboot", "{pressed}");
    let answer = lines.next_where("the call's answer", |m| m["payload"]["id"] == 2);
    assert_eq!(answer["session_id"], "s-1");
    let result = &answer["payload"]["result"];
    assert_eq!(result.get("isError"), None, "{answer}");
    assert_eq!(
        result["_meta"]["io.github.mcu-mcp/evidence"]["level"],
        "scheduled"
    );
    // The press is counted as well, and its update goes out too.
    lines.next_where("the button update", |m| {
        is_update(m, "device://buttons/main")
    });
    let s = state_until(&sim, "the reboot scheduled", |s| {
        s["reboot"]["scheduled"] == 1
    });
    let calls: Vec<_> = s["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "call")
        .collect();
    // The call held while it waited, then its outcome: the same call (id and client).
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert_eq!(calls[0]["outcome"], "held", "{calls:#?}");
    assert_eq!(
        (
            &calls[1]["transport"],
            &calls[1]["confirmed"],
            &calls[1]["evidence"]
        ),
        (&json!("stdio-xiaozhi"), &json!(true), &json!("scheduled"))
    );
    assert_eq!(
        (&calls[1]["id"], &calls[1]["client"]),
        (&calls[0]["id"], &calls[0]["client"])
    );
    let presses: Vec<_> = s["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "press")
        .collect();
    assert_eq!(presses[0]["answers"], "self.reboot");
}

async fn next_json(
    ws: &mut tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>,
    what: &str,
    ok: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let m = tokio::time::timeout_at(deadline, ws.next())
            .await
            .unwrap_or_else(|_| panic!("no {what} within 5 s"))
            .unwrap()
            .unwrap();
        if let Message::Text(t) = m {
            let v: Value = serde_json::from_str(t.as_str()).unwrap();
            if ok(&v) {
                return v;
            }
        }
    }
}

/// The blocking JSON API from async code.
async fn api_async(
    sim: &common::Sim,
    method: &'static str,
    path: &'static str,
    body: Option<Value>,
) -> Value {
    let ui = sim.ui.clone();
    tokio::task::spawn_blocking(move || common::api_at(&ui, method, path, body.as_ref()).1)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_xiaozhi_backend_hears_updates_without_subscribing_and_a_press_confirms() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/xiaozhi/v1/", listener.local_addr().unwrap());
    let sim =
        tokio::task::spawn_blocking(move || start(&["--xiaozhi-ws", &url, "--once", "--confirm"]))
            .await
            .unwrap();
    let (tcp, _) = tokio::time::timeout(Duration::from_secs(10), listener.accept())
        .await
        .unwrap()
        .unwrap();
    let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
    let hello = next_json(&mut ws, "the device hello", |_| true).await;
    assert_eq!(hello["features"]["mcp"], true);
    ws.send(Message::text(
        json!({"type":"hello","session_id":"b-7"}).to_string(),
    ))
    .await
    .unwrap();
    let init = envelope(
        "b-7",
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"backend","version":"1"}}}),
    );
    ws.send(Message::text(init.to_string())).await.unwrap();
    next_json(&mut ws, "the initialize answer", |m| {
        m["payload"]["id"] == 1
    })
    .await;
    // No resources/subscribe: the device subscribed the backend after the hello.
    api_async(&sim, "POST", "/sim/sensor", Some(json!({"battery": 15}))).await;
    let update = next_json(&mut ws, "the battery update", |m| is_update(m, BATTERY)).await;
    assert_eq!(update["session_id"], "b-7");
    // Switching the relay on waits for the device's button; the press completes it, and the
    // call's own answer is the outcome, with the evidence the relay's feedback gave.
    let call = envelope(
        "b-7",
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
        "name":"self.relay.set","arguments":{"on":true}}}),
    );
    ws.send(Message::text(call.to_string())).await.unwrap();
    // The host shows the waiting call within a tick; the press answers it.
    let answers = {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let s = api_async(&sim, "GET", "/sim/state", None).await;
            if s["confirmation"]["tool"] == "self.relay.set"
                && s["confirmation"]["press_counts_in_ms"] == 0
            {
                break api_async(&sim, "POST", "/sim/button", None).await;
            }
            assert!(Instant::now() < deadline, "no confirmation shown: {s:#}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    assert_eq!(answers["answers"]["tool"], "self.relay.set");
    let answer = next_json(&mut ws, "the call's answer", |m| m["payload"]["id"] == 2).await;
    assert_eq!(answer["session_id"], "b-7");
    assert_eq!(answer["payload"]["result"].get("isError"), None, "{answer}");
    assert_eq!(
        answer["payload"]["result"]["_meta"]["io.github.mcu-mcp/evidence"]["level"],
        "measured"
    );
    ws.close(None).await.unwrap();
    drop(sim);
}

#[test]
fn with_no_press_within_the_confirm_timeout_nothing_runs_and_the_backend_is_told() {
    let mut sim = start(&[
        "--envelope",
        "xiaozhi",
        "--confirm",
        "--confirm-timeout",
        "1",
    ]);
    let mut lines = Lines::new(&mut sim);
    lines.next_where("the device hello", |_| true);
    lines.send(&json!({"type":"hello","session_id":"s-2"}));
    lines.send(&envelope("s-2", json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"backend","version":"1"}}})));
    lines.next_where("the initialize answer", |m| m["payload"]["id"] == 1);
    let asked = Instant::now();
    lines.send(&envelope(
        "s-2",
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
        "name":"self.relay.set","arguments":{"on":true}}}),
    ));
    // Nobody presses: after the second, the call is dropped, and its own answer says why (the
    // backend reads a failed call's reason from `error`).
    let answer = lines.next_where("the call's answer", |m| m["payload"]["id"] == 2);
    let waited = asked.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(4),
        "{waited:?}"
    );
    let result = &answer["payload"]["result"];
    assert_eq!(result["isError"], true, "{answer}");
    // (A failure says what was commanded and that nothing was applied.)
    assert_eq!(
        result["error"],
        "Not confirmed: no answer in time; nothing was done — not applied (commanded true)"
    );
    assert_eq!(
        result["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level": "not_applied", "commanded": true})
    );
    assert_eq!(result["content"][0]["text"], result["error"]);
    let s = state_until(&sim, "nothing waiting", |s| s["confirmation"].is_null());
    assert_eq!(s["relay"]["on"], false);
    // A press now is only a press.
    let (_, pressed) = api(&sim, "POST", "/sim/button", None);
    assert_eq!(pressed["answers"], Value::Null);
    let s = state_until(&sim, "the press counted", |s| s["button"]["presses"] == 1);
    assert_eq!(s["relay"]["on"], false);
}

/// Over the stdio envelope: an outcome after a call's answer is a `[device_call]` detect text
/// right after its notification, and with `--speak-first` a press with no question waiting and
/// the temperature rising above 40 °C each start a turn (`Device event: …`, no
/// `[device_call]`), at most one per event and interval, none while the backend speaks.
#[test]
fn over_the_envelope_an_outcome_after_the_answer_and_the_devices_events_are_detect_texts() {
    let mut sim = start(&[
        "--envelope",
        "xiaozhi",
        "--confirm",
        "--hold-answer",
        "0",
        "--speak-first",
        // (A press counts at once: the minimum a question is shown is tests/ui.rs's.)
        "--press-after-ms",
        "0",
    ]);
    let mut lines = Lines::new(&mut sim);
    lines.next_where("the device hello", |_| true);
    lines.send(&json!({"type":"hello","session_id":"s-31"}));
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
        "name":"self.relay.set","arguments":{"on":true}}});
    lines.send(&envelope("s-31", call));
    let waits = lines.next_where("the answer that it waits", |m| m["payload"]["id"] == 1);
    assert_eq!(
        waits["payload"]["result"]["structuredContent"]["status"],
        "awaiting_confirmation"
    );
    // The device shows the question by the time that answer is out.
    let s = api(&sim, "GET", "/sim/state", None).1;
    assert_eq!(s["confirmation"]["shown"], true, "{s}");
    let (_, pressed) = api(&sim, "POST", "/sim/button", None);
    assert_eq!(pressed["answers"]["tool"], "self.relay.set");
    let note = lines.next_where("the outcome's notification", |m| {
        m["payload"]["method"] == "notifications/message"
    });
    let said = lines.next_where("the outcome, spoken", |m| m["type"] == "listen");
    assert_eq!(
        said,
        json!({"session_id":"s-31","type":"listen","state":"detect",
            "text":"[device_call] self.relay.set, confirmed: true — measured: true"})
    );
    assert_eq!(
        note["payload"]["params"]["data"]["text"],
        "self.relay.set, confirmed: true — measured: true"
    );
    // The backend speaks it (tts start … stop); a doorbell meanwhile waits for the quiet.
    lines.send(&json!({"session_id":"s-31","type":"tts","state":"start"}));
    let speaking = Instant::now();
    api(&sim, "POST", "/sim/button", None);
    assert!(
        lines
            .next_within(Duration::from_millis(600), |m| m["type"] == "listen")
            .is_none(),
        "no turn while the backend speaks"
    );
    lines.send(&json!({"session_id":"s-31","type":"tts","state":"stop"}));
    let event = lines.next_where("the doorbell", |m| m["type"] == "listen");
    assert_eq!(
        event["text"],
        "Device event: the doorbell button was pressed"
    );
    assert!(speaking.elapsed() >= Duration::from_millis(600));
    // More presses within the doorbell's 10 s: no more turns for now.
    for _ in 0..5 {
        api(&sim, "POST", "/sim/button", None);
    }
    // The heat alarm is its own event: one turn, with the reading in whole degrees.
    lines.send(&json!({"session_id":"s-31","type":"tts","state":"start"}));
    lines.send(&json!({"session_id":"s-31","type":"tts","state":"stop"}));
    api(
        &sim,
        "POST",
        "/sim/sensor",
        Some(&json!({"temperature": 45.4})),
    );
    let heat = lines.next_where("the heat alarm", |m| m["type"] == "listen");
    assert_eq!(
        heat["text"],
        "Device event: the temperature rose above 40 °C; the sensor reads 45 °C"
    );
    assert!(
        lines
            .next_within(Duration::from_millis(1_500), |m| m["type"] == "listen")
            .is_none(),
        "the presses within the interval started no turn yet"
    );
    let s = state_until(&sim, "the timeline's said entries", |s| {
        s["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "said")
            .count()
            == 3
    });
    let events: Vec<&Value> = s["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "said")
        .map(|e| &e["event"])
        .collect();
    assert_eq!(events, [&Value::Null, &json!("doorbell"), &json!("hot")]);
}

/// A hold budget a xiaozhi backend would not wait out is refused at start.
#[test]
fn a_hold_budget_of_30_s_or_more_is_refused_on_the_xiaozhi_wire() {
    let bin = env!("CARGO_BIN_EXE_device-sim");
    for args in [
        &["--envelope", "xiaozhi", "--hold-answer", "35"][..],
        &["--xiaozhi-ws", "ws://127.0.0.1:9/x", "--hold-answer", "30"][..],
        &["--stdio", "--speak-first"][..],
    ] {
        let out = std::process::Command::new(bin).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("30 s") || err.contains("--speak-first"),
            "{err}"
        );
    }
}
