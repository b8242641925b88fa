//! xiaozhi client mode (feature `xiaozhi`): the device connects out to a xiaozhi server over
//! WebSocket, sends its hello with `features.mcp`, and answers the MCP messages the server wraps
//! in `{"session_id":…,"type":"mcp","payload":{…}}`.
//!
//! The envelope and the hello come from `mcp_core::transport::xiaozhi`; this file is the
//! WebSocket client (RFC 6455: the HTTP upgrade, masked client frames, ping/pong, close) over an
//! embassy-net TCP socket. Plain `ws://` to an IPv4 address (a self-hosted xiaozhi server on the
//! LAN); `wss://` would need a TLS stack in the firmware.
//!
//! Build-time settings: `XIAOZHI_URL` (`ws://192.168.1.10:8000/xiaozhi/v1/`), `XIAOZHI_TOKEN`
//! (sent as `Authorization: Bearer …`, optional).
//!
//! The connection is the model's (`Principal::Model`); xiaozhi backends may send MCP messages
//! before the hello exchange completes, and this client answers them.

use core::fmt::Write as _;
use core::net::Ipv4Addr;

use embassy_net::tcp::TcpSocket;
use embassy_net::{IpAddress, Stack};
use embassy_time::{Duration, Timer};
use embedded_io_async::Write as _;
use mcp_core::transport::xiaozhi::{self, DEVICE_HELLO, Envelope};
use mcp_core::wire::json::DEFAULT_MAX_DEPTH;
use mcp_core::{Principal, Server};

use crate::board::{Board, note_reboot};
use crate::{Engine, LINE, OUT};

const URL: &str = match option_env!("XIAOZHI_URL") {
    Some(u) => u,
    None => "",
};
const TOKEN: &str = match option_env!("XIAOZHI_TOKEN") {
    Some(t) => t,
    None => "",
};

/// Why a connection ended.
#[derive(Debug)]
enum Ended {
    Url,
    Connect,
    Io,
    Handshake,
    Protocol,
    Closed,
}

/// `ws://a.b.c.d[:port]/path` → address, port, path.
fn parse_url(url: &str) -> Option<(Ipv4Addr, u16, &str)> {
    let rest = url.strip_prefix("ws://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (rest.get(..i)?, rest.get(i..)?),
        None => (rest, "/"),
    };
    let (host, port) = match authority.split_once(':') {
        Some((h, p)) => (h, p.parse().ok()?),
        None => (authority, 80),
    };
    Some((host.parse().ok()?, port, path))
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

/// Connects, runs one xiaozhi session, and reconnects after a pause, forever.
pub async fn run(
    stack: Stack<'static>,
    engine: &'static mut Engine,
    board: &'static mut Board,
    mac: [u8; 6],
) -> ! {
    let mut rx = [0u8; 2048];
    let mut tx = [0u8; 2048];
    let mut frame = [0u8; LINE + 256];
    let mut out = [0u8; OUT + 256];
    loop {
        let mut socket = TcpSocket::new(stack, &mut rx, &mut tx);
        let _ended = session(&mut socket, engine, board, mac, &mut frame, &mut out).await;
        socket.abort();
        let _ = socket.flush().await;
        Timer::after(Duration::from_secs(5)).await;
    }
}

async fn session(
    socket: &mut TcpSocket<'_>,
    engine: &mut Engine,
    board: &mut Board,
    mac: [u8; 6],
    frame: &mut [u8],
    out: &mut [u8],
) -> Result<(), Ended> {
    let (addr, port, path) = parse_url(URL).ok_or(Ended::Url)?;
    socket.set_timeout(Some(Duration::from_secs(120)));
    socket
        .connect((IpAddress::Ipv4(addr), port))
        .await
        .map_err(|_| Ended::Connect)?;

    // The upgrade request, with xiaozhi's headers.
    let mut key = [0u8; 16];
    for (i, b) in key.iter_mut().enumerate() {
        *b = (crate::random() >> (8 * (i % 8))) as u8;
    }
    let mut req = heapless::String::<512>::new();
    let _ = write!(
        req,
        "GET {path} HTTP/1.1\r\nHost: {addr}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {}\r\nSec-WebSocket-Version: 13\r\nProtocol-Version: 1\r\n\
         Device-Id: {}\r\nClient-Id: esp32-wifi-mcp\r\n",
        base64_16(&key),
        device_id(mac),
    );
    if !TOKEN.is_empty() {
        let _ = write!(req, "Authorization: Bearer {TOKEN}\r\n");
    }
    let _ = write!(req, "\r\n");
    socket
        .write_all(req.as_bytes())
        .await
        .map_err(|_| Ended::Io)?;

    // The answer must be 101; its head ends with a blank line.
    let mut head = [0u8; 512];
    let mut got = 0;
    loop {
        let n = socket
            .read(head.get_mut(got..).ok_or(Ended::Handshake)?)
            .await
            .map_err(|_| Ended::Io)?;
        if n == 0 {
            return Err(Ended::Closed);
        }
        got += n;
        // Byte by byte is not needed: a server sends nothing before our hello.
        if head
            .get(..got)
            .is_some_and(|h| h.windows(4).any(|w| w == b"\r\n\r\n"))
        {
            break;
        }
    }
    if !head.starts_with(b"HTTP/1.1 101") {
        return Err(Ended::Handshake);
    }

    send_text(socket, DEVICE_HELLO.as_bytes()).await?;
    let mut session_id: heapless::String<64> = heapless::String::new();
    loop {
        // Drive long-running actions; what the engine owes goes out wrapped.
        let now = crate::uptime_ms();
        board.sim.set_time(now);
        loop {
            let sid = (!session_id.is_empty()).then_some(session_id.as_str());
            let n = xiaozhi::wrap(sid, out, |buf| engine.poll(now, board, buf));
            match out.get(..n) {
                Some(msg) if n > 0 => send_text(socket, msg).await?,
                _ => break,
            }
        }
        let Some((opcode, len)) = read_frame(socket, frame).await? else {
            continue; // a fragment we do not handle was skipped
        };
        let payload = frame.get(..len).unwrap_or_default();
        match opcode {
            0x1 => {}
            0x8 => return Err(Ended::Closed),
            0x9 => {
                send_frame(socket, 0xA, payload).await?;
                continue;
            }
            _ => continue, // binary (audio) and pong frames are not for MCP
        }
        let Ok(env) = Envelope::parse(payload, DEFAULT_MAX_DEPTH) else {
            continue;
        };
        if env.is("hello") {
            if let Some(sid) = env.session_id {
                session_id.clear();
                for c in sid.chars().take(64) {
                    let _ = session_id.push(c);
                }
            }
            continue;
        }
        let Some(mcp) = env.mcp_payload() else {
            continue;
        };
        let sid = (!session_id.is_empty()).then_some(session_id.as_str());
        let n = xiaozhi::wrap(sid, out, |buf| {
            Server::handle(engine, mcp, Principal::Model, board, buf).map_or(0, |h| h.len)
        });
        note_reboot(board);
        if let Some(answer) = out.get(..n).filter(|a| !a.is_empty()) {
            send_text(socket, answer).await?;
        }
    }
}

/// The MAC-style device id xiaozhi servers key devices by.
fn device_id(mac: [u8; 6]) -> heapless::String<17> {
    let mut s = heapless::String::new();
    for (i, b) in mac.iter().enumerate() {
        let _ = write!(s, "{}{b:02x}", if i > 0 { ":" } else { "" });
    }
    s
}

async fn read_exact(socket: &mut TcpSocket<'_>, buf: &mut [u8]) -> Result<(), Ended> {
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

/// Reads one frame into `buf`: `Some((opcode, length))`, or `None` for a frame that was too large
/// or fragmented (its bytes are skipped).
async fn read_frame(
    socket: &mut TcpSocket<'_>,
    buf: &mut [u8],
) -> Result<Option<(u8, usize)>, Ended> {
    let mut h = [0u8; 2];
    read_exact(socket, &mut h).await?;
    let [b0, b1] = h;
    let (fin, opcode, masked) = (b0 & 0x80 != 0, b0 & 0x0F, b1 & 0x80 != 0);
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
    let mut mask = [0u8; 4];
    if masked {
        read_exact(socket, &mut mask).await?;
    }
    let fits = usize::try_from(len).ok().filter(|&n| n <= buf.len());
    let Some(n) = fits.filter(|_| fin) else {
        // Skip it.
        let mut left = len;
        let mut sink = [0u8; 64];
        while left > 0 {
            let take = left.min(sink.len() as u64) as usize;
            read_exact(socket, sink.get_mut(..take).unwrap_or_default()).await?;
            left -= take as u64;
        }
        return if opcode == 0x8 {
            Err(Ended::Closed)
        } else {
            Ok(None)
        };
    };
    let payload = buf.get_mut(..n).ok_or(Ended::Protocol)?;
    read_exact(socket, payload).await?;
    if masked {
        for (i, b) in payload.iter_mut().enumerate() {
            *b ^= mask.get(i % 4).copied().unwrap_or(0);
        }
    }
    Ok(Some((opcode, n)))
}

async fn send_text(socket: &mut TcpSocket<'_>, payload: &[u8]) -> Result<(), Ended> {
    send_frame(socket, 0x1, payload).await
}

/// Sends one final frame; a client masks what it sends (RFC 6455 §5.3).
async fn send_frame(socket: &mut TcpSocket<'_>, opcode: u8, payload: &[u8]) -> Result<(), Ended> {
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
    socket.write_all(&head).await.map_err(|_| Ended::Io)?;
    let mut chunk = [0u8; 128];
    for (k, part) in payload.chunks(chunk.len()).enumerate() {
        for (i, (dst, src)) in chunk.iter_mut().zip(part).enumerate() {
            *dst = src ^ mask.get((k * 128 + i) % 4).copied().unwrap_or(0);
        }
        socket
            .write_all(chunk.get(..part.len()).unwrap_or_default())
            .await
            .map_err(|_| Ended::Io)?;
    }
    socket.flush().await.map_err(|_| Ended::Io)
}
