//! Streamable HTTP rules, sans-IO: what an HTTP server (a firmware's TCP socket, a host's web
//! framework) must check and answer around [`Server::handle_with`](crate::Server::handle_with).
//!
//! One endpoint serves both eras:
//!
//! - **2026-07-28 (stateless)**: every POST carries `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`
//!   (for calls, reads and tasks) and the per-request `_meta`. [`route`] says so, and
//!   [`check_stateless_headers`] compares the headers with the body (400 + -32020 on mismatch).
//! - **Legacy (2025-11-25 and older)**: `initialize` opens a session (`Mcp-Session-Id`); later
//!   requests name it.
//!
//! Before either: [`check_host_and_origin`] (DNS-rebinding protection and the exact-origin rule:
//! 403) and [`check_post`] (`Content-Type`, `Accept`, body size: 415/406/413), or [`check_get`]
//! for a GET stream. Every header these read is parsed by its grammar (authorities, origins,
//! media types), never searched for a substring.
//!
//! **Sessions.** Anyone who reaches the endpoint may send `initialize`, so a server that keeps a
//! bounded table of legacy sessions must make room for a new one only by ending a session nobody
//! uses: never one whose engine has a running task
//! ([`Server::has_running_tasks`](crate::Server::has_running_tasks)) or holds a call for a
//! person's answer ([`Server::holds_call`](crate::Server::holds_call): the question would vanish
//! from the device, and the press meant for it would answer nothing), nor one with an open
//! stream or a request in flight. When every session is in use, the new `initialize` gets 503
//! with `Retry-After` and a JSON-RPC error echoing its id (`mcp_host` in `examples/mcp-host` does
//! this).
//!
//! After the engine: map
//! [`Handled`](crate::Handled) to a status with [`status_code`], and use [`write_sse_event`] when
//! notifications precede the response.
//!
//! ```
//! use mcp_core::transport::http::{self, Route};
//!
//! let headers: &[(&str, &[u8])] = &[
//!     ("Host", b"127.0.0.1:8080"),
//!     ("Content-Type", b"application/json"),
//!     ("Accept", b"application/json, text/event-stream"),
//! ];
//! let body = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
//! assert!(http::check_host_and_origin(headers, &[], &[]).is_ok());
//! assert!(http::check_post(headers, body.len(), 16 * 1024).is_ok());
//! assert_eq!(http::route(headers, body), Route::Session(None));
//! ```

use core::fmt::Write as _;

use crate::server::Status;
use crate::wire::frame::{Frame, Member};
use crate::wire::json::{Found, JsonStr, MAX_DEPTH_LIMIT};
use crate::wire::request::{Id, Message};
use crate::wire::response::{ErrorCode, write_error};
use crate::wire::writer::Writer;

/// Request headers, looked up case-insensitively by name.
pub trait Headers {
    /// The first value of header `name` (any case), if present.
    fn header(&self, name: &str) -> Option<&[u8]>;
}

impl Headers for [(&str, &[u8])] {
    fn header(&self, name: &str) -> Option<&[u8]> {
        self.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }
}

/// Why a request is refused before the engine sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Refusal {
    /// The HTTP status code.
    pub status: u16,
    /// The JSON-RPC error code of the body.
    pub code: ErrorCode,
    /// The message.
    pub message: &'static str,
}

impl Refusal {
    pub(crate) const fn new(status: u16, code: ErrorCode, message: &'static str) -> Self {
        Refusal {
            status,
            code,
            message,
        }
    }

    /// Writes the JSON-RPC error body, echoing the request id when the body had a valid one.
    /// Returns its length (0 if `out` is too small).
    pub fn write_body(&self, body: &[u8], out: &mut [u8]) -> usize {
        let id = match Message::parse(body, MAX_DEPTH_LIMIT) {
            Ok(Message::Request(r)) => Some(r.id),
            _ => None,
        };
        let mut w = Writer::new(out);
        write_error(
            &mut w,
            id,
            self.code,
            |w| w.text(self.message),
            crate::wire::response::NO_DATA,
        );
        if w.fits() { w.needed() } else { 0 }
    }
}

/// The header a 2026-07-28 request names its revision in.
pub const PROTOCOL_VERSION: &str = "MCP-Protocol-Version";
/// The legacy session header.
pub const SESSION_ID: &str = "Mcp-Session-Id";
/// The 2026-07-28 header mirroring `method`.
pub const METHOD: &str = "Mcp-Method";
/// The 2026-07-28 header mirroring the tool name, resource URI or task id.
pub const NAME: &str = "Mcp-Name";

pub(crate) fn trim(v: &[u8]) -> &[u8] {
    let start = v
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t'))
        .unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|c| !matches!(c, b' ' | b'\t'))
        .map_or(start, |e| e + 1);
    v.get(start..end).unwrap_or_default()
}

/// The host of a `Host` value or an origin's authority, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HostName<'a> {
    /// A registered name or an IPv4 address, without its one optional trailing dot; compared
    /// case-insensitively.
    Name(&'a [u8]),
    /// An IPv6 literal (`[::1]`), compared as an address.
    V6(core::net::Ipv6Addr),
}

impl HostName<'_> {
    fn is_loopback(&self) -> bool {
        match self {
            HostName::Name(n) => n.eq_ignore_ascii_case(b"localhost") || *n == b"127.0.0.1",
            HostName::V6(a) => *a == core::net::Ipv6Addr::LOCALHOST,
        }
    }

    /// `true` when `other` is the same host (names in any case, IPv6 as addresses).
    fn same(&self, other: &HostName<'_>) -> bool {
        match (self, other) {
            (HostName::Name(a), HostName::Name(b)) => a.eq_ignore_ascii_case(b),
            (HostName::V6(a), HostName::V6(b)) => a == b,
            _ => false,
        }
    }

    /// `true` when `allowed` (a name, an IPv4 address, or an IPv6 address with or without
    /// brackets; a trailing dot is ignored) names this host.
    fn is(&self, allowed: &str) -> bool {
        let a = allowed.trim();
        match self {
            HostName::Name(n) => {
                let a = a.strip_suffix('.').unwrap_or(a);
                !a.is_empty() && a.as_bytes().eq_ignore_ascii_case(n)
            }
            HostName::V6(addr) => {
                let a = a
                    .strip_prefix('[')
                    .and_then(|a| a.strip_suffix(']'))
                    .unwrap_or(a);
                a.parse::<core::net::Ipv6Addr>().is_ok_and(|a| a == *addr)
            }
        }
    }
}

/// Parses an authority as `Host` and serialized origins carry it: `host[:port]`, where host is
/// a name or IPv4 address (letters, digits, `-`, `_`, `.`; no empty label; one trailing dot
/// allowed) or a bracketed IPv6 literal (no zone), and port is 1 to 5 digits up to 65535.
/// Anything else — userinfo (`user@`), a path, a query, a fragment, percent-escapes, spaces, an
/// empty port — is no authority of this device: `None`. The port is `None` when not given.
fn parse_authority(v: &[u8]) -> Option<(HostName<'_>, Option<u16>)> {
    let (host, port) = if let Some(rest) = v.strip_prefix(b"[") {
        let end = rest.iter().position(|&c| c == b']')?;
        let literal = core::str::from_utf8(rest.get(..end)?).ok()?;
        let addr = literal.parse::<core::net::Ipv6Addr>().ok()?;
        let after = rest.get(end + 1..)?;
        let port = match after {
            [] => None,
            [b':', port @ ..] => Some(port),
            _ => return None,
        };
        (HostName::V6(addr), port)
    } else {
        let (name, port) = match v.iter().position(|&c| c == b':') {
            Some(i) => (v.get(..i)?, Some(v.get(i + 1..)?)),
            None => (v, None),
        };
        let name = name.strip_suffix(b".").unwrap_or(name);
        let label_ok = |l: &[u8]| {
            !l.is_empty()
                && l.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_'))
        };
        if !name.split(|&c| c == b'.').all(label_ok) {
            return None;
        }
        (HostName::Name(name), port)
    };
    let port = match port {
        None => None,
        Some(port) => {
            let digits = port.len();
            if !(1..=5).contains(&digits) || !port.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let value = port.iter().fold(0u32, |n, &d| n * 10 + u32::from(d - b'0'));
            Some(u16::try_from(value).ok()?)
        }
    };
    Some((host, port))
}

/// `true` when `v` is an authority as [`parse_authority`] reads it (`host[:port]`, nothing else).
pub(crate) fn is_authority(v: &[u8]) -> bool {
    parse_authority(v).is_some()
}

/// A serialized origin (RFC 6454), parsed: its scheme, host and port (the scheme's default
/// when not given).
#[derive(Debug, Clone, Copy)]
struct Origin<'a> {
    https: bool,
    host: HostName<'a>,
    port: u16,
}

impl Origin<'_> {
    /// `true` when both name the same scheme, host and port.
    fn is(&self, other: &Origin<'_>) -> bool {
        self.https == other.https && self.port == other.port && self.host.same(&other.host)
    }
}

/// Parses an `Origin` value as RFC 6454 serializes it: `http://` or `https://` (scheme in any
/// case), then an authority ([`parse_authority`]) and nothing after it. `null`, other schemes,
/// paths (even a lone `/`) and userinfo are `None`.
fn parse_origin(v: &[u8]) -> Option<Origin<'_>> {
    let sep = v.windows(3).position(|w| w == b"://")?;
    let scheme = v.get(..sep)?;
    let https = if scheme.eq_ignore_ascii_case(b"https") {
        true
    } else if scheme.eq_ignore_ascii_case(b"http") {
        false
    } else {
        return None;
    };
    let (host, port) = parse_authority(v.get(sep + 3..)?)?;
    let port = port.unwrap_or(if https { 443 } else { 80 });
    Some(Origin { https, host, port })
}

/// `true` when `origin` is a serialized origin [`check_host_and_origin`] can allow:
/// `http(s)://host[:port]`, nothing before or after (no path, not even `/`; no userinfo; not
/// `null`). For checking an allowed-origins setting when it is read.
pub fn is_origin(origin: &str) -> bool {
    parse_origin(trim(origin.as_bytes())).is_some()
}

/// DNS-rebinding and cross-origin protection.
///
/// `Host` must be a loopback name (`localhost`, `127.0.0.1`, `[::1]`) or one of `allowed_hosts`
/// (host names or addresses without port, e.g. the device's LAN address or mDNS name).
///
/// An `Origin`, when present (a browser sends it), must be exactly this server's own origin —
/// `http://` and the `Host` of the request: the same host *and port* (80 when not given), so a
/// page from another server on the same machine (`http://localhost:3000` against a device on
/// `localhost:8080`) is refused — or one of `allowed_origins`, compared as origins (scheme, host
/// and port; the scheme's default port when not given), for pages served elsewhere that may call
/// this server (an inspector's web UI, say). The rule assumes the server speaks plain HTTP; behind
/// a TLS front end its pages' origin is `https://…`: name it in `allowed_origins`. A request
/// without `Origin` (curl, an SDK, a script) is not a browser's and passes; `Origin: null` is
/// refused.
///
/// Both headers are parsed, not searched: `http://localhost:80@evil.com` (userinfo) names
/// `evil.com` and is refused, as is anything that is not a plain authority. Names compare
/// case-insensitively, a trailing dot is ignored (`localhost.` is `localhost`), IPv6 literals
/// compare as addresses (`[0:0:0:0:0:0:0:1]` is `[::1]`). An `allowed_origins` entry that is no
/// origin ([`is_origin`]) allows nothing. Refusal: 403.
pub fn check_host_and_origin(
    headers: &(impl Headers + ?Sized),
    allowed_hosts: &[&str],
    allowed_origins: &[&str],
) -> Result<(), Refusal> {
    const HOST: Refusal = Refusal::new(
        403,
        ErrorCode::InvalidRequest,
        "Forbidden: Host is not this device",
    );
    const ORIGIN: Refusal = Refusal::new(
        403,
        ErrorCode::InvalidRequest,
        "Forbidden: Origin is not this device",
    );
    let ok = |h: &HostName<'_>| h.is_loopback() || allowed_hosts.iter().any(|a| h.is(a));
    let host = match headers.header("Host") {
        None => None,
        Some(v) => match parse_authority(trim(v)) {
            Some(h) if ok(&h.0) => Some(h),
            _ => return Err(HOST),
        },
    };
    let Some(origin) = headers.header("Origin") else {
        return Ok(());
    };
    let Some(origin) = parse_origin(trim(origin)) else {
        return Err(ORIGIN);
    };
    // This server's own origin: plain HTTP, at the authority the client asked for.
    let own = host.map(|(host, port)| Origin {
        https: false,
        host,
        port: port.unwrap_or(80),
    });
    let allowed = |a: &&str| parse_origin(trim(a.as_bytes())).is_some_and(|a| origin.is(&a));
    if own.is_some_and(|own| origin.is(&own)) || allowed_origins.iter().any(allowed) {
        Ok(())
    } else {
        Err(ORIGIN)
    }
}

/// Checks a POST before its body is read: `Content-Type: application/json` (else 415), an
/// `Accept` that allows JSON and SSE (else 406), and a body of at most `max_body` bytes (else
/// 413).
///
/// Both headers are parsed as RFC 9110 media types, not searched: `Content-Type` must be exactly
/// one media type `application/json` (any case), its parameters well-formed, and a `charset`
/// parameter, if any, `utf-8` (JSON is UTF-8); `text/plain; x=application/json` is refused.
/// `Accept` is read as [`accepts`] reads it; a missing `Accept` accepts everything.
pub fn check_post(
    headers: &(impl Headers + ?Sized),
    body_len: usize,
    max_body: usize,
) -> Result<(), Refusal> {
    if body_len > max_body {
        return Err(Refusal::new(
            413,
            ErrorCode::InvalidRequest,
            "Payload Too Large: the message exceeds the device's buffer",
        ));
    }
    let content_type = headers.header("Content-Type").unwrap_or_default();
    if !is_json(content_type) {
        return Err(Refusal::new(
            415,
            ErrorCode::InvalidRequest,
            "Unsupported Media Type: send application/json",
        ));
    }
    let accept = headers.header("Accept").unwrap_or(b"*/*");
    if !(accepts(accept, "application/json") && accepts(accept, "text/event-stream")) {
        return Err(Refusal::new(
            406,
            ErrorCode::InvalidRequest,
            "Not Acceptable: accept both application/json and text/event-stream",
        ));
    }
    Ok(())
}

/// Checks a GET (a session's SSE stream): its `Accept` must allow `text/event-stream`, as
/// [`accepts`] reads it (else 406). A missing `Accept` is refused: the specification requires
/// the client to name the stream.
pub fn check_get(headers: &(impl Headers + ?Sized)) -> Result<(), Refusal> {
    match headers.header("Accept") {
        Some(a) if accepts(a, "text/event-stream") => Ok(()),
        _ => Err(Refusal::new(
            406,
            ErrorCode::InvalidRequest,
            "Not Acceptable: a GET stream needs Accept: text/event-stream",
        )),
    }
}

/// `true` when the `Accept` value `accept` allows `media` (`type/subtype`, lower case).
///
/// The value is parsed as an RFC 9110 list of media ranges with parameters: the most specific
/// range that matches (`type/subtype`, then `type/*`, then `*/*`; types compare
/// case-insensitively) decides, and a `q` of 0 excludes. A malformed value (an element that is
/// no media range, a bad `q`, an unterminated quoted string) allows nothing.
pub fn accepts(accept: &[u8], media: &str) -> bool {
    let Some((want_type, want_sub)) = media.split_once('/') else {
        return false;
    };
    let (want_type, want_sub) = (want_type.as_bytes(), want_sub.as_bytes());
    // (specificity, acceptable) of the best match so far.
    let mut best: Option<(u8, bool)> = None;
    let mut rest = accept;
    loop {
        rest = skip_ows(rest);
        match rest.split_first() {
            None => break,
            // Empty list elements are allowed (`a, , b`).
            Some((b',', tail)) => {
                rest = tail;
                continue;
            }
            Some(_) => {}
        }
        let Some((range, tail)) = MediaType::parse(rest) else {
            return false;
        };
        rest = skip_ows(tail);
        match rest.split_first() {
            None => {}
            Some((b',', tail)) => rest = tail,
            Some(_) => return false,
        }
        let specificity = match (range.kind, range.sub) {
            (b"*", b"*") => 1,
            (t, b"*") if t.eq_ignore_ascii_case(want_type) => 2,
            (t, s) if t.eq_ignore_ascii_case(want_type) && s.eq_ignore_ascii_case(want_sub) => 3,
            _ => continue,
        };
        if best.is_none_or(|(s, _)| specificity > s) {
            best = Some((specificity, !range.q_zero));
        }
    }
    best.is_some_and(|(_, ok)| ok)
}

/// `true` when a `Content-Type` value is exactly one media type `application/json` with
/// well-formed parameters and no charset other than UTF-8.
fn is_json(content_type: &[u8]) -> bool {
    let Some((m, rest)) = MediaType::parse(skip_ows(content_type)) else {
        return false;
    };
    skip_ows(rest).is_empty()
        && m.kind.eq_ignore_ascii_case(b"application")
        && m.sub.eq_ignore_ascii_case(b"json")
        && m.charset_utf8
}

/// One media type or media range, as parsed from a header.
#[derive(Debug, Clone, Copy)]
struct MediaType<'a> {
    kind: &'a [u8],
    sub: &'a [u8],
    /// A `q` parameter of 0 (`0`, `0.`, `0.0`…): "not acceptable".
    q_zero: bool,
    /// No `charset` parameter, or `utf-8` (any case, quoted or not).
    charset_utf8: bool,
}

impl<'a> MediaType<'a> {
    /// Parses `type/subtype *(OWS ";" OWS name=value)` at the start of `v`; returns it and the
    /// rest (from the first byte that cannot continue it). `*/*` and `type/*` are media ranges;
    /// `*/subtype` is malformed.
    fn parse(v: &'a [u8]) -> Option<(Self, &'a [u8])> {
        let (kind, rest) = token(v)?;
        let rest = rest.strip_prefix(b"/")?;
        let (sub, mut rest) = token(rest)?;
        if kind == b"*" && sub != b"*" {
            return None;
        }
        let mut m = MediaType {
            kind,
            sub,
            q_zero: false,
            charset_utf8: true,
        };
        loop {
            let after = skip_ows(rest);
            let Some(params) = after.strip_prefix(b";") else {
                return Some((m, rest));
            };
            let params = skip_ows(params);
            // `type/sub;` and `;;` are allowed by the grammar (the parameter is optional).
            if matches!(params.first(), None | Some(b',' | b';')) {
                rest = params;
                continue;
            }
            let (name, after_name) = token(params)?;
            let after_eq = after_name.strip_prefix(b"=")?;
            let (value, quoted, after_value) = match after_eq.strip_prefix(b"\"") {
                Some(q) => {
                    let (v, tail) = quoted_string(q)?;
                    (v, true, tail)
                }
                None => {
                    let (v, tail) = token(after_eq)?;
                    (v, false, tail)
                }
            };
            if name.eq_ignore_ascii_case(b"q") {
                m.q_zero = parse_qvalue(value).filter(|_| !quoted)? == 0;
            } else if name.eq_ignore_ascii_case(b"charset") {
                m.charset_utf8 =
                    value.eq_ignore_ascii_case(b"utf-8") || value.eq_ignore_ascii_case(b"utf8");
            }
            rest = after_value;
        }
    }
}

/// A `tchar` of RFC 9110.
fn is_tchar(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
}

/// The longest non-empty token at the start of `v`, and the rest.
fn token(v: &[u8]) -> Option<(&[u8], &[u8])> {
    let n = v.iter().position(|&c| !is_tchar(c)).unwrap_or(v.len());
    if n == 0 {
        return None;
    }
    Some((v.get(..n)?, v.get(n..)?))
}

/// The content of a quoted string whose opening quote was consumed (escapes left in place), and
/// the rest after the closing quote.
fn quoted_string(v: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut i = 0;
    loop {
        match *v.get(i)? {
            b'"' => return Some((v.get(..i)?, v.get(i + 1..)?)),
            b'\\' => {
                let next = *v.get(i + 1)?;
                if next != b'\t' && !(0x20..0x7f).contains(&next) && next < 0x80 {
                    return None;
                }
                i += 2;
            }
            c if c == b'\t' || c >= 0x20 && c != 0x7f => i += 1,
            _ => return None,
        }
    }
}

/// A `qvalue` (`0`, `0.5`, `1.000`) in thousandths; `None` when malformed.
fn parse_qvalue(v: &[u8]) -> Option<u16> {
    let (int, frac) = match v.iter().position(|&c| c == b'.') {
        Some(i) => (v.get(..i)?, v.get(i + 1..)?),
        None => (v, &b""[..]),
    };
    if frac.len() > 3 || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let thousandths = frac
        .iter()
        .chain(core::iter::repeat(&b'0'))
        .take(3)
        .fold(0u16, |n, &d| n * 10 + u16::from(d - b'0'));
    match int {
        b"0" => Some(thousandths),
        b"1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// Skips optional whitespace (spaces and tabs).
fn skip_ows(v: &[u8]) -> &[u8] {
    let n = v
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t'))
        .unwrap_or(v.len());
    v.get(n..).unwrap_or_default()
}

/// Which rules a POST follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route<'h> {
    /// 2026-07-28: hand the body to the engine with `Input::stateless(true)`, after
    /// [`check_stateless_headers`].
    Stateless,
    /// Legacy: the session named by `Mcp-Session-Id` (or none: an `initialize`, or a client
    /// without sessions).
    Session(Option<&'h [u8]>),
}

/// `true` for the legacy revisions a session can negotiate.
fn is_legacy_version(v: &[u8]) -> bool {
    crate::server::Revision::ALL
        .iter()
        .any(|r| r.as_str().as_bytes() == v)
}

/// Sorts a POST: stateless when it names the 2026-07-28 rules (per-request `_meta`, or a version
/// header that is not a legacy one), in which case an `Mcp-Session-Id` is ignored as that
/// revision requires; legacy otherwise.
pub fn route<'h>(headers: &'h (impl Headers + ?Sized), body: &[u8]) -> Route<'h> {
    let version = headers.header(PROTOCOL_VERSION).map(trim);
    // `params._meta`'s protocol version, as the engine's checking pass records it.
    let meta_version = Frame::parse(body, MAX_DEPTH_LIMIT)
        .is_ok_and(|frame| frame.get(Member::ProtocolVersion) != Found::Absent);
    if meta_version || version.is_some_and(|v| !is_legacy_version(v)) {
        Route::Stateless
    } else {
        Route::Session(headers.header(SESSION_ID).map(trim))
    }
}

/// 2026-07-28 header validation (400 + -32020): `MCP-Protocol-Version` equals
/// `_meta.io.modelcontextprotocol/protocolVersion`, `Mcp-Method` equals `method`, and `Mcp-Name`
/// equals `params.name` (`tools/call`, `prompts/get`), `params.uri` (`resources/read`) or
/// `params.taskId` (`tasks/get`, `tasks/update`, `tasks/cancel`). Values are compared exactly
/// after trimming spaces; `=?base64?…?=` values are decoded first.
///
/// A body whose `_meta` lacks the required fields passes: the engine refuses it with -32602,
/// which the specification orders first.
pub fn check_stateless_headers(
    headers: &(impl Headers + ?Sized),
    body: &[u8],
) -> Result<(), Refusal> {
    let Ok(frame) = Frame::parse(body, MAX_DEPTH_LIMIT) else {
        // Not JSON: the engine answers (parse error).
        return Ok(());
    };
    let Message::Request(req) = frame.message() else {
        // Not a request: the engine answers (invalid request, notification).
        return Ok(());
    };
    // The `_meta` members as the engine reads them: each once, in one `_meta`.
    let (Found::Once(version), Found::Once(_)) = (
        frame.get(Member::ProtocolVersion),
        frame.get(Member::ClientCapabilities),
    ) else {
        return Ok(());
    };
    if frame.get(Member::Meta) == Found::Repeated {
        return Ok(());
    }
    let header = |name| headers.header(name).map(trim);
    agreeing(
        header(PROTOCOL_VERSION),
        |h| version.as_str().is_some_and(|v| equal(h, v)),
        "Header mismatch: MCP-Protocol-Version is missing",
        "Header mismatch: MCP-Protocol-Version differs from the body",
    )?;
    agreeing(
        header(METHOD),
        |h| equal(h, req.method),
        "Header mismatch: Mcp-Method is missing",
        "Header mismatch: Mcp-Method differs from the method",
    )?;
    // The member `Mcp-Name` mirrors: `name` as the checking pass recorded it, the others read
    // from `params` the same way (a repeated one is the engine's to refuse).
    let params = |key| req.params.map_or(Found::Absent, |p| p.member(key));
    let named = match () {
        () if req.method.eq_str("tools/call") || req.method.eq_str("prompts/get") => {
            Some(frame.get(Member::Name))
        }
        () if req.method.eq_str("resources/read") => Some(params("uri")),
        () if req.method.eq_str("tasks/get")
            || req.method.eq_str("tasks/update")
            || req.method.eq_str("tasks/cancel") =>
        {
            Some(params("taskId"))
        }
        () => None,
    };
    if let Some(found) = named {
        if found == Found::Repeated {
            return Ok(());
        }
        let value = found.once().and_then(|v| v.as_str());
        agreeing(
            header(NAME),
            |h| value.is_some_and(|v| equal(h, v)),
            "Header mismatch: Mcp-Name is missing",
            "Header mismatch: Mcp-Name differs from the body",
        )?;
    }
    Ok(())
}

/// One header of [`check_stateless_headers`]: present, and `agrees` with the body; else a 400
/// (-32020) that says `missing` or `differs`.
fn agreeing(
    header: Option<&[u8]>,
    agrees: impl FnOnce(&[u8]) -> bool,
    missing: &'static str,
    differs: &'static str,
) -> Result<(), Refusal> {
    let mismatch = |message| Err(Refusal::new(400, ErrorCode::HeaderMismatch, message));
    match header {
        None => mismatch(missing),
        Some(h) if agrees(h) => Ok(()),
        Some(_) => mismatch(differs),
    }
}

/// Compares a header value (possibly `=?base64?…?=`) with a body string, exactly.
fn equal(header: &[u8], body: JsonStr<'_>) -> bool {
    let mut buf = [0u8; 256];
    let decoded = match header
        .strip_prefix(b"=?base64?")
        .and_then(|h| h.strip_suffix(b"?="))
    {
        Some(b64) => match base64_decode(b64, &mut buf) {
            Some(n) => buf.get(..n),
            None => return false,
        },
        None => Some(header),
    };
    let Some(text) = decoded.and_then(|d| core::str::from_utf8(d).ok()) else {
        return false;
    };
    body.eq_str(text)
}

fn base64_decode(input: &[u8], out: &mut [u8]) -> Option<usize> {
    let value = |c: u8| -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        }))
    };
    let input = input
        .strip_suffix(b"==")
        .or_else(|| input.strip_suffix(b"="))
        .unwrap_or(input);
    let mut n = 0;
    for chunk in input.chunks(4) {
        if chunk.len() == 1 {
            return None;
        }
        let mut acc = 0u32;
        for &c in chunk {
            acc = (acc << 6) | value(c)?;
        }
        acc <<= 6 * (4 - chunk.len() as u32);
        let bytes = acc.to_be_bytes();
        for &b in bytes.get(1..chunk.len())? {
            *out.get_mut(n)? = b;
            n += 1;
        }
    }
    Some(n)
}

/// The HTTP status for an engine answer: 202 when there is no response (a notification or a peer
/// response), else what the specification mandates for it (400/404 on the 2026-07-28 path),
/// else 200.
pub fn status_code(status: Status, has_response: bool) -> u16 {
    match status {
        Status::BadRequest => 400,
        Status::NotFound => 404,
        _ if !has_response => 202,
        _ => 200,
    }
}

/// Writes one SSE event: optional `id:` and `retry:` lines and one `data:` line (a single JSON
/// message, or empty for a priming event), then the blank line. Returns the length, 0 if it does
/// not fit or `data` or `id` contains a line break (JSON from the engine never does; an id with
/// one would inject lines into the event).
pub fn write_sse_event(
    out: &mut [u8],
    id: Option<&str>,
    retry_ms: Option<u32>,
    data: &[u8],
) -> usize {
    let breaks = |b: &[u8]| b.iter().any(|&c| c == b'\n' || c == b'\r');
    if breaks(data) || id.is_some_and(|id| breaks(id.as_bytes())) {
        return 0;
    }
    let mut w = Writer::new(out);
    if let Some(id) = id {
        w.text("id: ");
        w.text(id);
        w.text("\n");
    }
    if let Some(ms) = retry_ms {
        let _ = writeln!(w, "retry: {ms}");
    }
    w.text("data: ");
    w.raw(data);
    w.text("\n\n");
    if w.fits() { w.needed() } else { 0 }
}

/// The id of a request body, for errors a transport writes itself: read as deep as the checker
/// can follow ([`MAX_DEPTH_LIMIT`]), so that a request nested deeper than an engine reads is
/// still answered with its id.
pub fn request_id(body: &[u8]) -> Option<Id<'_>> {
    match Message::parse(body, MAX_DEPTH_LIMIT) {
        Ok(Message::Request(r)) => Some(r.id),
        _ => None,
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn h<'a>(pairs: &'a [(&'a str, &'a str)]) -> Vec<(&'a str, &'a [u8])> {
        pairs.iter().map(|(k, v)| (*k, v.as_bytes())).collect()
    }

    #[test]
    fn host_and_origin() {
        let check = |host: &str, origin: &str, hosts: &[&str], origins: &[&str]| {
            let pairs = [("Host", host), ("Origin", origin)];
            check_host_and_origin(h(&pairs).as_slice(), hosts, origins)
        };
        // The page's own origin: the same host and port as the request's Host.
        for (host, origin) in [
            ("127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("localhost", "http://localhost"),
            ("localhost", "http://localhost:80"),
            ("localhost:80", "http://LOCALHOST."),
            ("LOCALHOST:1", "http://localhost:1"),
            ("[::1]:9", "http://[0:0:0:0:0:0:0:1]:9"),
        ] {
            assert!(check(host, origin, &[], &[]).is_ok(), "{host} {origin}");
        }
        // Any other origin is another page, even on the same machine.
        for (host, origin) in [
            ("localhost:8081", "http://localhost:3000"),
            ("127.0.0.1:8081", "http://localhost:8081"),
            ("127.0.0.1:8081", "http://[::1]:8081"),
            ("127.0.0.1:8081", "https://127.0.0.1:8081"),
            ("localhost", "https://localhost"),
            ("localhost", "http://localhost:8080"),
            ("localhost:8080", "http://localhost"),
        ] {
            let r = check(host, origin, &[], &[]).unwrap_err();
            assert_eq!(r.status, 403, "{host} {origin}");
            assert_eq!(r.message, "Forbidden: Origin is not this device");
        }
        // ... unless allowed by name: compared as origins, never as text.
        let inspector = ["http://localhost:6274"];
        assert!(check("localhost:8081", "http://localhost:6274", &[], &inspector).is_ok());
        assert!(check("localhost:8081", "HTTP://LocalHost:6274", &[], &inspector).is_ok());
        assert!(check("localhost:8081", "http://localhost:6275", &[], &inspector).is_err());
        assert!(check("localhost:8081", "https://localhost:6274", &[], &inspector).is_err());
        assert!(
            check(
                "localhost",
                "https://lamp.example",
                &[],
                &["https://lamp.example:443"]
            )
            .is_ok()
        );
        assert!(
            check(
                "localhost",
                "http://localhost:6274",
                &[],
                &["localhost:6274"]
            )
            .is_err()
        );
        assert!(
            check(
                "localhost",
                "http://localhost:6274",
                &[],
                &["http://localhost:6274/"]
            )
            .is_err()
        );
        // An allowed origin does not make another Host this device.
        assert!(check("evil.example", "http://localhost:6274", &[], &inspector).is_err());
        // No Host: nothing to compare the origin with.
        let no_host = h(&[("Origin", "http://localhost")]);
        assert!(check_host_and_origin(no_host.as_slice(), &[], &[]).is_err());
        // No Origin: not a browser; only the Host is checked.
        for host in ["127.0.0.1:8080", "localhost", "[::1]:9"] {
            let pairs = [("Host", host)];
            assert!(check_host_and_origin(h(&pairs).as_slice(), &[], &[]).is_ok());
        }
        let r = check("evil.example.com", "http://evil.example.com", &[], &[]).unwrap_err();
        assert_eq!(
            (r.status, r.message),
            (403, "Forbidden: Host is not this device")
        );
        assert_eq!(
            check("127.0.0.1:1", "http://evil.example.com:1", &[], &[])
                .unwrap_err()
                .status,
            403
        );
        assert!(check("127.0.0.1", "null", &[], &[]).is_err());
        assert!(check("lamp.local:80", "http://lamp.local", &["lamp.local"], &[]).is_ok());
        assert!(check("lamp.local:80", "http://lamp.local", &[], &[]).is_err());
        assert!(check("lamp.local:8080", "http://lamp.local", &["lamp.local"], &[]).is_err());
        assert!(is_origin("http://localhost:6274") && is_origin("https://[::1]"));
        for bad in ["localhost:6274", "http://localhost/", "null", "*", ""] {
            assert!(!is_origin(bad), "{bad:?}");
        }
    }

    /// `(Host, Origin, allowed)` cases: the host alone, and the origin against a Host that names
    /// the same authority (so that only its parsing decides).
    #[test]
    fn authorities_and_origins_are_parsed_not_searched() {
        let host_ok = |v: &str, allowed: &[&str]| {
            check_host_and_origin(h(&[("Host", v)]).as_slice(), allowed, &[]).is_ok()
        };
        let origin_ok = |v: &str, host: &str, allowed: &[&str]| {
            let pairs = [("Host", host), ("Origin", v)];
            check_host_and_origin(h(&pairs).as_slice(), allowed, &[]).is_ok()
        };
        for good in [
            "localhost",
            "LocalHost:8080",
            "localhost.",
            "localhost.:80",
            "127.0.0.1",
            "127.0.0.1:65535",
            "[::1]",
            "[::1]:9",
            "[0:0:0:0:0:0:0:1]:80",
            " localhost\t",
        ] {
            assert!(host_ok(good, &[]), "Host {good:?}");
        }
        for bad in [
            "localhost:80@evil.com",
            "evil.com@localhost",
            "user@localhost",
            "localhost/",
            "localhost:",
            "localhost:99999",
            "localhost:123456",
            "localhost:8o",
            "localhost..",
            ".localhost",
            "local host",
            "localhost%2e",
            "localhost.evil.com",
            "127.0.0.2",
            "127.1",
            "[::1",
            "[::1]x",
            "[::1]:",
            "[::2]",
            "[fe80::1%25eth0]",
            "[::ffff:127.0.0.1]",
            "",
        ] {
            assert!(!host_ok(bad, &[]), "Host {bad:?}");
        }
        for (good, host) in [
            ("http://localhost", "localhost"),
            ("HTTP://LOCALHOST", "localhost"),
            ("http://localhost.", "localhost"),
            ("http://127.0.0.1:8080", "127.0.0.1:8080"),
            ("http://[::1]", "[::1]"),
            (" http://[::1]:3000\t", "[::1]:3000"),
        ] {
            assert!(origin_ok(good, host, &[]), "Origin {good:?}");
        }
        for bad in [
            "http://localhost:80@evil.com",
            "http://localhost@evil.com",
            "http://evil.com#@localhost",
            "http://evil.com?@localhost",
            "http://localhost/",
            "http://localhost/path",
            "http://localhost:80/@evil.com",
            "http://[::1]@evil.com",
            "http://[::1]:80@evil.com",
            "ftp://localhost",
            "file://",
            "localhost",
            "//localhost",
            "http:/localhost",
            "null",
            "http://",
            "http://evil.com:80\\@localhost",
        ] {
            assert!(!origin_ok(bad, "localhost", &[]), "Origin {bad:?}");
        }
        // Names the device was given: any case, a trailing dot on either side, IPv6 in any form.
        assert!(host_ok("Lamp.Local.:80", &["lamp.local"]));
        assert!(origin_ok(
            "http://lamp.local",
            "Lamp.Local.",
            &["LAMP.LOCAL."]
        ));
        assert!(host_ok("[fe80::0:1]:80", &["fe80::1"]));
        assert!(origin_ok(
            "http://[fe80::1]",
            "[fe80::0:1]:80",
            &["[FE80::1]"]
        ));
        assert!(!host_ok("lamp.local.evil", &["lamp.local"]));
        assert!(!origin_ok(
            "http://lamp.local@evil.com",
            "lamp.local",
            &["lamp.local"]
        ));
        assert!(!host_ok("anything", &[""]));
        assert!(!host_ok("192.168.1.20", &["192.168.1.2"]));
        assert!(host_ok("192.168.1.20:8080", &["192.168.1.20"]));
    }

    #[test]
    fn media_types_are_parsed_not_searched() {
        let ct = |v: &str| is_json(v.as_bytes());
        for good in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            "application/json;charset=UTF-8",
            "application/json; charset=\"utf-8\"",
            "application/json ; charset=utf8 ; x=\"a;b,c\"",
            "application/json;",
            " application/json ",
        ] {
            assert!(ct(good), "Content-Type {good:?}");
        }
        for bad in [
            "text/plain; x=application/json",
            "text/plain;application/json",
            "application/jsonx",
            "application/json-seq",
            "application/vnd.api+json",
            "xapplication/json",
            "application/json, text/plain",
            "application/json text/plain",
            "application/json; charset=latin1",
            "application/json; charset",
            "application/json; x=\"unterminated",
            "application /json",
            "application/",
            "*/*",
            "",
        ] {
            assert!(!ct(bad), "Content-Type {bad:?}");
        }
        let both = |v: &str| {
            accepts(v.as_bytes(), "application/json") && accepts(v.as_bytes(), "text/event-stream")
        };
        for good in [
            "application/json, text/event-stream",
            "text/event-stream,application/json",
            "Application/JSON, Text/Event-Stream",
            "*/*",
            "application/*, text/*",
            "application/json;q=0.9, text/event-stream;q=1.0",
            "application/json, , text/event-stream",
            "text/html;q=0, */*",
            "application/json; x=\"a,b\", text/event-stream",
        ] {
            assert!(both(good), "Accept {good:?}");
        }
        for bad in [
            "text/html; x=application/json, text/event-stream",
            "text/html; x=\"application/json, text/event-stream\"",
            "application/json",
            "text/event-stream",
            "application/json, text/event-stream;q=0",
            "application/json;q=0.000, */*",
            "application/json, text/event-stream;q=2",
            "application/json, text/event-stream;q=0.5000",
            "application/json, text/event-stream;q=\"1\"",
            "application/json text/event-stream",
            "application/jsonx, text/event-streams",
            "*/json, text/event-stream",
            "",
        ] {
            assert!(!both(bad), "Accept {bad:?}");
        }
        assert!(accepts(b"text/event-stream;q=0.001", "text/event-stream"));
        assert!(!accepts(b"application/json", "nonsense"));
        let get = |v: Option<&str>| {
            let pairs: Vec<(&str, &str)> = v.map(|v| ("Accept", v)).into_iter().collect();
            check_get(h(&pairs).as_slice()).map_err(|r| r.status)
        };
        assert_eq!(get(Some("text/event-stream")), Ok(()));
        assert_eq!(get(Some("text/*")), Ok(()));
        assert_eq!(get(Some("text/html; x=text/event-stream")), Err(406));
        assert_eq!(get(None), Err(406));
        assert_eq!(parse_qvalue(b"0."), Some(0));
        assert_eq!(parse_qvalue(b"0.5"), Some(500));
        assert_eq!(parse_qvalue(b"1.000"), Some(1000));
        assert_eq!(parse_qvalue(b"1.001"), None);
        assert_eq!(parse_qvalue(b".5"), None);
    }

    #[test]
    fn post_preconditions() {
        let ok = h(&[
            ("content-type", "application/json; charset=utf-8"),
            ("accept", "text/event-stream, application/json"),
        ]);
        assert!(check_post(ok.as_slice(), 10, 100).is_ok());
        assert_eq!(check_post(ok.as_slice(), 101, 100).unwrap_err().status, 413);
        let text = h(&[("Content-Type", "text/plain"), ("Accept", "*/*")]);
        assert_eq!(check_post(text.as_slice(), 1, 100).unwrap_err().status, 415);
        let json_only = h(&[
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
        ]);
        assert_eq!(
            check_post(json_only.as_slice(), 1, 100).unwrap_err().status,
            406
        );
    }

    #[test]
    fn routing() {
        let modern = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let plain = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
        assert_eq!(route(h(&[]).as_slice(), modern), Route::Stateless);
        assert_eq!(
            route(
                h(&[("MCP-Protocol-Version", "2026-07-28")]).as_slice(),
                plain
            ),
            Route::Stateless
        );
        assert_eq!(
            route(
                h(&[("mcp-protocol-version", "2025-11-25")]).as_slice(),
                plain
            ),
            Route::Session(None)
        );
        assert_eq!(route(h(&[]).as_slice(), plain), Route::Session(None));
        let with_session = h(&[
            ("Mcp-Session-Id", " abc "),
            ("MCP-Protocol-Version", "2025-11-25"),
        ]);
        assert_eq!(
            route(with_session.as_slice(), plain),
            Route::Session(Some(&b"abc"[..]))
        );
        // 2026-07-28 ignores a session id.
        let stale = h(&[
            ("Mcp-Session-Id", "abc"),
            ("MCP-Protocol-Version", "2026-07-28"),
        ]);
        assert_eq!(route(stale.as_slice(), modern), Route::Stateless);
        assert_eq!(
            route(h(&[("Mcp-Session-Id", "abc")]).as_slice(), modern),
            Route::Stateless
        );
    }

    /// The transport reads `_meta` as the engine's checking pass records it: one reader, so the
    /// transport and the engine never see different values of a repeated member.
    #[test]
    fn routing_reads_the_body_as_the_engine_does() {
        let version = r#""io.modelcontextprotocol/protocolVersion":"2026-07-28""#;
        // `_meta` twice, the last without a version: the engine reads the last one and answers
        // by the legacy rules; so does the transport.
        let twice = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{{{version}}},"_meta":{{}}}}}}"#
        );
        assert_eq!(
            route(h(&[]).as_slice(), twice.as_bytes()),
            Route::Session(None)
        );
        // The other way round, the version is in the `_meta` the engine reads.
        let last = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{{}},"_meta":{{{version}}}}}}}"#
        );
        assert_eq!(route(h(&[]).as_slice(), last.as_bytes()), Route::Stateless);
        // A key spelled with an escape is the key.
        let escaped = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28"}}}"#;
        assert_eq!(route(h(&[]).as_slice(), escaped), Route::Stateless);
        // Not JSON, or no `_meta` under `params`: legacy.
        for body in [
            &b"{"[..],
            br#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"x"}}"#,
        ] {
            assert_eq!(route(h(&[]).as_slice(), body), Route::Session(None));
        }
    }

    /// A body the engine refuses itself (-32602: a repeated member) passes the header check
    /// whatever `Mcp-Name` says, as a body without the `_meta` fields does.
    #[test]
    fn repeated_members_are_the_engines_to_refuse() {
        let v = "2026-07-28";
        let check = |method, name, params: &str| {
            let pairs = [
                ("MCP-Protocol-Version", v),
                ("Mcp-Method", method),
                ("Mcp-Name", name),
            ];
            check_stateless_headers(h(&pairs).as_slice(), body(method, params).as_bytes())
        };
        for name in ["a", "b", "c"] {
            assert_eq!(
                check(
                    "tools/call",
                    name,
                    r#""name":"a","name":"b","arguments":{}"#
                ),
                Ok(()),
                "{name}"
            );
        }
        let read = |params, name| check("resources/read", name, params);
        assert_eq!(read(r#""uri":"a://x","uri":"a://y""#, "a://y"), Ok(()));
        assert_eq!(read(r#""uri":"a://y""#, "a://y"), Ok(()));
        assert_eq!(read(r#""uri":"a://x""#, "a://y").unwrap_err().status, 400);
    }

    fn body(method: &str, params: &str) -> String {
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"{method}","params":{{{params}{}{meta}}}}}"#,
            if params.is_empty() { "" } else { "," }
        )
    }

    #[test]
    fn stateless_header_validation() {
        let v = "2026-07-28";
        let call = body("tools/call", r#""name":"greet","arguments":{}"#);
        let list = body("tools/list", "");
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], Option<&'a str>);
        let cases: &[Case<'_>] = &[
            (
                &list,
                &[("MCP-Protocol-Version", v), ("Mcp-Method", "tools/list")],
                None,
            ),
            (
                &list,
                &[("mcp-protocol-version", v), ("MCP-METHOD", "tools/list")],
                None,
            ),
            (
                &list,
                &[("MCP-Protocol-Version", v), ("Mcp-Method", "prompts/list")],
                Some("Mcp-Method differs"),
            ),
            (
                &list,
                &[("MCP-Protocol-Version", v), ("Mcp-Method", "TOOLS/LIST")],
                Some("Mcp-Method differs"),
            ),
            (
                &list,
                &[("MCP-Protocol-Version", v)],
                Some("Mcp-Method is missing"),
            ),
            (
                &list,
                &[("Mcp-Method", "tools/list")],
                Some("MCP-Protocol-Version is missing"),
            ),
            (
                &list,
                &[
                    ("MCP-Protocol-Version", "2025-11-25"),
                    ("Mcp-Method", "tools/list"),
                ],
                Some("MCP-Protocol-Version differs"),
            ),
            (
                &call,
                &[
                    ("MCP-Protocol-Version", v),
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", "  greet  "),
                ],
                None,
            ),
            (
                &call,
                &[
                    ("MCP-Protocol-Version", v),
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", "=?base64?Z3JlZXQ=?="),
                ],
                None,
            ),
            (
                &call,
                &[
                    ("MCP-Protocol-Version", v),
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", "=?base64?!!!?="),
                ],
                Some("Mcp-Name differs"),
            ),
            (
                &call,
                &[
                    ("MCP-Protocol-Version", v),
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", "wrong"),
                ],
                Some("Mcp-Name differs"),
            ),
            (
                &call,
                &[("MCP-Protocol-Version", v), ("Mcp-Method", "tools/call")],
                Some("Mcp-Name is missing"),
            ),
        ];
        for (b, hs, err) in cases {
            let hs = h(hs);
            let got = check_stateless_headers(hs.as_slice(), b.as_bytes());
            match err {
                None => assert!(got.is_ok(), "{hs:?}: {got:?}"),
                Some(e) => {
                    let r = got.unwrap_err();
                    assert_eq!((r.status, r.code), (400, ErrorCode::HeaderMismatch));
                    assert!(r.message.contains(e), "{hs:?}: {}", r.message);
                    let mut out = [0u8; 256];
                    let n = r.write_body(b.as_bytes(), &mut out);
                    let v: serde_json::Value = serde_json::from_slice(&out[..n]).unwrap();
                    assert_eq!(
                        (v["id"].clone(), v["error"]["code"].clone()),
                        (serde_json::json!(7), serde_json::json!(-32020))
                    );
                }
            }
        }
        // Missing required _meta: left to the engine (-32602 comes first).
        let bare = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v9"}}}"#;
        assert!(check_stateless_headers(h(&[]).as_slice(), bare).is_ok());
    }

    #[test]
    fn sse_events_and_status() {
        let mut out = [0u8; 64];
        let n = write_sse_event(&mut out, Some("s1::0"), Some(5000), b"");
        assert_eq!(&out[..n], b"id: s1::0\nretry: 5000\ndata: \n\n");
        let n = write_sse_event(&mut out, None, None, br#"{"a":1}"#);
        assert_eq!(&out[..n], b"data: {\"a\":1}\n\n");
        assert_eq!(write_sse_event(&mut out, None, None, b"a\nb"), 0);
        assert_eq!(
            write_sse_event(&mut out, Some("x\ndata: {}"), None, b"{}"),
            0
        );
        assert_eq!(write_sse_event(&mut out, Some("x\r"), None, b"{}"), 0);
        assert_eq!(status_code(Status::Ok, false), 202);
        assert_eq!(status_code(Status::Ok, true), 200);
        assert_eq!(status_code(Status::BadRequest, true), 400);
        assert_eq!(status_code(Status::NotFound, true), 404);
        let mut buf = [0u8; 8];
        assert_eq!(base64_decode(b"Z3JlZXQ", &mut buf), Some(5));
        assert_eq!(&buf[..5], b"greet");
    }
}
