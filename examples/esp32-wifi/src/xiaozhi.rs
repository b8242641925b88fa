//! xiaozhi client mode (feature `xiaozhi`): the device connects out to a xiaozhi server over
//! WebSocket, sends its hello with `features.mcp`, and answers the MCP messages the server wraps
//! in `{"session_id":…,"type":"mcp","payload":{…}}`.
//!
//! The envelope and the hello come from `mcp_core::transport::xiaozhi`; this file is the
//! WebSocket client (RFC 6455: the HTTP upgrade, masked client frames, fragments, ping/pong,
//! close) over an embassy-net TCP socket. Plain `ws://` to an address or a host name (resolved
//! through embassy-net's DNS before every attempt); `wss://` needs a TLS stack in the firmware,
//! which it does not have yet (`build.rs` refuses it).
//!
//! Build-time settings: `XIAOZHI_URL` (`ws://192.168.1.10:8000/xiaozhi/v1/` or
//! `ws://xiaozhi.lan:8000/xiaozhi/v1/`), `XIAOZHI_TOKEN` (sent as `Authorization: Bearer …`,
//! optional) — or `XIAOZHI_OTA_URL` (`http://…/xiaozhi/ota/`): xiaozhi's OTA/config check at
//! boot ([`ota_check`], the request and answer of `device_link::ota`), which hands out the
//! WebSocket URL and its token; while its answer carries an activation code the device asks
//! again every `OTA_RETRY` until the user binds it.
//!
//! The connection is the model's (`Principal::Model`); xiaozhi backends may send MCP messages
//! before the hello exchange completes, and this client answers them.
//!
//! # A link that survives
//! The limits and timings are in `config::xiaozhi`.
//! - **Reconnect forever.** After any failure or close the client waits — `BACKOFF_FIRST`
//!   doubling up to `BACKOFF_MAX`, each wait drawn between half and all of it from the hardware
//!   RNG — and connects again. The wait grows with every connection that ends without the
//!   backend's hello (refused, timed out, closed right after the upgrade, no hello in time);
//!   only a connection that got the hello starts it again from `BACKOFF_FIRST`
//!   (`mcp_core::transport::xiaozhi::Reconnect`, the rule the host's client follows too).
//! - **Hello in time.** The backend's hello must come within `HELLO_TIMEOUT` (10 s, as
//!   xiaozhi-esp32 waits) of the device's; MCP messages before it are answered meanwhile. A
//!   backend that dropped the device's hello (xinnan's server drops one that arrives while it
//!   still loads the device's configuration) would otherwise leave the device without a session
//!   until its idle close: the client closes the connection ("no hello") and connects again.
//! - **Bounded attempts.** The TCP connect has `CONNECT_TIMEOUT`, the WebSocket upgrade
//!   `HANDSHAKE_TIMEOUT`: a backend that accepts TCP but never upgrades is abandoned.
//! - **Dead links are noticed.** A ping goes out after `PING_INTERVAL` without hearing from the
//!   backend; a backend silent for `DEAD_AFTER` (no pong, no message, no ping), a send stuck
//!   that long, or a frame that began and did not arrive within `FRAME_TIMEOUT` ends the link.
//! - **Sized to the device.** A message (fragments reassembled) or frame beyond `MAX_MESSAGE`
//!   bytes closes the connection with 1009 "message too big"; a control frame that breaks the
//!   protocol, with 1002.
//! - **Hello again.** Every connection starts with the device's hello; the backend then
//!   initializes and lists the tools again, as it does with any xiaozhi device.
//! - **Nothing runs twice.** The engine (and its record of recent calls) is a `static` and
//!   outlives every connection. The backend's `session_id` names the peer
//!   (`Peer::named`): a call the backend sends again in the same session after a reconnect is
//!   answered from the first answer, not run again. Without a usable session id the connection
//!   is the peer (nothing else tells two backend sessions apart). A `session_id` that is not
//!   usable (`is_usable_session_id`: over 128 bytes, or anything but printable ASCII) is never
//!   echoed; replies then carry none.
//! - **What the backend hears.** A xiaozhi backend speaks, and gives its model, only a
//!   device's `listen` `detect` texts: an outcome the engine tells after its call's answer (a
//!   held call settled, a task that ended: `Polled::heard`) goes out after its notification as
//!   a `[device_call]` frame too (`mcp_core::transport::xiaozhi::heard`).
//! - **Delivery is reported.** Each remembered answer is reported to the engine after the
//!   socket write: `Delivery::Written` when the frame went into the TCP send buffer,
//!   `Delivery::Lost` when the write failed (the link died first).

use core::convert::Infallible;
use core::fmt::Write as _;
use core::ops::Range;

use device_link::ota::{Answer, ClientId, Device};
use device_link::shown::Shown;
use device_link::url::{Scheme, Url};
use embassy_net::Stack;
use embassy_net::tcp::TcpSocket;
use embassy_time::{Duration, Instant, Timer, with_deadline, with_timeout};
use embedded_io_async::{Read, Write};
use mcp_core::Principal;
use mcp_core::server::{Delivery, Input, Peer};
use mcp_core::transport::xiaozhi::{self, DEVICE_HELLO, Envelope, MAX_SESSION_ID_LEN, Reconnect};

use crate::config::OUT;
use crate::config::xiaozhi::{
    BACKOFF_FIRST, BACKOFF_MAX, CLOSE_TIMEOUT, CONNECT_TIMEOUT, DEAD_AFTER, FRAME_TIMEOUT,
    HANDSHAKE_TIMEOUT, HELLO_TIMEOUT, MAX_MESSAGE, OTA_RETRY, OTA_TIMEOUT, PING_INTERVAL,
    TCP_BUFFER, TOKEN_LEN, URL_LEN,
};
#[cfg(feature = "tls")]
use crate::tls::{Link, TlsBuffers};
use crate::{Engine, EspBoard};

const URL: &str = match option_env!("XIAOZHI_URL") {
    Some(u) => u,
    None => "",
};
const TOKEN: &str = match option_env!("XIAOZHI_TOKEN") {
    Some(t) => t,
    None => "",
};
const OTA_URL: &str = match option_env!("XIAOZHI_OTA_URL") {
    Some(u) => u,
    None => "",
};

/// The chip, as the OTA check's `chip_model_name` says it.
const CHIP: &str = if cfg!(feature = "esp32c6") {
    "esp32c6"
} else if cfg!(feature = "esp32s3") {
    "esp32s3"
} else {
    "esp32c3"
};

/// Frame opcodes (RFC 6455 §5.2).
const OP_CONTINUATION: u8 = 0x0;
const OP_TEXT: u8 = 0x1;
const OP_BINARY: u8 = 0x2;
const OP_CLOSE: u8 = 0x8;
const OP_PING: u8 = 0x9;
const OP_PONG: u8 = 0xA;

/// Close codes (RFC 6455 §7.4.1).
const CLOSE_NORMAL: u16 = 1000;
const CLOSE_PROTOCOL_ERROR: u16 = 1002;
const CLOSE_TOO_BIG: u16 = 1009;

/// The longest control frame payload (RFC 6455 §5.5).
const MAX_CONTROL: usize = 125;

/// Room kept in front of an answer for the envelope's head,
/// `{"session_id":"…","type":"mcp","payload":`, with a session id of up to
/// [`MAX_SESSION_ID_LEN`] printable characters, each at most two bytes escaped.
const HEAD_ROOM: usize = 2 * MAX_SESSION_ID_LEN + 48;

/// A backend session id that may be echoed (see [`usable_session`]).
type SessionId = heapless::String<MAX_SESSION_ID_LEN>;

/// Why a connection ended (what a log would say; this firmware prints nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// The backend's host name did not resolve.
    Dns,
    /// The TCP connect failed.
    Connect,
    /// The TCP connect took longer than `CONNECT_TIMEOUT`.
    ConnectTimeout,
    /// The backend did not answer the upgrade with `101`.
    Handshake,
    /// The TLS handshake and the upgrade took longer than `HANDSHAKE_TIMEOUT`.
    HandshakeTimeout,
    /// TLS refused: no clock yet, or the server's certificate did not verify (logged).
    #[cfg(feature = "tls")]
    Tls,
    /// A read or write failed (reset, TCP timeout).
    Io,
    /// Nothing from the backend for `DEAD_AFTER`, a send stuck that long, or a frame that did
    /// not arrive whole within `FRAME_TIMEOUT`.
    DeadLink,
    /// The backend sent more than `MAX_MESSAGE` bytes in one message (closed with 1009).
    TooBig,
    /// The backend's hello did not come within `HELLO_TIMEOUT` (closed with 1000 "no hello").
    NoHello,
    /// The backend broke the framing rules (closed with 1002).
    Protocol,
    /// The backend closed the connection (a close frame, or the TCP stream ended).
    Closed,
}

/// A `ws://` URL (or `wss://` with the feature `tls`), what `build.rs` lets through.
fn ws_url(text: &str) -> Option<Url<'_>> {
    let tls = cfg!(feature = "tls");
    Url::parse(text)
        .ok()
        .filter(|u| u.scheme == Scheme::Ws || (tls && u.scheme == Scheme::Wss))
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Base64 of 16 bytes (the `Sec-WebSocket-Key`): 24 characters.
fn base64_16(bytes: &[u8; 16]) -> heapless::String<24> {
    let mut s = heapless::String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            let c = if i <= chunk.len() {
                B64.get(((n >> (18 - 6 * i)) & 63) as usize)
                    .copied()
                    .unwrap_or(b'=')
            } else {
                b'='
            };
            let _ = s.push(char::from(c));
        }
    }
    s
}

/// The reconnection rule: [`BACKOFF_FIRST`] doubling up to [`BACKOFF_MAX`] while connections
/// end without a session, each wait drawn between half of its step and all of it ("equal
/// jitter") with the hardware RNG.
const RECONNECT: Reconnect = Reconnect::new(ms(BACKOFF_FIRST), ms(BACKOFF_MAX));

/// A duration in milliseconds, at most `u32::MAX`.
const fn ms(d: Duration) -> u32 {
    let ms = d.as_millis();
    if ms > u32::MAX as u64 {
        u32::MAX
    } else {
        ms as u32
    }
}

/// Connects, runs one xiaozhi session, and reconnects after a backoff, forever.
pub async fn run(
    stack: Stack<'static>,
    engine: &'static mut Engine,
    board: &'static mut EspBoard,
    mac: [u8; 6],
) -> ! {
    let mut rx = [0u8; TCP_BUFFER];
    let mut tx = [0u8; TCP_BUFFER];
    let mut msg = [0u8; MAX_MESSAGE];
    let mut out = [0u8; HEAD_ROOM + OUT + 1];
    // With XIAOZHI_OTA_URL the check says where to connect and with which token.
    let mut url_text = heapless::String::<URL_LEN>::new();
    let mut token = heapless::String::<TOKEN_LEN>::new();
    // One connection at a time: the OTA check's and then the sessions' TLS buffers.
    #[cfg(feature = "tls")]
    let tls_buffers: &'static mut TlsBuffers = {
        static TLS_BUFFERS: static_cell::StaticCell<TlsBuffers> = static_cell::StaticCell::new();
        TLS_BUFFERS.init(TlsBuffers::new())
    };
    if let Ok(ota) = Url::parse(OTA_URL) {
        loop {
            stack.wait_config_up().await;
            let got = ota_check(
                stack,
                &ota,
                mac,
                &mut rx,
                &mut tx,
                &mut msg,
                &mut url_text,
                &mut token,
                #[cfg(feature = "tls")]
                &mut *tls_buffers,
            )
            .await;
            if got == Checked::Connect {
                break;
            }
            Timer::after(OTA_RETRY).await;
        }
    } else {
        let _ = url_text.push_str(URL);
        let _ = token.push_str(TOKEN);
    }
    let Some(target) = ws_url(&url_text) else {
        // Built without a usable XIAOZHI_URL (or handed a URL this firmware cannot use, such
        // as `wss://` without the feature `tls`): there is nothing to connect to.
        esp_println::println!("xiaozhi: no usable WebSocket URL; idle");
        loop {
            Timer::after(Duration::from_secs(3600)).await;
        }
    };
    let mut reconnect = RECONNECT;
    let mut connection = 0u64;
    loop {
        stack.wait_link_up().await;
        stack.wait_config_up().await;
        connection += 1;
        let mut socket = TcpSocket::new(stack, &mut rx, &mut tx);
        // Unacknowledged data older than this aborts the connection.
        socket.set_timeout(Some(DEAD_AFTER));
        let mut greeted = false;
        let link = Session {
            target,
            token: &token,
            mac,
            unnamed: Peer::new(connection),
            stack,
        };
        let _ended = link
            .session(
                &mut socket,
                engine,
                board,
                &mut msg,
                &mut out,
                &mut greeted,
                #[cfg(feature = "tls")]
                &mut *tls_buffers,
            )
            .await;
        socket.abort();
        let _ = with_timeout(CLOSE_TIMEOUT, socket.flush()).await;
        drop(socket);
        let wait = reconnect.ended(greeted, crate::random() as u32);
        Timer::after(Duration::from_millis(wait.into())).await;
    }
}

/// One connection's settings.
struct Session<'u> {
    /// The backend's URL.
    target: Url<'u>,
    /// The bearer token (empty: none).
    token: &'u str,
    /// The network, for DNS.
    stack: Stack<'static>,
    /// The station MAC (the `Device-Id`).
    mac: [u8; 6],
    /// The peer of messages that name no usable session: this connection.
    unnamed: Peer,
}

impl Session<'_> {
    /// Connects, upgrades, and serves until the link ends; says why. `greeted` is set once the
    /// backend's hello arrived.
    #[allow(
        clippy::too_many_arguments,
        reason = "the buffers are the caller's, lent for the connection"
    )]
    async fn session(
        &self,
        socket: &mut TcpSocket<'_>,
        engine: &mut Engine,
        board: &mut EspBoard,
        msg: &mut [u8],
        out: &mut [u8],
        greeted: &mut bool,
        #[cfg(feature = "tls")] tls_buffers: &mut TlsBuffers,
    ) -> Ended {
        let Some(addr) = crate::net::resolve(self.stack, self.target.host).await else {
            return Ended::Dns;
        };
        match with_timeout(CONNECT_TIMEOUT, socket.connect((addr, self.target.port))).await {
            Err(_) => return Ended::ConnectTimeout,
            Ok(Err(_)) => return Ended::Connect,
            Ok(Ok(())) => {}
        }
        // The TLS handshake (`wss://`) and the upgrade share one deadline.
        let by = Instant::now() + HANDSHAKE_TIMEOUT;
        #[cfg(feature = "tls")]
        let mut socket = {
            let secure = self.target.scheme == Scheme::Wss;
            let opened = Link::open(&mut *socket, secure, self.target.host, tls_buffers);
            match with_deadline(by, opened).await {
                Err(_) => return Ended::HandshakeTimeout,
                Ok(Err(why)) => {
                    esp_println::println!("xiaozhi: TLS refused: {why}");
                    return Ended::Tls;
                }
                Ok(Ok(link)) => link,
            }
        };
        #[cfg(feature = "tls")]
        let socket = &mut socket;
        match with_deadline(by, self.upgrade(socket)).await {
            Err(_) => return Ended::HandshakeTimeout,
            Ok(Err(e)) => return e,
            Ok(Ok(())) => {}
        }
        let mut ws = Ws::new(socket);
        let Err(ended) = self.serve(&mut ws, engine, board, msg, out, greeted).await;
        ended
    }

    /// The HTTP upgrade with xiaozhi's headers; the answer must be `101`.
    async fn upgrade<T: Read + Write>(&self, socket: &mut T) -> Result<(), Ended> {
        let (host, path) = (self.target.authority(), self.target.path);
        let mut key = [0u8; 16];
        for (i, b) in key.iter_mut().enumerate() {
            *b = (crate::random() >> (8 * (i % 8))) as u8;
        }
        let mut req = heapless::String::<640>::new();
        let written = write!(
            req,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: {}\r\nSec-WebSocket-Version: 13\r\nProtocol-Version: {}\r\n\
             Device-Id: {}\r\nClient-Id: {}\r\n",
            base64_16(&key),
            device_link::ota::PROTOCOL_VERSION,
            device_id(self.mac).as_str(),
            ClientId::from_mac(self.mac).as_str(),
        );
        if written.is_err() {
            // A path too long for the request buffer: no upgrade can be sent.
            return Err(Ended::Handshake);
        }
        let io = |_| Ended::Io;
        socket.write_all(req.as_bytes()).await.map_err(io)?;
        if !self.token.is_empty() {
            // Written as it is, whatever its length.
            socket
                .write_all(b"Authorization: Bearer ")
                .await
                .map_err(io)?;
            socket.write_all(self.token.as_bytes()).await.map_err(io)?;
            socket.write_all(b"\r\n").await.map_err(io)?;
        }
        socket.write_all(b"\r\n").await.map_err(io)?;
        socket.flush().await.map_err(io)?;

        // The answer's head, byte by byte up to its blank line, so that nothing after it (a
        // frame the backend sends at once) is consumed.
        let mut head = [0u8; 512];
        let mut got = 0;
        loop {
            let slot = head.get_mut(got..got + 1).ok_or(Ended::Handshake)?;
            match socket.read(slot).await {
                Ok(0) => return Err(Ended::Closed),
                Ok(_) => got += 1,
                Err(_) => return Err(Ended::Io),
            }
            if head.get(..got).is_some_and(|h| h.ends_with(b"\r\n\r\n")) {
                break;
            }
        }
        if head.starts_with(b"HTTP/1.1 101") {
            Ok(())
        } else {
            Err(Ended::Handshake)
        }
    }

    /// Sends the hello, then answers what comes until the link ends.
    async fn serve<T: Read + Write>(
        &self,
        ws: &mut Ws<'_, T>,
        engine: &mut Engine,
        board: &mut EspBoard,
        msg: &mut [u8],
        out: &mut [u8],
        greeted: &mut bool,
    ) -> Result<Infallible, Ended> {
        ws.send(OP_TEXT, DEVICE_HELLO.as_bytes()).await?;
        // The backend's hello must come by then.
        let hello_by = Instant::now() + HELLO_TIMEOUT;
        // The backend's session, from its hello: the peer, and the `session_id` of replies.
        let mut session: Option<SessionId> = None;
        loop {
            // What the engine owes (task status and results, a held call's outcome; nothing on
            // this board, which has no long-running tool and asks no person, but a board that
            // adds one needs it sent).
            loop {
                let now = crate::uptime_ms();
                let sid = session.as_deref();
                // An outcome that came after its call's answer is spoken by the backend too, as a
                // `[device_call]` detect frame: written now, into the idle receive buffer, in a
                // block of its own, so that only the lengths are kept across the sends (a future
                // keeps every local in scope at an await).
                let (n, said) = {
                    let mut polled = mcp_core::Polled::NONE;
                    let n = xiaozhi::wrap(sid, out, |buf| {
                        polled = engine.poll_with(now, board, buf);
                        polled.len
                    });
                    let said = match polled.heard {
                        Some(h) => {
                            let payload = n.saturating_sub(1 + polled.len)..n.saturating_sub(1);
                            let message = out.get(payload).unwrap_or_default();
                            xiaozhi::heard(sid, h.sentence(message), msg)
                        }
                        None => 0,
                    };
                    (n, said)
                };
                match out.get(..n) {
                    Some(m) if n > 0 => ws.send(OP_TEXT, m).await?,
                    _ => break,
                }
                if let Some(frame) = msg.get(..said).filter(|_| said > 0) {
                    ws.send(OP_TEXT, frame).await?;
                }
            }

            let n = if *greeted {
                ws.next_text(msg).await?
            } else {
                // Given up mid-frame, the connection is closed anyway.
                match with_deadline(hello_by, ws.next_text(msg)).await {
                    Ok(n) => n?,
                    Err(_) => {
                        return Err(ws.close(CLOSE_NORMAL, "no hello", Ended::NoHello).await);
                    }
                }
            };
            let text = msg.get(..n).unwrap_or_default();
            let env = Envelope::parse(text);
            if let Ok(env) = &env
                && env.is("hello")
            {
                session = usable_session(env);
                *greeted = true;
                continue;
            }
            let payload = match &env {
                Ok(env) => {
                    let Some(payload) = env.mcp_payload() else {
                        continue;
                    };
                    payload
                }
                // No envelope anyone can read: the engine answers it as it answers any
                // unreadable message (-32700, `id: null`), in an `mcp` envelope.
                Err(_) => text,
            };
            // Answer in the backend's session, or the one the message names (a message before
            // the hello); the session is the peer.
            let named;
            let sid = match &session {
                Some(s) => Some(s.as_str()),
                None => {
                    named = env.as_ref().ok().and_then(usable_session);
                    named.as_deref()
                }
            };
            let peer = sid.map_or(self.unnamed, |s| Peer::named(s.as_bytes()));
            let input = Input::new(payload, Principal::Model).peer(peer);
            let end = out.len().saturating_sub(1);
            let Some(body) = out.get_mut(HEAD_ROOM..end) else {
                continue;
            };
            let Ok(handled) = engine
                .handle_async(input, board, body, &mut |_: &[u8]| {}, EspBoard::run)
                .await
            else {
                continue;
            };
            let Some(frame) = enclose(sid, out, handled.len) else {
                continue;
            };
            // The device reboots a second after answering `self.reboot`: `main`'s watcher.
            let sent = ws.send(OP_TEXT, out.get(frame).unwrap_or_default()).await;
            if let Some(receipt) = handled.receipt {
                let delivery = if sent.is_ok() {
                    Delivery::Written
                } else {
                    Delivery::Lost
                };
                engine.delivered(receipt, delivery);
            }
            sent?;
        }
    }
}

/// The envelope's `session_id` when it is usable (`is_usable_session_id`: 1 to 128 printable
/// ASCII characters once decoded); an unusable one is dropped, never echoed.
fn usable_session(env: &Envelope<'_>) -> Option<SessionId> {
    let id = env.usable_session_id()?;
    let mut s = SessionId::new();
    for c in id.chars() {
        s.push(c).ok()?;
    }
    Some(s)
}

/// Wraps the answer of `len` bytes at `out[HEAD_ROOM..]` in the `mcp` envelope, in place: the
/// head goes into the room before it, the closing brace after it. Returns where the envelope
/// is, or `None` for no answer (`len` 0) or one that does not fit.
fn enclose(sid: Option<&str>, out: &mut [u8], len: usize) -> Option<Range<usize>> {
    if len == 0 {
        return None;
    }
    // The envelope around a one-byte payload, to learn its head.
    let mut probe = [0u8; HEAD_ROOM + 2];
    let n = xiaozhi::wrap(sid, &mut probe, |buf| match buf.first_mut() {
        Some(b) => {
            *b = b'0';
            1
        }
        None => 0,
    });
    let head_len = n.checked_sub(2)?;
    let start = HEAD_ROOM.checked_sub(head_len)?;
    out.get_mut(start..HEAD_ROOM)?
        .copy_from_slice(probe.get(..head_len)?);
    *out.get_mut(HEAD_ROOM + len)? = b'}';
    Some(start..HEAD_ROOM + len + 1)
}

/// The MAC-style device id xiaozhi servers key devices by.
fn device_id(mac: [u8; 6]) -> device_link::ota::DeviceId {
    device_link::ota::DeviceId::new(mac)
}

/// What one OTA/config check came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checked {
    /// The answer names a WebSocket URL (and maybe a token): connect there.
    Connect,
    /// The answer carries an activation code: not bound yet; ask again later.
    NotBound,
    /// DNS, TCP or HTTP failed, or the answer cannot be used.
    Failed,
}

/// xiaozhi's OTA/config check: `POST` the device's description to `ota` (plain `http://`), read
/// the answer (into `answer`, the message buffer: at most `MAX_MESSAGE` bytes; within `OTA_TIMEOUT`), and on a WebSocket URL copy it
/// and its token into `url` and `token`. A firmware newer than this one in the answer is not
/// acted on: this firmware installs images only through its MCP tools, never by itself.
#[allow(
    clippy::too_many_arguments,
    reason = "the buffers are the caller's, lent for the check"
)]
async fn ota_check(
    stack: Stack<'static>,
    ota: &Url<'_>,
    mac: [u8; 6],
    rx: &mut [u8],
    tx: &mut [u8],
    answer: &mut [u8],
    url: &mut heapless::String<URL_LEN>,
    token: &mut heapless::String<TOKEN_LEN>,
    #[cfg(feature = "tls")] tls_buffers: &mut TlsBuffers,
) -> Checked {
    let secure = ota.scheme == Scheme::Https;
    if ota.scheme != Scheme::Http && !(secure && cfg!(feature = "tls")) {
        return Checked::Failed;
    }
    let Some(addr) = crate::net::resolve(stack, ota.host).await else {
        return Checked::Failed;
    };
    let client = ClientId::from_mac(mac);
    let device = Device {
        mac,
        client_id: client.as_str(),
        app_name: "esp32-wifi",
        app_version: env!("CARGO_PKG_VERSION"),
        board_type: "esp32-wifi",
        chip: CHIP,
        language: "en-US",
    };
    let mut body = [0u8; 384];
    let mut head = [0u8; 512];
    let Ok(body_len) = device.write_body(&mut body) else {
        return Checked::Failed;
    };
    let Ok(head_len) = device.write_head(ota, body_len, &mut head) else {
        return Checked::Failed;
    };
    let mut socket = TcpSocket::new(stack, rx, tx);
    socket.set_timeout(Some(OTA_TIMEOUT));
    let got = with_timeout(OTA_TIMEOUT, async {
        socket.connect((addr, ota.port)).await.ok()?;
        #[cfg(feature = "tls")]
        let mut socket = match Link::open(&mut socket, secure, ota.host, tls_buffers).await {
            Ok(link) => link,
            Err(why) => {
                esp_println::println!("ota: TLS refused: {why}");
                return None;
            }
        };
        socket.write_all(head.get(..head_len)?).await.ok()?;
        socket.write_all(body.get(..body_len)?).await.ok()?;
        socket.flush().await.ok()?;
        // `Connection: close`: the answer ends with the connection.
        let mut got = 0;
        loop {
            let n = socket.read(answer.get_mut(got..)?).await.ok()?;
            if n == 0 {
                return Some(got);
            }
            got += n;
            if got == answer.len() {
                // Larger than the buffer: not an answer this device can read.
                return None;
            }
        }
    })
    .await;
    socket.abort();
    let _ = with_timeout(CLOSE_TIMEOUT, socket.flush()).await;
    drop(socket);
    let Ok(Some(len)) = got else {
        return Checked::Failed;
    };
    // Only a server whose certificate verified may set the clock.
    read_answer(answer.get(..len).unwrap_or_default(), url, token, secure)
}

/// An HTTP answer to the check: `200`, no chunked body (`device_link::ota::http_body`), then
/// `device_link::ota::Answer` — both tested on the host (`cargo test -p device-link`).
fn read_answer(
    http: &[u8],
    url: &mut heapless::String<URL_LEN>,
    token: &mut heapless::String<TOKEN_LEN>,
    over_tls: bool,
) -> Checked {
    let Some(body) = device_link::ota::http_body(http) else {
        esp_println::println!("ota: no usable HTTP answer");
        return Checked::Failed;
    };
    let a = match Answer::parse(body) {
        Ok(a) => a,
        Err(e) => {
            esp_println::println!("ota: {e}");
            return Checked::Failed;
        }
    };
    #[cfg(feature = "tls")]
    if let (true, Some(t)) = (over_tls, a.server_time) {
        crate::tls::set_clock(t.timestamp_ms / 1000);
    }
    report(&a);
    if a.activation.is_some() {
        return Checked::NotBound;
    }
    let Some(ws) = a.websocket else {
        return Checked::Failed;
    };
    url.clear();
    token.clear();
    let mut buf = [0u8; TOKEN_LEN];
    let Some(u) = ws.url.decode_into(&mut buf) else {
        return Checked::Failed;
    };
    if url.push_str(u).is_err() {
        return Checked::Failed;
    }
    // A token obtained over TLS never travels in clear beyond loopback: connect without it.
    let may_go = Url::parse(url).is_ok_and(|to| device_link::ota::token_may_go(over_tls, &to));
    if ws.token.is_some() && !may_go {
        esp_println::println!(
            "xiaozhi: the check came over TLS but names a plain ws:// URL beyond loopback: \
             connecting without the token"
        );
    }
    if let Some(t) = ws.token.filter(|_| may_go) {
        let Some(t) = t.decode_into(&mut buf) else {
            return Checked::Failed;
        };
        // A token goes into a header: no line breaks.
        if t.contains(['\r', '\n']) || token.push_str(t).is_err() {
            return Checked::Failed;
        }
    }
    Checked::Connect
}

/// Logs what the user must know from an answer: an activation code to enter on the server's
/// console (and its message), a firmware newer than this one. Every string from the wire is
/// escaped (`device_link::shown::Shown`) and cut to 64 characters; none is acted on.
fn report(a: &Answer<'_>) {
    let mut buf = [0u8; 256];
    if let Some(act) = &a.activation {
        let code = act.code.and_then(|c| c.decode_into(&mut buf)).unwrap_or("");
        esp_println::println!(
            "xiaozhi: not bound yet: activation code \"{}\"",
            Shown::new(code)
        );
        if let Some(m) = act.message.and_then(|m| m.decode_into(&mut buf)) {
            esp_println::println!("xiaozhi: {}", Shown::new(m).max(128));
        }
    }
    if let Some(fw) = &a.firmware {
        let running = env!("CARGO_PKG_VERSION");
        if let Some(v) = fw.version.decode_into(&mut buf) {
            if device_link::ota::is_newer(running, v) {
                esp_println::println!(
                    "ota: firmware {} offered (running {running}); not installed: images come through the MCP firmware tools",
                    Shown::new(v)
                );
            }
        }
    }
}

/// A frame's header.
struct Head {
    fin: bool,
    opcode: u8,
    len: u64,
    mask: Option<[u8; 4]>,
}

/// The WebSocket on an upgraded connection: frames in and out, and the keep-alive clock.
struct Ws<'s, T> {
    socket: &'s mut T,
    /// When the last frame from the backend arrived (or the link opened).
    heard: Instant,
    /// When the last ping went out (or the link opened).
    pinged: Instant,
}

impl<'s, T: Read + Write> Ws<'s, T> {
    fn new(socket: &'s mut T) -> Self {
        let now = Instant::now();
        Ws {
            socket,
            heard: now,
            pinged: now,
        }
    }

    /// Sends one frame; one that cannot go out within [`DEAD_AFTER`] is a dead link.
    async fn send(&mut self, opcode: u8, payload: &[u8]) -> Result<(), Ended> {
        match with_timeout(DEAD_AFTER, write_frame(self.socket, opcode, payload)).await {
            Ok(sent) => sent,
            Err(_) => Err(Ended::DeadLink),
        }
    }

    /// Sends a close frame with `code` and `reason` (best effort, within [`CLOSE_TIMEOUT`]) and
    /// returns `why`.
    async fn close(&mut self, code: u16, reason: &str, why: Ended) -> Ended {
        let mut payload = heapless::Vec::<u8, MAX_CONTROL>::new();
        let _ = payload.extend_from_slice(&code.to_be_bytes());
        let _ = payload.extend_from_slice(reason.as_bytes());
        let _ = with_timeout(CLOSE_TIMEOUT, write_frame(self.socket, OP_CLOSE, &payload)).await;
        why
    }

    /// Waits for the first byte of the next frame, pinging while the backend is quiet; a
    /// backend silent for [`DEAD_AFTER`] is a dead link.
    async fn first_byte(&mut self) -> Result<u8, Ended> {
        loop {
            let dead_at = self.heard + DEAD_AFTER;
            let ping_at = self.heard.max(self.pinged) + PING_INTERVAL;
            let mut byte = [0u8; 1];
            // `read` takes nothing from the socket unless it completes: a timeout loses nothing.
            match with_deadline(dead_at.min(ping_at), self.socket.read(&mut byte)).await {
                Ok(Ok(0)) => return Err(Ended::Closed),
                Ok(Ok(_)) => {
                    let [b] = byte;
                    return Ok(b);
                }
                Ok(Err(_)) => return Err(Ended::Io),
                Err(_) => {
                    let now = Instant::now();
                    if now >= dead_at {
                        return Err(Ended::DeadLink);
                    }
                    if now >= ping_at {
                        self.pinged = now;
                        self.send(OP_PING, b"").await?;
                    }
                }
            }
        }
    }

    /// Reads frames until a whole text message is in `msg`; returns its length. Answers pings,
    /// notes pongs, skips binary (audio) messages, reassembles fragments; a message larger
    /// than `msg` closes with 1009, a framing error with 1002, the backend's close is answered.
    async fn next_text(&mut self, msg: &mut [u8]) -> Result<usize, Ended> {
        // The data message being reassembled: its opcode and the bytes so far.
        let mut partial: Option<(u8, usize)> = None;
        loop {
            let b0 = self.first_byte().await?;
            let deadline = Instant::now() + FRAME_TIMEOUT;
            let head = match with_deadline(deadline, read_head(self.socket, b0)).await {
                Ok(head) => head?,
                Err(_) => return Err(Ended::DeadLink),
            };

            if head.opcode & 0x8 != 0 {
                // A control frame: short, whole, allowed between a message's fragments.
                let len = usize::try_from(head.len)
                    .ok()
                    .filter(|&n| n <= MAX_CONTROL && head.fin);
                let Some(len) = len else {
                    let why = Ended::Protocol;
                    return Err(self
                        .close(CLOSE_PROTOCOL_ERROR, "bad control frame", why)
                        .await);
                };
                let mut buf = [0u8; MAX_CONTROL];
                let payload = buf.get_mut(..len).unwrap_or_default();
                match with_deadline(deadline, read_payload(self.socket, head.mask, payload)).await {
                    Ok(read) => read?,
                    Err(_) => return Err(Ended::DeadLink),
                }
                self.heard = Instant::now();
                match head.opcode {
                    OP_PING => self.send(OP_PONG, payload).await?,
                    OP_PONG => {}
                    // Answer the backend's close (RFC 6455 §5.5.1); the link is over.
                    OP_CLOSE => return Err(self.close(CLOSE_NORMAL, "", Ended::Closed).await),
                    _ => {
                        let why = Ended::Protocol;
                        return Err(self
                            .close(CLOSE_PROTOCOL_ERROR, "unknown opcode", why)
                            .await);
                    }
                }
                continue;
            }

            let (kind, filled) = match (head.opcode, partial) {
                (OP_TEXT | OP_BINARY, None) => (head.opcode, 0),
                (OP_CONTINUATION, Some(started)) => started,
                _ => {
                    let why = Ended::Protocol;
                    return Err(self.close(CLOSE_PROTOCOL_ERROR, "bad fragment", why).await);
                }
            };
            // The whole message, fragments included, must fit the buffer: binary (audio)
            // messages too, although their bytes are skipped rather than kept.
            let total = usize::try_from(head.len)
                .ok()
                .and_then(|n| n.checked_add(filled))
                .filter(|&total| total <= msg.len());
            let Some(total) = total else {
                let why = Ended::TooBig;
                return Err(self.close(CLOSE_TOO_BIG, "message too big", why).await);
            };
            let read = if kind == OP_TEXT {
                let dst = msg.get_mut(filled..total).unwrap_or_default();
                with_deadline(deadline, read_payload(self.socket, head.mask, dst)).await
            } else {
                with_deadline(deadline, skip(self.socket, total - filled)).await
            };
            match read {
                Ok(read) => read?,
                Err(_) => return Err(Ended::DeadLink),
            }
            self.heard = Instant::now();
            match (head.fin, kind) {
                (false, _) => partial = Some((kind, total)),
                (true, OP_TEXT) => return Ok(total),
                // A whole binary (audio) message: not MCP.
                (true, _) => partial = None,
            }
        }
    }
}

async fn read_exact<T: Read>(socket: &mut T, buf: &mut [u8]) -> Result<(), Ended> {
    let mut got = 0;
    while got < buf.len() {
        let n = socket
            .read(buf.get_mut(got..).unwrap_or_default())
            .await
            .map_err(|_| Ended::Io)?;
        if n == 0 {
            return Err(Ended::Closed);
        }
        got += n;
    }
    Ok(())
}

/// The rest of a frame's header after its first byte `b0`.
async fn read_head<T: Read>(socket: &mut T, b0: u8) -> Result<Head, Ended> {
    let mut b1 = [0u8; 1];
    read_exact(socket, &mut b1).await?;
    let [b1] = b1;
    let len = match b1 & 0x7F {
        126 => {
            let mut e = [0u8; 2];
            read_exact(socket, &mut e).await?;
            u64::from(u16::from_be_bytes(e))
        }
        127 => {
            let mut e = [0u8; 8];
            read_exact(socket, &mut e).await?;
            u64::from_be_bytes(e)
        }
        n => u64::from(n),
    };
    // A server does not mask its frames (RFC 6455 §5.1); one that does is tolerated.
    let mask = if b1 & 0x80 != 0 {
        let mut m = [0u8; 4];
        read_exact(socket, &mut m).await?;
        Some(m)
    } else {
        None
    };
    Ok(Head {
        fin: b0 & 0x80 != 0,
        opcode: b0 & 0x0F,
        len,
        mask,
    })
}

/// Reads a frame's payload into `dst` (its exact length) and unmasks it.
async fn read_payload<T: Read>(
    socket: &mut T,
    mask: Option<[u8; 4]>,
    dst: &mut [u8],
) -> Result<(), Ended> {
    read_exact(socket, dst).await?;
    if let Some(mask) = mask {
        for (b, m) in dst.iter_mut().zip(mask.iter().cycle()) {
            *b ^= m;
        }
    }
    Ok(())
}

/// Reads and drops `len` bytes (a binary frame's payload).
async fn skip<T: Read>(socket: &mut T, mut len: usize) -> Result<(), Ended> {
    let mut sink = [0u8; 64];
    while len > 0 {
        let take = len.min(sink.len());
        read_exact(socket, sink.get_mut(..take).unwrap_or_default()).await?;
        len -= take;
    }
    Ok(())
}

/// Writes one final frame; a client masks what it sends (RFC 6455 §5.3).
async fn write_frame<T: Write>(socket: &mut T, opcode: u8, payload: &[u8]) -> Result<(), Ended> {
    let mut head = heapless::Vec::<u8, 14>::new();
    let _ = head.push(0x80 | opcode);
    match payload.len() {
        n if n < 126 => {
            let _ = head.push(0x80 | n as u8);
        }
        n if n <= 0xFFFF => {
            let _ = head.push(0x80 | 126);
            let _ = head.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            let _ = head.push(0x80 | 127);
            let _ = head.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    let mask = (crate::random() as u32).to_be_bytes();
    let _ = head.extend_from_slice(&mask);
    let io = |_| Ended::Io;
    socket.write_all(&head).await.map_err(io)?;
    let mut chunk = [0u8; 128];
    for part in payload.chunks(chunk.len()) {
        // Chunks are a multiple of 4 bytes long: the mask stays in step.
        for ((dst, src), m) in chunk.iter_mut().zip(part).zip(mask.iter().cycle()) {
            *dst = src ^ m;
        }
        socket
            .write_all(chunk.get(..part.len()).unwrap_or_default())
            .await
            .map_err(io)?;
    }
    socket.flush().await.map_err(io)
}
