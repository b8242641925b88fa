//! The xiaozhi MCP endpoint client (MCP 接入点): the device joins a xiaozhi agent as a tool
//! server, connecting *out* to the endpoint's WebSocket URL — the public service's
//! `wss://api.xiaozhi.me/mcp/?token=…`, or a self-hosted `mcp-endpoint-server`'s
//! `ws(s)://HOST:8004/mcp_endpoint/mcp/?token=…` — and answering the plain JSON-RPC the agent's
//! backend sends through it, one message per text frame. The rules are mcp-core's
//! ([`mcp_core::transport::endpoint`]); this is their std host.
//!
//! One device can serve several agents: [`run`] takes several links, each with its own URL,
//! its own engine (the tools that agent is offered: register only those) and its own agent
//! sessions, over one board. One timer turns them all: the board's tick, the device's button
//! (one question shown at a time over every link, [`Panel`](crate::Panel)), and what each
//! engine owes its link (a held call's answer).
//!
//! **Agent sessions.** Each message is handed to the link's engine as from its current agent
//! session ([`Sessions`]); an `initialize` begins a new one, and the conversation of the one
//! before ends ([`Server::end_conversation`](mcp_core::Server::end_conversation)): its question
//! is withdrawn from the device. A dropped link does not end a session: the backend sends its
//! next `tools/call` on the new link without `initialize`. The link's engine is built with
//! [`Config::answers_only`](mcp_core::Config::answers_only): the endpoint forwards nothing but
//! answers, so an outcome after a call's answer begins the session's next answer.
//!
//! **The link** ([`Policy`], [`Keepalive`]). The device answers the endpoint's pings, pings a
//! quiet link itself, and declares it dead after [`Options::keepalive`]'s timeout; it closes a
//! link (and waits, briefly, for the close to complete) before it opens the next, so that the
//! endpoint never sees two links for one token. How a link ended decides what comes next: 1008
//! (the token refused) is said once and retried only every few minutes; 1000 (another link took
//! the token) is said and backed off, and after a few in a row the link stays off; 1009 halves
//! the frame cap; anything else reconnects after 1 s doubling to 30 s, reset after a healthy
//! link. Each change is a [`HostEvent::Endpoint`].
//!
//! **Secrets.** The token is in the URL's query: the URL is shown with its query's values as
//! `…` ([`device_link::Url`]'s `Display`), and kept as written (percent-escapes and all) for the
//! request. A `ws://` URL is refused unless its host is on this machine or the local network
//! ([`device_link::Host::is_local`]): beyond it the token would travel in clear.

use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use mcp_core::Capacities;
use mcp_core::server::Peer;
use mcp_core::transport::endpoint::{Ended, Next, Policy, Say, Sessions};
use mcp_core::transport::link::{Due, Keepalive as Alive};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};

use crate::link::{Link, link_builders, ms};
use crate::xiaozhi::{Keepalive, random};
use crate::{Board, Clock, Engine, EventHook, HostEvent, Run, Step, lock, primed};

/// The transport's name in reports ([`CallReport::transport`](crate::CallReport)).
pub const TRANSPORT: &str = "mcp-endpoint";

/// Settings of one endpoint link: the [`Link`] settings every outbound link has (readable here
/// through `Deref`), and the endpoint's own.
#[derive(Clone)]
#[non_exhaustive]
pub struct Options {
    /// The endpoint's URL with its token (`ws://…`, or `wss://…`: TLS with [`Link::tls`]'s roots).
    pub url: String,
    /// What every link has. [`Link::reconnect`]: `None` ends the link at its first end (the
    /// waits themselves are the endpoint's [`Policy`]'s); [`Link::max_message`]: the largest
    /// message the endpoint may send.
    pub link: Link,
    /// Pings and dead-link detection.
    pub keepalive: Keepalive,
    /// The largest frame sent at first (bytes; it halves after a 1009 close).
    pub max_frame: usize,
}

crate::link::deref_link!(Options);

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("url", &shown(&self.url))
            .field("link", &self.link)
            .field("keepalive", &self.keepalive)
            .field("max_frame", &self.max_frame)
            .finish_non_exhaustive()
    }
}

impl Options {
    /// Defaults for `url`: [`Link::new`]'s (the model on the other end, a 20 ms tick, no
    /// reconnection, a 10 s connect timeout, the system's roots), messages from the endpoint of
    /// at most 64 KiB, [`Keepalive::DEFAULT`], frames of at most
    /// [`DEFAULT_MAX_FRAME`](mcp_core::transport::endpoint::DEFAULT_MAX_FRAME).
    pub fn new(url: impl Into<String>) -> Self {
        Options {
            url: url.into(),
            link: Link::new(64 * 1024),
            keepalive: Keepalive::DEFAULT,
            max_frame: mcp_core::transport::endpoint::DEFAULT_MAX_FRAME,
        }
    }

    link_builders!();

    crate::link::setters! {
        /// Sets the keep-alive.
        keepalive(k: Keepalive);
        /// Sets the first frame cap.
        max_frame(bytes: usize);
    }
}

/// The URL as logs and pages show it: without user info, the query's values as `…`.
pub fn shown(url: &str) -> String {
    match device_link::Url::parse(url) {
        Ok(u) => u.to_string(),
        Err(e) => format!("(a URL that cannot be used: {e})"),
    }
}

/// A link's state, as [`HostEvent::Endpoint`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum State {
    /// The WebSocket is up.
    Connected,
    /// An `initialize` began agent session `count` (counted on this link).
    Session {
        /// How many sessions began on the link.
        count: u64,
    },
    /// The link ended.
    Closed {
        /// The endpoint's close code, when it closed it.
        code: Option<u16>,
        /// Why, in words (the endpoint's reason escaped and capped, or the device's).
        reason: String,
        /// What the device says of it beyond the code: the token refused, another link took it,
        /// frames made smaller.
        say: Option<String>,
        /// When it connects again (`None`: it stays off, see [`State::Stopped`]).
        retry_in: Option<Duration>,
    },
    /// The link stays off.
    Stopped {
        /// Why.
        why: String,
    },
}

/// Why [`run`] could not serve a link.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The URL cannot be used (not `ws://` or `wss://`, or not a URL).
    Url(String),
    /// A `ws://` URL to a host beyond this machine and the local network: the token in its
    /// query would travel in clear.
    InClear(String),
    /// The TLS setting cannot be used (a CA file).
    Tls(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Url(e) => write!(f, "MCP endpoint URL: {e}"),
            Error::InClear(url) => write!(
                f,
                "MCP endpoint {url}: refused: ws:// to a host beyond this machine and the local network would send the token in clear; use wss://"
            ),
            Error::Tls(e) => write!(f, "MCP endpoint: {e}"),
        }
    }
}

impl std::error::Error for Error {}

/// Checks a link's URL: `ws://` or `wss://`, and a token in clear only to a local host.
fn check(url: &str) -> Result<(), Error> {
    let u = device_link::Url::parse(url).map_err(|e| Error::Url(e.to_string()))?;
    match u.scheme {
        device_link::url::Scheme::Ws | device_link::url::Scheme::Wss => {}
        _ => return Err(Error::Url("expected ws:// or wss://".into())),
    }
    if !u.secret_may_go() {
        return Err(Error::InClear(u.to_string()));
    }
    Ok(())
}

/// One link, as the timer and its connection task share it.
struct Shared<C: 'static, K: Capacities> {
    index: usize,
    url: String,
    engine: Arc<Mutex<Box<Engine<C, K>>>>,
    sessions: Mutex<Sessions>,
    /// The current connection's outgoing frames (`None`: no connection).
    tx: Mutex<Option<mpsc::UnboundedSender<Bytes>>>,
    opts: Options,
}

impl<C: 'static, K: Capacities> Shared<C, K> {
    fn event(&self, state: State) {
        if let Some(hook) = &self.opts.on_event {
            hook(&HostEvent::Endpoint {
                link: self.index,
                url: self.url.clone(),
                state,
            });
        }
    }

    /// The application's hook, with this link's index on every call it reports
    /// ([`CallReport::link`](crate::CallReport::link)).
    fn calls_hook(&self) -> Option<EventHook> {
        let hook = self.opts.on_event.clone()?;
        let index = self.index;
        Some(Arc::new(move |e: &HostEvent| match e {
            HostEvent::Call(c) => {
                let mut c = c.clone();
                c.link = Some(index);
                hook(&HostEvent::Call(c));
            }
            other => hook(other),
        }))
    }

    fn peer(&self) -> Peer {
        lock(&self.sessions).peer()
    }

    /// Sends a frame on the current connection; `false` when there is none.
    fn send(&self, frame: Bytes) -> bool {
        lock(&self.tx)
            .as_ref()
            .is_some_and(|tx| tx.send(frame).is_ok())
    }
}

/// Serves every link until each has stopped (with [`Link::reconnect`], a link stops only when
/// another link keeps taking its token; without it, at its first end).
///
/// Each link's engine comes as built by the caller: build it with
/// [`Config::answers_only`](mcp_core::Config::answers_only) and register the tools the link
/// offers ([`admits`](mcp_core::transport::endpoint::admits)).
///
/// # Errors
/// A link's URL that cannot be used, or that would send its token in clear; the TLS setting.
pub async fn run<C: Board, K: Capacities>(
    links: Vec<(Options, Box<Engine<C, K>>)>,
    board: Arc<Mutex<C>>,
) -> Result<(), Error> {
    for (opts, _) in &links {
        check(&opts.url)?;
    }
    let clock = Clock::new();
    let mut shared = Vec::new();
    for (index, (opts, engine)) in links.into_iter().enumerate() {
        let out_len = opts.out_len.max(mcp_core::MIN_OUT_LEN);
        let engine = primed(engine, &board, clock.now_ms(), out_len).await;
        shared.push(Arc::new(Shared {
            index,
            url: shown(&opts.url),
            engine,
            sessions: Mutex::new(Sessions::new(index as u64)),
            tx: Mutex::new(None),
            opts,
        }));
    }
    let tick = shared
        .iter()
        .map(|s| s.opts.tick)
        .min()
        .unwrap_or(Duration::from_millis(20));
    let weak: Vec<Weak<Shared<C, K>>> = shared.iter().map(Arc::downgrade).collect();
    let b = board.clone();
    std::thread::spawn(move || timer(weak, b, clock, tick));
    let mut tasks = tokio::task::JoinSet::new();
    for link in shared {
        let connector = connector(&link.opts)?;
        let board = board.clone();
        tasks.spawn(async move { serve_link(link, board, clock, connector).await });
    }
    while tasks.join_next().await.is_some() {}
    Ok(())
}

fn connector(opts: &Options) -> Result<tokio_tungstenite::Connector, Error> {
    let tls = opts
        .url
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("wss://");
    if !tls {
        return Ok(tokio_tungstenite::Connector::Plain);
    }
    let config = opts
        .tls
        .client_config()
        .map_err(|e| Error::Tls(e.to_string()))?;
    Ok(tokio_tungstenite::Connector::Rustls(config))
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// One link: connect, serve, and after it ended, what its [`Policy`] says.
async fn serve_link<C: Board, K: Capacities>(
    link: Arc<Shared<C, K>>,
    board: Arc<Mutex<C>>,
    clock: Clock,
    connector: tokio_tungstenite::Connector,
) {
    let mut policy = Policy::new().frame_cap_of(link.opts.max_frame);
    loop {
        let config = WebSocketConfig::default()
            .max_message_size(Some(link.opts.max_message))
            .max_frame_size(Some(link.opts.max_message));
        let request = link.opts.url.as_str().into_client_request();
        let attempt = match request {
            Ok(request) => {
                tokio::time::timeout(
                    link.opts.connect_timeout,
                    tokio_tungstenite::connect_async_tls_with_config(
                        request,
                        Some(config),
                        false,
                        Some(connector.clone()),
                    ),
                )
                .await
            }
            Err(e) => Ok(Err(e)),
        };
        let (ended, reason) = match attempt {
            Ok(Ok((ws, _))) => {
                policy.opened(clock.now_ms());
                link.event(State::Connected);
                serve(&link, &board, clock, ws, policy.frame_cap()).await
            }
            Ok(Err(e)) => (Ended::Lost, why(&e)),
            Err(_) => (Ended::Lost, "connection attempt timed out".into()),
        };
        *lock(&link.tx) = None;
        let code = match ended {
            Ended::Closed(code) => Some(code),
            _ => None,
        };
        if link.opts.reconnect.is_none() {
            link.event(State::Closed {
                code,
                reason,
                say: None,
                retry_in: None,
            });
            return;
        }
        match policy.ended(ended, clock.now_ms(), random()) {
            Next::Wait { ms: wait, say } => {
                let retry_in = Duration::from_millis(wait.into());
                link.event(State::Closed {
                    code,
                    reason,
                    say: say.map(said),
                    retry_in: Some(retry_in),
                });
                tokio::time::sleep(retry_in).await;
            }
            Next::Stop(say) => {
                link.event(State::Closed {
                    code,
                    reason,
                    say: None,
                    retry_in: None,
                });
                link.event(State::Stopped { why: said(say) });
                return;
            }
            // (A `Next` this version does not know: connect again after the longest wait.)
            _ => tokio::time::sleep(Duration::from_secs(30)).await,
        }
    }
}

/// What the device says when a link ended so.
fn said(say: Say) -> String {
    match say {
        Say::Refused => "the endpoint refused the token (missing, not decryptable, or naming no agent): check the URL on the agent's console; trying again only every few minutes".into(),
        Say::Replaced { times } => format!(
            "another link uses this token and took it from this one ({times} in a row): backing off"
        ),
        Say::GaveUp => "another link keeps taking this token: this link stays off (give each device its own token, and restart)".into(),
        Say::Shrunk { frame } => format!("a frame was too large for the endpoint: frames are now at most {frame} bytes"),
        _ => "the link ended".into(),
    }
}

/// A WebSocket error in words (a refused certificate says why).
fn why(e: &tungstenite::Error) -> String {
    match crate::tls::explain(e) {
        Some(why) => why,
        None => e.to_string(),
    }
}

/// Serves one connection until it ends; how it ended and why, in words.
async fn serve<C: Board, K: Capacities>(
    link: &Arc<Shared<C, K>>,
    board: &Arc<Mutex<C>>,
    clock: Clock,
    ws: Ws,
    frame_cap: usize,
) -> (Ended, String) {
    let (mut sink, mut stream) = ws.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Bytes>();
    *lock(&link.tx) = Some(tx);
    let k = link.opts.keepalive;
    let mut alive = Alive::new(ms(k.interval), ms(k.timeout));
    alive.heard(clock.now_ms());
    let out_len = link.opts.out_len.max(mcp_core::MIN_OUT_LEN).min(frame_cap);
    let mut beat = tokio::time::interval(Duration::from_millis(50).min(k.interval));
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let ended = loop {
        tokio::select! {
            msg = stream.next() => {
                alive.heard(clock.now_ms());
                let text = match msg {
                    None => break (Ended::Lost, "the endpoint closed the connection without a close frame".to_string()),
                    Some(Ok(Message::Close(frame))) => {
                        let (code, reason) = match frame {
                            Some(f) => (u16::from(f.code), f.reason.to_string()),
                            None => (1005, String::new()),
                        };
                        let reason = mcp_core::transport::escape::escaped(&reason).max_chars(120).to_string();
                        // Let tungstenite answer the close (RFC 6455 §5.5.1).
                        let _ = tokio::time::timeout(Duration::from_secs(1), sink.flush()).await;
                        break (Ended::Closed(code), format!("closed by the endpoint: {code} {reason}"));
                    }
                    Some(Ok(Message::Text(t))) => t,
                    // Pings (answered by tungstenite), pongs, binary frames: no MCP.
                    Some(Ok(_)) => continue,
                    Some(Err(e)) => break (Ended::Lost, why(&e)),
                };
                if let Err(e) = answer(link, board, &mut sink, Bytes::copy_from_slice(text.as_bytes()), out_len).await {
                    break (Ended::Lost, why(&e));
                }
            }
            frame = rx.recv() => {
                let Some(frame) = frame else { continue };
                let text = String::from_utf8_lossy(&frame).into_owned();
                if let Err(e) = sink.send(Message::text(text)).await {
                    break (Ended::Lost, why(&e));
                }
            }
            _ = beat.tick() => match alive.due(clock.now_ms()) {
                Due::Ping => {
                    if let Err(e) = sink.send(Message::Ping(Bytes::new())).await {
                        break (Ended::Lost, why(&e));
                    }
                }
                Due::Dead => break (Ended::Lost, format!("dead link: nothing from the endpoint for {} ms", k.timeout.as_millis())),
                Due::Wait(_) => {}
            },
        }
    };
    *lock(&link.tx) = None;
    if !matches!(ended.0, Ended::Closed(_)) {
        // Close this link before another opens: the endpoint keeps one per token.
        let frame = Message::Close(Some(CloseFrame {
            code: CloseCode::Normal,
            reason: "".into(),
        }));
        let _ = tokio::time::timeout(Duration::from_secs(1), sink.send(frame)).await;
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            while let Some(Ok(m)) = stream.next().await {
                if matches!(m, Message::Close(_)) {
                    break;
                }
            }
        })
        .await;
    }
    ended
}

/// Hands one text frame to the link's engine as from its current agent session, and sends the
/// answer (the owed outcome first, when one is: the engine is `answers_only`).
async fn answer<C: Board, K: Capacities>(
    link: &Arc<Shared<C, K>>,
    board: &Arc<Mutex<C>>,
    sink: &mut futures_util::stream::SplitSink<Ws, Message>,
    msg: Bytes,
    out_len: usize,
) -> Result<(), tungstenite::Error> {
    let peer = link.peer();
    let how = Run {
        principal: link.opts.principal,
        stateless: false,
        out_len,
        prime_at: None,
        peer,
        report_delivery: false,
        touch: None,
        events: link.calls_hook(),
        transport: TRANSPORT,
        session: None,
    };
    let mut rx = crate::run(link.engine.clone(), board.clone(), msg, how);
    while let Some(step) = rx.recv().await {
        // A handler's notifications: the endpoint drops them (nothing routes them back).
        let Step::Done(done) = step else { continue };
        if done.initialized.is_some() {
            // A new agent session: the conversation of the one before ends.
            let count = {
                let mut engine = lock(&link.engine);
                let mut sessions = lock(&link.sessions);
                sessions.initialized(&mut engine);
                sessions.count()
            };
            link.event(State::Session { count });
        }
        let sent = match done.bytes.is_empty() {
            true => Ok(()),
            false => {
                let text = String::from_utf8_lossy(&done.bytes).into_owned();
                sink.send(Message::text(text)).await
            }
        };
        done.handed.delivered(
            &link.engine,
            link.calls_hook().as_ref(),
            crate::delivery(sent.is_ok()),
        );
        sent?;
    }
    Ok(())
}

/// Turns every link's engine: the board's tick, a press of the device's button answers the
/// question shown (over every link), and what each engine owes goes to its link — to its
/// current agent session only.
fn timer<C: Board, K: Capacities>(
    links: Vec<Weak<Shared<C, K>>>,
    board: Arc<Mutex<C>>,
    clock: Clock,
    tick: Duration,
) {
    let mut display = crate::Display::new(lock(&board).confirm_presses());
    let mut out = Vec::new();
    loop {
        let live: Vec<Arc<Shared<C, K>>> = links.iter().filter_map(Weak::upgrade).collect();
        if live.is_empty() {
            return;
        }
        let started = Instant::now();
        let now = clock.now_ms();
        let hook = live.first().and_then(|l| l.opts.on_event.clone());
        let (changed, pressed) = crate::tick(&board, now);
        let engines = || live.iter().map(|l| &*l.engine);
        for p in display.panel.press(pressed, now, engines()) {
            if let Some(hook) = &hook {
                hook(&HostEvent::Pressed(p));
            }
        }
        let mut held = Vec::new();
        let mut ran = Vec::new();
        for l in &live {
            out.resize(l.opts.out_len.max(mcp_core::MIN_OUT_LEN), 0);
            let turn = crate::turn(&l.engine, &board, &changed, now, &mut out);
            held.extend(turn.held_after.clone());
            ran.extend(turn.ran().map(|t| (t, Arc::as_ptr(&l.engine))));
            let current = l.peer();
            for m in &turn.msgs {
                // Only to the session that is owed it: never another's, never everyone's.
                let sent = m.to == Some(current) && l.send(m.bytes.clone());
                m.delivered(&l.engine, sent);
                if let (Some(hook), Some(mut e)) =
                    (&hook, crate::observe(TRANSPORT, &turn, m, sent))
                {
                    if let HostEvent::Call(c) = &mut e {
                        c.link = Some(l.index);
                    }
                    hook(&e);
                }
            }
        }
        // A confirmed call ran on one engine: the others forget what they remembered of it.
        for (tool, on) in ran {
            for engine in engines() {
                if !std::ptr::eq(engine, on) {
                    lock(engine).touched(tool);
                }
            }
        }
        let shown = display.panel.show(&held, now);
        crate::waiting_changed(shown, &mut display.waiting, hook.as_ref());
        drop(live);
        std::thread::sleep(tick.saturating_sub(started.elapsed()));
    }
}
