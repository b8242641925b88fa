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
//! The engine lives as long as [`run`], across reconnections; a timer polls it so long-running
//! tools advance, and what it emits (task status and progress) is sent in the envelope as well.
//!
//! **Device-initiated messages, the xiaozhi convention.** A backend cannot subscribe to
//! resources, so after its hello the device subscribes its engine to every live resource of the
//! board ([`Board::live_resources`], [`Server::subscribe`](mcp_core::Server::subscribe)): each
//! update the board reports goes out as `{"session_id":…,"type":"mcp","payload":
//! {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":…}}}` (backends
//! log it; one that wants the value sends `resources/read`). A call held for a person's yes on
//! the device ("press the button on the device to confirm") settles when the board's button is
//! pressed ([`Board::confirm_presses`]); its outcome follows in the envelope as a
//! `notifications/message` (logger `confirmation`).
//!
//! **What the backend hears** ([`Voice`]). That backend only logs notifications; what it speaks,
//! and gives the model, is a `{"type":"listen","state":"detect","text":…}` frame. So an outcome
//! that comes after a call's answer (a press on a call answered "waiting", a refusal or timeout
//! after it, a task that ends after its answer) also goes out as a `[device_call]` detect frame
//! with the outcome's sentence, right after its notification; so does, once after a start-up,
//! the board's news ([`Board::boot_news`]: an upgrade that came up or rolled back). With
//! [`Options::speak_first`] the board's events ([`Board::events`], and a press that answers no
//! question, [`Board::press_event`]) start turns: `Device event: …` detect frames from the events'
//! fixed words, at most one per event and interval, never while the backend speaks (its `tts`
//! frames are followed). Each is reported as [`HostEvent::Said`].
//! The backend's `session_id` names the peer (`mcp_core::server::Peer`): a call the backend sends
//! again in the same session is answered without running twice, even after a reconnect.
//!
//! Links fail, and backends misbehave; the client is built for both ([`Options`]):
//! - a connection attempt (TCP and the WebSocket upgrade) has [`Options::connect_timeout`]: a
//!   backend that accepts TCP but never upgrades is abandoned and retried;
//! - a WebSocket ping goes out every [`Keepalive::interval`], and a backend silent for
//!   [`Keepalive::timeout`] (no pong, no message) — or a send stuck that long — is a dead link;
//! - a message or frame beyond [`Options::max_message`] / [`Options::max_frame`] (default
//!   [`DEFAULT_MAX_MESSAGE`], not tungstenite's 64 MiB) closes the connection with 1009
//!   "message too big";
//! - the backend's hello must arrive within [`Options::hello_timeout`] (10 s, as xiaozhi-esp32
//!   waits; MCP messages before it are served meanwhile): a backend that dropped the device's
//!   hello — xinnan's server drops one that arrives while it still loads the device's
//!   configuration — would otherwise leave the device without a session until its idle close
//!   (about 3 minutes). The client closes the connection ("no hello") and connects again;
//! - a `session_id` that is not usable (`mcp_core::transport::xiaozhi::is_usable_session_id`:
//!   more than 128 bytes, or anything but printable ASCII) is ignored, never echoed into a reply
//!   or handed to the event hook ([`HostEvent::UnusableSessionId`] gives its length only);
//! - after any of these, with [`Options::reconnect`], the client waits (capped exponential
//!   backoff with jitter), connects again, sends its hello again and serves as before. The wait
//!   grows with every connection that ends without a session (the backend's hello): refused,
//!   timed out, closed right after the upgrade (as a backend does that turns away a device
//!   without a `Device-Id` header), no hello in time. Only a connection that had a session
//!   starts the backoff again from [`Backoff::first`]
//!   ([`Reconnect`], the rule the ESP32 firmware
//!   follows too).

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use mcp_core::server::{Heard, Peer};
use mcp_core::transport::xiaozhi::{
    DEVICE_HELLO, Envelope, Event, HELLO_TIMEOUT_MS, MAX_SAID_CHARS, Reconnect, Turns, heard, wrap,
    write_event,
};
use mcp_core::wire::json::{DEFAULT_MAX_DEPTH, Json, JsonStr};
use mcp_core::{Capacities, Reading};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::CapacityError;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};

use crate::{Board, Clock, Done, Engine, HostEvent, Run, Step, lock, primed};

pub use crate::link::Backoff;
use crate::link::{Link, link_builders, ms};

/// How the client notices a dead link: a WebSocket ping every `interval`, and the link declared
/// dead when nothing at all (a pong, a message, a ping) has come from the backend for `timeout`.
/// A send that cannot complete within `timeout` (the backend stopped reading) is a dead link too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Keepalive {
    /// How often a ping is sent.
    pub interval: Duration,
    /// How long the backend may stay silent before the link is declared dead.
    pub timeout: Duration,
}

impl Keepalive {
    /// A ping every 15 s; dead after 45 s of silence (three pings unanswered).
    pub const DEFAULT: Keepalive = Keepalive {
        interval: Duration::from_secs(15),
        timeout: Duration::from_secs(45),
    };

    /// Pings every `interval`; dead after `timeout` of silence.
    pub const fn new(interval: Duration, timeout: Duration) -> Self {
        Keepalive { interval, timeout }
    }
}

/// The close code sent when a message or frame exceeds the limits (RFC 6455 1009).
pub const CLOSE_TOO_BIG: u16 = 1009;

/// Settings of the WebSocket client: the [`Link`] settings every outbound link has (readable
/// here through `Deref`), and the WebSocket's own.
#[derive(Clone)]
#[non_exhaustive]
pub struct Options {
    /// The backend's WebSocket URL (`ws://…`, or `wss://…`: TLS with [`Link::tls`]'s roots, the
    /// certificate checked against the URL's host).
    pub url: String,
    /// Extra handshake headers (xiaozhi backends read `Authorization`, `Device-Id`, `Client-Id`,
    /// `Protocol-Version`).
    pub headers: Vec<(String, String)>,
    /// What every link has: principal, buffers, events, reconnection ([`Backoff`]), the connect
    /// timeout (TCP, TLS and the WebSocket upgrade), the largest message, TLS.
    pub link: Link,
    /// How long the backend's hello may take, from the device's: without it by then, the
    /// client closes the connection ("no hello") and, with reconnection, connects again.
    pub hello_timeout: Duration,
    /// Pings and dead-link detection (`None`: none; a silent dead link then lasts until TCP
    /// gives up, which can take hours).
    pub keepalive: Option<Keepalive>,
    /// The largest single frame the backend may send (bytes; `None`: [`Link::max_message`]).
    /// A message or frame beyond its limit closes the connection with 1009 "message too big"
    /// (and the client reconnects, with reconnection).
    pub max_frame: Option<usize>,
    /// The board's events start turns of the backend's model ([`Voice`]); `false` (the
    /// default): they stay resource updates, as on every MCP wire.
    pub speak_first: bool,
}

crate::link::deref_link!(Options);

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("url", &self.url)
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("link", &self.link)
            .field("hello_timeout", &self.hello_timeout)
            .field("keepalive", &self.keepalive)
            .field("max_frame", &self.max_frame)
            .field("speak_first", &self.speak_first)
            .finish_non_exhaustive()
    }
}

impl Options {
    /// Defaults for `url`: no extra headers, [`Link::new`]'s (the model on the other end, 16 KiB
    /// responses, a 20 ms tick, no reconnection, a 10 s connect timeout, the system's roots),
    /// a 10 s hello timeout ([`HELLO_TIMEOUT_MS`]), [`Keepalive::DEFAULT`], and messages and
    /// frames of at most [`DEFAULT_MAX_MESSAGE`] bytes.
    pub fn new(url: impl Into<String>) -> Self {
        Options {
            url: url.into(),
            headers: Vec::new(),
            link: Link::new(DEFAULT_MAX_MESSAGE),
            hello_timeout: Duration::from_millis(HELLO_TIMEOUT_MS.into()),
            keepalive: Some(Keepalive::DEFAULT),
            max_frame: None,
            speak_first: false,
        }
    }

    link_builders!();

    /// Adds a handshake header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    crate::link::setters! {
        /// Sets the keep-alive (`None`: no pings, no dead-link detection).
        keepalive(k: Option<Keepalive>);
        /// Sets how long the backend's hello may take.
        hello_timeout(t: Duration);
        /// Lets the board's events start turns of the backend's model (see [`Voice`]).
        speak_first(on: bool);
    }
}

/// One detect frame the device sends its backend of its own, and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Said {
    /// The frame (`{"session_id":…,"type":"listen","state":"detect","text":…}`).
    pub frame: String,
    /// Its text, as the backend reads it (`[device_call] …`, `Device event: …`).
    pub text: String,
    /// The event's name, for an event; `None` for an outcome.
    pub event: Option<&'static str>,
}

impl Said {
    fn new(frame: Vec<u8>, event: Option<&'static str>) -> Option<Said> {
        let text = serde_json::from_slice::<serde_json::Value>(&frame)
            .ok()?
            .get("text")?
            .as_str()?
            .to_owned();
        Some(Said {
            frame: String::from_utf8(frame).ok()?,
            text,
            event,
        })
    }
}

/// What a xiaozhi device says of its own on the link, over mcp-core's sans-IO pieces
/// (`mcp_core::transport::xiaozhi`: [`heard`], [`write_event`], [`Turns`]): the `[device_call]`
/// frames of outcomes heard after a call's answer and of the board's news after a start-up, and
/// — when the device speaks first — the event frames of the board's events, when it may start a
/// turn. The WebSocket client here and device-sim's stdio envelope both use it.
///
/// A detect text starts a new speech in xinnan's backend, dropping what it was still saying. So
/// an outcome is held ([`outcome`](Self::outcome), [`boot`](Self::boot)) until the backend is not
/// speaking (its `tts` `stop`, [`Turns::may_tell`]), and then [`speak`](Self::speak) gives it out
/// at once, one per speech, in order; a new connection drops what was held for the old one.
#[derive(Debug, Clone, Default)]
pub struct Voice {
    turns: Turns<4>,
    speak_first: bool,
    told_boot: bool,
    /// Outcome frames held while the backend speaks, oldest first (at most [`MAX_HELD`]).
    held: std::collections::VecDeque<Said>,
}

/// The most outcome frames a [`Voice`] holds while the backend speaks; past it the oldest is
/// dropped (its notification went out; only its spoken form is lost).
pub const MAX_HELD: usize = 8;

impl Voice {
    /// A device that starts turns of its own when `speak_first`.
    pub fn new(speak_first: bool) -> Self {
        Voice {
            speak_first,
            ..Voice::default()
        }
    }

    /// A new connection: nobody speaks, nothing waits (the board's news stays told; outcomes
    /// held for the old connection's session are dropped).
    pub fn connected(&mut self) {
        self.turns = Turns::new();
        self.held.clear();
    }

    /// A frame from the backend at `now_ms` (its `tts` frames say when it speaks).
    pub fn hear(&mut self, env: &Envelope<'_>, now_ms: u64) {
        self.turns.heard(env, now_ms);
    }

    /// Holds the `[device_call]` frame of an outcome a poll wrote (`message`, its bytes from
    /// their start; `heard`, where its sentence is), for the backend session `sid`, until
    /// [`speak`](Self::speak) may give it out.
    pub fn outcome(&mut self, sid: Option<&str>, message: &[u8], heard: &Heard) {
        self.hold(sid, heard.sentence(message));
    }

    /// Holds the board's news after the start-up ([`Board::boot_news`]), once: `news` is what
    /// the board says now (an upgrade's outcome is known once the new firmware answered).
    pub fn boot(&mut self, sid: Option<&str>, news: Option<String>) {
        if self.told_boot {
            return;
        }
        let Some(news) = news.and_then(|n| serde_json::to_string(&n).ok()) else {
            return;
        };
        if let Some(sentence) = Json::parse(news.as_bytes(), DEFAULT_MAX_DEPTH)
            .ok()
            .and_then(|j| j.as_str())
        {
            self.hold(sid, sentence);
            self.told_boot = true;
        }
    }

    /// `true` once the board's news was told (it is wanted only then).
    pub fn told_boot(&self) -> bool {
        self.told_boot
    }

    /// `true` while something the device said is not spoken to its end yet at `now_ms` (held,
    /// or the backend speaks or is about to): a restart then waits ([`Board::hold_restart`]).
    pub fn busy(&self, now_ms: u64) -> bool {
        !self.held.is_empty() || self.turns.speaking(now_ms)
    }

    fn hold(&mut self, sid: Option<&str>, sentence: JsonStr<'_>) {
        let mut out = vec![0u8; 64 + 6 * (MAX_SAID_CHARS + sid.map_or(0, str::len))];
        let n = heard(sid, sentence, &mut out);
        out.truncate(n);
        if let Some(said) = Said::new(out, None) {
            if self.held.len() == MAX_HELD {
                self.held.pop_front();
            }
            self.held.push_back(said);
        }
    }

    /// What the device says at `now_ms`: an outcome held, when the backend is not speaking (one
    /// per speech: the next waits until it spoke of this one); then, of the board's events that
    /// occurred (`fired`), the frames of those whose turn it is (none unless the device speaks
    /// first).
    pub fn speak(
        &mut self,
        sid: Option<&str>,
        fired: Vec<(&'static Event, Option<Reading>)>,
        now_ms: u64,
    ) -> Vec<Said> {
        let mut said = Vec::new();
        if self.turns.may_tell(now_ms)
            && let Some(s) = self.held.pop_front()
        {
            self.turns.said(now_ms);
            said.push(s);
        }
        if !self.speak_first {
            return said;
        }
        for (event, reading) in fired {
            self.turns.fire(event, reading, now_ms);
        }
        while let Some((event, reading)) = self.turns.next(now_ms) {
            let mut out = vec![0u8; 64 + 6 * (event.says().len() + 32 + sid.map_or(0, str::len))];
            let n = write_event(sid, event, reading, &mut out);
            out.truncate(n);
            said.extend(Said::new(out, Some(event.name())));
        }
        said
    }
}

/// The default limit of one incoming message or frame: four xiaozhi `tools/list` pages (8000
/// bytes each). What a backend sends a device — `initialize`, `tools/list`, a call with its
/// arguments — is far smaller; a device has kilobytes, not tungstenite's 64 MiB.
pub const DEFAULT_MAX_MESSAGE: usize = 32 * 1024;

/// Why the client stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The URL or a header is not valid.
    Request(String),
    /// The WebSocket failed (connect, read or write).
    WebSocket(tungstenite::Error),
    /// The TLS handshake failed: the server's certificate was refused (the message says why:
    /// unknown issuer, expired, wrong name), or the TLS setting cannot be used (a CA file).
    Tls(String),
    /// The connection attempt took longer than [`Options::connect_timeout`].
    ConnectTimeout,
    /// Nothing came from the backend within [`Keepalive::timeout`], or a send could not
    /// complete within it.
    DeadLink(Duration),
    /// The backend sent a message or frame beyond [`Options::max_message`] /
    /// [`Options::max_frame`]; the client closed the connection with 1009 "message too big".
    TooBig(String),
    /// The backend's hello did not arrive within [`Options::hello_timeout`]; the client
    /// closed the connection ("no hello").
    NoHello(Duration),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Request(e) => write!(f, "bad WebSocket request: {e}"),
            Error::WebSocket(e) => write!(f, "WebSocket: {e}"),
            Error::Tls(e) => write!(f, "WebSocket: {e}"),
            Error::ConnectTimeout => f.write_str("WebSocket: connection attempt timed out"),
            Error::DeadLink(t) => write!(
                f,
                "WebSocket: dead link (nothing from the backend, or a send stuck, for {} ms)",
                t.as_millis()
            ),
            Error::TooBig(e) => write!(f, "WebSocket: closed with 1009 message too big ({e})"),
            Error::NoHello(t) => write!(
                f,
                "WebSocket: no hello from the backend within {} ms, closed",
                t.as_millis()
            ),
        }
    }
}

impl std::error::Error for Error {}

impl From<tungstenite::Error> for Error {
    fn from(e: tungstenite::Error) -> Self {
        match crate::tls::explain(&e) {
            Some(why) => Error::Tls(why),
            None => Error::WebSocket(e),
        }
    }
}

type Request = tungstenite::handshake::client::Request;

fn request(opts: &Options) -> Result<Request, Error> {
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
    Ok(req)
}

/// Connects to the backend and serves MCP.
///
/// Without [`Options::reconnect`] it returns when the backend closes the connection (`Ok`) or the
/// connection fails. With it, it connects again after every failure or close, forever, waiting
/// as the [`Backoff`] says: the wait grows with every connection that ends without a session
/// (the backend's hello, which must come within [`Options::hello_timeout`]) and starts again
/// from the first step only after one that had a session; only a bad URL or header ends it.
///
/// The engine lives across connections, and with it the record of recent calls: a backend that
/// resumes its session (the same `session_id` in its hello) and sends a call again that already
/// ran is answered from the first answer, without running it twice — whether that answer was
/// written out before the link failed or lost with it. Each acting call's answer is reported as
/// [`HostEvent::Answered`]: written once the WebSocket send returned (the bytes are in the
/// local send buffer; nothing here can tell whether the backend read them), lost when the send
/// failed.
///
/// # Errors
/// A bad URL or header; without reconnection also a WebSocket failure or a connect timeout.
pub async fn run<C: Board, K: Capacities>(
    opts: &Options,
    engine: Box<Engine<C, K>>,
    board: Arc<Mutex<C>>,
) -> Result<(), Error> {
    request(opts)?;
    // `wss://`: one TLS configuration for every attempt, checked before the first.
    let connector = if opts
        .url
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("wss://")
    {
        let config = opts
            .tls
            .client_config()
            .map_err(|e| Error::Tls(e.to_string()))?;
        Some(tokio_tungstenite::Connector::Rustls(config))
    } else {
        Some(tokio_tungstenite::Connector::Plain)
    };
    let clock = Clock::new();
    let out_len = opts.out_len.max(mcp_core::MIN_OUT_LEN);
    let engine = primed(engine, &board, clock.now_ms(), out_len).await;
    let mut policy = opts.reconnect.map(|b| b.policy());
    let mut display = crate::Display::new(lock(&board).confirm_presses());
    let mut voice = Voice::new(opts.speak_first);
    loop {
        let config = WebSocketConfig::default()
            .max_message_size(Some(opts.max_message))
            .max_frame_size(Some(opts.max_frame.unwrap_or(opts.max_message)));
        let attempt = tokio::time::timeout(
            opts.connect_timeout,
            tokio_tungstenite::connect_async_tls_with_config(
                request(opts)?,
                Some(config),
                false,
                connector.clone(),
            ),
        )
        .await;
        // Whether the backend's hello arrived: an accepted connection is no progress without it.
        let mut session = false;
        // The backend sessions this connection served: its conversation.
        let mut peers = Vec::new();
        let host = Host {
            opts,
            engine: &engine,
            board: &board,
            clock: &clock,
        };
        let end = match attempt {
            Ok(Ok((ws, _))) => {
                voice.connected();
                serve(host, &mut display, &mut voice, ws, &mut session, &mut peers).await
            }
            Ok(Err(e)) => Err(e.into()),
            Err(_) => Err(Error::ConnectTimeout),
        };
        // The connection's conversation ended: its question is withdrawn from the device at
        // once, and nothing of it goes to the next connection.
        if !peers.is_empty() {
            end_conversations(&engine, &mut peers);
            let _ = tick(host, &mut display, false, &voice).await;
        }
        let Some(policy) = policy.as_mut() else {
            return end;
        };
        let wait = Duration::from_millis(policy.ended(session, random()).into());
        if let Some(hook) = &opts.on_event {
            hook(&HostEvent::Disconnected {
                reason: match &end {
                    Ok(()) => "the backend closed the connection".into(),
                    Err(e) => e.to_string(),
                },
                retry_in: Some(wait),
            });
        }
        tokio::time::sleep(wait).await;
    }
}

/// Between half the delay and the whole of it ("equal jitter"), so that a fleet that lost its
/// backend at once does not come back at once.
pub(crate) fn jitter(delay: Duration) -> Duration {
    Duration::from_millis(Reconnect::jitter(ms(delay), random()).into())
}

/// A random number from the OS (0 if it has none: the jitter is then half the step).
pub(crate) fn random() -> u32 {
    let mut r = [0u8; 4];
    match getrandom::fill(&mut r) {
        Ok(()) => u32::from_le_bytes(r),
        Err(_) => 0,
    }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

type Sink = futures_util::stream::SplitSink<Ws, Message>;

/// Sends one message; with a keep-alive, a send that cannot complete within its timeout (the
/// backend stopped reading and the socket buffer is full) is a dead link.
async fn send(sink: &mut Sink, msg: Message, limit: Option<Duration>) -> Result<(), Error> {
    match limit {
        Some(t) => match tokio::time::timeout(t, sink.send(msg)).await {
            Ok(sent) => sent.map_err(Error::from),
            Err(_) => Err(Error::DeadLink(t)),
        },
        None => sink.send(msg).await.map_err(Error::from),
    }
}

/// The session a message is answered in: the server's (from its hello), else the one the
/// message names; a `session_id` that is not
/// [usable](mcp_core::transport::xiaozhi::is_usable_session_id) is never repeated
/// (the application hears of it once per message).
fn session_of(env: &Envelope<'_>, opts: &Options) -> Option<String> {
    let usable = env.usable_session_id().map(|s| s.to_cow().into_owned());
    if let (None, Some(raw), Some(hook)) = (&usable, env.session_id, &opts.on_event) {
        hook(&HostEvent::UnusableSessionId {
            len: raw.raw().len(),
        });
    }
    usable
}

/// What every connection of [`run`] serves with.
struct Host<'a, C: 'static, K: Capacities> {
    opts: &'a Options,
    engine: &'a Arc<Mutex<Box<Engine<C, K>>>>,
    board: &'a Arc<Mutex<C>>,
    clock: &'a Clock,
}

impl<C: 'static, K: Capacities> Clone for Host<'_, C, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C: 'static, K: Capacities> Copy for Host<'_, C, K> {}

/// One timer turn on the board and the engine (off the async threads): the board's tick, a press
/// answers the question shown, the engine is polled, what waits is shown; with `news`, the
/// board's news after the start-up. `voice`: a restart that comes due waits while what the
/// device said is not spoken yet ([`Board::hold_restart`]).
async fn tick<C: Board, K: Capacities>(
    host: Host<'_, C, K>,
    display: &mut crate::Display,
    news: bool,
    voice: &Voice,
) -> Option<(crate::Turn, Option<String>, u64)> {
    let (e, b) = (host.engine.clone(), host.board.clone());
    let now = host.clock.now_ms();
    let busy = voice.busy(now);
    let hook = host.opts.on_event.clone();
    let out_len = host.opts.out_len.max(mcp_core::MIN_OUT_LEN);
    let mut shown = std::mem::take(display);
    let (turn, shown, news) = tokio::task::spawn_blocking(move || {
        let mut out = vec![0u8; out_len];
        lock(&b).hold_restart(busy);
        let turn = shown.turn(&e, &b, now, &mut out, hook.as_ref());
        let news = if news { lock(&b).boot_news() } else { None };
        (turn, shown, news)
    })
    .await
    .ok()?;
    *display = shown;
    Some((turn, news, now))
}

/// Sends what a timer turn owes the backend: each message the engine emitted, with the
/// `[device_call]` frame of an outcome heard after a call's answer right after its message;
/// then, in a session, the board's news and its events' turns ([`Voice`]).
#[allow(
    clippy::too_many_arguments,
    reason = "one connection's state, lent for the turn"
)]
async fn send_turn<C: 'static, K: Capacities>(
    host: Host<'_, C, K>,
    sink: &mut Sink,
    voice: &mut Voice,
    (session_id, peers): (Option<&str>, &[Peer]),
    session: bool,
    (turn, news, now): (crate::Turn, Option<String>, u64),
) -> Result<(), Error> {
    let opts = host.opts;
    let dead_after = opts.keepalive.map(|k| k.timeout);
    for m in &turn.msgs {
        // Only to this connection's conversation (or every subscriber): never another's.
        if m.to.is_some_and(|to| !peers.contains(&to)) {
            m.delivered(host.engine, false);
            continue;
        }
        let sent = match envelope(session_id, &m.bytes) {
            Some(frame) => send(sink, Message::text(frame), dead_after).await,
            None => Ok(()),
        };
        m.delivered(host.engine, sent.is_ok());
        if let (Some(hook), Some(event)) = (
            &opts.on_event,
            crate::observe("xiaozhi-ws", &turn, m, sent.is_ok()),
        ) {
            hook(&event);
        }
        sent?;
        if let Some(h) = &m.heard {
            voice.outcome(session_id, &m.bytes, h);
        }
    }
    // What the device says of its own: outcomes once the backend is not speaking; in a session,
    // the board's news and its events' turns.
    let fired = if session {
        voice.boot(session_id, news);
        turn.events
    } else {
        Vec::new()
    };
    for s in voice.speak(session_id, fired, now) {
        say(sink, s, opts).await?;
    }
    Ok(())
}

/// Sends a detect frame of the device's own, and reports it.
async fn say(sink: &mut Sink, said: Said, opts: &Options) -> Result<(), Error> {
    let dead_after = opts.keepalive.map(|k| k.timeout);
    send(sink, Message::text(said.frame), dead_after).await?;
    if let Some(hook) = &opts.on_event {
        hook(&HostEvent::Said {
            transport: "xiaozhi-ws",
            text: said.text,
            event: said.event,
        });
    }
    Ok(())
}

/// `true` when the engine holds a question for the device that the display does not show yet:
/// a call just answered that it waits. The device shows it before that answer goes out.
fn unshown<C: 'static, K: Capacities>(
    engine: &Mutex<Box<Engine<C, K>>>,
    display: &crate::Display,
) -> bool {
    lock(engine).confirmation().is_some_and(|p| {
        p.on_device
            && !display
                .waiting
                .iter()
                .any(|w| w.approval == p.approval.get() && w.shown_since.is_some())
    })
}

/// Ends the conversations of `peers` (a connection's backend sessions) on the engine: a call
/// one of them left waiting for a person is withdrawn, and nothing owed to it goes anywhere
/// ([`Server::end_conversation`](mcp_core::Server::end_conversation)).
fn end_conversations<C, K: Capacities>(engine: &Mutex<Box<Engine<C, K>>>, peers: &mut Vec<Peer>) {
    let mut engine = lock(engine);
    for peer in peers.drain(..) {
        engine.end_conversation(peer);
    }
}

/// Serves one connection until it closes (`Ok`) or fails; `session` is set once the backend's
/// hello arrived (then the connection counts as a session for the backoff). `peers` gathers
/// the backend sessions it served: the conversation that ends with it (a new hello on it begins
/// another).
async fn serve<C: Board, K: Capacities>(
    host: Host<'_, C, K>,
    display: &mut crate::Display,
    voice: &mut Voice,
    ws: Ws,
    session: &mut bool,
    peers: &mut Vec<Peer>,
) -> Result<(), Error> {
    let Host {
        opts,
        engine,
        board,
        clock,
    } = host;
    let (mut sink, mut stream) = ws.split();
    let dead_after = opts.keepalive.map(|k| k.timeout);
    send(&mut sink, Message::text(DEVICE_HELLO), dead_after).await?;
    let out_len = opts.out_len.max(mcp_core::MIN_OUT_LEN);
    let mut session_id: Option<String> = None;
    let mut ticks = tokio::time::interval(opts.tick);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Without a keep-alive these never fire (a day is as good as never: they are not polled).
    let ping_every = opts.keepalive.map_or(Duration::from_secs(86_400), |k| {
        k.interval.max(Duration::from_millis(1))
    });
    let mut pings = tokio::time::interval_at(tokio::time::Instant::now() + ping_every, ping_every);
    pings.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let silence = tokio::time::sleep(dead_after.unwrap_or(Duration::from_secs(86_400)));
    tokio::pin!(silence);
    // The backend's hello must come within this (from our hello going out).
    let no_hello = tokio::time::sleep(opts.hello_timeout);
    tokio::pin!(no_hello);
    loop {
        tokio::select! {
            msg = stream.next() => {
                // Anything from the backend (a message, a pong, a ping) shows the link lives.
                if let Some(t) = dead_after {
                    silence.as_mut().reset(tokio::time::Instant::now() + t);
                }
                let text = match msg {
                    None | Some(Ok(Message::Close(_))) => return Ok(()),
                    Some(Err(tungstenite::Error::Capacity(e))) => {
                        return Err(too_big(&mut sink, e).await);
                    }
                    Some(Err(e)) => return Err(e.into()),
                    Some(Ok(Message::Text(t))) => t,
                    // Audio frames, pings (answered by tungstenite), pongs.
                    Some(Ok(_)) => continue,
                };
                let env = Envelope::parse(text.as_bytes());
                if let Ok(env) = &env {
                    // Its `tts` frames say when the backend speaks (no turn of the device's then).
                    voice.hear(env, clock.now_ms());
                }
                if let Ok(env) = &env && env.is("hello") {
                    // A new hello is a new conversation: the one before it on this connection
                    // ends.
                    if *session {
                        end_conversations(engine, peers);
                    }
                    *session = true;
                    session_id = session_of(env, opts);
                    let peer = session_id.as_deref().map_or(Peer::ONLY, |s| Peer::named(s.as_bytes()));
                    peers.push(peer);
                    if let Some(hook) = &opts.on_event {
                        hook(&HostEvent::Hello { session_id: session_id.clone() });
                    }
                    // The backend cannot subscribe: the device subscribes it to everything live.
                    let uris = lock(board).live_resources();
                    let mut engine = lock(engine);
                    for uri in uris {
                        engine.subscribe(uri);
                    }
                    continue;
                }
                let payload = match &env {
                    Ok(env) => {
                        let Some(payload) = env.mcp_payload() else { continue };
                        payload
                    }
                    // No envelope anyone can read: the engine answers it as it answers any
                    // unreadable message (-32700, `id: null`), in an `mcp` envelope.
                    Err(_) => text.as_bytes(),
                };
                // Answer in the session the server gave us, or the one the message names. The
                // backend session is the peer: one resumed after a reconnect is the same peer.
                let sid = match &session_id {
                    Some(s) => Some(s.clone()),
                    None => env.as_ref().ok().and_then(|env| session_of(env, opts)),
                };
                let peer = sid.as_deref().map_or(Peer::ONLY, |s| Peer::named(s.as_bytes()));
                if !peers.contains(&peer) {
                    peers.push(peer);
                }
                let how = Run {
                    principal: opts.principal,
                    stateless: false,
                    out_len,
                    prime_at: None,
                    peer,
                    report_delivery: false,
                    touch: None,
                    events: opts.on_event.clone(),
                    transport: "xiaozhi-ws",
                    session: None,
                };
                let mut rx = crate::run(engine.clone(), board.clone(), Bytes::copy_from_slice(payload), how);
                while let Some(step) = rx.recv().await {
                    let (data, done) = match step {
                        Step::Note(n) => (n, None),
                        Step::Done(d) => (d.bytes.clone(), Some(d)),
                    };
                    // A call answered that it waits for the device's button: the device shows
                    // the question before the answer goes out (a person who hears the answer
                    // finds it on the device), and what that turn owes follows the answer.
                    let shown = match done.is_some() && unshown(engine, display) {
                        true => tick(host, display, false, voice).await,
                        false => None,
                    };
                    let sent = match envelope(sid.as_deref(), &data) {
                        Some(frame) => send(&mut sink, Message::text(frame), dead_after).await,
                        None => Ok(()),
                    };
                    if let Some(d) = done {
                        report(opts, engine, &d, sent.is_ok());
                    }
                    sent?;
                    if let Some(turn) = shown {
                        send_turn(host, &mut sink, voice, (session_id.as_deref(), peers.as_slice()), *session, turn).await?;
                    }
                }
            }
            _ = ticks.tick() => {
                let news = *session && !voice.told_boot();
                let Some(turn) = tick(host, display, news, voice).await else { continue };
                send_turn(host, &mut sink, voice, (session_id.as_deref(), peers.as_slice()), *session, turn).await?;
            }
            _ = pings.tick(), if opts.keepalive.is_some() => {
                send(&mut sink, Message::Ping(Bytes::new()), dead_after).await?;
            }
            () = &mut silence, if dead_after.is_some() => {
                return Err(Error::DeadLink(dead_after.unwrap_or_default()));
            }
            () = &mut no_hello, if !*session => {
                close(&mut sink, CloseCode::Normal, "no hello").await;
                return Err(Error::NoHello(opts.hello_timeout));
            }
        }
    }
}

/// Closes the connection with 1009 "message too big" and says why.
async fn too_big(sink: &mut Sink, e: CapacityError) -> Error {
    close(sink, CloseCode::Size, "message too big").await;
    Error::TooBig(e.to_string())
}

/// Sends a close frame (best effort, briefly: the link may be unusable).
async fn close(sink: &mut Sink, code: CloseCode, reason: &'static str) {
    let frame = Message::Close(Some(CloseFrame {
        code,
        reason: reason.into(),
    }));
    let _ = tokio::time::timeout(Duration::from_secs(1), sink.send(frame)).await;
}

/// Records what became of an answer (an acting call's, for retransmissions), and tells the
/// application.
fn report<C, K: Capacities>(
    opts: &Options,
    engine: &Mutex<Box<Engine<C, K>>>,
    done: &Done,
    written: bool,
) {
    done.handed
        .delivered(engine, opts.on_event.as_ref(), crate::delivery(written));
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
