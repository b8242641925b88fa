//! TLS on every outbound link of the real device-sim binary, on loopback with a test
//! CA made at test time: `wss://` to a backend whose certificate chains to `--ca-file` reaches a
//! session; a wrong root, an expired certificate and one for another name are refused, and the
//! log says which; `mqtts://` to mosquitto's TLS listener publishes the device's presence.
#![allow(clippy::restriction, reason = "a test")]
#![allow(
    clippy::result_large_err,
    reason = "tungstenite's handshake callback returns its large error type"
)]

mod common;

use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::{accept_seeing, next_text};
use futures_util::SinkExt;
use mqtt_fleet::certs::{Issued, TestCa, Validity};
use mqtt_fleet::{Broker, Client};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};

/// A listener on a free loopback port, and `url` of that port.
async fn listening(url: fn(u16) -> String) -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = url(listener.local_addr().unwrap().port());
    (listener, url)
}

/// A TLS acceptor serving `server`'s certificate.
fn acceptor(server: &Issued) -> tokio_rustls::TlsAcceptor {
    tokio_rustls::TlsAcceptor::from(common::tls_server_config(server))
}

/// What the backend saw of one session.
#[derive(Debug, Default)]
struct Seen {
    authorization: Option<String>,
    device_id: Option<String>,
    /// The device answered `initialize` in the session.
    initialized: bool,
}

/// A xiaozhi-style backend behind TLS: accepts one connection that completes the TLS handshake,
/// upgrades it, exchanges hellos, initializes, and closes. Connections whose handshake fails
/// (the device refused the certificate) are skipped.
async fn wss_backend(listener: TcpListener, server: Issued) -> Seen {
    let tls = acceptor(&server);
    loop {
        let (tcp, _) = listener.accept().await.unwrap();
        let Ok(stream) = tls.accept(tcp).await else {
            continue;
        };
        let mut seen = Seen::default();
        let mut ws =
            tokio_tungstenite::accept_hdr_async(stream, |req: &Request, resp: Response| {
                let header = |n: &str| {
                    req.headers()
                        .get(n)
                        .map(|v| v.to_str().unwrap().to_string())
                };
                seen.authorization = header("authorization");
                seen.device_id = header("device-id");
                Ok(resp)
            })
            .await
            .unwrap();
        let hello = next_text(&mut ws, Duration::from_secs(10)).await;
        assert_eq!(hello["type"], "hello");
        ws.send(Message::text(
            json!({"type":"hello","transport":"websocket","session_id":"tls-1"}).to_string(),
        ))
        .await
        .unwrap();
        let init = json!({"session_id":"tls-1","type":"mcp","payload":{"jsonrpc":"2.0","id":1,
            "method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},
            "clientInfo":{"name":"backend","version":"1"}}}});
        ws.send(Message::text(init.to_string())).await.unwrap();
        let answer = next_text(&mut ws, Duration::from_secs(10)).await;
        seen.initialized = answer["payload"]["result"]["protocolVersion"] == "2024-11-05";
        ws.close(None).await.unwrap();
        return seen;
    }
}

/// Runs device-sim with `args` until it exits (at most 30 s).
async fn sim(args: Vec<String>) -> Output {
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_device-sim"))
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("device-sim exits")
        .unwrap()
}

/// `device-sim --xiaozhi-ws wss://localhost:PORT/… --once` against a backend with `server`'s
/// certificate, trusting `ca`: what the backend saw (if a session came about) and the process's
/// output.
async fn wss_session(server: Issued, ca: &TestCa) -> (Option<Seen>, Output) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let backend = tokio::spawn(wss_backend(listener, server));
    let out = sim(vec![
        "--xiaozhi-ws".into(),
        format!("wss://localhost:{port}/xiaozhi/v1/"),
        "--ca-file".into(),
        ca.pem.display().to_string(),
        "--ws-header".into(),
        "Authorization: Bearer tls-token".into(),
        "--ws-header".into(),
        "Device-Id: 02:00:00:00:00:01".into(),
        "--once".into(),
    ])
    .await;
    let seen = if out.status.success() {
        Some(
            tokio::time::timeout(Duration::from_secs(5), backend)
                .await
                .unwrap()
                .unwrap(),
        )
    } else {
        backend.abort();
        None
    };
    (seen, out)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wss_with_the_right_root_reaches_a_session_with_its_token() {
    let ca = TestCa::new("backend-ca").unwrap();
    let server = ca.issue("backend", &["localhost"], Validity::Now).unwrap();
    let (seen, out) = wss_session(server, &ca).await;
    let seen = seen.unwrap_or_else(|| panic!("no session: {}", stderr(&out)));
    assert!(seen.initialized, "{seen:?}");
    assert_eq!(seen.authorization.as_deref(), Some("Bearer tls-token"));
    assert_eq!(seen.device_id.as_deref(), Some("02:00:00:00:00:01"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wss_with_a_wrong_root_is_refused_and_says_unknown_issuer() {
    let ca = TestCa::new("backend-ca").unwrap();
    let other = TestCa::new("someone-else").unwrap();
    let server = other
        .issue("backend", &["localhost"], Validity::Now)
        .unwrap();
    let (seen, out) = wss_session(server, &ca).await;
    assert!(seen.is_none());
    assert!(!out.status.success());
    let log = stderr(&out);
    assert!(log.contains(&unknown_issuer()), "{log}");
}

/// What a refused certificate of an unknown issuer is said to be, whole: the log never cuts
/// the hint short.
fn unknown_issuer() -> String {
    mcp_host::tls::describe(&rustls::Error::InvalidCertificate(
        rustls::CertificateError::UnknownIssuer,
    ))
}

/// A certificate that signs itself is refused as the docs say, "unknown
/// issuer (self-signed)", with the whole hint (what to give `--ca-file`), whether the device
/// trusts another CA or only the system's roots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wss_with_a_self_signed_certificate_is_refused_and_says_unknown_issuer_self_signed() {
    let ca = TestCa::new("backend-ca").unwrap();
    let server = ca.self_signed("selfie", &["localhost"]).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let backend = tokio::spawn(wss_backend(listener, server));
    // Reconnecting (no --once): each refusal is a `disconnected (…)` line, the whole of it.
    let url = format!("wss://localhost:{port}/xiaozhi/v1/");
    let ca_file = ca.pem.display().to_string();
    let args = [
        "--xiaozhi-ws",
        &url,
        "--ca-file",
        &ca_file,
        "--ws-backoff-first",
        "0.2",
    ];
    let mut sim = common::Running(common::device_sim(&args, false));
    let log = common::log_lines(&mut sim.0);
    let line = tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = log.recv_timeout(left).expect("a disconnected line");
            if line.contains("disconnected (") {
                return line;
            }
        }
    })
    .await
    .unwrap();
    drop(sim);
    assert!(!backend.is_finished(), "no session");
    backend.abort();
    assert!(
        line.contains("certificate refused — unknown issuer (self-signed)"),
        "{line}"
    );
    assert!(
        line.contains("with --ca-file)"),
        "the hint is whole: {line}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wss_with_an_expired_certificate_is_refused_and_says_expired() {
    let ca = TestCa::new("backend-ca").unwrap();
    let server = ca.issue("old", &["localhost"], Validity::Expired).unwrap();
    let (seen, out) = wss_session(server, &ca).await;
    assert!(seen.is_none());
    let log = stderr(&out);
    assert!(log.contains("certificate refused — expired"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wss_with_a_certificate_for_another_name_is_refused_and_says_wrong_name() {
    let ca = TestCa::new("backend-ca").unwrap();
    let server = ca
        .issue("elsewhere", &["other.example"], Validity::Now)
        .unwrap();
    let (seen, out) = wss_session(server, &ca).await;
    assert!(seen.is_none());
    let log = stderr(&out);
    assert!(log.contains("certificate refused — wrong name"), "{log}");
    assert!(log.contains("other.example"), "{log}");
}

#[test]
fn an_unreadable_ca_file_is_refused_before_connecting() {
    let out = Command::new(env!("CARGO_BIN_EXE_device-sim"))
        .args([
            "--xiaozhi-ws",
            "wss://localhost:9/",
            "--ca-file",
            "/nonexistent/ca.pem",
            "--once",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let log = stderr(&out);
    assert!(log.contains("--ca-file /nonexistent/ca.pem"), "{log}");
}

/// `--mqtt mqtts://localhost:PORT --ca-file ca.pem`: the device reaches mosquitto's TLS
/// listener and publishes its presence, seen by a client on the broker's plain listener; with
/// the wrong root it never does, and its log says why.
/// `device-sim --mqtt URL --device-id ID --ca-file` with `ca`'s certificate, killed when
/// dropped; its stderr goes to `stderr`.
fn mqtts_device(url: &str, id: &str, ca: &TestCa, stderr: Stdio) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_device-sim"))
        .args(["--mqtt", url, "--device-id", id, "--ca-file"])
        .arg(&ca.pem)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqtts_publishes_the_presence_and_a_wrong_root_is_refused() {
    let Some((broker, ca)) = Broker::for_test_tls("broker-ca") else {
        return;
    };
    let url = broker.tls_url().unwrap();
    let client = Client::connect(&broker.url(), "tls-watcher").unwrap();
    let mut good = mqtts_device(&url, "tls-dev", &ca, Stdio::null());
    assert!(
        client.wait_for_online(1, Duration::from_secs(15)).await,
        "{:?}",
        client.devices()
    );
    let init = client
        .initialize("tls-dev", Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "device-sim");
    let _ = good.kill().await;

    // The wrong root: the device retries, refused each time, and says why.
    let other = TestCa::new("someone-else").unwrap();
    let mut bad = mqtts_device(&url, "tls-bad", &other, Stdio::piped());
    let mut err = bad.stderr.take().unwrap();
    let mut log = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        use tokio::io::AsyncReadExt;
        let mut buf = [0u8; 4096];
        while !log.contains("--ca-file") {
            let n = err.read(&mut buf).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            log.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
    .await;
    let _ = bad.kill().await;
    assert!(log.contains(&unknown_issuer()), "{log}");
    assert!(!client.devices().contains_key("tls-bad"));
    client.close().await;
}

/// ESC, BEL, CR, a right-to-left override, a zero-width space and joiner, and a word joiner.
const HOSTILE: &str = "\u{1b}[2J\u{7}\r\u{202e}\u{200b}\u{200d}\u{2060}";

/// One OTA check as the server got it: its headers (names in lower case) and its JSON body.
type Check = (Vec<(String, String)>, Value);

/// What the OTA server does with each check.
#[derive(Clone)]
struct Ota {
    /// The WebSocket URL it hands out.
    ws: String,
    /// Answer with an activation code until this is set.
    bound: Arc<std::sync::atomic::AtomicBool>,
    /// The checks it got: (headers, body).
    checks: Arc<std::sync::Mutex<Vec<Check>>>,
    /// Every string it hands out carries terminal escapes, bidi and zero-width characters.
    hostile: bool,
}

/// Serves one OTA check on `stream`: reads the request, records it, answers like the backend
/// (`server_time`, `firmware`, `websocket` with a token, and `activation` while not bound).
async fn ota_answer<S>(mut stream: S, ota: Ota)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    let (head_end, len) = loop {
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the request ended early");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse::<usize>().unwrap());
            break (i + 4, len);
        }
    };
    while buf.len() < head_end + len {
        let n = stream.read(&mut chunk).await.unwrap();
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    assert!(
        head.starts_with("POST /xiaozhi/ota/ HTTP/1.1\r\n"),
        "{head}"
    );
    let headers: Vec<(String, String)> = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let body: Value = serde_json::from_slice(&buf[head_end..head_end + len]).unwrap();
    ota.checks.lock().unwrap().push((headers, body));
    let mut answer = json!({
        "server_time": {"timestamp": 1_765_000_000_000_u64, "timezone_offset": 480},
        "firmware": {"version": "9.9.9", "url": "https://ota.example/fw.bin"},
        "websocket": {"url": ota.ws, "token": "ota-token"},
    });
    if !ota.bound.load(std::sync::atomic::Ordering::SeqCst) {
        answer["activation"] = json!({"code": "123456", "message": "bind me\u{1b}[31m at the console", "challenge": "c"});
    }
    if ota.hostile {
        answer["firmware"] = json!({"version": format!("9.9.9{HOSTILE}"), "url": format!("https://ota.example/fw.bin{HOSTILE}")});
        if let Some(a) = answer.get_mut("activation") {
            a["code"] = json!(format!("123{HOSTILE}456"));
            a["message"] = json!(format!("bind me{HOSTILE}"));
        }
    }
    let body = answer.to_string();
    let reply = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(reply.as_bytes()).await.unwrap();
    let _ = stream.shutdown().await;
}

/// An OTA server on loopback (`https` with `server`'s certificate, else plain `http`).
async fn ota_server(listener: TcpListener, server: Option<Issued>, ota: Ota) {
    let tls = server.as_ref().map(acceptor);
    loop {
        let (tcp, _) = listener.accept().await.unwrap();
        let ota = ota.clone();
        match &tls {
            Some(tls) => {
                if let Ok(stream) = tls.accept(tcp).await {
                    tokio::spawn(ota_answer(stream, ota));
                }
            }
            None => {
                tokio::spawn(ota_answer(tcp, ota));
            }
        }
    }
}

/// `device-sim --xiaozhi-ota https://…/xiaozhi/ota/ --ca-file ca.pem` posts the
/// device's description, is handed a `wss://` URL and a token, and reaches a session there with
/// that token and xiaozhi's headers; the newer firmware in the answer is reported, not
/// installed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ota_check_hands_out_the_wss_url_and_token_and_a_session_follows() {
    let ca = TestCa::new("service-ca").unwrap();
    let server = ca.issue("service", &["localhost"], Validity::Now).unwrap();
    let (ws_listener, ws) = listening(|port| format!("wss://localhost:{port}/xiaozhi/v1/")).await;
    let backend = tokio::spawn(wss_backend(ws_listener, server.clone()));
    let ota = Ota {
        ws,
        bound: Arc::new(true.into()),
        checks: Arc::default(),
        hostile: false,
    };
    let (ota_listener, ota_url) =
        listening(|port| format!("https://localhost:{port}/xiaozhi/ota/")).await;
    let ota_task = tokio::spawn(ota_server(ota_listener, Some(server), ota.clone()));
    let out = sim(vec![
        "--xiaozhi-ota".into(),
        ota_url,
        "--ca-file".into(),
        ca.pem.display().to_string(),
        "--mac".into(),
        "02:aa:bb:cc:dd:ee".into(),
        "--once".into(),
    ])
    .await;
    ota_task.abort();
    let log = stderr(&out);
    assert!(out.status.success(), "{log}");
    let seen = tokio::time::timeout(Duration::from_secs(5), backend)
        .await
        .unwrap()
        .unwrap();
    assert!(seen.initialized, "{seen:?}");
    assert_eq!(seen.authorization.as_deref(), Some("Bearer ota-token"));
    assert_eq!(seen.device_id.as_deref(), Some("02:aa:bb:cc:dd:ee"));
    let checks = ota.checks.lock().unwrap();
    assert_eq!(checks.len(), 1);
    let (headers, body) = &checks[0];
    let header = |n: &str| {
        headers
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(header("device-id"), Some("02:aa:bb:cc:dd:ee"));
    assert_eq!(
        header("client-id"),
        Some("00000000-0000-4000-8000-02aabbccddee")
    );
    assert_eq!(header("content-type"), Some("application/json"));
    assert_eq!(body["application"]["name"], "device-sim");
    assert!(body["application"]["version"].is_string(), "{body}");
    assert_eq!(body["board"]["type"], "device-sim");
    assert_eq!(body["mac_address"], "02:aa:bb:cc:dd:ee");
    assert!(log.contains("a newer firmware is offered: 9.9.9"), "{log}");
    assert!(log.contains("not installed"), "{log}");
}

/// Not bound yet: the activation code is shown in the log and on the page (`/sim/state`), with
/// the server's text escaped, and the check repeated; once the user binds the device (the
/// server stops sending `activation`), it connects where the answer says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_activation_code_is_shown_until_the_device_is_bound() {
    let (ws_listener, ws) = listening(|port| format!("ws://127.0.0.1:{port}/xiaozhi/v1/")).await;
    let backend = tokio::spawn(async move {
        let (tcp, _) = ws_listener.accept().await.unwrap();
        accept_seeing(tcp, "authorization").await.1
    });
    let ota = Ota {
        ws,
        bound: Arc::new(false.into()),
        checks: Arc::default(),
        hostile: false,
    };
    let (ota_listener, ota_url) =
        listening(|port| format!("http://127.0.0.1:{port}/xiaozhi/ota/")).await;
    let ota_task = tokio::spawn(ota_server(ota_listener, None, ota.clone()));
    let url = ota_url.clone();
    let sim = tokio::task::spawn_blocking(move || {
        common::start(&["--xiaozhi-ota", &url, "--ota-retry", "0.2"])
    })
    .await
    .unwrap();
    let state = tokio::task::spawn_blocking({
        let ui = sim.ui.clone();
        move || {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                let (_, s) = common::api_at(&ui, "GET", "/sim/state", None);
                if !s["activation"].is_null() || std::time::Instant::now() > deadline {
                    return s;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(state["activation"]["code"], "123456", "{state}");
    assert!(
        state["activation"]["message"]
            .as_str()
            .unwrap()
            .starts_with("bind me"),
        "{state}"
    );
    // Asked again meanwhile, not connected anywhere yet.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(ota.checks.lock().unwrap().len() >= 2);
    assert!(!backend.is_finished());
    // The user binds the device: the next check has no activation, and the device connects.
    ota.bound.store(true, std::sync::atomic::Ordering::SeqCst);
    let auth = tokio::time::timeout(Duration::from_secs(10), backend)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(auth.as_deref(), Some("Bearer ota-token"));
    let ui = sim.ui.clone();
    let state =
        tokio::task::spawn_blocking(move || common::api_at(&ui, "GET", "/sim/state", None).1)
            .await
            .unwrap();
    assert!(state["activation"].is_null(), "{state}");
    assert_eq!(state["firmware_offered"]["offered"], "9.9.9");
    ota_task.abort();
    drop(sim);
}

/// What an OTA/config server says — an activation code and its message, a
/// firmware offer — reaches `/sim/state` (and so the `--ui` page) through the one sanitizer
/// every wire string goes through (`mcp_core::transport::escape`): no raw control, bidi or
/// zero-width character anywhere in the state, the code still readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_an_ota_server_says_reaches_the_page_sanitized() {
    let (ws_listener, ws) = listening(|port| format!("ws://127.0.0.1:{port}/xiaozhi/v1/")).await;
    let _backend = tokio::spawn(async move {
        let (tcp, _) = ws_listener.accept().await.unwrap();
        let (ws, _) = accept_seeing(tcp, "authorization").await;
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(ws);
    });
    let ota = Ota {
        ws,
        bound: Arc::new(false.into()),
        checks: Arc::default(),
        hostile: true,
    };
    let (ota_listener, ota_url) =
        listening(|port| format!("http://127.0.0.1:{port}/xiaozhi/ota/")).await;
    let ota_task = tokio::spawn(ota_server(ota_listener, None, ota.clone()));
    let sim = tokio::task::spawn_blocking(move || {
        common::start(&["--xiaozhi-ota", &ota_url, "--ota-retry", "0.2"])
    })
    .await
    .unwrap();
    let ui = sim.ui.clone();
    let wait_state = move |what: &'static str, ok: fn(&Value) -> bool| {
        let ui = ui.clone();
        tokio::task::spawn_blocking(move || {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                let (_, s) = common::api_at(&ui, "GET", "/sim/state", None);
                if ok(&s) {
                    return s;
                }
                assert!(std::time::Instant::now() < deadline, "{what}: {s}");
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let before = wait_state("the activation code", |s| !s["activation"].is_null())
        .await
        .unwrap();
    ota.bound.store(true, std::sync::atomic::Ordering::SeqCst);
    let after = wait_state("the firmware offer", |s| !s["firmware_offered"].is_null())
        .await
        .unwrap();
    ota_task.abort();
    /// Every string in `v`, with where it is.
    fn strings<'a>(v: &'a Value, at: String, out: &mut Vec<(String, &'a str)>) {
        match v {
            Value::String(s) => out.push((at, s)),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .for_each(|(i, v)| strings(v, format!("{at}[{i}]"), out)),
            Value::Object(o) => o
                .iter()
                .for_each(|(k, v)| strings(v, format!("{at}.{k}"), out)),
            _ => {}
        }
    }
    for state in [&before, &after] {
        let mut all = Vec::new();
        strings(state, String::new(), &mut all);
        for (at, s) in all {
            assert!(
                !s.chars().any(|c| c.is_control()
                    || matches!(c, '\u{202a}'..='\u{202e}' | '\u{200b}'..='\u{200d}' | '\u{2060}')),
                "{at} carries a raw control, bidi or zero-width character: {s:?}"
            );
        }
    }
    let code = before["activation"]["code"].as_str().unwrap();
    assert!(code.starts_with("123\\u{1b}[2J"), "{code}");
    assert!(code.ends_with("456"), "{code}");
    let offered = after["firmware_offered"]["offered"].as_str().unwrap();
    assert!(offered.starts_with("9.9.9\\u{1b}"), "{offered}");
    drop(sim);
}

/// A token obtained over TLS never travels in clear beyond loopback. An
/// `https://` OTA/config check whose answer names a plain `ws://` URL on another address
/// (10.38.0.1, given to `lo` inside a network namespace of the test's own: no real address is
/// ever contacted) gets its link without the token, and the log says why; the same answer
/// naming `ws://127.0.0.1` (this machine) keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_from_an_https_check_never_goes_in_clear_beyond_loopback() {
    const NAME: &str = "a_token_from_an_https_check_never_goes_in_clear_beyond_loopback";
    if std::env::var_os(common::NETNS_INSIDE).is_none() {
        let setup = "ip link set lo up && ip addr add 10.38.0.1/32 dev lo";
        if !common::in_private_netns(NAME, setup) {
            eprintln!("{NAME}: not run (no private network namespace for a non-loopback address)");
        }
        return;
    }
    let ca = TestCa::new("ota-ca").unwrap();
    let server = ca.issue("ota", &["localhost"], Validity::Now).unwrap();
    // What a plain WebSocket backend at `bind` saw of the device's upgrade: its Authorization.
    let plain_backend = |bind: &'static str| async move {
        let listener = TcpListener::bind(bind).await.unwrap();
        let url = format!("ws://{}/xiaozhi/v1/", listener.local_addr().unwrap());
        let seen = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let (mut ws, auth) = accept_seeing(tcp, "authorization").await;
            ws.send(Message::text(
                json!({"type":"hello","transport":"websocket","session_id":"c-1"}).to_string(),
            ))
            .await
            .unwrap();
            let _ = ws.close(None).await;
            auth
        });
        (url, seen)
    };
    for (bind, token_goes) in [("10.38.0.1:0", false), ("127.0.0.1:0", true)] {
        let (ws, seen) = plain_backend(bind).await;
        let ota = Ota {
            ws: ws.clone(),
            bound: Arc::new(true.into()),
            checks: Arc::default(),
            hostile: false,
        };
        let (ota_listener, ota_url) =
            listening(|port| format!("https://localhost:{port}/xiaozhi/ota/")).await;
        let ota_task = tokio::spawn(ota_server(ota_listener, Some(server.clone()), ota));
        let out = sim(vec![
            "--xiaozhi-ota".into(),
            ota_url,
            "--ca-file".into(),
            ca.pem.display().to_string(),
            "--once".into(),
        ])
        .await;
        ota_task.abort();
        let log = stderr(&out);
        let auth = tokio::time::timeout(Duration::from_secs(10), seen)
            .await
            .unwrap_or_else(|_| panic!("no connection to {ws}: {log}"))
            .unwrap();
        if token_goes {
            assert_eq!(auth.as_deref(), Some("Bearer ota-token"), "{ws}: {log}");
            assert!(!log.contains("in clear"), "{log}");
        } else {
            assert_eq!(auth, None, "the token went in clear to {ws}: {log}");
            assert!(
                log.contains("without the token") && log.contains("in clear"),
                "{log}"
            );
        }
    }
}
