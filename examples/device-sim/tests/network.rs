//! The real device-sim binary on its network transports: `--http` (Streamable HTTP, plain
//! HTTP/1.1 requests written by hand) and `--xiaozhi-ws` (a backend-style WebSocket server).
#![allow(clippy::restriction, reason = "a test")]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{
    ACCEPT, JSON, device_sim, device_sim_output, exchange, head, header, log_text, start_http,
    xiaozhi_ask, xiaozhi_handshake,
};
use serde_json::{Value, json};

/// One request to `/mcp`: the status, the headers (lower-case names) and the body.
fn request(
    addr: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    exchange(addr, method, "/mcp", headers, body)
}

#[test]
fn http_serves_a_legacy_session_and_the_stateless_revision() {
    let (_sim, addr) = start_http(&[]);
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let (status, headers, body) = request(&addr, "POST", &[JSON, ACCEPT], &init.to_string());
    assert_eq!(status, 200, "{body}");
    let sid = header(&headers, "mcp-session-id").unwrap().to_string();
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["result"]["serverInfo"]["name"], "device-sim");
    let session = [
        JSON,
        ACCEPT,
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let (status, _, _) = request(
        &addr,
        "POST",
        &session,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(status, 202);
    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"self.audio_speaker.set_volume","arguments":{"volume":40}}});
    let (status, _, body) = request(&addr, "POST", &session, &call.to_string());
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v["result"]["_meta"]["io.github.mcu-mcp/evidence"]["level"],
        "read_back"
    );
    assert_eq!(
        v["result"]["_meta"]["io.github.mcu-mcp/evidence"]["observed"],
        40
    );
    // The same board serves the stateless path: the volume is still 40.
    let status_call = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"self.get_device_status","arguments":{},
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}});
    let modern = [
        JSON,
        ACCEPT,
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "self.get_device_status"),
    ];
    let (status, headers, body) = request(&addr, "POST", &modern, &status_call.to_string());
    assert_eq!(status, 200, "{body}");
    assert!(header(&headers, "mcp-session-id").is_none());
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["result"]["resultType"], "complete");
    assert_eq!(
        v["result"]["structuredContent"]["audio_speaker"]["volume"],
        40
    );
    // DNS-rebinding protection, and DELETE.
    let (status, _, _) = request(
        &addr,
        "POST",
        &[JSON, ACCEPT, ("Origin", "http://evil.example.com")],
        &init.to_string(),
    );
    assert_eq!(status, 403);
    let (status, _, _) = request(&addr, "DELETE", &[("Mcp-Session-Id", sid.as_str())], "");
    assert_eq!(status, 200);
    let (status, _, _) = request(&addr, "POST", &session, &call.to_string());
    assert_eq!(status, 404);
}

/// Reads until the server closes the connection or `within` passes: (what came, closed).
fn read_until_closed(s: &mut TcpStream, within: Duration) -> (String, bool) {
    s.set_read_timeout(Some(within)).unwrap();
    let mut got = Vec::new();
    let closed = s.read_to_end(&mut got).is_ok();
    (String::from_utf8_lossy(&got).into_owned(), closed)
}

#[test]
fn http_closes_slow_heads_and_short_bodies_within_its_timeouts() {
    let (_sim, addr) = start_http(&["--http-header-timeout", "0.5", "--http-body-timeout", "0.5"]);
    let started = std::time::Instant::now();
    let mut slow = TcpStream::connect(&addr).unwrap();
    slow.write_all(format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\n").as_bytes())
        .unwrap();
    // A head that announces 100 bytes of body, and 10 of them.
    let mut short = TcpStream::connect(&addr).unwrap();
    let whole = head(
        &addr,
        "POST",
        "/mcp",
        &[JSON, ACCEPT],
        &" ".repeat(100),
        false,
    );
    let sent = whole.len() - 90;
    short.write_all(&whole.as_bytes()[..sent]).unwrap();
    let (got, closed) = read_until_closed(&mut slow, Duration::from_secs(3));
    assert!(
        closed && !got.starts_with("HTTP/1.1 2"),
        "slowloris: {got:?}"
    );
    let (got, closed) = read_until_closed(&mut short, Duration::from_secs(3));
    assert!(closed, "short body: still open");
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn http_refuses_a_bad_address() {
    let out = device_sim_output(&["--http", "nowhere"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--http wants"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xiaozhi_ws_connects_out_says_hello_and_serves_the_envelope() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/xiaozhi/v1/", listener.local_addr().unwrap());
    let device_id = "Device-Id: 11:22:33:44:55:66";
    let mut child = device_sim(
        &["--xiaozhi-ws", &url, "--once", "--ws-header", device_id],
        false,
    );
    let log = log_text(&mut child);
    let (tcp, _) = tokio::time::timeout(Duration::from_secs(10), listener.accept())
        .await
        .unwrap()
        .unwrap();
    let mut ws = xiaozhi_handshake(tcp, "abc").await;
    for (id, msg) in [
        (
            1,
            json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}),
        ),
        (2, json!({"jsonrpc":"2.0","id":2,"method":"tools/list"})),
    ] {
        let answer = xiaozhi_ask(&mut ws, "abc", msg).await;
        assert_eq!(answer["session_id"], "abc");
        assert_eq!(answer["payload"]["id"], id);
        if id == 2 {
            assert!(
                answer["payload"]["result"]["tools"]
                    .as_array()
                    .unwrap()
                    .len()
                    >= 5
            );
        }
    }
    ws.close(None).await.unwrap();
    // `--once`: the device ends with the link.
    let waited = tokio::task::spawn_blocking(move || child.wait());
    let status = tokio::time::timeout(Duration::from_secs(10), waited)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(status.success());
    let log = log.lock().unwrap().clone();
    assert!(
        log.contains("hello from the server, session \"abc\""),
        "{log}"
    );
}
