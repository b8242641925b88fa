//! The WebSocket client the outbound links share (features `xiaozhi`, `endpoint`): the HTTP
//! upgrade, masked client frames, fragments, ping/pong, close (RFC 6455) over an embassy-net TCP
//! socket, `wss://` through `device_link::tls` with the feature `tls`. What is sent and read on
//! it is the link's own: the xiaozhi envelope (`xiaozhi.rs`), plain JSON-RPC to an MCP endpoint
//! (`endpoint.rs`).
//!
//! The limits and timings are in `config::ws`:
//! - **Bounded attempts.** DNS before every attempt, the TCP connect within `CONNECT_TIMEOUT`,
//!   the TLS handshake and the upgrade within `HANDSHAKE_TIMEOUT`.
//! - **Dead links are noticed** (mcp-core's `transport::link::Keepalive`): a ping after
//!   `PING_INTERVAL` without hearing from the peer; a peer silent for `DEAD_AFTER`, a send stuck
//!   that long, or a frame that began and did not arrive within `FRAME_TIMEOUT` ends the link.
//! - **Sized to the device.** A message (fragments reassembled) or frame beyond the caller's
//!   buffer closes the connection with 1009; a control frame that breaks the protocol, with 1002.
//! - **Closes say why.** The peer's close code is kept ([`Ended::Closed`]): an MCP endpoint's
//!   codes decide when to connect again.

use core::convert::Infallible;
use core::fmt::Write as _;

use device_link::url::{Scheme, Url};
use embassy_net::Stack;
use embassy_net::tcp::TcpSocket;
use embassy_time::{Duration, Instant, with_deadline, with_timeout};
use embedded_io_async::{Read, Write};
use mcp_core::transport::link::{Due, Keepalive};

use crate::config::ws::{
    CLOSE_TIMEOUT, CONNECT_TIMEOUT, DEAD_AFTER, FRAME_TIMEOUT, HANDSHAKE_TIMEOUT, PING_INTERVAL,
};
#[cfg(feature = "tls")]
use crate::tls::{Link, TlsBuffers};

/// Frame opcodes (RFC 6455 §5.2).
const OP_CONTINUATION: u8 = 0x0;
pub const OP_TEXT: u8 = 0x1;
const OP_BINARY: u8 = 0x2;
const OP_CLOSE: u8 = 0x8;
const OP_PING: u8 = 0x9;
const OP_PONG: u8 = 0xA;

/// Close codes (RFC 6455 §7.4.1).
pub const CLOSE_NORMAL: u16 = 1000;
const CLOSE_PROTOCOL_ERROR: u16 = 1002;
const CLOSE_TOO_BIG: u16 = 1009;

/// The longest control frame payload (RFC 6455 §5.5).
const MAX_CONTROL: usize = 125;

/// Why a connection ended (what a log would say).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The peer's host name did not resolve.
    Dns,
    /// The TCP connect failed.
    Connect,
    /// The TCP connect took longer than `CONNECT_TIMEOUT`.
    ConnectTimeout,
    /// The peer did not answer the upgrade with `101`.
    Handshake,
    /// The TLS handshake and the upgrade took longer than `HANDSHAKE_TIMEOUT`.
    HandshakeTimeout,
    /// TLS refused: no clock yet, or the server's certificate did not verify (logged).
    #[cfg(feature = "tls")]
    Tls,
    /// A read or write failed (reset, TCP timeout).
    Io,
    /// Nothing from the peer for `DEAD_AFTER`, a send stuck that long, or a frame that did not
    /// arrive whole within `FRAME_TIMEOUT`.
    DeadLink,
    /// The peer sent more than the buffer holds in one message (closed with 1009).
    TooBig,
    /// A xiaozhi backend's hello did not come in time (closed with 1000 "no hello").
    #[cfg_attr(not(feature = "xiaozhi"), allow(dead_code))]
    NoHello,
    /// The peer broke the framing rules (closed with 1002).
    Protocol,
    /// The peer closed the connection: a close frame with its code, or the TCP stream ended
    /// (`None`).
    Closed(Option<u16>),
}

/// A `ws://` URL (or `wss://` with the feature `tls`), what `build.rs` lets through.
pub fn ws_url(text: &str) -> Option<Url<'_>> {
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

/// A duration in milliseconds, at most `u32::MAX`.
pub const fn ms(d: Duration) -> u32 {
    let ms = d.as_millis();
    if ms > u32::MAX as u64 {
        u32::MAX
    } else {
        ms as u32
    }
}

/// The clock in milliseconds since boot.
fn now_ms() -> u64 {
    Instant::now().as_millis()
}

/// Where a link connects, and what its upgrade request says besides the standard headers.
pub struct Target<'u> {
    /// The peer's URL (its path and query written as they are: percent escapes kept).
    pub url: Url<'u>,
    /// Extra header lines (name, value).
    pub headers: &'u [(&'u str, &'u str)],
    /// A bearer token for `Authorization` (empty: none).
    pub token: &'u str,
    /// The network, for DNS.
    pub stack: Stack<'static>,
    /// How a log line names the link (`xiaozhi`, `endpoint`).
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    pub name: &'static str,
}

/// What a link does on an upgraded connection, until it ends.
pub trait Serve {
    /// Serves the connection until it ends, and says why.
    async fn serve<T: Read + Write>(&mut self, ws: &mut Ws<'_, T>) -> Result<Infallible, Ended>;
}

/// One connection to `target` over a TCP socket on `rx`/`tx`, once the network is up: `link`
/// serves it ([`session`]); afterwards the socket is closed (aborted, flushed briefly), so that
/// nothing of this connection is open when the next one starts. Says why it ended.
pub async fn connection<S: Serve>(
    target: &Target<'_>,
    (rx, tx): (&mut [u8], &mut [u8]),
    link: &mut S,
    #[cfg(feature = "tls")] tls_buffers: &mut TlsBuffers,
) -> Ended {
    target.stack.wait_link_up().await;
    target.stack.wait_config_up().await;
    let mut socket = TcpSocket::new(target.stack, rx, tx);
    // Unacknowledged data older than this aborts the connection.
    socket.set_timeout(Some(DEAD_AFTER));
    let ended = session(
        target,
        &mut socket,
        link,
        #[cfg(feature = "tls")]
        tls_buffers,
    )
    .await;
    socket.abort();
    let _ = with_timeout(CLOSE_TIMEOUT, socket.flush()).await;
    ended
}

/// Connects to `target` (DNS, TCP, TLS for `wss://`), upgrades, and lets `link` serve the
/// connection until it ends; says why.
pub async fn session<S: Serve>(
    target: &Target<'_>,
    socket: &mut TcpSocket<'_>,
    link: &mut S,
    #[cfg(feature = "tls")] tls_buffers: &mut TlsBuffers,
) -> Ended {
    let Some(addr) = crate::net::resolve(target.stack, target.url.host).await else {
        return Ended::Dns;
    };
    match with_timeout(CONNECT_TIMEOUT, socket.connect((addr, target.url.port))).await {
        Err(_) => return Ended::ConnectTimeout,
        Ok(Err(_)) => return Ended::Connect,
        Ok(Ok(())) => {}
    }
    // The TLS handshake (`wss://`) and the upgrade share one deadline.
    let by = Instant::now() + HANDSHAKE_TIMEOUT;
    #[cfg(feature = "tls")]
    let mut socket = {
        let secure = target.url.scheme == Scheme::Wss;
        let opened = Link::open(&mut *socket, secure, target.url.host, tls_buffers);
        match with_deadline(by, opened).await {
            Err(_) => return Ended::HandshakeTimeout,
            Ok(Err(why)) => {
                esp_println::println!("{}: TLS refused: {why}", target.name);
                return Ended::Tls;
            }
            Ok(Ok(link)) => link,
        }
    };
    #[cfg(feature = "tls")]
    let socket = &mut socket;
    match with_deadline(by, upgrade(target, socket)).await {
        Err(_) => return Ended::HandshakeTimeout,
        Ok(Err(e)) => return e,
        Ok(Ok(())) => {}
    }
    let mut ws = Ws::new(socket);
    let Err(ended) = link.serve(&mut ws).await;
    ended
}

/// The HTTP upgrade with the target's headers; the answer must be `101`. The path and query are
/// written as the URL has them (an MCP endpoint's token stays percent-encoded).
async fn upgrade<T: Read + Write>(target: &Target<'_>, socket: &mut T) -> Result<(), Ended> {
    let mut key = [0u8; 16];
    for (i, b) in key.iter_mut().enumerate() {
        *b = (crate::random() >> (8 * (i % 8))) as u8;
    }
    let mut head = heapless::String::<256>::new();
    let written = write!(
        head,
        " HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {}\r\nSec-WebSocket-Version: 13\r\n",
        target.url.authority(),
        base64_16(&key),
    );
    if written.is_err() {
        // A host name too long for the request buffer: no upgrade can be sent.
        return Err(Ended::Handshake);
    }
    let io = |_| Ended::Io;
    // The request line's path, whatever its length (a token can be long).
    socket.write_all(b"GET ").await.map_err(io)?;
    socket
        .write_all(target.url.path.as_bytes())
        .await
        .map_err(io)?;
    socket.write_all(head.as_bytes()).await.map_err(io)?;
    for (name, value) in target.headers {
        let pieces: [&[u8]; 4] = [name.as_bytes(), b": ", value.as_bytes(), b"\r\n"];
        for piece in pieces {
            socket.write_all(piece).await.map_err(io)?;
        }
    }
    if !target.token.is_empty() {
        // Written as it is, whatever its length.
        let pieces: [&[u8]; 3] = [b"Authorization: Bearer ", target.token.as_bytes(), b"\r\n"];
        for piece in pieces {
            socket.write_all(piece).await.map_err(io)?;
        }
    }
    socket.write_all(b"\r\n").await.map_err(io)?;
    socket.flush().await.map_err(io)?;

    // The answer's head, byte by byte up to its blank line, so that nothing after it (a frame
    // the peer sends at once) is consumed.
    let mut answer = [0u8; 512];
    let mut got = 0;
    loop {
        let slot = answer.get_mut(got..got + 1).ok_or(Ended::Handshake)?;
        match socket.read(slot).await {
            Ok(0) => return Err(Ended::Closed(None)),
            Ok(_) => got += 1,
            Err(_) => return Err(Ended::Io),
        }
        if answer.get(..got).is_some_and(|h| h.ends_with(b"\r\n\r\n")) {
            break;
        }
    }
    if answer.starts_with(b"HTTP/1.1 101") {
        Ok(())
    } else {
        Err(Ended::Handshake)
    }
}

/// A frame's header.
struct Head {
    fin: bool,
    opcode: u8,
    len: u64,
    mask: Option<[u8; 4]>,
}

/// The WebSocket on an upgraded connection: frames in and out, and the keep-alive (mcp-core's
/// [`Keepalive`], the rule the host's links follow too).
pub struct Ws<'s, T> {
    socket: &'s mut T,
    alive: Keepalive,
}

impl<'s, T: Read + Write> Ws<'s, T> {
    pub fn new(socket: &'s mut T) -> Self {
        let mut alive = Keepalive::new(ms(PING_INTERVAL), ms(DEAD_AFTER));
        alive.heard(now_ms());
        Ws { socket, alive }
    }

    /// Sends one frame; one that cannot go out within [`DEAD_AFTER`] is a dead link.
    pub async fn send(&mut self, opcode: u8, payload: &[u8]) -> Result<(), Ended> {
        match with_timeout(DEAD_AFTER, write_frame(self.socket, opcode, payload)).await {
            Ok(sent) => sent,
            Err(_) => Err(Ended::DeadLink),
        }
    }

    /// Sends a close frame with `code` and `reason` (best effort, within [`CLOSE_TIMEOUT`]) and
    /// returns `why`.
    pub async fn close(&mut self, code: u16, reason: &str, why: Ended) -> Ended {
        let mut payload = heapless::Vec::<u8, MAX_CONTROL>::new();
        let _ = payload.extend_from_slice(&code.to_be_bytes());
        let _ = payload.extend_from_slice(reason.as_bytes());
        let _ = with_timeout(CLOSE_TIMEOUT, write_frame(self.socket, OP_CLOSE, &payload)).await;
        why
    }

    /// Waits for the first byte of the next frame, pinging while the peer is quiet; a peer
    /// silent for [`DEAD_AFTER`] is a dead link.
    async fn first_byte(&mut self) -> Result<u8, Ended> {
        loop {
            let until = match self.alive.due(now_ms()) {
                Due::Dead => return Err(Ended::DeadLink),
                Due::Ping => {
                    self.send(OP_PING, b"").await?;
                    continue;
                }
                Due::Wait(until) => until,
            };
            let mut byte = [0u8; 1];
            // `read` takes nothing from the socket unless it completes: a timeout loses nothing.
            let deadline = Instant::from_millis(until);
            match with_deadline(deadline, self.socket.read(&mut byte)).await {
                Ok(Ok(0)) => return Err(Ended::Closed(None)),
                Ok(Ok(_)) => {
                    let [b] = byte;
                    return Ok(b);
                }
                Ok(Err(_)) => return Err(Ended::Io),
                Err(_) => {}
            }
        }
    }

    /// Reads frames until a whole text message is in `msg`; returns its length. Answers pings,
    /// notes pongs, skips binary (audio) messages, reassembles fragments; a message larger
    /// than `msg` closes with 1009, a framing error with 1002, the backend's close is answered.
    pub async fn next_text(&mut self, msg: &mut [u8]) -> Result<usize, Ended> {
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
                self.alive.heard(now_ms());
                match head.opcode {
                    OP_PING => self.send(OP_PONG, payload).await?,
                    OP_PONG => {}
                    // Answer the peer's close (RFC 6455 §5.5.1); the link is over, and its code
                    // says why.
                    OP_CLOSE => {
                        let code = match payload {
                            [a, b, ..] => Some(u16::from_be_bytes([*a, *b])),
                            _ => None,
                        };
                        return Err(self.close(CLOSE_NORMAL, "", Ended::Closed(code)).await);
                    }
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
            self.alive.heard(now_ms());
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
            return Err(Ended::Closed(None));
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
