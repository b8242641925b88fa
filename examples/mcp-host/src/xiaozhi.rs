//! The xiaozhi WebSocket client mode: the device connects *out* to a backend.
//!
//! The device opens a WebSocket to the backend's URL, sends its hello
//! ([`DEVICE_HELLO`], announcing `features.mcp`), and
//! learns its `session_id` from the server's hello. MCP then travels inside
//! `{"session_id":…,"type":"mcp","payload":{…}}` text frames, in both directions. Messages that
//! arrive before the hello exchange completes are served too (backends do send them), answered
//! in the session the message names. Other message types (audio, `listen`, `tts`) and binary
//! frames belong to the firmware's audio pipeline and are ignored here.
//!
//! One connection is one MCP session with its own engine; a timer polls it so long-running tools
//! advance, and what it emits (task status and progress) is sent in the envelope as well.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use mcp_core::Principal;
use mcp_core::transport::xiaozhi::{DEVICE_HELLO, Envelope, wrap};
use mcp_core::wire::json::DEFAULT_MAX_DEPTH;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::{self, Message};

use crate::{Board, Clock, Engine, EventHook, HostEvent, Run, Step, lock, prime, pump};

/// Settings of the WebSocket client.
#[derive(Clone)]
#[non_exhaustive]
pub struct Options {
    /// The backend's WebSocket URL (`ws://…`).
    pub url: String,
    /// Extra handshake headers (xiaozhi backends read `Authorization`, `Device-Id`, `Client-Id`,
    /// `Protocol-Version`).
    pub headers: Vec<(String, String)>,
    /// Who is on the other end.
    pub principal: Principal,
    /// The engine's output buffer (bytes).
    pub out_len: usize,
    /// How often the engine is polled.
    pub tick: Duration,
    /// Receives host events (the hello, an initialized session), for logging.
    pub on_event: Option<EventHook>,
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("url", &self.url)
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl Options {
    /// Defaults for `url`: no extra headers, the model on the other end, 16 KiB responses, a
    /// 20 ms tick.
    pub fn new(url: impl Into<String>) -> Self {
        Options {
            url: url.into(),
            headers: Vec::new(),
            principal: Principal::Model,
            out_len: 16 * 1024,
            tick: Duration::from_millis(20),
            on_event: None,
        }
    }

    /// Adds a handshake header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets who is on the other end.
    pub fn principal(mut self, p: Principal) -> Self {
        self.principal = p;
        self
    }

    /// Sets the event hook.
    pub fn on_event(mut self, hook: EventHook) -> Self {
        self.on_event = Some(hook);
        self
    }

    /// Sets the output buffer size.
    pub fn out_len(mut self, bytes: usize) -> Self {
        self.out_len = bytes;
        self
    }
}

/// Why the client stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The URL or a header is not valid.
    Request(String),
    /// The WebSocket failed (connect, read or write).
    WebSocket(tungstenite::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Request(e) => write!(f, "bad WebSocket request: {e}"),
            Error::WebSocket(e) => write!(f, "WebSocket: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<tungstenite::Error> for Error {
    fn from(e: tungstenite::Error) -> Self {
        Error::WebSocket(e)
    }
}

/// Connects to the backend and serves MCP until the backend closes the connection (`Ok`) or the
/// connection fails.
///
/// # Errors
/// A bad URL or header, or a WebSocket failure.
pub async fn run<C: Board, const N: usize, const T: usize>(
    opts: &Options,
    engine: Box<Engine<C, N, T>>,
    board: Arc<Mutex<C>>,
) -> Result<(), Error> {
    let mut req = opts
        .url
        .as_str()
        .into_client_request()
        .map_err(|e| Error::Request(e.to_string()))?;
    for (name, value) in &opts.headers {
        let name =
            HeaderName::from_bytes(name.as_bytes()).map_err(|e| Error::Request(e.to_string()))?;
        let value = HeaderValue::from_str(value).map_err(|e| Error::Request(e.to_string()))?;
        req.headers_mut().insert(name, value);
    }
    let (ws, _) = tokio_tungstenite::connect_async(req).await?;
    let (mut sink, mut stream) = ws.split();
    sink.send(Message::text(DEVICE_HELLO)).await?;

    let clock = Clock::new();
    let out_len = opts.out_len.max(mcp_core::MIN_OUT_LEN);
    let engine = Arc::new(Mutex::new(engine));
    {
        let (engine, board) = (engine.clone(), board.clone());
        let now = clock.now_ms();
        let _ = tokio::task::spawn_blocking(move || {
            let mut out = vec![0u8; out_len];
            prime(&mut lock(&engine), &mut lock(&board), now, &mut out);
        })
        .await;
    }
    let how = Run {
        principal: opts.principal,
        stateless: false,
        out_len,
        prime_at: None,
    };
    let mut session_id: Option<String> = None;
    let mut ticks = tokio::time::interval(opts.tick);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            msg = stream.next() => {
                let text = match msg {
                    None | Some(Ok(Message::Close(_))) => return Ok(()),
                    Some(Err(e)) => return Err(e.into()),
                    Some(Ok(Message::Text(t))) => t,
                    // Audio frames, pings (answered by tungstenite), pongs.
                    Some(Ok(_)) => continue,
                };
                let Ok(env) = Envelope::parse(text.as_bytes(), DEFAULT_MAX_DEPTH) else {
                    continue;
                };
                if env.is("hello") {
                    session_id = env.session_id.map(|s| s.to_cow().into_owned());
                    if let Some(hook) = &opts.on_event {
                        hook(&HostEvent::Hello { session_id: session_id.clone() });
                    }
                    continue;
                }
                let Some(payload) = env.mcp_payload() else { continue };
                // Answer in the session the server gave us, or the one the message names.
                let sid = session_id
                    .clone()
                    .or_else(|| env.session_id.map(|s| s.to_cow().into_owned()));
                let mut rx = crate::run(engine.clone(), board.clone(), Bytes::copy_from_slice(payload), how);
                while let Some(step) = rx.recv().await {
                    let data = match step {
                        Step::Note(n) => n,
                        Step::Done(d) => {
                            if let (Some(hook), Some(event)) = (&opts.on_event, d.event()) {
                                hook(&event);
                            }
                            d.bytes
                        }
                    };
                    if let Some(frame) = envelope(sid.as_deref(), &data) {
                        sink.send(Message::text(frame)).await?;
                    }
                }
            }
            _ = ticks.tick() => {
                let (e, b) = (engine.clone(), board.clone());
                let now = clock.now_ms();
                let msgs = tokio::task::spawn_blocking(move || {
                    lock(&b).tick(now);
                    let mut out = vec![0u8; out_len];
                    pump(&e, &b, now, &mut out)
                })
                .await
                .unwrap_or_default();
                for m in msgs {
                    if let Some(frame) = envelope(session_id.as_deref(), &m) {
                        sink.send(Message::text(frame)).await?;
                    }
                }
            }
        }
    }
}

/// Wraps one JSON-RPC message in the `mcp` envelope; `None` for an empty message.
fn envelope(session_id: Option<&str>, msg: &[u8]) -> Option<String> {
    if msg.is_empty() {
        return None;
    }
    let mut out = vec![0u8; msg.len() + 64 + 6 * session_id.map_or(0, str::len)];
    let n = wrap(session_id, &mut out, |buf| match buf.get_mut(..msg.len()) {
        Some(dst) => {
            dst.copy_from_slice(msg);
            msg.len()
        }
        None => 0,
    });
    out.truncate(n);
    String::from_utf8(out).ok().filter(|s| !s.is_empty())
}
