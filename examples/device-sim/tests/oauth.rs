//! `device-sim --http … --oauth-issuer URL`: the device as an OAuth resource server, against the
//! real binary. Access tokens are signed here (ES256, mcp-core's test keys); the authorization
//! server's metadata and keys come from a file (`--oauth-jwks`) or from a small server on
//! loopback that serves its RFC 8414 metadata and JWKS (and rotates its keys). A token admits a
//! call only when it is signed by the server's key and names the issuer, this endpoint as its
//! audience, a time that has not passed, and the scope; every other is refused before the engine
//! sees anything (the relay stays off). The follow-up paths an OAuth client tries answer a JSON
//! OAuth error.
#![allow(clippy::restriction, reason = "a test")]

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use common::{ACCEPT, JSON, exchange, header, start, state};
use mqtt_fleet::certs::{Issued, TestCa, Validity};
use p256::ecdsa::SigningKey;
use p256::ecdsa::signature::Signer as _;
use p256::pkcs8::DecodePrivateKey as _;
use serde_json::{Value, json};

const SCOPE: &str = "mcp:tools";

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

fn key() -> SigningKey {
    SigningKey::from_pkcs8_pem(include_str!("../../../mcp-core/tests/keys/ec256.pem")).unwrap()
}

fn other_key() -> SigningKey {
    SigningKey::from_pkcs8_pem(include_str!("../../../mcp-core/tests/keys/ec256-other.pem"))
        .unwrap()
}

fn jwk(k: &SigningKey, kid: &str) -> Value {
    let p = k.verifying_key().to_encoded_point(false);
    json!({"kty":"EC","crv":"P-256","kid":kid,"alg":"ES256","use":"sig",
           "x": b64(p.x().unwrap()), "y": b64(p.y().unwrap())})
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn sign(k: &SigningKey, kid: &str, claims: &Value) -> String {
    let input = format!(
        "{}.{}",
        b64(json!({"alg":"ES256","typ":"at+jwt","kid":kid})
            .to_string()
            .as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let sig: p256::ecdsa::Signature = k.sign(input.as_bytes());
    format!("{input}.{}", b64(&sig.to_bytes()))
}

/// A 2025-11-25 `initialize` with `token` (if any): the status and the challenge.
fn initialize(http: &str, token: Option<&str>) -> (u16, String, String) {
    initialize_at(http, None, token)
}

/// [`initialize`] naming `host` in `Host` (else the address).
fn initialize_at(http: &str, host: Option<&str>, token: Option<&str>) -> (u16, String, String) {
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"oauth-test","version":"1"}}});
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![JSON, ACCEPT];
    if let Some(a) = &auth {
        headers.push(("Authorization", a));
    }
    if let Some(h) = host {
        headers.push(("Host", h));
    }
    let (status, h, body) = exchange(http, "POST", "/mcp", &headers, &init.to_string());
    let challenge = header(&h, "www-authenticate").unwrap_or_default();
    (status, challenge.to_string(), body)
}

/// A 2026-07-28 call that switches the relay on, with `token`.
fn relay_on(http: &str, token: &str) -> u16 {
    let call = json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"self.relay.set","arguments":{"on":true},
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}});
    let auth = format!("Bearer {token}");
    exchange(
        http,
        "POST",
        "/mcp",
        &[
            JSON,
            ACCEPT,
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "self.relay.set"),
            ("Authorization", &auth),
        ],
        &call.to_string(),
    )
    .0
}

fn claims(issuer: &str, aud: &str) -> Value {
    json!({"iss": issuer, "aud": aud, "sub": "user-1", "client_id": "c1", "scope": format!("openid {SCOPE}"),
           "iat": now() - 5, "exp": now() + 600})
}

fn jwks_file(doc: &Value) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!(
        "device-sim-oauth-{}-{}.json",
        std::process::id(),
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    ));
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

#[test]
fn access_tokens_admit_only_when_every_rule_holds() {
    let issuer = "http://127.0.0.1:1/as";
    let keys = jwks_file(&json!({"keys":[jwk(&key(), "k1")]}));
    let sim = start(&[
        "--http",
        "127.0.0.1:0",
        "--oauth-issuer",
        issuer,
        "--oauth-scope",
        SCOPE,
        "--oauth-jwks",
        keys.to_str().unwrap(),
    ]);
    let http = sim.http.clone().unwrap();
    let aud = format!("http://{http}/mcp");

    // Discovery: the metadata names the authorization server and the scope.
    let (status, _, body) = exchange(
        &http,
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        &[],
        "",
    );
    assert_eq!(status, 200);
    let meta: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        meta,
        json!({"resource": aud, "authorization_servers": [issuer], "scopes_supported": [SCOPE],
               "bearer_methods_supported": ["header"]})
    );
    let (status, challenge, _) = initialize(&http, None);
    assert_eq!(status, 401);
    assert_eq!(
        challenge,
        format!(
            r#"Bearer resource_metadata="http://{http}/.well-known/oauth-protected-resource/mcp", scope="{SCOPE}""#
        )
    );

    let good = sign(&key(), "k1", &claims(issuer, &aud));
    let with = |f: &dyn Fn(&mut Value)| {
        let mut c = claims(issuer, &aud);
        f(&mut c);
        sign(&key(), "k1", &c)
    };
    let refused: Vec<(&str, String, u16, &str)> = vec![
        (
            "another key",
            sign(&other_key(), "k1", &claims(issuer, &aud)),
            401,
            "invalid_token",
        ),
        (
            "a kid not in the keys",
            sign(&key(), "k2", &claims(issuer, &aud)),
            401,
            "invalid_token",
        ),
        (
            "another issuer",
            with(&|c| c["iss"] = json!("http://127.0.0.1:2/as")),
            401,
            "invalid_token",
        ),
        (
            "another resource",
            with(&|c| c["aud"] = json!("http://127.0.0.1:9/mcp")),
            401,
            "invalid_token",
        ),
        (
            "expired",
            with(&|c| c["exp"] = json!(now() - 120)),
            401,
            "invalid_token",
        ),
        (
            "not yet valid",
            with(&|c| c["nbf"] = json!(now() + 600)),
            401,
            "invalid_token",
        ),
        (
            "without the scope",
            with(&|c| c["scope"] = json!("openid")),
            403,
            "insufficient_scope",
        ),
        (
            "alg none",
            {
                let h = b64(br#"{"alg":"none"}"#);
                let p = good.split('.').nth(1).unwrap();
                format!("{h}.{p}.")
            },
            401,
            "invalid_token",
        ),
    ];
    for (what, token, status, error) in &refused {
        let (got, challenge, body) = initialize(&http, Some(token));
        assert_eq!(got, *status, "{what}: {body}");
        assert!(
            challenge.contains(&format!("error=\"{error}\"")),
            "{what}: {challenge}"
        );
        assert_eq!(relay_on(&http, token), *status, "{what}");
    }
    assert_eq!(
        state(&sim)["relay"]["on"],
        false,
        "nothing reached the engine"
    );
    let (status, _, body) = initialize(&http, Some(&good));
    assert_eq!(status, 200, "{body}");
    assert_eq!(relay_on(&http, &good), 200);
    assert_eq!(state(&sim)["relay"]["on"], true);

    // What an OAuth client tries on the device itself: a JSON OAuth error naming the server.
    for (method, path, status) in [
        ("POST", "/register", 400),
        ("POST", "/token", 400),
        ("GET", "/authorize", 400),
        ("GET", "/.well-known/oauth-authorization-server", 404),
        ("GET", "/.well-known/openid-configuration/mcp", 404),
    ] {
        let (got, _, body) = exchange(&http, method, path, &[], "");
        assert_eq!(got, status, "{path}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["error"], "invalid_request", "{path}");
        assert!(
            v["error_description"].as_str().unwrap().contains(issuer),
            "{path}: {v}"
        );
    }
    let _ = std::fs::remove_file(keys);
}

#[test]
fn a_pre_shared_token_and_oauth_side_by_side() {
    let issuer = "http://127.0.0.1:1";
    let keys = jwks_file(&json!({"keys":[jwk(&key(), "k1")]}));
    let sim = start(&[
        "--http",
        "127.0.0.1:0",
        "--token",
        "pre-shared-123",
        "--oauth-issuer",
        issuer,
        "--oauth-audience",
        "https://lamp.example/mcp",
        "--oauth-jwks",
        keys.to_str().unwrap(),
    ]);
    let http = sim.http.clone().unwrap();
    assert_eq!(initialize(&http, Some("pre-shared-123")).0, 200);
    // The configured audience, not the address the request used.
    let for_lamp = sign(&key(), "k1", &claims(issuer, "https://lamp.example/mcp"));
    assert_eq!(initialize(&http, Some(&for_lamp)).0, 200);
    let for_address = sign(&key(), "k1", &claims(issuer, &format!("http://{http}/mcp")));
    assert_eq!(initialize(&http, Some(&for_address)).0, 401);
    let (_, _, body) = exchange(
        &http,
        "GET",
        "/.well-known/oauth-protected-resource",
        &[],
        "",
    );
    let meta: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(meta["resource"], "https://lamp.example/mcp");
    assert!(meta.get("scopes_supported").is_none(), "{meta}");
    let _ = std::fs::remove_file(keys);
}

/// The audience is this device's resource, fixed when it starts (here from the listener it was
/// given, `http://127.0.0.1:PORT/mcp`), never read from a request: a token the same
/// authorization server issued for another service on this host (another port, another loopback
/// name, no port) admits nothing, whatever `Host` the request names — and the metadata and the
/// challenge name the device's resource whatever `Host` says.
#[test]
fn a_token_for_another_service_on_the_same_host_is_refused_whatever_the_host() {
    let issuer = "http://127.0.0.1:1/as";
    let keys = jwks_file(&json!({"keys":[jwk(&key(), "k1")]}));
    let sim = start(&[
        "--http",
        "127.0.0.1:0",
        "--oauth-issuer",
        issuer,
        "--oauth-jwks",
        keys.to_str().unwrap(),
    ]);
    let http = sim.http.clone().unwrap();
    let port: u16 = http.rsplit(':').next().unwrap().parse().unwrap();
    let other = if port == 65535 { port - 1 } else { port + 1 };
    for authority in [
        format!("127.0.0.1:{other}"),
        format!("localhost:{other}"),
        format!("[::1]:{other}"),
        "127.0.0.1".to_string(),
        "localhost".to_string(),
        format!("localhost:{port}"),
    ] {
        let borrowed = sign(
            &key(),
            "k1",
            &claims(issuer, &format!("http://{authority}/mcp")),
        );
        let (status, challenge, _) = initialize_at(&http, Some(&authority), Some(&borrowed));
        assert_eq!(
            status, 401,
            "a token for http://{authority}/mcp, Host: {authority}"
        );
        assert!(
            challenge.contains(&format!(
                "resource_metadata=\"http://{http}/.well-known/oauth-protected-resource/mcp\""
            )),
            "Host: {authority}: {challenge}"
        );
        let (_, _, body) = exchange(
            &http,
            "GET",
            "/.well-known/oauth-protected-resource/mcp",
            &[("Host", &authority)],
            "",
        );
        let meta: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            meta["resource"],
            format!("http://{http}/mcp"),
            "Host: {authority}"
        );
    }
    assert_eq!(state(&sim)["relay"]["on"], false);
    // The device's own resource is admitted, whichever loopback name the request uses.
    let own = sign(&key(), "k1", &claims(issuer, &format!("http://{http}/mcp")));
    assert_eq!(
        initialize_at(&http, Some(&format!("localhost:{port}")), Some(&own)).0,
        200
    );
    let _ = std::fs::remove_file(keys);
}

/// Without a listener address to derive it from (an unspecified one), OAuth needs its audience
/// configured: device-sim refuses to start rather than take it from each request.
#[test]
fn oauth_on_an_unspecified_address_needs_the_audience_configured() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_device-sim"))
        .args([
            "--http",
            "0.0.0.0:0",
            "--oauth-issuer",
            "http://127.0.0.1:1",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(1), "it served: {err}");
    assert!(err.contains("--oauth-audience"), "{err}");
}

/// A small authorization server on loopback: its RFC 8414 metadata and its JWKS, which the test
/// may change (a key rotation); counts the JWKS fetches.
trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// The authorization server's side (see [`KeyServer::start`]).
struct KeyServer {
    issuer: String,
    jwks: Arc<Mutex<Value>>,
    fetches: Arc<Mutex<usize>>,
    /// Every request it got, whatever the path.
    requests: Arc<Mutex<usize>>,
    /// While set, every request is answered 503.
    failing: Arc<std::sync::atomic::AtomicBool>,
}

impl KeyServer {
    fn start(jwks: Value, named_issuer: Option<&str>) -> KeyServer {
        Self::start_with(jwks, named_issuer, None)
    }

    /// The same over `https://localhost:PORT`, serving `tls`'s certificate.
    fn start_tls(jwks: Value, tls: &Issued) -> KeyServer {
        Self::start_with(jwks, None, Some(common::tls_server_config(tls)))
    }

    fn start_with(
        jwks: Value,
        named_issuer: Option<&str>,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> KeyServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let issuer = match tls {
            Some(_) => format!("https://localhost:{port}"),
            None => format!("http://127.0.0.1:{port}"),
        };
        let named = named_issuer.unwrap_or(&issuer).to_string();
        let jwks = Arc::new(Mutex::new(jwks));
        let fetches = Arc::new(Mutex::new(0));
        let requests = Arc::new(Mutex::new(0));
        let failing = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (j, f, iss) = (jwks.clone(), fetches.clone(), issuer.clone());
        let (r, fail) = (requests.clone(), failing.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(tcp) = conn else { continue };
                let mut conn: Box<dyn ReadWrite> = match &tls {
                    Some(config) => {
                        let Ok(server) = rustls::ServerConnection::new(config.clone()) else {
                            continue;
                        };
                        Box::new(rustls::StreamOwned::new(server, tcp))
                    }
                    None => Box::new(tcp),
                };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                // The request head, byte by byte (a TLS stream cannot be cloned for a reader).
                while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
                    match conn.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => break,
                    }
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let path = head.split(' ').nth(1).unwrap_or("").to_string();
                *r.lock().unwrap() += 1;
                let down = fail.load(std::sync::atomic::Ordering::Relaxed);
                let (status, body) = match path.as_str() {
                    _ if down => ("503 Service Unavailable", "{}".to_string()),
                    "/.well-known/oauth-authorization-server" => (
                        "200 OK",
                        json!({"issuer": named, "jwks_uri": format!("{iss}/jwks")}).to_string(),
                    ),
                    "/jwks" => {
                        *f.lock().unwrap() += 1;
                        ("200 OK", j.lock().unwrap().to_string())
                    }
                    _ => ("404 Not Found", "{}".to_string()),
                };
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.flush();
            }
        });
        KeyServer {
            issuer,
            jwks,
            fetches,
            requests,
            failing,
        }
    }
}

#[test]
fn fetched_keys_are_kept_and_fetched_again_for_a_new_kid() {
    let server = KeyServer::start(json!({"keys":[jwk(&key(), "k1")]}), None);
    let sim = start(&["--http", "127.0.0.1:0", "--oauth-issuer", &server.issuer]);
    let http = sim.http.clone().unwrap();
    let aud = format!("http://{http}/mcp");
    let t1 = sign(&key(), "k1", &claims(&server.issuer, &aud));
    for _ in 0..3 {
        assert_eq!(initialize(&http, Some(&t1)).0, 200);
    }
    assert_eq!(
        *server.fetches.lock().unwrap(),
        1,
        "fetched once at start-up, then kept"
    );
    // The server rotates: a new key k2 signs; the device fetches again once and admits it.
    *server.jwks.lock().unwrap() = json!({"keys":[jwk(&key(), "k1"), jwk(&other_key(), "k2")]});
    let t2 = sign(&other_key(), "k2", &claims(&server.issuer, &aud));
    assert_eq!(initialize(&http, Some(&t2)).0, 200);
    assert_eq!(*server.fetches.lock().unwrap(), 2);
    // Unknown kids do not make it fetch again and again (at most every 30 s).
    for i in 0..5 {
        let t = sign(
            &other_key(),
            &format!("k9{i}"),
            &claims(&server.issuer, &aud),
        );
        assert_eq!(initialize(&http, Some(&t)).0, 401);
    }
    assert_eq!(*server.fetches.lock().unwrap(), 2);
}

/// While the authorization server fails, bearer tokens do not make the device hammer it: one
/// fetch at a time, none while the last failure is recent (a back-off that grows), and a token
/// that is no JWT of an accepted algorithm never makes it fetch at all. Once the server is back
/// and the back-off has passed, a good token is admitted.
#[test]
fn a_failing_authorization_server_is_not_hammered() {
    let server = KeyServer::start(json!({"keys":[jwk(&key(), "k1")]}), None);
    server
        .failing
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let sim = start(&["--http", "127.0.0.1:0", "--oauth-issuer", &server.issuer]);
    let http = sim.http.clone().unwrap();
    let aud = format!("http://{http}/mcp");
    // The keys are asked for at start-up (both metadata URLs), and that fails.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while *server.requests.lock().unwrap() < 2 {
        assert!(std::time::Instant::now() < deadline, "no fetch at start-up");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    let at_start = *server.requests.lock().unwrap();
    // 40 tokens, 20 at a time: garbage, and well-formed ones the keys in hand cannot judge.
    let mut tokens: Vec<String> = (0..20).map(|i| format!("garbage-{i}.x.y")).collect();
    tokens.extend((0..20).map(|i| sign(&key(), &format!("k{i}"), &claims(&server.issuer, &aud))));
    let sent = std::time::Instant::now();
    std::thread::scope(|s| {
        for chunk in tokens.chunks(20) {
            let http = &http;
            s.spawn(move || {
                for t in chunk {
                    assert_eq!(initialize(http, Some(t)).0, 401);
                }
            });
        }
    });
    let during = *server.requests.lock().unwrap() - at_start;
    // Within the first back-off (2 s) none; a slow machine may see it end once meanwhile (one
    // attempt: the two metadata URLs), never more.
    let allowed = if sent.elapsed().as_millis() < 1500 {
        0
    } else {
        2
    };
    assert!(
        during <= allowed,
        "no fetch while the last failure is recent ({during} requests for 40 tokens)"
    );
    // The server is back: after the back-off, the keys are fetched once and a token admitted.
    server
        .failing
        .store(false, std::sync::atomic::Ordering::Relaxed);
    let good = sign(&key(), "k1", &claims(&server.issuer, &aud));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while initialize(&http, Some(&good)).0 != 200 {
        assert!(std::time::Instant::now() < deadline, "never admitted");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(*server.fetches.lock().unwrap(), 1);
    assert_eq!(state(&sim)["relay"]["on"], false);
}

/// Keys of an `https://` authorization server are fetched over TLS, its certificate checked
/// against `--ca-file` like every outbound link's; with another root nothing is fetched.
#[test]
fn keys_are_fetched_over_https_with_the_certificate_checked() {
    let ca = TestCa::new("oauth").unwrap();
    let issued = ca.issue("as", &["localhost"], Validity::Now).unwrap();
    let server = KeyServer::start_tls(json!({"keys":[jwk(&key(), "k1")]}), &issued);
    // device-sim trusting `root` (a PEM file): what an initialize with a token of the
    // server's key gets.
    let admitted = |root: &std::path::Path| {
        let args = [
            "--http",
            "127.0.0.1:0",
            "--oauth-issuer",
            &server.issuer,
            "--ca-file",
            root.to_str().unwrap(),
        ];
        let sim = start(&args);
        let http = sim.http.clone().unwrap();
        let t = sign(
            &key(),
            "k1",
            &claims(&server.issuer, &format!("http://{http}/mcp")),
        );
        initialize(&http, Some(&t)).0
    };
    assert_eq!(admitted(&ca.pem), 200);
    assert_eq!(*server.fetches.lock().unwrap(), 1);

    // Another root: the certificate does not verify, no keys, no admission.
    assert_eq!(admitted(&TestCa::new("other").unwrap().pem), 401);
    assert_eq!(
        *server.fetches.lock().unwrap(),
        1,
        "nothing fetched past a refused certificate"
    );
}

#[test]
fn a_server_whose_metadata_names_another_issuer_gives_no_keys() {
    let server = KeyServer::start(
        json!({"keys":[jwk(&key(), "k1")]}),
        Some("http://127.0.0.1:1/evil"),
    );
    let sim = start(&["--http", "127.0.0.1:0", "--oauth-issuer", &server.issuer]);
    let http = sim.http.clone().unwrap();
    let t = sign(
        &key(),
        "k1",
        &claims(&server.issuer, &format!("http://{http}/mcp")),
    );
    assert_eq!(initialize(&http, Some(&t)).0, 401);
    assert_eq!(
        *server.fetches.lock().unwrap(),
        0,
        "its JWKS was never fetched"
    );
}

#[test]
fn oauth_options_are_checked_before_serving() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_device-sim"))
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&[
        "--http",
        "127.0.0.1:0",
        "--oauth-issuer",
        "http://auth.example",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("needs TLS"), "{err}");
    let (code, err) = run(&[
        "--http",
        "127.0.0.1:0",
        "--oauth-issuer",
        "http://127.0.0.1:1",
        "--oauth-scope",
        "a b",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("not a scope"), "{err}");
    let bad = jwks_file(&json!({"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}));
    let (code, err) = run(&[
        "--http",
        "127.0.0.1:0",
        "--oauth-issuer",
        "http://127.0.0.1:1",
        "--oauth-jwks",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("the keys"), "{err}");
    let _ = std::fs::remove_file(bad);
    let (code, err) = run(&["--oauth-issuer", "http://127.0.0.1:1"]);
    assert_eq!(code, Some(2), "{err}");
}
