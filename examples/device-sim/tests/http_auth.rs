//! `device-sim --http … --token T`: the bearer token on the Streamable HTTP endpoint, against the
//! real binary (plain HTTP/1.1 written by hand). Requests without the token, or with another,
//! get 401 with a `WWW-Authenticate` challenge and never reach the engine (the relay a refused
//! call would switch stays off, as `--ui`'s state shows); the protected-resource metadata is
//! served without the token.
#![allow(clippy::restriction, reason = "a test")]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::exchange as request;
use common::{ACCEPT, JSON, header, parse_response, start, state, state_until};
use serde_json::{Value, json};

const TOKEN: &str = "dev1ce-T0ken_with.all~chars+/==";

/// Sends `head` (everything up to and including the blank line) and `body`; returns the status,
/// the headers (lower-case names) and the body. The response must come within 5 s.
fn exchange(addr: &str, head: &str, body: &str) -> (u16, Vec<(String, String)>, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut raw = Vec::new();
    // Until the server closes (Connection: close), or, for a request whose body is left
    // unfinished, until the whole response has come.
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) => panic!("no (complete) response within 5 s: {e}; got {raw:?}"),
        }
        if let Some(done) = complete(&raw) {
            raw.truncate(done);
            break;
        }
    }
    parse_response(&raw)
}

/// The length of a complete response with a `content-length`, once it has all come.
fn complete(raw: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(raw).ok()?;
    let (head, _) = text.split_once("\r\n\r\n")?;
    let len: usize = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse().ok())?
    })?;
    let total = head.len() + 4 + len;
    (raw.len() >= total).then_some(total)
}

/// A 2026-07-28 `tools/call` that switches the relay on, and its headers.
fn relay_on() -> (String, [(&'static str, &'static str); 5]) {
    let call = json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"self.relay.set","arguments":{"on":true},
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}});
    (
        call.to_string(),
        [
            JSON,
            ACCEPT,
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "self.relay.set"),
        ],
    )
}

/// The calls the device's timeline recorded.
fn calls(s: &Value) -> usize {
    s["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "call")
        .count()
}

#[test]
fn without_the_token_nothing_reaches_the_engine() {
    let sim = start(&["--http", "127.0.0.1:0", "--token", TOKEN]);
    let http = sim.http.clone().unwrap();
    let metadata_url = format!("http://{http}/.well-known/oauth-protected-resource/mcp");
    let (call, call_headers) = relay_on();
    let with = |auth: Option<&str>| {
        let mut h = call_headers.to_vec();
        if let Some(a) = auth {
            h.push(("Authorization", a));
        }
        request(&http, "POST", "/mcp", &h, &call)
    };

    // No token: 401, the challenge without an error code, a JSON-RPC error body.
    let (status, headers, body) = with(None);
    assert_eq!(status, 401, "{body}");
    assert_eq!(
        header(&headers, "www-authenticate"),
        Some(format!(r#"Bearer resource_metadata="{metadata_url}""#).as_str())
    );
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert!(v["id"].is_null(), "the body was not read: {v}");

    // Credentials of another scheme are no bearer token either.
    let (status, headers, _) = with(Some("Basic dXNlcjpwYXNz"));
    assert_eq!(status, 401);
    assert!(
        !header(&headers, "www-authenticate")
            .unwrap()
            .contains("error="),
        "{headers:?}"
    );

    // A wrong token, and its near misses: 401 invalid_token.
    let invalid = format!(r#"Bearer resource_metadata="{metadata_url}", error="invalid_token""#);
    let wrong = [
        "Bearer wrong".to_string(),
        format!("Bearer {}", &TOKEN[..TOKEN.len() - 3]),
        format!("Bearer {TOKEN}x"),
        format!("Bearer x{TOKEN}"),
        format!("bearer {}", TOKEN.to_ascii_uppercase()),
        format!("Bearer {}", "A".repeat(5000)),
        "Bearer".to_string(),
    ];
    for auth in &wrong {
        let (status, headers, body) = with(Some(auth));
        assert_eq!(status, 401, "{auth}: {body}");
        assert_eq!(
            header(&headers, "www-authenticate"),
            Some(invalid.as_str()),
            "{auth}"
        );
    }

    // Every method of the endpoint, a legacy initialize included.
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let (status, headers, _) = request(&http, "POST", "/mcp", &[JSON, ACCEPT], &init.to_string());
    assert_eq!(status, 401);
    assert!(header(&headers, "mcp-session-id").is_none());
    let sse = [("Accept", "text/event-stream"), ("Mcp-Session-Id", "x")];
    assert_eq!(request(&http, "GET", "/mcp", &sse, "").0, 401);
    assert_eq!(request(&http, "DELETE", "/mcp", &sse, "").0, 401);

    // Refused before the body is read: a request that declares 2000 bytes and sends 10 is
    // answered at once (reading the body would wait for the rest, --http-body-timeout: 10 s).
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {http}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 2000\r\n\r\n"
    );
    let t0 = Instant::now();
    let (status, _, _) = exchange(&http, &head, r#"{"jsonrpc""#);
    assert_eq!(status, 401);
    assert!(t0.elapsed() < Duration::from_secs(5));

    // None of it reached the engine: no call, the relay off.
    let s = state(&sim);
    assert_eq!(s["relay"]["on"], false, "{s:#}");
    assert_eq!(calls(&s), 0, "{s:#}");

    // The device's token, the scheme in any case: the call runs and the relay goes on.
    let (status, _, body) = with(Some(&format!("bEaReR {TOKEN}")));
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["id"], 7, "{v}");
    assert_eq!(v["result"].get("isError"), None, "{v}");
    state_until(&sim, "the relay on", |s| s["relay"]["on"] == true);
}

/// Where a wrong token differs from the device's (first byte, last byte, length) shows nowhere
/// in the answer: the same status, challenge and body. (That the comparison's *time* does not
/// depend on it either is mcp-core's `Bearer::matches`, built on `subtle`'s constant-time
/// equality over a fixed span; no timed test here, which a busy machine would make flaky.)
#[test]
fn near_misses_are_answered_alike() {
    let sim = start(&["--http", "127.0.0.1:0", "--token", TOKEN]);
    let http = sim.http.clone().unwrap();
    let flip = |i: usize| {
        let mut t = TOKEN.as_bytes().to_vec();
        t[i] = if t[i] == b'a' { b'b' } else { b'a' };
        String::from_utf8(t).unwrap()
    };
    let probes = [
        flip(0),
        flip(TOKEN.trim_end_matches('=').len() - 1),
        TOKEN[..TOKEN.len() - 1].to_string(),
        format!("{TOKEN}A"),
    ];
    let answers: Vec<_> = probes
        .iter()
        .map(|t| {
            let auth = format!("Bearer {t}");
            let (status, headers, body) = request(
                &http,
                "POST",
                "/mcp",
                &[JSON, ACCEPT, ("Authorization", &auth)],
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            );
            (
                status,
                header(&headers, "www-authenticate").map(str::to_owned),
                body,
            )
        })
        .collect();
    assert_eq!(answers[0].0, 401);
    for a in &answers[1..] {
        assert_eq!(a, &answers[0]);
    }
}

#[test]
fn the_metadata_document_is_served_without_the_token() {
    let sim = start(&["--http", "127.0.0.1:0", "--token", TOKEN]);
    let http = sim.http.clone().unwrap();
    let expected = json!({
        "resource": format!("http://{http}/mcp"),
        "bearer_methods_supported": ["header"],
    });
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let (status, headers, body) = request(&http, "GET", path, &[], "");
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(header(&headers, "content-type"), Some("application/json"));
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v, expected, "{path}");
    }
    // The resource is the endpoint as the client named it.
    let port = http.rsplit_once(':').unwrap().1;
    let host = format!("localhost:{port}");
    let mut s = TcpStream::connect(&http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let v: Value = serde_json::from_str(raw.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(v["resource"], format!("http://{host}/mcp"));
    // The Host/Origin rule still comes first.
    let (status, _, _) = request(
        &http,
        "GET",
        "/.well-known/oauth-protected-resource",
        &[("Origin", "http://evil.example")],
        "",
    );
    assert_eq!(status, 403);
    // Other well-known documents are not served.
    let (status, _, _) = request(
        &http,
        "GET",
        "/.well-known/oauth-protected-resource/other",
        &[],
        "",
    );
    assert_eq!(status, 404);
}

#[test]
fn without_a_token_the_endpoint_is_open_and_serves_no_metadata() {
    let sim = start(&["--http", "127.0.0.1:0"]);
    let http = sim.http.clone().unwrap();
    let (call, headers) = relay_on();
    let (status, _, body) = request(&http, "POST", "/mcp", &headers, &call);
    assert_eq!(status, 200, "{body}");
    let (status, _, _) = request(
        &http,
        "GET",
        "/.well-known/oauth-protected-resource",
        &[],
        "",
    );
    assert_eq!(status, 404);
}

#[test]
fn token_file_and_bad_tokens() {
    let dir = std::env::temp_dir().join(format!("device-sim-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("token");
    std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
    let sim = start(&[
        "--http",
        "127.0.0.1:0",
        "--token-file",
        file.to_str().unwrap(),
    ]);
    let http = sim.http.clone().unwrap();
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let modern = [
        JSON,
        ACCEPT,
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/list"),
    ];
    assert_eq!(request(&http, "POST", "/mcp", &modern, list).0, 401);
    let auth = format!("Bearer {TOKEN}");
    let mut with = modern.to_vec();
    with.push(("Authorization", &auth));
    let (status, _, body) = request(&http, "POST", "/mcp", &with, list);
    assert_eq!(status, 200, "{body}");
    drop(sim);

    // A token that is no bearer token is refused at start, naming the flag.
    std::fs::write(&file, "two words\n").unwrap();
    for args in [
        vec!["--token", "has space"],
        vec!["--token", ""],
        vec!["--token-file", file.to_str().unwrap()],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_device-sim"))
            .args(["--http", "127.0.0.1:0"])
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("not a bearer token"), "{args:?}: {err}");
    }
    // --token needs --http.
    let out = Command::new(env!("CARGO_BIN_EXE_device-sim"))
        .args(["--stdio", "--token", TOKEN])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let _ = std::fs::remove_dir_all(&dir);
}
