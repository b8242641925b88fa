//! A small HTTP/1.1 server for one MCP endpoint, `POST /mcp` (Streamable HTTP), over an
//! embassy-net TCP socket.
//!
//! This file only reads and writes HTTP messages. The MCP rules around them — Host/Origin
//! checks (parsed, not substring-matched), POST preconditions (media types parsed), the choice
//! between the 2026-07-28 (stateless) and the legacy (session) rules, header/body agreement,
//! the status codes — come from `mcp_core::transport::http`, and the message itself goes to
//! `Server::handle_async`.
//!
//! Scope, kept small for a microcontroller: bodies with `Content-Length` (no chunked uploads),
//! JSON responses (no SSE stream: `GET /mcp` is 405, which the specification allows), one
//! legacy session at a time (a new `initialize` replaces it).
//!
//! **One connection at a time.** There is one TCP socket (`Sizes::SOCKETS`: DHCP, this one, a
//! spare); while it serves a client, another client's connection attempt is refused (RST) and
//! retried by that client. So that a slow or silent client cannot hold the only socket, every
//! stage has one deadline (`config::http`): the whole request head `HEADER_TIMEOUT` (also the
//! keep-alive idle time), the whole body `BODY_TIMEOUT` (408 and close), the whole response
//! `WRITE_TIMEOUT`.
//!
//! **A bearer token** (`MCP_TOKEN` at build time, optional): when set, every request to `/mcp`
//! must carry `Authorization: Bearer <MCP_TOKEN>`, checked with mcp-core's
//! `transport::auth::Bearer` (constant-time) after the Host/Origin rule and before the body is
//! read; others get 401 with a `WWW-Authenticate` challenge, and the protected-resource metadata
//! (RFC 9728) is served without it at `/.well-known/oauth-protected-resource[/mcp]`. A token
//! that is no bearer token fails the build. Unset: no authorization (anyone on the network who
//! reaches the device can call its tools).

use core::fmt::Write as _;

use embassy_net::Stack;
use embassy_net::tcp::TcpSocket;
use embassy_time::with_timeout;
use embedded_io_async::Write as _;
use mcp_core::server::{Delivery, Input, Peer};
use mcp_core::transport::auth::{self, Bearer};
use mcp_core::transport::http::{self, Headers, Route};
use mcp_core::{Event, Principal};

use crate::config::Sizes;
use crate::config::http::{BODY_TIMEOUT, HEADER_TIMEOUT, PORT, WRITE_TIMEOUT};
use crate::{Engine, EspBoard};

/// The device's bearer token (`MCP_TOKEN` at build time), checked when the firmware compiles:
/// one that is no bearer token (empty, over 256 bytes, a character outside RFC 6750's
/// `b64token`) fails the build. `None`: the endpoint is open.
pub(crate) const TOKEN: Option<Bearer<'static>> = match option_env!("MCP_TOKEN") {
    None => None,
    Some(t) => match Bearer::new(t) {
        Ok(b) => Some(b),
        Err(_) => panic!(
            "MCP_TOKEN is not a bearer token: 1 to 256 of A-Z a-z 0-9 - . _ ~ + /, then optional ="
        ),
    },
};

/// The endpoint's path.
const PATH: &str = "/mcp";

/// Parsed request head, borrowing the head buffer.
struct Request<'h> {
    method: &'h [u8],
    path: &'h [u8],
    headers: heapless::Vec<(&'h str, &'h [u8]), { Sizes::HTTP_HEADERS }>,
}

impl Headers for Request<'_> {
    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers.as_slice().header(name)
    }
}

impl Request<'_> {
    /// How many times header `name` appears.
    fn count(&self, name: &str) -> usize {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .count()
    }
}

/// Why a request head is refused.
enum BadHead {
    /// 400: not an HTTP/1.x request head.
    Malformed,
    /// 431: more than [`Sizes::HTTP_HEADERS`] headers.
    TooManyHeaders,
}

fn parse_head(head: &[u8]) -> Result<Request<'_>, BadHead> {
    let mut lines = head
        .split(|&c| c == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let mut first = lines
        .next()
        .ok_or(BadHead::Malformed)?
        .split(|&c| c == b' ');
    let method = first.next().ok_or(BadHead::Malformed)?;
    let path = first.next().ok_or(BadHead::Malformed)?;
    let version = first.next().ok_or(BadHead::Malformed)?;
    if !version.starts_with(b"HTTP/1.") {
        return Err(BadHead::Malformed);
    }
    let mut headers = heapless::Vec::new();
    for line in lines.take_while(|l| !l.is_empty()) {
        let colon = line
            .iter()
            .position(|&c| c == b':')
            .ok_or(BadHead::Malformed)?;
        let name = line
            .get(..colon)
            .and_then(|n| core::str::from_utf8(n).ok())
            .ok_or(BadHead::Malformed)?;
        let value = line.get(colon + 1..).ok_or(BadHead::Malformed)?;
        headers
            .push((name.trim(), value))
            .map_err(|_| BadHead::TooManyHeaders)?;
    }
    Ok(Request {
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
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
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
    pub board: &'a mut EspBoard,
    /// The device's address, accepted in `Host` (DNS-rebinding protection).
    pub host: heapless::String<16>,
    /// Another name accepted in `Host`, if any: the `.local` name the mDNS responder answers
    /// for (feature `mdns`).
    pub alias: Option<heapless::String<40>>,
    /// A source of session ids.
    pub random: fn() -> u64,
    session: Session,
}

impl<'a> Endpoint<'a> {
    /// An endpoint with no session yet.
    pub fn new(
        engine: &'a mut Engine,
        board: &'a mut EspBoard,
        host: heapless::String<16>,
        random: fn() -> u64,
    ) -> Self {
        Endpoint {
            engine,
            board,
            host,
            alias: None,
            random,
            session: Session::default(),
        }
    }
}

/// Serves `POST /mcp` forever, one connection at a time.
pub async fn serve(stack: Stack<'static>, ep: &mut Endpoint<'_>, now_ms: fn() -> u64) -> ! {
    let mut rx = [0u8; Sizes::HTTP_TCP_BUFFER];
    let mut tx = [0u8; Sizes::HTTP_TCP_BUFFER];
    let mut head = [0u8; Sizes::HTTP_HEAD];
    let mut body = [0u8; Sizes::LINE];
    let mut out = [0u8; Sizes::OUT];
    loop {
        let mut socket = TcpSocket::new(stack, &mut rx, &mut tx);
        // Unacknowledged data older than this aborts the connection (a client that vanished).
        socket.set_timeout(Some(WRITE_TIMEOUT));
        if socket.accept(PORT).await.is_err() {
            continue;
        }
        while connection_step(&mut socket, ep, &mut head, &mut body, &mut out, now_ms).await {}
        socket.close();
        let _ = with_timeout(WRITE_TIMEOUT, socket.flush()).await;
        socket.abort();
    }
}

/// How reading a request head ended.
enum HeadRead {
    /// The head is `head[..end]`; `head[end..filled]` is the start of the body.
    Done { end: usize, filled: usize },
    /// The client closed the connection, or it failed.
    Gone,
    /// The head does not fit [`Sizes::HTTP_HEAD`] bytes.
    TooLarge,
}

/// Reads until the blank line that ends a request head. `filled` says how much arrived, also
/// when the caller's deadline cuts this short.
async fn read_head(socket: &mut TcpSocket<'_>, head: &mut [u8], filled: &mut usize) -> HeadRead {
    loop {
        let Some(free) = head.get_mut(*filled..).filter(|f| !f.is_empty()) else {
            return HeadRead::TooLarge;
        };
        match socket.read(free).await {
            Ok(0) | Err(_) => return HeadRead::Gone,
            Ok(n) => *filled += n,
        }
        let got = head.get(..*filled).unwrap_or_default();
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            return HeadRead::Done {
                end: end + 4,
                filled: *filled,
            };
        }
    }
}

/// Reads `buf.len()` bytes; `false` when the connection ended first.
async fn read_exact(socket: &mut TcpSocket<'_>, buf: &mut [u8]) -> bool {
    let mut got = 0;
    while got < buf.len() {
        match socket.read(buf.get_mut(got..).unwrap_or_default()).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => got += n,
        }
    }
    true
}

/// Reads one request and answers it; `false` when the connection is done.
async fn connection_step(
    socket: &mut TcpSocket<'_>,
    ep: &mut Endpoint<'_>,
    head: &mut [u8; Sizes::HTTP_HEAD],
    body: &mut [u8; Sizes::LINE],
    out: &mut [u8; Sizes::OUT],
    now_ms: fn() -> u64,
) -> bool {
    // The head, within one deadline that also bounds the keep-alive wait before it.
    let mut filled = 0;
    let read = with_timeout(HEADER_TIMEOUT, read_head(socket, head, &mut filled)).await;
    let (head_end, filled) = match read {
        Ok(HeadRead::Done { end, filled }) => (end, filled),
        Ok(HeadRead::Gone) => return false,
        Ok(HeadRead::TooLarge) => return refuse(socket, 431).await,
        // An idle kept-alive connection just closes; a head cut short gets a 408.
        Err(_) if filled == 0 => return false,
        Err(_) => return refuse(socket, 408).await,
    };
    let (head_bytes, rest) = head.split_at(head_end);
    let early = rest
        .get(..filled.saturating_sub(head_end))
        .unwrap_or_default();
    let req = match parse_head(head_bytes) {
        Ok(req) => req,
        Err(BadHead::Malformed) => return refuse(socket, 400).await,
        Err(BadHead::TooManyHeaders) => return refuse(socket, 431).await,
    };
    // HTTP/1.1 requires exactly one Host; the headers the checks below rely on must not be
    // repeated (a second Origin or Content-Length could mean something else to a proxy).
    let single = ["Host", "Origin", "Content-Length", "Content-Type"];
    if req.count("Host") != 1 || single.iter().any(|h| req.count(h) > 1) {
        return refuse(socket, 400).await;
    }
    let close = req
        .header("Connection")
        .is_some_and(|v| v.trim_ascii().eq_ignore_ascii_case(b"close"));

    let metadata = TOKEN.is_some() && auth::is_metadata_path(req.path, PATH);
    if req.path != PATH.as_bytes() && !metadata {
        return respond(socket, 404, &[], b"", close).await && !close;
    }
    let both = [ep.host.as_str(), ep.alias.as_deref().unwrap_or_default()];
    let allowed = if ep.alias.is_some() {
        &both[..]
    } else {
        &both[..1]
    };
    // A browser's Origin must be this device's own origin (http:// and its Host, the port
    // included): a page served anywhere else, another server on the same host too, is refused.
    if let Err(refusal) = http::check_host_and_origin(&req, allowed, &[]) {
        return refuse_as(socket, &refusal, out).await;
    }
    // The one Host was checked above: the resource is the endpoint as the client named it.
    let resource = req
        .header("Host")
        .and_then(|h| auth::Resource::new(h, PATH));
    if metadata {
        // The protected-resource metadata (RFC 9728), open to all: how to authorize.
        if req.method != b"GET" {
            return respond(socket, 405, &[("Allow", "GET")], b"", close).await && !close;
        }
        let n = resource.map_or(0, |r| r.write_metadata(&[], out));
        let status = if n == 0 { 400 } else { 200 };
        let answer = out.get(..n).unwrap_or_default();
        return respond(socket, status, &[], answer, close).await && !close;
    }
    if let Some(Err(why)) = TOKEN.map(|t| t.check(&req)) {
        let mut challenge = [0u8; 160];
        let n = why.write_challenge(resource.as_ref(), &mut challenge);
        let value = challenge
            .get(..n)
            .and_then(|c| core::str::from_utf8(c).ok())
            .filter(|c| !c.is_empty())
            .unwrap_or("Bearer");
        let n = why.refusal().write_body(b"", out);
        // The body was not read: close rather than resynchronize.
        let _ = respond(
            socket,
            401,
            &[(auth::WWW_AUTHENTICATE, value)],
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
            return respond(socket, status, &[], b"", close).await && !close;
        }
        _ => {
            return respond(socket, 405, &[("Allow", "POST, DELETE")], b"", close).await && !close;
        }
    }
    if req.header("Transfer-Encoding").is_some() {
        // Chunked uploads are not supported; with a Content-Length as well, the two could
        // disagree about where the body ends.
        return refuse(socket, 501).await;
    }
    let Some(len) = content_length(&req) else {
        return refuse(socket, 411).await;
    };
    if let Err(refusal) = http::check_post(&req, len, Sizes::LINE) {
        // The body was not read: close rather than resynchronize.
        return refuse_as(socket, &refusal, out).await;
    }
    // The body: what came with the head, then the rest from the socket, within one deadline.
    let Some(body) = body.get_mut(..len) else {
        return false;
    };
    let first = early.len().min(len);
    if let (Some(dst), Some(src)) = (body.get_mut(..first), early.get(..first)) {
        dst.copy_from_slice(src);
    }
    let rest = body.get_mut(first..).unwrap_or_default();
    match with_timeout(BODY_TIMEOUT, read_exact(socket, rest)).await {
        Ok(true) => {}
        Ok(false) => return false,
        Err(_) => return refuse(socket, 408).await,
    }
    let body: &[u8] = body;

    // Bring the engine's tasks up to date (none on this board; kept for a board that adds a
    // long-running tool). Without a standalone SSE stream, what `poll` emits has no receiver
    // here; task results are still there for `tasks/get` and `tasks/result`.
    let now = now_ms();
    while ep.engine.poll(now, ep.board, out) > 0 {}

    let (stateless, peer) = match http::route(&req, body) {
        Route::Stateless => {
            if let Err(refusal) = http::check_stateless_headers(&req, body) {
                let n = refusal.write_body(body, out);
                let answer = out.get(..n).unwrap_or_default();
                return respond(socket, refusal.status, &[], answer, close).await && !close;
            }
            // Stateless requests scope retransmissions by their idempotency key alone.
            (true, Peer::ONLY)
        }
        Route::Session(named) => {
            // A request naming a session that is not (or no longer) ours: 404, the client
            // starts again with `initialize`.
            let ours = ep.session.id.as_ref().map(|s| s.as_bytes());
            match named {
                Some(named) if Some(named) != ours => {
                    return respond(socket, 404, &[], b"", close).await && !close;
                }
                // The session names the peer: a retransmission is recognised within it.
                Some(named) => (false, Peer::named(named)),
                None => (false, Peer::ONLY),
            }
        }
    };
    let input = Input::new(body, Principal::Model)
        .stateless(stateless)
        .peer(peer);
    let Ok(handled) = ep
        .engine
        .handle_async(input, ep.board, out, &mut |_: &[u8]| {}, EspBoard::run)
        .await
    else {
        return false;
    };
    let mut session_header = heapless::String::<16>::new();
    if let Some(Event::Initialized { .. }) = handled.event
        && !handled.modern
    {
        let _ = write!(session_header, "{:016x}", (ep.random)());
        ep.session.id = Some(session_header.clone());
    }
    let status = http::status_code(handled.status, handled.len > 0);
    let extra: &[(&str, &str)] = if session_header.is_empty() {
        &[]
    } else {
        &[(http::SESSION_ID, session_header.as_str())]
    };
    let answer = out.get(..handled.len).unwrap_or_default();
    // The device reboots a second after answering `self.reboot`: `main`'s watcher does it.
    let written = respond(socket, status, extra, answer, close).await;
    if let Some(receipt) = handled.receipt {
        let delivery = if written {
            Delivery::Written
        } else {
            Delivery::Lost
        };
        ep.engine.delivered(receipt, delivery);
    }
    written && !close
}

/// Answers `status` with a JSON-RPC error body (a refusal before the engine) and closes: returns
/// `false`, the connection is done.
async fn refuse(socket: &mut TcpSocket<'_>, status: u16) -> bool {
    let mut body = heapless::String::<128>::new();
    let _ = write!(
        body,
        r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32600,"message":"{}"}}}}"#,
        reason(status)
    );
    let _ = respond(socket, status, &[], body.as_bytes(), true).await;
    false
}

/// Answers mcp-core's `refusal` (its status and JSON-RPC error body, written into `out`) and
/// closes the connection; always `false` (the connection is done).
async fn refuse_as(socket: &mut TcpSocket<'_>, refusal: &http::Refusal, out: &mut [u8]) -> bool {
    let n = refusal.write_body(b"", out);
    let _ = respond(
        socket,
        refusal.status,
        &[],
        out.get(..n).unwrap_or_default(),
        true,
    )
    .await;
    false
}

/// Writes a response with a JSON body (or none) within [`WRITE_TIMEOUT`]; `true` when it was
/// written out.
async fn respond(
    socket: &mut TcpSocket<'_>,
    status: u16,
    extra: &[(&str, &str)],
    body: &[u8],
    close: bool,
) -> bool {
    // Room for the longest head: a 401's challenge names the metadata URL.
    let mut head = heapless::String::<384>::new();
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
    let write = async {
        socket.write_all(head.as_bytes()).await?;
        socket.write_all(body).await?;
        socket.flush().await
    };
    matches!(with_timeout(WRITE_TIMEOUT, write).await, Ok(Ok(())))
}
