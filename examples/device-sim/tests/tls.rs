//! TLS on every outbound link of the real device-sim binary (issue 32), on loopback with a test
//! CA made at test time: `wss://` to a backend whose certificate chains to `--ca-file` reaches a
//! session; a wrong root, an expired certificate and one for another name are refused, and the
//! log says which; `mqtts://` to mosquitto's TLS listener publishes the device's presence.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::result_large_err
)] // a test (tungstenite's handshake callback returns its large error type)

use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use mqtt_fleet::certs::{Issued, TestCa, Validity};
use mqtt_fleet::{Broker, Client};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};

/// A TLS acceptor serving `server`'s certificate.
fn acceptor(server: &Issued) -> tokio_rustls::TlsAcceptor {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&server.cert)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(&server.key).unwrap();
    #[allow(deprecated, reason = "the test server's provider is irrelevant")]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
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
        let hello = next_text(&mut ws).await;
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
        let answer = next_text(&mut ws).await;
        seen.initialized = answer["payload"]["result"]["protocolVersion"] == "2024-11-05";
        ws.close(None).await.unwrap();
        return seen;
    }
}

async fn next_text<S>(ws: &mut tokio_tungstenite::WebSocketStream<S>) -> Value
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    loop {
        let m = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let Message::Text(t) = m {
            return serde_json::from_str(t.as_str()).unwrap();
        }
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
    assert!(
        log.contains("certificate refused — unknown issuer"),
        "{log}"
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
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqtts_publishes_the_presence_and_a_wrong_root_is_refused() {
    let ca = TestCa::new("broker-ca").unwrap();
    let server = ca.issue("broker", &["localhost"], Validity::Now).unwrap();
    let Some(broker) = Broker::for_test_tls(&server) else {
        return;
    };
    let url = broker.tls_url().unwrap();
    let client = Client::connect(&broker.url(), "tls-watcher").unwrap();
    let mut good = tokio::process::Command::new(env!("CARGO_BIN_EXE_device-sim"))
        .args(["--mqtt", &url, "--device-id", "tls-dev", "--ca-file"])
        .arg(&ca.pem)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
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
    let mut bad = tokio::process::Command::new(env!("CARGO_BIN_EXE_device-sim"))
        .args(["--mqtt", &url, "--device-id", "tls-bad", "--ca-file"])
        .arg(&other.pem)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut err = bad.stderr.take().unwrap();
    let mut log = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        use tokio::io::AsyncReadExt;
        let mut buf = [0u8; 4096];
        while !log.contains("unknown issuer") {
            let n = err.read(&mut buf).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            log.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
    .await;
    let _ = bad.kill().await;
    assert!(
        log.contains("certificate refused — unknown issuer"),
        "{log}"
    );
    assert!(!client.devices().contains_key("tls-bad"));
    client.close().await;
}
