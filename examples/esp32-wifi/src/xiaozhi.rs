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
//! - **Sized to the device.** A message (fragments reassembled) or frame beyond `Sizes::WS_MESSAGE`
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

use crate::config::Sizes;
use crate::config::ws::CLOSE_TIMEOUT;
use crate::config::xiaozhi::{BACKOFF_FIRST, BACKOFF_MAX, HELLO_TIMEOUT, OTA_RETRY, OTA_TIMEOUT};
#[cfg(feature = "tls")]
use crate::tls::{Link, TlsBuffers};
use crate::ws::{self, CLOSE_NORMAL, Ended, OP_TEXT, Ws, ms, ws_url};
use crate::{Engine, EspBoard};

const URL: &str = build_env!("XIAOZHI_URL");
const TOKEN: &str = build_env!("XIAOZHI_TOKEN");
const OTA_URL: &str = build_env!("XIAOZHI_OTA_URL");

/// The chip, as the OTA check's `chip_model_name` says it.
const CHIP: &str = if cfg!(feature = "esp32c6") {
    "esp32c6"
} else if cfg!(feature = "esp32s3") {
    "esp32s3"
} else {
    "esp32c3"
};

/// Room kept in front of an answer for the envelope's head,
/// `{"session_id":"…","type":"mcp","payload":`, with a session id of up to
/// [`MAX_SESSION_ID_LEN`] printable characters, each at most two bytes escaped.
const HEAD_ROOM: usize = 2 * MAX_SESSION_ID_LEN + 48;

/// A backend session id that may be echoed (see [`usable_session`]).
type SessionId = heapless::String<MAX_SESSION_ID_LEN>;

/// The reconnection rule: [`BACKOFF_FIRST`] doubling up to [`BACKOFF_MAX`] while connections
/// end without a session, each wait drawn between half of its step and all of it ("equal
/// jitter") with the hardware RNG.
const RECONNECT: Reconnect = Reconnect::new(ms(BACKOFF_FIRST), ms(BACKOFF_MAX));

/// Connects, runs one xiaozhi session, and reconnects after a backoff, forever.
pub async fn run(
    stack: Stack<'static>,
    engine: &'static mut Engine,
    board: &'static mut EspBoard,
    mac: [u8; 6],
) -> ! {
    let mut rx = [0u8; Sizes::WS_TCP_BUFFER];
    let mut tx = [0u8; Sizes::WS_TCP_BUFFER];
    let mut msg = [0u8; Sizes::WS_MESSAGE];
    let mut out = [0u8; HEAD_ROOM + Sizes::OUT + 1];
    // With XIAOZHI_OTA_URL the check says where to connect and with which token.
    let mut url_text = heapless::String::<{ Sizes::OTA_URL }>::new();
    let mut token = heapless::String::<{ Sizes::OTA_TOKEN }>::new();
    // One connection at a time: the OTA check's and then the sessions' TLS buffers.
    #[cfg(feature = "tls")]
    let tls_buffers = TlsBuffers::take();
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
        crate::idle().await
    };
    let device_id = device_id(mac);
    let client_id = ClientId::from_mac(mac);
    let headers = [
        ("Protocol-Version", device_link::ota::PROTOCOL_VERSION),
        ("Device-Id", device_id.as_str()),
        ("Client-Id", client_id.as_str()),
    ];
    let target = ws::Target {
        url: target,
        headers: &headers,
        token: &token,
        stack,
        name: "xiaozhi",
    };
    let mut reconnect = RECONNECT;
    let mut connection = 0u64;
    loop {
        connection += 1;
        let mut greeted = false;
        let mut link = Session {
            unnamed: Peer::new(connection),
            engine: &mut *engine,
            board: &mut *board,
            msg: &mut msg,
            out: &mut out,
            greeted: &mut greeted,
        };
        let _ended = ws::connection(
            &target,
            (&mut rx, &mut tx),
            &mut link,
            #[cfg(feature = "tls")]
            &mut *tls_buffers,
        )
        .await;
        let wait = reconnect.ended(greeted, crate::random() as u32);
        Timer::after(Duration::from_millis(wait.into())).await;
    }
}

/// One connection: the engine and the buffers it serves with.
struct Session<'a> {
    /// The peer of messages that name no usable session: this connection.
    unnamed: Peer,
    engine: &'a mut Engine,
    board: &'a mut EspBoard,
    msg: &'a mut [u8],
    out: &'a mut [u8],
    /// Set once the backend's hello arrived.
    greeted: &'a mut bool,
}

impl ws::Serve for Session<'_> {
    /// Sends the hello, then answers what comes until the link ends.
    async fn serve<T: Read + Write>(&mut self, ws: &mut Ws<'_, T>) -> Result<Infallible, Ended> {
        let unnamed = self.unnamed;
        let (engine, board) = (&mut *self.engine, &mut *self.board);
        let (msg, out, greeted) = (&mut *self.msg, &mut *self.out, &mut *self.greeted);
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
            let peer = sid.map_or(unnamed, |s| Peer::named(s.as_bytes()));
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
/// the answer (into `answer`, the message buffer: at most `Sizes::WS_MESSAGE` bytes; within `OTA_TIMEOUT`), and on a WebSocket URL copy it
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
    url: &mut heapless::String<{ Sizes::OTA_URL }>,
    token: &mut heapless::String<{ Sizes::OTA_TOKEN }>,
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
    url: &mut heapless::String<{ Sizes::OTA_URL }>,
    token: &mut heapless::String<{ Sizes::OTA_TOKEN }>,
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
    let mut buf = [0u8; Sizes::OTA_TOKEN];
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
