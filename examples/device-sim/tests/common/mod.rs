//! What the tests of the real device-sim binary share: starting it (with `--ui`, `--http`, or
//! as it is), its log, plain HTTP/1.1 requests written by hand, SSE streams and stdio lines read
//! on a thread, and WebSocket messages.
#![allow(dead_code, reason = "each test file uses some")]
#![allow(clippy::restriction, reason = "test helpers")]
#![allow(
    clippy::result_large_err,
    reason = "tungstenite's handshake callback returns its large error type"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;

/// `Content-Type: application/json`.
pub const JSON: (&str, &str) = ("Content-Type", "application/json");
/// The `Accept` of a Streamable HTTP client.
pub const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");

/// A child process, killed and reaped when dropped.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `device-sim ARGS`: stdin and stdout piped when `piped` (for `--stdio`), else closed; stderr
/// piped (read it with [`log_lines`] or [`log_text`], or the child may block on it).
pub fn device_sim(args: &[&str], piped: bool) -> Child {
    run(Command::new(env!("CARGO_BIN_EXE_device-sim")), args, piped)
}

/// `command ARGS` started: stdin and stdout piped when `piped`, else closed; stderr piped.
fn run(mut command: Command, args: &[&str], piped: bool) -> Child {
    let io = || if piped { Stdio::piped() } else { Stdio::null() };
    let started = command.args(args).stdin(io()).stdout(io());
    started
        .stderr(Stdio::piped())
        .spawn()
        .expect("start device-sim")
}

/// `device-sim ARGS` run to its end (an option it refuses, `--list-tools`): its output.
pub fn device_sim_output(args: &[&str]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_device-sim"));
    command.args(args).output().expect("run device-sim")
}

/// The `field` of every item of `message.result[list]` (the `uri` of each listed resource).
pub fn listed<'a>(message: &'a Value, list: &str, field: &str) -> Vec<&'a str> {
    let items = message["result"][list].as_array().unwrap();
    items.iter().map(|i| i[field].as_str().unwrap()).collect()
}

/// The lines of `child`'s stderr as they come, read on a thread.
pub fn log_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// `child`'s stderr so far, collected on a thread.
pub fn log_text(child: &mut Child) -> Arc<Mutex<String>> {
    let log = Arc::new(Mutex::new(String::new()));
    let mut pipe = BufReader::new(child.stderr.take().unwrap());
    let sink = log.clone();
    std::thread::spawn(move || {
        let mut line = String::new();
        while pipe.read_line(&mut line).unwrap_or(0) > 0 {
            sink.lock().unwrap().push_str(&line);
            line.clear();
        }
    });
    log
}

/// Starts `device-sim --http 127.0.0.1:0 ARGS`; it, and the address it serves (host:port).
pub fn start_http(args: &[&str]) -> (Running, String) {
    let mut sim = Running(device_sim(
        &[&["--http", "127.0.0.1:0"], args].concat(),
        false,
    ));
    let mut stderr = BufReader::new(sim.0.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "device-sim exited"
        );
        if let Some(rest) = line
            .trim()
            .strip_prefix("device-sim: serving MCP (Streamable HTTP) at http://")
        {
            let addr = rest.strip_suffix("/mcp").unwrap().to_string();
            // Keep draining stderr so the child never blocks on it.
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            return (sim, addr);
        }
    }
}

/// A running device-sim, killed when dropped.
pub struct Sim {
    pub child: Child,
    /// The `--ui` address (host:port).
    pub ui: String,
    /// The `--http` address (host:port), if served.
    pub http: Option<String>,
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `--ui` address (`host:port`) of the device-sim whose log is `log`
/// ([`log_text`]), once it says where it serves: within 20 s.
pub fn ui_address(log: &Mutex<String>) -> String {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let text = log.lock().unwrap().clone();
        if let Some(at) = text.find("device-sim: UI at http://") {
            let rest = &text[at + "device-sim: UI at http://".len()..];
            return rest.split('/').next().unwrap().to_string();
        }
        assert!(Instant::now() < until, "device-sim did not start: {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A flash file for `--flash` in a fresh directory of its own (`name` and the test process's
/// id), not there yet.
pub fn fresh_flash(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let flash = dir.join("flash.bin");
    let _ = std::fs::remove_file(&flash);
    flash
}

/// Starts `device-sim --ui 127.0.0.1:0 ARGS` and waits until it says where it serves (the UI,
/// and `--http` when given). stdin/stdout are piped (for `--stdio`); stderr is drained.
pub fn start(args: &[&str]) -> Sim {
    spawn(Command::new(env!("CARGO_BIN_EXE_device-sim")), args)
}

/// [`start`] with at most `nofile` file descriptors (`ulimit -n`, through `sh`): a machine's
/// limit, made small enough that a test can reach it.
pub fn start_with_fd_limit(nofile: u32, args: &[&str]) -> Sim {
    let mut sh = Command::new("sh");
    sh.args([
        "-c",
        &format!("ulimit -n {nofile} && exec \"$0\" \"$@\""),
        env!("CARGO_BIN_EXE_device-sim"),
    ]);
    spawn(sh, args)
}

fn spawn(command: Command, args: &[&str]) -> Sim {
    let mut child = run(command, &[&["--ui", "127.0.0.1:0"], args].concat(), true);
    let wants_http = args.contains(&"--http");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let (mut ui, mut http) = (None, None);
    let mut line = String::new();
    while ui.is_none() || (wants_http && http.is_none()) {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "device-sim exited"
        );
        let l = line.trim();
        if let Some(rest) = l.strip_prefix("device-sim: UI at http://") {
            ui = Some(rest.trim_end_matches('/').to_string());
        }
        if let Some(rest) = l.strip_prefix("device-sim: serving MCP (Streamable HTTP) at http://") {
            http = Some(rest.strip_suffix("/mcp").unwrap().to_string());
        }
    }
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    Sim {
        child,
        ui: ui.unwrap(),
        http,
    }
}

/// One HTTP/1.1 request (`Connection: close`); returns the status and the body (a chunked body
/// decoded).
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let (status, headers, body) = exchange(addr, method, path, headers, body);
    let chunked = header(&headers, "transfer-encoding") == Some("chunked");
    (status, if chunked { dechunk(&body) } else { body })
}

/// One HTTP/1.1 request (`Connection: close`); returns the status, the headers (lower-case
/// names) and the body as it came.
pub fn exchange(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(head(addr, method, path, headers, body, true).as_bytes())
        .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    parse_response(&raw)
}

/// A whole HTTP/1.1 response: the status, the headers (lower-case names) and the body.
pub fn parse_response(raw: &[u8]) -> (u16, Vec<(String, String)>, String) {
    let raw = std::str::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status.unwrap(), headers, body.to_string())
}

/// The value of the header `name` (lower case) among `headers`.
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A request's head and `body`, with `Connection: close` when `close`; a `Host` among `headers`
/// replaces the address.
pub fn head(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    close: bool,
) -> String {
    // A `Host` among `headers` replaces the address (a client that connects by address and
    // names the host it resolved).
    let host = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("host"))
        .map_or(addr, |(_, v)| *v);
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\n",
        body.len()
    );
    if close {
        req.push_str("Connection: close\r\n");
    }
    for (k, v) in headers
        .iter()
        .filter(|(k, _)| !k.eq_ignore_ascii_case("host"))
    {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    req
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// A JSON request to the UI's API.
pub fn api(sim: &Sim, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    api_at(&sim.ui, method, path, body)
}

/// A JSON request to the UI's API at `ui` (host:port).
pub fn api_at(ui: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let text = body.map(Value::to_string).unwrap_or_default();
    let headers: &[(&str, &str)] = if body.is_some() {
        &[("Content-Type", "application/json")]
    } else {
        &[]
    };
    let (status, body) = request(ui, method, path, headers, &text);
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// `GET /sim/state`.
pub fn state(sim: &Sim) -> Value {
    let (status, v) = api(sim, "GET", "/sim/state", None);
    assert_eq!(status, 200);
    v
}

/// Polls `GET /sim/state` until `ok` holds (at most 5 s); returns that state.
pub fn state_until(sim: &Sim, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let s = state(sim);
        if ok(&s) {
            return s;
        }
        assert!(Instant::now() < deadline, "waited 5 s for {what}: {s:#}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Presses the device's button once the question it shows may be answered: shown for the
/// minimum, and a second after the last press (`press_counts_in_ms` 0). The press's answer.
pub fn press_shown(sim: &Sim) -> (u16, Value) {
    state_until(sim, "the question to be answerable", |s| {
        s["confirmation"]["press_counts_in_ms"] == 0
    });
    api(
        sim,
        "POST",
        "/sim/button",
        Some(&Value::Object(Default::default())),
    )
}

/// An SSE response read on a thread: its status, then each `data:` JSON as it comes. Dropping
/// it (or [`close`](Self::close)) closes the connection.
pub struct Events {
    pub status: u16,
    pub content_type: String,
    rx: mpsc::Receiver<Value>,
    stream: TcpStream,
}

impl Events {
    /// Sends the request and reads the response head.
    pub fn open(addr: &str, method: &str, headers: &[(&str, &str)], body: &str) -> Events {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(head(addr, method, "/mcp", headers, body, false).as_bytes())
            .unwrap();
        let mut reader = BufReader::new(s.try_clone().unwrap());
        let mut status_line = String::new();
        reader.read_line(&mut status_line).unwrap();
        let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut content_type = String::new();
        loop {
            let mut l = String::new();
            reader.read_line(&mut l).unwrap();
            if l.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':')
                && k.eq_ignore_ascii_case("content-type")
            {
                content_type = v.trim().to_string();
            }
        }
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                if let Some(data) = line.trim_end().strip_prefix("data: ")
                    && let Ok(v) = serde_json::from_str::<Value>(data)
                    && tx.send(v).is_err()
                {
                    return;
                }
            }
        });
        Events {
            status,
            content_type,
            rx,
            stream: s,
        }
    }

    /// The next message that satisfies `ok` (others are skipped), within 5 s.
    pub fn next_where(&self, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
        within_5_s(&self.rx, what, ok)
    }

    /// Closes the connection (the client goes away).
    pub fn close(self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

/// A line-oriented stdio peer of a `--stdio` device-sim.
pub struct Lines {
    pub stdin: ChildStdin,
    rx: mpsc::Receiver<Value>,
}

impl Lines {
    pub fn new(sim: &mut Sim) -> Lines {
        let stdin = sim.child.stdin.take().unwrap();
        let stdout: ChildStdout = sim.child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && tx.send(v).is_err()
                {
                    return;
                }
            }
        });
        Lines { stdin, rx }
    }

    pub fn send(&mut self, v: &Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line that satisfies `ok` within `wait` (others are skipped), if one comes.
    pub fn next_within(&self, wait: Duration, ok: impl Fn(&Value) -> bool) -> Option<Value> {
        next_within(&self.rx, wait, ok)
    }

    /// The next line that satisfies `ok` (others are skipped), within 5 s.
    pub fn next_where(&self, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
        within_5_s(&self.rx, what, ok)
    }
}

/// The next item of `rx` that satisfies `ok` within `wait` (others are skipped), if one comes.
pub fn next_within<T>(
    rx: &mpsc::Receiver<T>,
    wait: Duration,
    ok: impl Fn(&T) -> bool,
) -> Option<T> {
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(v) if ok(&v) => return Some(v),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
}

fn within_5_s(rx: &mpsc::Receiver<Value>, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    next_within(rx, Duration::from_secs(5), ok).unwrap_or_else(|| panic!("no {what} within 5 s"))
}

/// A xiaozhi backend's side of a device's WebSocket.
pub type Ws = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// Upgrades `tcp` as a xiaozhi backend, reads the device's hello and answers with the server
/// hello for session `sid`.
pub async fn xiaozhi_handshake(tcp: tokio::net::TcpStream, sid: &str) -> Ws {
    use futures_util::SinkExt;
    let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
    let hello = next_text(&mut ws, Duration::from_secs(10)).await;
    assert_eq!(hello["type"], "hello");
    assert_eq!(hello["features"]["mcp"], true);
    let server_hello =
        serde_json::json!({"type":"hello","transport":"websocket","session_id": sid});
    ws.send(server_hello.to_string().into()).await.unwrap();
    ws
}

/// Upgrades `tcp` as a backend, keeping the upgrade request's header `name` (lower case), and
/// reads the device's hello; the socket and the header's value.
pub async fn accept_seeing<S>(
    tcp: S,
    name: &str,
) -> (tokio_tungstenite::WebSocketStream<S>, Option<String>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
    let mut seen = None;
    let keep = |req: &Request, resp: Response| {
        seen = req
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string());
        Ok(resp)
    };
    let mut ws = tokio_tungstenite::accept_hdr_async(tcp, keep)
        .await
        .unwrap();
    let hello = next_text(&mut ws, Duration::from_secs(10)).await;
    assert_eq!(hello["type"], "hello");
    (ws, seen)
}

/// Sends `payload` to the device in session `sid`'s envelope; the next message (the answer's
/// envelope).
pub async fn xiaozhi_ask(ws: &mut Ws, sid: &str, payload: Value) -> Value {
    use futures_util::SinkExt;
    let msg = serde_json::json!({"session_id": sid, "type": "mcp", "payload": payload});
    ws.send(msg.to_string().into()).await.unwrap();
    next_text(ws, Duration::from_secs(10)).await
}

/// The next text message of a WebSocket, parsed, within `wait`.
pub async fn next_text<S>(ws: &mut tokio_tungstenite::WebSocketStream<S>, wait: Duration) -> Value
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use futures_util::StreamExt;
    loop {
        let m = tokio::time::timeout(wait, ws.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let tokio_tungstenite::tungstenite::Message::Text(t) = m {
            return serde_json::from_str(t.as_str()).unwrap();
        }
    }
}

/// A TLS server configuration serving `server`'s certificate and key (for a test's `wss://`,
/// `https://` peer; *ring* as the crypto provider).
pub fn tls_server_config(server: &mqtt_fleet::certs::Issued) -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
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
    Arc::new(config)
}

/// Set in the copy of a test that runs inside a private network namespace
/// ([`in_private_netns`]).
pub const NETNS_INSIDE: &str = "DEVICE_SIM_TEST_NETNS";

/// Runs test `name` of this binary again inside a fresh network namespace of its own
/// (`unshare --net --map-root-user`, util-linux), after `setup` (a shell command run as root
/// of the namespace: `ip link set lo up`, addresses no real network has); fails with the
/// namespace's own output when it fails. Nothing the test sends can leave the machine, and
/// parallel runs cannot hear one another. The copy sees [`NETNS_INSIDE`] set. Returns `false`
/// (and runs nothing) where no namespace can be made (no `unshare` or `ip`, or user namespaces
/// forbidden, as in some containers).
pub fn in_private_netns(name: &str, setup: &str) -> bool {
    let probe = Command::new("unshare")
        .args(["--net", "--map-root-user", "sh", "-c", setup])
        .stdin(Stdio::null())
        .output();
    if !probe.as_ref().is_ok_and(|p| p.status.success()) {
        eprintln!("{name}: no private network namespace here ({probe:?})");
        return false;
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("unshare")
        .args([
            "--net",
            "--map-root-user",
            "sh",
            "-c",
            &format!("{setup} && exec \"$0\" \"$@\""),
        ])
        .arg(exe)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(NETNS_INSIDE, "1")
        .stdin(Stdio::null())
        .output()
        .expect("run unshare (util-linux) to get a network namespace");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{name} in its own network namespace (unshare --net --map-root-user, then \
         `{setup}`) failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    // The copy really ran the test (not "0 tests").
    assert!(
        stdout.contains("1 passed"),
        "{name} did not run in the namespace:\n{stdout}\n{stderr}"
    );
    true
}
