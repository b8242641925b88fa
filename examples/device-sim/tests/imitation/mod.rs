//! An imitation of the xiaozhi MCP endpoint (xinnan-tech's `mcp-endpoint-server`, v0.0.6) and
//! of its caller (xinnan's xiaozhi-server's endpoint client), written from their measured
//! behaviour (../shared/DESIGN.md, "The xiaozhi MCP endpoint") and their source, for tests that
//! cannot reach either:
//!
//! - the tool side connects to `/mcp_endpoint/mcp/?token=T` (other paths: HTTP 403); the upgrade
//!   is accepted, then a missing or unknown token is closed 1008 with a reason;
//! - one tool link per agent: a newer link closes the older one 1000 "新连接替换" — and, as the
//!   real server does, when the older link's loop ends it unregisters the agent, so the newer
//!   link, still open, is reachable no more (`tool_links`);
//! - it pings every `ping_every` and closes 1011 when no pong came within `pong_within`;
//! - a frame from the tool larger than `max_frame` closes 1009;
//! - ids from a caller are rewritten to `"<uuid>_n_<k>"` (integers) or `"<uuid>_s_<text>"`
//!   (strings) on the way to the tool, and back; falsy ids (0, "", null) pass unchanged; a frame
//!   from the tool whose id routes to no waiting request — a notification, a request the device
//!   starts, an unknown id, not JSON — is dropped (`dropped`);
//! - a caller ([`Robot`]) per agent session, as xinnan's backend connects one per conversation:
//!   `initialize` id 1 (protocolVersion 2024-11-05, capabilities `roots` and `sampling`,
//!   clientInfo `XiaozhiMCPEndpointClient`), `notifications/initialized`, `tools/list` id 2 with
//!   every cursor page under id 2, then calls from id 1 on (the first call shares `initialize`'s
//!   id), each waiting at most `timeout` (30 s) — a later answer is dropped; a call while the
//!   agent has no tool link gets a JSON-RPC error.
#![allow(dead_code, reason = "each test uses some")]
#![allow(clippy::restriction, reason = "a test")]
#![allow(
    clippy::result_large_err,
    reason = "tungstenite's handshake callback returns its large error type"
)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

/// How the endpoint behaves.
#[derive(Debug, Clone)]
pub struct Opts {
    /// Tokens it accepts, and the agent each names.
    pub tokens: Vec<(String, String)>,
    /// A ping every so often (the real one: 20 s).
    pub ping_every: Duration,
    /// A pong within this, or the link is closed 1011 (the real one: 20 s).
    pub pong_within: Duration,
    /// The largest frame from a tool (the real one: 16 MiB).
    pub max_frame: usize,
}

impl Opts {
    pub fn new(tokens: &[(&str, &str)]) -> Opts {
        Opts {
            tokens: tokens
                .iter()
                .map(|(t, a)| (t.to_string(), a.to_string()))
                .collect(),
            ping_every: Duration::from_millis(300),
            pong_within: Duration::from_millis(600),
            max_frame: 16 * 1024 * 1024,
        }
    }
}

/// A tool link the endpoint knows.
struct Link {
    id: u64,
    tx: mpsc::UnboundedSender<Message>,
}

#[derive(Default)]
struct State {
    /// The registered tool link of each agent (with the real server's bookkeeping).
    tools: HashMap<String, Link>,
    /// Tool connections open now, and the most ever open at once, per agent.
    open: HashMap<String, usize>,
    most_open: HashMap<String, usize>,
    /// Tool connections accepted, per token as sent (upgrades).
    connections: HashMap<String, usize>,
    /// Close codes the endpoint sent, in order.
    closes: Vec<(u16, String)>,
    /// Frames from tools that routed nowhere.
    dropped: Vec<String>,
    /// The callers' waiting requests: (uuid, original id as JSON text) → where the answer goes.
    pending: HashMap<(String, String), oneshot::Sender<Value>>,
    /// Pongs are lost on the way (a link that misses the pings).
    lose_pongs: bool,
    next_link: u64,
}

/// The imitation endpoint, on a loopback port.
#[derive(Clone)]
pub struct Imitation {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
    opts: Arc<Opts>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap()
}

impl Imitation {
    pub async fn start(opts: Opts) -> Imitation {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let imitation = Imitation {
            addr: listener.local_addr().unwrap(),
            state: Arc::new(Mutex::new(State::default())),
            opts: Arc::new(opts),
        };
        let served = imitation.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(served.clone().tool(tcp));
            }
        });
        imitation
    }

    /// The tool side's URL with `token` (percent-encoded as the console hands it out).
    pub fn url(&self, token: &str) -> String {
        format!(
            "ws://{}/mcp_endpoint/mcp/?token={}",
            self.addr,
            encode(token)
        )
    }

    /// A caller of `agent`'s tools: one agent session's connection.
    pub fn robot(&self, agent: &str) -> Robot {
        Robot {
            uuid: uuid(),
            agent: agent.to_string(),
            imitation: self.clone(),
            next_id: 1,
            timeout: Duration::from_secs(30),
        }
    }

    /// The agent has a registered tool link (the endpoint would forward a call).
    pub fn tool_links(&self, agent: &str) -> usize {
        usize::from(lock(&self.state).tools.contains_key(agent))
    }

    /// The most tool connections of `agent` open at once so far.
    pub fn most_open(&self, agent: &str) -> usize {
        lock(&self.state).most_open.get(agent).copied().unwrap_or(0)
    }

    /// Tool connections accepted with `token`.
    pub fn connections(&self, token: &str) -> usize {
        lock(&self.state)
            .connections
            .get(token)
            .copied()
            .unwrap_or(0)
    }

    /// The close codes sent so far.
    pub fn closes(&self) -> Vec<(u16, String)> {
        lock(&self.state).closes.clone()
    }

    /// Frames from tools that routed nowhere.
    pub fn dropped(&self) -> Vec<String> {
        lock(&self.state).dropped.clone()
    }

    /// Pongs are lost from now (`true`) or arrive again.
    pub fn lose_pongs(&self, lose: bool) {
        lock(&self.state).lose_pongs = lose;
    }

    /// Closes `agent`'s registered tool link with `code` (1012: the endpoint restarts).
    pub fn close_tool_link(&self, agent: &str, code: u16, reason: &str) {
        let state = lock(&self.state);
        if let Some(link) = state.tools.get(agent) {
            let _ = link.tx.send(close(code, reason));
        }
    }

    /// Waits until `agent` has a registered tool link (at most `within`).
    pub async fn registered(&self, agent: &str, within: Duration) {
        let until = Instant::now() + within;
        while self.tool_links(agent) == 0 {
            assert!(
                Instant::now() < until,
                "no tool link for {agent} within {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until `n` tool connections were accepted with `token` (at most `within`).
    pub async fn connected(&self, token: &str, n: usize, within: Duration) {
        let until = Instant::now() + within;
        while self.connections(token) < n {
            assert!(
                Instant::now() < until,
                "{} tool connections with {token} within {within:?}, not {n}",
                self.connections(token)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// One tool connection, as `/mcp_endpoint/mcp/` serves it.
    async fn tool(self, tcp: tokio::net::TcpStream) {
        let mut query = None;
        let check = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
            if req.uri().path() != "/mcp_endpoint/mcp/" {
                let mut refused = ErrorResponse::new(None);
                *refused.status_mut() = tokio_tungstenite::tungstenite::http::StatusCode::FORBIDDEN;
                return Err(refused);
            }
            query = Some(req.uri().query().unwrap_or_default().to_string());
            Ok(resp)
        };
        let Ok(ws) = tokio_tungstenite::accept_hdr_async(tcp, check).await else {
            return;
        };
        let token = query.as_deref().and_then(|q| {
            q.split('&')
                .find_map(|p| p.strip_prefix("token="))
                .map(decode)
        });
        let (mut sink, mut stream) = ws.split();
        let seen = token.clone().unwrap_or_default();
        *lock(&self.state).connections.entry(seen).or_default() += 1;
        let agent = match &token {
            None => None,
            Some(t) => self
                .opts
                .tokens
                .iter()
                .find(|(tok, _)| tok == t)
                .map(|(_, a)| a.clone()),
        };
        let Some(agent) = agent else {
            let reason = if token.is_none() {
                "缺少token参数"
            } else {
                "token解密失败"
            };
            lock(&self.state).closes.push((1008, reason.into()));
            let _ = sink.send(close(1008, reason)).await;
            let _ = tokio::time::timeout(Duration::from_secs(1), stream.next()).await;
            return;
        };
        let (tx, mut rx) = mpsc::unbounded_channel();
        // The connection lives on whatever the bookkeeping says of it (as the real server's does).
        let _alive = tx.clone();
        {
            let mut state = lock(&self.state);
            // A newer link replaces the older one: 1000 "新连接替换".
            if let Some(old) = state.tools.get(&agent) {
                let _ = old.tx.send(close(1000, "新连接替换"));
                state.closes.push((1000, "新连接替换".into()));
            }
            state.next_link += 1;
            let id = state.next_link;
            state.tools.insert(agent.clone(), Link { id, tx });
            let open = state.open.entry(agent.clone()).or_default();
            *open += 1;
            let open = *open;
            let most = state.most_open.entry(agent.clone()).or_default();
            *most = (*most).max(open);
        }
        let mut pings = tokio::time::interval(self.opts.ping_every);
        pings.tick().await;
        let mut last_pong = Instant::now();
        loop {
            tokio::select! {
                m = stream.next() => match m {
                    Some(Ok(Message::Text(t))) => {
                        if t.len() > self.opts.max_frame {
                            lock(&self.state).closes.push((1009, "message too big".into()));
                            let _ = sink.send(close(1009, "message too big")).await;
                            break;
                        }
                        self.route(t.as_str());
                    }
                    Some(Ok(Message::Binary(b))) if b.len() > self.opts.max_frame => {
                        let _ = sink.send(close(1009, "message too big")).await;
                        break;
                    }
                    Some(Ok(Message::Pong(_))) => {
                        if !lock(&self.state).lose_pongs {
                            last_pong = Instant::now();
                        }
                    }
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => {}
                },
                out = rx.recv() => {
                    let Some(out) = out else { break };
                    let closing = matches!(out, Message::Close(_));
                    if let Message::Close(Some(f)) = &out {
                        lock(&self.state).closes.push((u16::from(f.code), f.reason.to_string()));
                    }
                    if sink.send(out).await.is_err() || closing {
                        // Let the tool answer the close, briefly.
                        let _ = tokio::time::timeout(Duration::from_secs(1), async {
                            while let Some(Ok(m)) = stream.next().await {
                                if matches!(m, Message::Close(_)) { break; }
                            }
                        }).await;
                        break;
                    }
                }
                _ = pings.tick() => {
                    if last_pong.elapsed() > self.opts.ping_every + self.opts.pong_within {
                        lock(&self.state).closes.push((1011, "keepalive ping timeout".into()));
                        let _ = sink.send(close(1011, "keepalive ping timeout")).await;
                        break;
                    }
                    if sink.send(Message::Ping(Default::default())).await.is_err() {
                        break;
                    }
                }
            }
        }
        let mut state = lock(&self.state);
        if let Some(open) = state.open.get_mut(&agent) {
            *open -= 1;
        }
        // The real server unregisters by agent, whichever link that is now.
        state.tools.remove(&agent);
    }

    /// A frame from a tool: its id restored and the answer routed to the waiting caller, or
    /// dropped.
    fn route(&self, text: &str) {
        let mut state = lock(&self.state);
        let Ok(mut v) = serde_json::from_str::<Value>(text) else {
            state.dropped.push(text.to_string());
            return;
        };
        let routed = v["id"].as_str().and_then(restore);
        let Some((uuid, original)) = routed else {
            state.dropped.push(text.to_string());
            return;
        };
        v["id"] = original.clone();
        match state.pending.remove(&(uuid, original.to_string())) {
            Some(waiting) => {
                let _ = waiting.send(v);
            }
            None => state.dropped.push(text.to_string()),
        }
    }
}

/// One agent session's connection to the endpoint, doing what xinnan's backend does.
pub struct Robot {
    pub uuid: String,
    agent: String,
    imitation: Imitation,
    next_id: i64,
    /// How long a call may take (the real caller: 30 s).
    pub timeout: Duration,
}

/// Why a caller's request got no answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Failed {
    /// None within the timeout.
    Timeout,
    /// The endpoint had no tool link for the agent: its error.
    Error(Value),
}

impl Robot {
    /// Sends `message` through the endpoint; its answer.
    pub async fn send(&mut self, message: Value) -> Result<Value, Failed> {
        let id = message["id"].clone();
        let truthy = match &id {
            Value::Number(n) => n.as_i64() != Some(0),
            Value::String(s) => !s.is_empty(),
            _ => false,
        };
        let mut forwarded = message.clone();
        if truthy {
            forwarded["id"] = json!(match &id {
                Value::Number(n) => format!("{}_n_{n}", self.uuid),
                Value::String(s) => format!("{}_s_{s}", self.uuid),
                _ => unreachable!(),
            });
        }
        let (tx, rx) = oneshot::channel();
        let sent = {
            let mut state = lock(&self.imitation.state);
            let Some(link) = state.tools.get(&self.agent) else {
                return Err(Failed::Error(
                    json!({"jsonrpc":"2.0","id":id,"error":{"code":-32001,"message":"工具端未连接"}}),
                ));
            };
            let sent = link.tx.send(Message::text(forwarded.to_string())).is_ok();
            if truthy && sent {
                state
                    .pending
                    .insert((self.uuid.clone(), id.to_string()), tx);
            }
            sent
        };
        if !sent {
            return Err(Failed::Error(
                json!({"error":{"code":-32002,"message":"转发失败"}}),
            ));
        }
        if !truthy {
            return Ok(Value::Null);
        }
        match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(answer)) => Ok(answer),
            _ => {
                lock(&self.imitation.state)
                    .pending
                    .remove(&(self.uuid.clone(), id.to_string()));
                Err(Failed::Timeout)
            }
        }
    }

    /// `initialize` (id 1) and `notifications/initialized`; the answer.
    pub async fn initialize(&mut self) -> Result<Value, Failed> {
        let answer = self
            .send(
                json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                "protocolVersion":"2024-11-05",
                "capabilities":{"roots":{"listChanged":true},"sampling":{}},
                "clientInfo":{"name":"XiaozhiMCPEndpointClient","version":"1.0.0"}}}),
            )
            .await?;
        self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized","params":{}}))
            .await?;
        Ok(answer)
    }

    /// Every tool, page by page, each page under id 2.
    pub async fn list_tools(&mut self) -> Result<Vec<Value>, Failed> {
        let mut tools = Vec::new();
        let mut request = json!({"jsonrpc":"2.0","id":2,"method":"tools/list"});
        loop {
            let page = self.send(request.clone()).await?;
            let result = &page["result"];
            tools.extend(result["tools"].as_array().cloned().unwrap_or_default());
            match result["nextCursor"].as_str().filter(|c| !c.is_empty()) {
                Some(c) => {
                    request =
                        json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":c}})
                }
                None => return Ok(tools),
            }
        }
    }

    /// `tools/call` under the next id (from 1); the answer.
    pub async fn call(&mut self, name: &str, arguments: Value) -> Result<Value, Failed> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":name,"arguments":arguments}}))
            .await
    }
}

/// What xinnan's backend hands the model of an answer: `content[0].text` (a failure is spoken
/// to the user instead, from `result.error`).
pub fn heard(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
}

fn close(code: u16, reason: &str) -> Message {
    Message::Close(Some(CloseFrame {
        code: CloseCode::from(code),
        reason: reason.to_string().into(),
    }))
}

/// The real server's `_restore_jsonrpc_id`: `uuid_type_original` split at the first two `_`.
fn restore(id: &str) -> Option<(String, Value)> {
    let mut parts = id.splitn(3, '_');
    let (uuid, kind, rest) = (parts.next()?, parts.next()?, parts.next()?);
    let original = match kind {
        "n" => rest
            .parse::<i64>()
            .map_or_else(|_| json!(rest), |n| json!(n)),
        "s" if rest == "null" => Value::Null,
        _ => json!(rest),
    };
    Some((uuid.to_string(), original))
}

fn uuid() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{t:08x}-{n:04x}-4000-8000-{:012x}", u64::from(t) * 7919 + n)
}

/// Percent-encodes what a query value may not hold as it is (the console quotes the base64
/// token: `+ / =`).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(h) = s.get(i + 1..i + 3)
            && let Ok(v) = u8::from_str_radix(h, 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
