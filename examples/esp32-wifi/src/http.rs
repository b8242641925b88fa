//! A small HTTP/1.1 server for one MCP endpoint, `POST /mcp` (Streamable HTTP), over an
//! embassy-net TCP socket.
//!
//! This file only reads and writes HTTP messages. The MCP rules around them — Host/Origin
//! checks, POST preconditions, the choice between the 2026-07-28 (stateless) and the legacy
//! (session) rules, header/body agreement, the status codes — come from
//! `mcp_core::transport::http`, and the message itself goes to `Server::handle_with`.
//!
//! Scope, kept small for a microcontroller: one connection at a time (keep-alive), bodies with
//! `Content-Length` (no chunked uploads), JSON responses (no SSE stream: `GET /mcp` is 405, which
//! the specification allows), one legacy session at a time (a new `initialize` replaces it).

use core::fmt::Write as _;

use embassy_net::Stack;
use embassy_net::tcp::TcpSocket;
use embassy_time::Duration;
use embedded_io_async::Write as _;
use mcp_core::server::Input;
use mcp_core::transport::http::{self, Headers, Route};
use mcp_core::{Event, Principal};

use crate::board::Board;
use crate::{Engine, LINE, OUT};

/// The TCP port.
pub const PORT: u16 = 80;
/// The request head (request line and headers) must fit here.
const HEAD: usize = 1024;
/// Headers kept per request; more are ignored.
const MAX_HEADERS: usize = 24;
/// A connection idle this long is closed.
const IDLE: Duration = Duration::from_secs(30);

/// Parsed request head, borrowing the head buffer.
struct Request<'h> {
    method: &'h [u8],
    path: &'h [u8],
    headers: heapless::Vec<(&'h str, &'h [u8]), MAX_HEADERS>,
}

impl Headers for Request<'_> {
    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers.as_slice().header(name)
    }
}

fn parse_head(head: &[u8]) -> Option<Request<'_>> {
    let mut lines = head
        .split(|&c| c == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let mut first = lines.next()?.split(|&c| c == b' ');
    let method = first.next()?;
    let path = first.next()?;
    let version = first.next()?;
    if !version.starts_with(b"HTTP/1.") {
        return None;
    }
    let mut headers = heapless::Vec::new();
    for line in lines.take_while(|l| !l.is_empty()) {
        let colon = line.iter().position(|&c| c == b':')?;
        let name = core::str::from_utf8(line.get(..colon)?).ok()?;
        let value = line.get(colon + 1..)?;
        let _ = headers.push((name.trim(), value));
    }
    Some(Request {
        method,
        path,
        headers,
    })
}

fn content_length(req: &Request<'_>) -> Option<usize> {
    let v = req.header("Content-Length")?;
    core::str::from_utf8(v).ok()?.trim().parse().ok()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        411 => "Length Required",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        _ => "Error",
    }
}

/// The MCP session of the legacy rules: its id, as 16 hex digits.
#[derive(Default)]
struct Session {
    id: Option<heapless::String<16>>,
}

/// Everything the endpoint needs between requests.
pub struct Endpoint<'a> {
    /// The engine.
    pub engine: &'a mut Engine,
    /// The tools' context.
    pub board: &'a mut Board,
    /// The device's address, accepted in `Host` (DNS-rebinding protection).
    pub host: heapless::String<16>,
    /// A source of session ids.
    pub random: fn() -> u64,
    session: Session,
}

impl<'a> Endpoint<'a> {
    /// An endpoint with no session yet.
    pub fn new(
        engine: &'a mut Engine,
        board: &'a mut Board,
        host: heapless::String<16>,
        random: fn() -> u64,
    ) -> Self {
        Endpoint {
            engine,
            board,
            host,
            random,
            session: Session::default(),
        }
    }
}

/// Serves `POST /mcp` forever, one connection at a time.
pub async fn serve(stack: Stack<'static>, ep: &mut Endpoint<'_>, now_ms: fn() -> u64) -> ! {
    let mut rx = [0u8; 1536];
    let mut tx = [0u8; 1536];
    let mut head = [0u8; HEAD];
    let mut body = [0u8; LINE];
    let mut out = [0u8; OUT];
    loop {
        let mut socket = TcpSocket::new(stack, &mut rx, &mut tx);
        socket.set_timeout(Some(IDLE));
        if socket.accept(PORT).await.is_err() {
            continue;
        }
        while connection_step(&mut socket, ep, &mut head, &mut body, &mut out, now_ms).await {}
        socket.close();
        let _ = socket.flush().await;
        socket.abort();
    }
}

/// Reads one request and answers it; `false` when the connection is done.
async fn connection_step(
    socket: &mut TcpSocket<'_>,
    ep: &mut Endpoint<'_>,
    head: &mut [u8; HEAD],
    body: &mut [u8; LINE],
    out: &mut [u8; OUT],
    now_ms: fn() -> u64,
) -> bool {
    // Read the head; keep what follows it (the start of the body).
    let mut filled = 0;
    let head_end = loop {
        let Some(free) = head.get_mut(filled..) else {
            return false;
        };
        if free.is_empty() {
            let _ = respond(socket, 431, &[], b"", true).await;
            return false;
        }
        match socket.read(free).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => filled += n,
        }
        if let Some(end) = head
            .get(..filled)
            .and_then(|h| h.windows(4).position(|w| w == b"\r\n\r\n"))
        {
            break end + 4;
        }
    };
    let (head_bytes, rest) = head.split_at(head_end);
    let early = rest.get(..filled - head_end).unwrap_or_default();
    let Some(req) = parse_head(head_bytes) else {
        let _ = respond(socket, 400, &[], b"", true).await;
        return false;
    };
    let close = req
        .header("Connection")
        .is_some_and(|v| v.eq_ignore_ascii_case(b"close"));

    if req.path != b"/mcp" {
        return respond(socket, 404, &[], b"", close).await.is_ok() && !close;
    }
    let allowed = [ep.host.as_str()];
    if let Err(refusal) = http::check_host_and_origin(&req, &allowed) {
        let n = refusal.write_body(b"", out);
        let _ = respond(
            socket,
            refusal.status,
            &[],
            out.get(..n).unwrap_or_default(),
            true,
        )
        .await;
        return false;
    }
    match req.method {
        b"POST" => {}
        b"DELETE" => {
            // Ends the legacy session named by the header.
            let named = req.header(http::SESSION_ID).map(|v| v.trim_ascii());
            let ours = ep.session.id.as_ref().map(|s| s.as_bytes());
            let status = if named.is_some() && named == ours {
                ep.session.id = None;
                200
            } else {
                404
            };
            return respond(socket, status, &[], b"", close).await.is_ok() && !close;
        }
        _ => {
            return respond(socket, 405, &[("Allow", "POST, DELETE")], b"", close)
                .await
                .is_ok()
                && !close;
        }
    }
    let Some(len) = content_length(&req) else {
        let _ = respond(socket, 411, &[], b"", true).await;
        return false;
    };
    if let Err(refusal) = http::check_post(&req, len, LINE) {
        let n = refusal.write_body(b"", out);
        // The body was not read: close rather than resynchronize.
        let _ = respond(
            socket,
            refusal.status,
            &[],
            out.get(..n).unwrap_or_default(),
            true,
        )
        .await;
        return false;
    }
    // The body: what came with the head, then the rest from the socket.
    let Some(body) = body.get_mut(..len) else {
        return false;
    };
    let first = early.len().min(len);
    if let (Some(dst), Some(src)) = (body.get_mut(..first), early.get(..first)) {
        dst.copy_from_slice(src);
    }
    let mut got = first;
    while got < len {
        match socket.read(body.get_mut(got..).unwrap_or_default()).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => got += n,
        }
    }
    let body: &[u8] = body;

    // Bring the board and the engine's tasks up to date. Without a standalone SSE stream, what
    // `poll` emits (progress and status notifications) has no receiver here; task results are
    // still there for `tasks/get`, `tasks/result` and the status tool.
    let now = now_ms();
    ep.board.sim.set_time(now);
    while ep.engine.poll(now, ep.board, out) > 0 {}

    let stateless = match http::route(&req, body) {
        Route::Stateless => {
            if let Err(refusal) = http::check_stateless_headers(&req, body) {
                let n = refusal.write_body(body, out);
                return respond(
                    socket,
                    refusal.status,
                    &[],
                    out.get(..n).unwrap_or_default(),
                    close,
                )
                .await
                .is_ok()
                    && !close;
            }
            true
        }
        Route::Session(named) => {
            // A request naming a session that is not (or no longer) ours: 404, the client
            // starts again with `initialize`.
            let ours = ep.session.id.as_ref().map(|s| s.as_bytes());
            if let Some(named) = named {
                if Some(named) != ours {
                    return respond(socket, 404, &[], b"", close).await.is_ok() && !close;
                }
            }
            false
        }
    };
    let input = Input::new(body, Principal::Model).stateless(stateless);
    let Ok(handled) = ep
        .engine
        .handle_with(input, ep.board, out, &mut |_: &[u8]| {})
    else {
        return false;
    };
    let mut session_header = heapless::String::<16>::new();
    if let Some(Event::Initialized { .. }) = handled.event {
        if !handled.modern {
            let _ = write!(session_header, "{:016x}", (ep.random)());
            ep.session.id = Some(session_header.clone());
        }
    }
    let status = http::status_code(handled.status, handled.len > 0);
    let extra: &[(&str, &str)] = if session_header.is_empty() {
        &[]
    } else {
        &[(http::SESSION_ID, session_header.as_str())]
    };
    let answer = out.get(..handled.len).unwrap_or_default();
    // The device reboots a second after answering `self.reboot`: `main`'s watcher does it.
    crate::board::note_reboot(ep.board);
    respond(socket, status, extra, answer, close).await.is_ok() && !close
}

/// Writes a response with a JSON body (or none).
async fn respond(
    socket: &mut TcpSocket<'_>,
    status: u16,
    extra: &[(&str, &str)],
    body: &[u8],
    close: bool,
) -> Result<(), embassy_net::tcp::Error> {
    let mut head = heapless::String::<256>::new();
    let _ = write!(head, "HTTP/1.1 {status} {}\r\n", reason(status));
    if !body.is_empty() {
        let _ = write!(head, "Content-Type: application/json\r\n");
    }
    let _ = write!(head, "Content-Length: {}\r\n", body.len());
    for (name, value) in extra {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    if close {
        let _ = write!(head, "Connection: close\r\n");
    }
    let _ = write!(head, "\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body).await?;
    socket.flush().await
}
