//! The Streamable HTTP framing rules (`mcp_core::transport::http`), chained as a host chains
//! them (`examples/esp32-wifi/src/http.rs`, `examples/mcp-host/src/http.rs`): Host/Origin check,
//! POST check, route, the 2026-07-28 header check when routed stateless, the engine
//! (`Server::handle_with`, over the fuzz device), `status_code`, and the SSE events a host would
//! send.
//!
//! Input: `[out][flags]`, then header lines up to a `0xFF` byte, then the body (any bytes).
//!
//! - `out`: the output buffer (refusal bodies and the engine share it, as on the ESP32):
//!   `out * 3` bytes below 200, else 1500 or 9000.
//! - `flags`: bit 0 allows the host `lamp.local` besides the loopback names, and the origin
//!   `https://lamp.local` (a TLS front end's pages) besides the server's own; bits 1–2 the body limit
//!   (64, 300, 4096, 65536); bit 3 the principal (user); bits 4–5 the SSE event id (none, `0-1`,
//!   `7-42`, `18446744073709551615-0`); bit 6 a `retry:` of 1000 ms; bit 7 a priming event.
//! - A header line: `[name][case][value]` then bytes up to `\n`. `name % 10` picks one of
//!   [`NAMES`] (the last is an unrelated header); bit `i % 8` of `case` flips the case of the
//!   name's character `i`; `value < 0x80` picks one of that header's meaningful values (the rest
//!   of the line is ignored), else the rest of the line is the value, as raw bytes.
//!
//! Oracles: no panic; every refusal is one the module documents (403, 413, 415, 406, 400 with
//! its JSON-RPC code), agrees with the verdict known for meaningful header values, and its body
//! (`Refusal::write_body`) is exactly one JSON-RPC 2.0 error response with the refusal's code and
//! message that fits the buffer (0 only when it does not) and echoes the id of a valid request
//! byte for byte (`null` otherwise); `route` and `check_stateless_headers` agree with a model of
//! their documented rules written over serde_json; a refused request never reaches the engine;
//! the engine's answer is checked as in the `engine` target; `status_code` is 200/202/400/404 and
//! consistent with the answer; every SSE event is `id:`/`retry:`/`data:` lines as written, one
//! line of JSON, and a blank line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_core::server::Status;
use mcp_core::transport::http::{self, Refusal, Route};
use mcp_core::{Input, MIN_OUT_LEN, Principal};
use mcp_fuzz::device::Session;
use mcp_fuzz::{
    CHECKER_DEPTH, Expect, J, check_outgoing, check_response, classify, classify_within, entries,
    json_str, parse_within,
};

/// The header names the rules read, and one they do not.
const NAMES: [&str; 10] = [
    "Host",
    "Origin",
    "Content-Type",
    "Accept",
    "MCP-Protocol-Version",
    "Mcp-Method",
    "Mcp-Name",
    "Mcp-Session-Id",
    "Last-Event-ID",
    "X-Unrelated",
];

/// What a meaningful value is known to mean for the check that reads it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tag {
    /// Accepted (a loopback host, JSON content, an Accept allowing both).
    Yes,
    /// Refused.
    No,
    /// A host accepted only when `lamp.local` is allowed.
    Lan,
    /// No verdict (a value whose meaning the documentation leaves open, or one not checked).
    Open,
}

/// Meaningful values per header, with what the module documents for them.
const VALUES: [&[(&str, Tag)]; 10] = [
    &[
        ("127.0.0.1:8080", Tag::Yes),
        ("localhost", Tag::Yes),
        ("LOCALHOST:1", Tag::Yes),
        ("[::1]:9", Tag::Yes),
        ("127.0.0.1", Tag::Yes),
        (" localhost:80\t", Tag::Yes),
        ("lamp.local:80", Tag::Lan),
        ("LAMP.local", Tag::Lan),
        ("evil.example.com", Tag::No),
        ("evil.example.com:8080", Tag::No),
        ("127.0.0.2", Tag::No),
        ("localhost.evil.com", Tag::No),
        ("localhost:80@evil.com", Tag::No),
        ("localhost.", Tag::Yes),
        ("[0:0:0:0:0:0:0:1]:80", Tag::Yes),
        ("localhost:99999", Tag::No),
    ],
    &[
        ("http://127.0.0.1:8080", Tag::Yes),
        ("https://localhost", Tag::Yes),
        ("http://[::1]:3000", Tag::Yes),
        ("http://localhost:5173", Tag::Yes),
        ("http://lamp.local", Tag::Lan),
        ("https://lamp.local:443", Tag::Lan),
        ("http://evil.example.com", Tag::No),
        ("https://localhost.evil.com", Tag::No),
        ("null", Tag::No),
        ("127.0.0.1", Tag::No),
        ("file://", Tag::No),
        ("http://localhost:80@evil.com", Tag::No),
        ("http://[::1]@evil.com", Tag::No),
        ("http://evil.com#@localhost", Tag::No),
        ("http://localhost/", Tag::No),
        ("HTTP://LOCALHOST.", Tag::Yes),
        ("http://lamp.local.@evil.com", Tag::No),
        ("http://localhost", Tag::Yes),
        ("http://localhost:3000", Tag::Yes),
        ("http://[::1]:9", Tag::Yes),
        ("http://lamp.local:80", Tag::Lan),
    ],
    &[
        ("application/json", Tag::Yes),
        ("application/json; charset=utf-8", Tag::Yes),
        ("Application/JSON", Tag::Yes),
        ("text/plain", Tag::No),
        ("application/x-www-form-urlencoded", Tag::No),
        ("multipart/form-data; boundary=x", Tag::No),
        ("text/plain; x=application/json", Tag::No),
        ("application/json, text/plain", Tag::No),
        ("application/jsonx", Tag::No),
        ("application/json; charset=\"UTF-8\"", Tag::Yes),
        ("application/json; charset=latin1", Tag::No),
    ],
    &[
        ("application/json, text/event-stream", Tag::Yes),
        ("text/event-stream, application/json", Tag::Yes),
        ("*/*", Tag::Yes),
        ("application/json", Tag::No),
        ("text/event-stream", Tag::No),
        ("text/html", Tag::No),
        ("text/html; x=application/json, text/event-stream", Tag::No),
        ("application/*, text/*", Tag::Yes),
        ("application/json, text/event-stream;q=0", Tag::No),
        ("Application/JSON;q=0.5, Text/Event-Stream", Tag::Yes),
    ],
    &[
        ("2026-07-28", Tag::Open),
        ("2025-11-25", Tag::Open),
        ("2025-06-18", Tag::Open),
        ("2025-03-26", Tag::Open),
        ("2024-11-05", Tag::Open),
        (" 2026-07-28 ", Tag::Open),
        ("2099-01-01", Tag::Open),
    ],
    &[
        ("tools/list", Tag::Open),
        ("tools/call", Tag::Open),
        ("initialize", Tag::Open),
        ("server/discover", Tag::Open),
        ("resources/read", Tag::Open),
        ("tasks/get", Tag::Open),
        ("prompts/get", Tag::Open),
        ("ping", Tag::Open),
        ("TOOLS/LIST", Tag::Open),
    ],
    &[
        ("t.act", Tag::Open),
        ("t.plain", Tag::Open),
        ("t.read", Tag::Open),
        ("t.user", Tag::Open),
        ("t.task", Tag::Open),
        ("  t.plain  ", Tag::Open),
        ("=?base64?dC5hY3Q=?=", Tag::Open),
        ("=?base64?dC5wbGFpbg?=", Tag::Open),
        ("nope", Tag::Open),
    ],
    &[
        ("fuzz-session", Tag::Open),
        (" fuzz-session ", Tag::Open),
        ("other", Tag::Open),
    ],
    &[("0-1", Tag::Open), ("7-42", Tag::Open), ("x", Tag::Open)],
    &[("1", Tag::Open)],
];

/// What the meaningful `Host` values that pass name: (value, host, port), the host as compared
/// (lower case, no trailing dot, IPv6 compressed), the port 80 when not given.
const HOST_AUTHORITIES: [(&str, &str, u16); 10] = [
    ("127.0.0.1:8080", "127.0.0.1", 8080),
    ("localhost", "localhost", 80),
    ("LOCALHOST:1", "localhost", 1),
    ("[::1]:9", "[::1]", 9),
    ("127.0.0.1", "127.0.0.1", 80),
    (" localhost:80\t", "localhost", 80),
    ("lamp.local:80", "lamp.local", 80),
    ("LAMP.local", "lamp.local", 80),
    ("localhost.", "localhost", 80),
    ("[0:0:0:0:0:0:0:1]:80", "[::1]", 80),
];

/// What the meaningful `Origin` values that parse name: (value, https, host, port), the port the
/// scheme's default when not given. An origin is accepted when it is the server's own (`http`,
/// the `Host`'s host and port) or allowed by name ([`LAN_ORIGIN`]).
const ORIGINS: [(&str, bool, &str, u16); 11] = [
    ("http://127.0.0.1:8080", false, "127.0.0.1", 8080),
    ("https://localhost", true, "localhost", 443),
    ("http://[::1]:3000", false, "[::1]", 3000),
    ("http://localhost:5173", false, "localhost", 5173),
    ("http://lamp.local", false, "lamp.local", 80),
    ("https://lamp.local:443", true, "lamp.local", 443),
    ("HTTP://LOCALHOST.", false, "localhost", 80),
    ("http://localhost", false, "localhost", 80),
    ("http://localhost:3000", false, "localhost", 3000),
    ("http://[::1]:9", false, "[::1]", 9),
    ("http://lamp.local:80", false, "lamp.local", 80),
];

/// The origin allowed by name with flag bit 0 (written without its default port).
const LAN_ORIGIN: &str = "https://lamp.local";

/// The legacy session this device holds (a host answers 404 to a POST naming another).
const OUR_SESSION: &[u8] = b"fuzz-session";
/// Legacy revisions (`MCP-Protocol-Version` values that keep a request on the session path).
const LEGACY: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

struct Header {
    name: String,
    value: Vec<u8>,
}

struct Request<'a> {
    out_len: usize,
    allowed: &'a [&'a str],
    origins: &'a [&'a str],
    max_body: usize,
    principal: Principal,
    sse_id: Option<&'static str>,
    retry: Option<u32>,
    priming: bool,
    headers: Vec<Header>,
    body: &'a [u8],
}

fn parse_input(data: &[u8]) -> Option<Request<'_>> {
    let (&out, rest) = data.split_first()?;
    let (&flags, rest) = rest.split_first()?;
    let (head, body) = match rest.iter().position(|&b| b == 0xFF) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let mut headers = Vec::new();
    for line in head.split(|&b| b == b'\n').take(16) {
        let [n, case, v, raw @ ..] = line else {
            continue;
        };
        let k = usize::from(*n) % NAMES.len();
        let name = NAMES[k]
            .chars()
            .enumerate()
            .map(|(i, c)| {
                if (case >> (i % 8)) & 1 == 1 {
                    if c.is_ascii_uppercase() {
                        c.to_ascii_lowercase()
                    } else {
                        c.to_ascii_uppercase()
                    }
                } else {
                    c
                }
            })
            .collect();
        let value = if *v < 0x80 {
            let values = VALUES[k];
            values[usize::from(*v) % values.len()].0.as_bytes().to_vec()
        } else {
            raw.to_vec()
        };
        headers.push(Header { name, value });
    }
    Some(Request {
        out_len: if out < 200 {
            usize::from(out) * 3
        } else if out < 228 {
            1500
        } else {
            9000
        },
        allowed: if flags & 1 == 1 { &["lamp.local"] } else { &[] },
        origins: if flags & 1 == 1 { &[LAN_ORIGIN] } else { &[] },
        max_body: [64, 300, 4096, 65536][usize::from((flags >> 1) & 3)],
        principal: if flags & 8 == 0 {
            Principal::Model
        } else {
            Principal::User
        },
        sse_id: [
            None,
            Some("0-1"),
            Some("7-42"),
            Some("18446744073709551615-0"),
        ][usize::from((flags >> 4) & 3)],
        retry: (flags & 0x40 != 0).then_some(1000),
        priming: flags & 0x80 != 0,
        headers,
        body,
    })
}

/// The first value of header `name` (any case), as `http::Headers` promises.
fn first<'h>(headers: &'h [Header], name: &str) -> Option<&'h [u8]> {
    headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .map(|h| h.value.as_slice())
}

/// The documented verdict for a meaningful value of header `k`, `None` when the value is not one
/// of [`VALUES`] (or has no verdict).
fn tag(k: usize, value: &[u8], lan_allowed: bool) -> Option<bool> {
    let (_, t) = VALUES[k].iter().find(|(v, _)| v.as_bytes() == value)?;
    match t {
        Tag::Yes => Some(true),
        Tag::No => Some(false),
        Tag::Lan => Some(lan_allowed),
        Tag::Open => None,
    }
}

/// Trims spaces and tabs, as the module does before comparing header values.
fn trim(v: &[u8]) -> &[u8] {
    let v = match v.iter().position(|c| !matches!(c, b' ' | b'\t')) {
        Some(i) => &v[i..],
        None => return &[],
    };
    let end = v.iter().rposition(|c| !matches!(c, b' ' | b'\t')).unwrap();
    &v[..=end]
}

/// The first member `name` of the JSON object `text`, as raw text.
fn member(text: &str, name: &str) -> Option<String> {
    entries(text.as_bytes())?
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.get().to_string())
}

/// The member `name` of the JSON object `text` when it is named exactly once, as raw text.
fn only_member(text: &str, name: &str) -> Option<String> {
    let entries = entries(text.as_bytes())?;
    let mut named = entries.iter().filter(|(k, _)| k == name);
    match (named.next(), named.next()) {
        (Some((_, v)), None) => Some(v.get().to_string()),
        _ => None,
    }
}

/// The last member `name` of the JSON object `text` (the value a repeated key has for the
/// engine), as raw text.
fn last_member(text: &str, name: &str) -> Option<String> {
    entries(text.as_bytes())?
        .into_iter()
        .filter(|(k, _)| k == name)
        .last()
        .map(|(_, v)| v.get().to_string())
}

/// The documented routing: stateless when the body's `params._meta` names a protocol version (a
/// repeated member read as its last value, as the engine reads it)
/// or `MCP-Protocol-Version` is not a legacy revision; else the session named by
/// `Mcp-Session-Id` (trimmed).
fn expected_route<'h>(headers: &'h [Header], body: &[u8]) -> Route<'h> {
    // The rules read a body as deep as the checker can follow, not to the engine's limit.
    // A repeated member is read as the engine reads it: its last value.
    let meta_version = parse_within(body, CHECKER_DEPTH).is_some()
        && std::str::from_utf8(body).is_ok_and(|b| {
            last_member(b, "params")
                .and_then(|p| last_member(&p, "_meta"))
                .and_then(|m| last_member(&m, "io.modelcontextprotocol/protocolVersion"))
                .is_some()
        });
    let version = first(headers, http::PROTOCOL_VERSION).map(trim);
    let modern_header = version.is_some_and(|v| !LEGACY.iter().any(|l| l.as_bytes() == v));
    if meta_version || modern_header {
        Route::Stateless
    } else {
        Route::Session(first(headers, http::SESSION_ID).map(trim))
    }
}

/// The documented 2026-07-28 header rules: `Ok(None)` when the body passes, `Ok(Some(m))` when
/// it is refused with a message containing `m`, `Err(())` when the model cannot tell (a base64
/// header value).
fn expected_header_check(headers: &[Header], body: &[u8]) -> Result<Option<&'static str>, ()> {
    let Expect::Answer { method, params, .. } = classify_within(body, CHECKER_DEPTH) else {
        return Ok(None);
    };
    // Each named once (a repeated one is as good as missing: the engine refuses the body itself).
    let Some(meta) = params.as_deref().and_then(|p| only_member(p, "_meta")) else {
        return Ok(None);
    };
    let (Some(version), Some(_)) = (
        only_member(&meta, "io.modelcontextprotocol/protocolVersion"),
        only_member(&meta, "io.modelcontextprotocol/clientCapabilities"),
    ) else {
        return Ok(None);
    };
    // `None`: header missing; `Some(None)`: cannot tell; `Some(Some(eq))`.
    let compare = |name: &str, body_value: Option<&str>| -> Option<Option<bool>> {
        let h = trim(first(headers, name)?);
        if h.starts_with(b"=?base64?") && h.ends_with(b"?=") && h.len() >= 11 {
            return Some(None);
        }
        Some(Some(
            body_value.is_some_and(|b| std::str::from_utf8(h) == Ok(b)),
        ))
    };
    match compare(http::PROTOCOL_VERSION, json_str(&version).as_deref()) {
        None => return Ok(Some("MCP-Protocol-Version is missing")),
        Some(None) => return Err(()),
        Some(Some(false)) => return Ok(Some("MCP-Protocol-Version differs")),
        Some(Some(true)) => {}
    }
    match compare(http::METHOD, Some(&method)) {
        None => return Ok(Some("Mcp-Method is missing")),
        Some(None) => return Err(()),
        Some(Some(false)) => return Ok(Some("Mcp-Method differs")),
        Some(Some(true)) => {}
    }
    let field = match method.as_str() {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return Ok(None),
    };
    let value = params
        .as_deref()
        .and_then(|p| member(p, field))
        .and_then(|v| json_str(&v));
    match compare(http::NAME, value.as_deref()) {
        None => Ok(Some("Mcp-Name is missing")),
        Some(None) => Err(()),
        Some(Some(false)) => Ok(Some("Mcp-Name differs")),
        Some(Some(true)) => Ok(None),
    }
}

/// Checks a refusal and the body written for it into a buffer of `out_len` bytes.
fn check_refusal(r: &Refusal, body: &[u8], out_len: usize) {
    let show = || String::from_utf8_lossy(body).into_owned();
    let documented = matches!(
        (r.status, r.code.code()),
        (403 | 413 | 415 | 406, -32600) | (400, -32020)
    );
    assert!(documented, "undocumented refusal {r:?}");
    let mut big = vec![0u8; 4096];
    let full = r.write_body(body, &mut big);
    assert!(full > 0, "a refusal body does not fit 4096 bytes: {r:?}");
    let mut out = vec![0u8; out_len];
    let n = r.write_body(body, &mut out);
    if n == 0 {
        assert!(
            full > out_len,
            "write_body gave 0 though {full} <= {out_len}"
        );
        return;
    }
    assert!(n <= out_len, "refusal body {n} beyond the buffer {out_len}");
    assert_eq!(
        &out[..n],
        &big[..full],
        "the body depends on the buffer size"
    );
    let resp = check_response(&out[..n]);
    assert_eq!(resp.code, Some(i64::from(r.code.code())), "{r:?}");
    assert_eq!(resp.message.as_deref(), Some(r.message));
    // The id of a request is echoed also when it nests deeper than the engine reads.
    let request = classify_within(body, CHECKER_DEPTH);
    match request.clone() {
        Expect::Answer { id, .. } => assert_eq!(resp.id, id, "id echo for {}", show()),
        // `Message::Invalid` with a valid id: the body is no valid request; `null` is written.
        _ => assert_eq!(
            resp.id,
            "null",
            "echoed an id of no valid request: {}",
            show()
        ),
    }
    let rid = http::request_id(body).map(|i| String::from_utf8_lossy(i.raw()).into_owned());
    match request {
        Expect::Answer { id, .. } => assert_eq!(rid, Some(id)),
        _ => assert_eq!(rid, None, "request_id of no request: {}", show()),
    }
}

/// Writes `data` as one SSE event into a buffer of `len` bytes and checks the event.
fn check_sse(len: usize, id: Option<&str>, retry: Option<u32>, data: &[u8]) {
    let mut out = vec![0u8; len];
    let n = http::write_sse_event(&mut out, id, retry, data);
    let mut expected = Vec::new();
    if let Some(id) = id {
        expected.extend_from_slice(format!("id: {id}\n").as_bytes());
    }
    if let Some(ms) = retry {
        expected.extend_from_slice(format!("retry: {ms}\n").as_bytes());
    }
    expected.extend_from_slice(b"data: ");
    expected.extend_from_slice(data);
    expected.extend_from_slice(b"\n\n");
    assert!(
        !data.contains(&b'\n') && !data.contains(&b'\r'),
        "engine output with a line break: {:?}",
        String::from_utf8_lossy(data)
    );
    if n == 0 {
        assert!(
            expected.len() > len,
            "an event of {} bytes refused in {len}",
            expected.len()
        );
        return;
    }
    let event = &out[..n];
    assert_eq!(event, &expected[..], "event bytes");
    // Well-formed: field lines, then one blank line ending the event.
    let text = std::str::from_utf8(event).expect("an SSE event is UTF-8");
    let body = text
        .strip_suffix("\n\n")
        .expect("an event ends with a blank line");
    let lines: Vec<&str> = body.split('\n').collect();
    let data_line = lines.last().unwrap();
    let json = data_line
        .strip_prefix("data: ")
        .expect("the last line is data:");
    for l in &lines[..lines.len() - 1] {
        assert!(
            l.starts_with("id: ") || l.starts_with("retry: "),
            "stray line {l:?}"
        );
    }
    if !json.is_empty() {
        J::parse_str(json).expect("data: is one JSON message");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(req) = parse_input(data) else { return };
    let h: Vec<(&str, &[u8])> = req
        .headers
        .iter()
        .map(|h| (h.name.as_str(), h.value.as_slice()))
        .collect();
    let headers = h.as_slice();
    let body = req.body;
    let mut session = Session::new(8000);
    let before = session.dev.runs;
    let lan = !req.allowed.is_empty();
    let refused = |r: &Refusal, session: &Session| {
        check_refusal(r, body, req.out_len);
        assert_eq!(
            session.dev.runs, before,
            "a refused request reached the device"
        );
        assert_eq!(
            session.server.revision(),
            None,
            "a refused request reached the engine"
        );
    };

    // 1. DNS-rebinding protection.
    let host_ok = match first(&req.headers, "Host") {
        None => Some(true),
        Some(v) => tag(0, v, lan),
    };
    // The exact-origin rule: the server's own origin (`http://` and the Host), or one allowed by
    // name; known only when both values are meaningful.
    let origin_ok = match first(&req.headers, "Origin") {
        None => Some(true),
        Some(v) => match ORIGINS.iter().find(|o| o.0.as_bytes() == v) {
            None => tag(1, v, lan).filter(|ok| !ok),
            Some(&(_, true, "lamp.local", 443)) if lan => Some(true),
            Some(&(_, https, host, port)) => match first(&req.headers, "Host") {
                None => Some(false),
                Some(h) => HOST_AUTHORITIES
                    .iter()
                    .find(|a| a.0.as_bytes() == h)
                    .map(|&(_, hh, hp)| !https && hh == host && hp == port),
            },
        },
    };
    match http::check_host_and_origin(headers, req.allowed, req.origins) {
        Err(r) => {
            assert_eq!(r.status, 403, "{r:?}");
            if r.message.contains("Host") {
                assert_ne!(host_ok, Some(true), "a good Host refused: {headers:?}");
            } else {
                assert_ne!(origin_ok, Some(true), "a good Origin refused: {headers:?}");
                assert_ne!(host_ok, Some(false), "a bad Host refused as an Origin");
            }
            return refused(&r, &session);
        }
        Ok(()) => {
            assert_ne!(host_ok, Some(false), "a foreign Host accepted: {headers:?}");
            assert_ne!(
                origin_ok,
                Some(false),
                "a foreign Origin accepted: {headers:?}"
            );
        }
    }

    // 2. POST preconditions.
    let too_large = body.len() > req.max_body;
    let json = first(&req.headers, "Content-Type").map_or(Some(false), |v| tag(2, v, lan));
    let accept = first(&req.headers, "Accept").map_or(Some(true), |v| tag(3, v, lan));
    let expected = if too_large {
        Some(Some(413))
    } else {
        match (json, accept) {
            (Some(false), _) => Some(Some(415)),
            (Some(true), Some(false)) => Some(Some(406)),
            (Some(true), Some(true)) => Some(None),
            _ => None,
        }
    };
    match http::check_post(headers, body.len(), req.max_body) {
        Err(r) => {
            assert!(matches!(r.status, 413 | 415 | 406), "{r:?}");
            if let Some(e) = expected {
                assert_eq!(Some(r.status), e, "check_post for {headers:?}");
            }
            assert_eq!(r.status == 413, too_large);
            return refused(&r, &session);
        }
        Ok(()) => {
            assert!(!too_large);
            if let Some(e) = expected {
                assert_eq!(e, None, "check_post for {headers:?}");
            }
        }
    }

    // 3. Route, and the 2026-07-28 header rules.
    let route = http::route(headers, body);
    assert_eq!(
        route,
        expected_route(&req.headers, body),
        "route of {headers:?}"
    );
    let stateless = match route {
        Route::Stateless => {
            let expected = expected_header_check(&req.headers, body);
            match http::check_stateless_headers(headers, body) {
                Err(r) => {
                    assert_eq!((r.status, r.code.code()), (400, -32020), "{r:?}");
                    if let Ok(e) = expected {
                        let e = e.unwrap_or_else(|| {
                            panic!("refused ({}) headers that agree: {headers:?}", r.message)
                        });
                        assert!(r.message.contains(e), "{} instead of {e}", r.message);
                    }
                    return refused(&r, &session);
                }
                Ok(()) => {
                    if let Ok(Some(e)) = expected {
                        panic!("accepted headers that disagree ({e}): {headers:?}");
                    }
                }
            }
            true
        }
        Route::Session(Some(named)) if named != OUR_SESSION => {
            // The host answers 404 itself (the client starts again with initialize).
            assert_eq!(session.dev.runs, before);
            return;
        }
        Route::Session(_) => false,
    };

    // 4. The engine.
    session.stateless = stateless;
    let mut out = vec![0u8; req.out_len];
    let mut notes: Vec<Vec<u8>> = Vec::new();
    let input = Input::new(body, req.principal).stateless(stateless);
    let handled =
        match session
            .server
            .handle_with(input, &mut session.dev, &mut out, &mut |m: &[u8]| {
                notes.push(m.to_vec())
            }) {
            Ok(h) => h,
            Err(_) => {
                assert!(
                    req.out_len < MIN_OUT_LEN,
                    "refused a buffer of {}",
                    req.out_len
                );
                assert_eq!(session.dev.runs, before);
                return;
            }
        };
    assert!(req.out_len >= MIN_OUT_LEN);
    let n = handled.len;
    assert!(n <= req.out_len);
    let answer = &out[..n];
    session.check(body, answer, before, req.principal, handled.deferred);
    let expect = classify(body);
    if stateless && matches!(expect, Expect::Answer { .. }) {
        assert!(
            handled.modern,
            "a stateless-routed request served as legacy"
        );
    }
    if handled.deferred {
        assert_eq!(n, 0);
    }

    // 5. The HTTP status.
    let status = http::status_code(handled.status, n > 0);
    assert!(matches!(status, 200 | 202 | 400 | 404), "status {status}");
    assert_eq!(status == 202, n == 0, "202 iff no body");
    if handled.status != Status::Ok {
        assert!(handled.modern, "{:?} on the legacy path", handled.status);
        let code = check_response(answer).code;
        match handled.status {
            Status::NotFound => assert_eq!(code, Some(-32601)),
            _ => assert!(
                matches!(code, Some(-32602 | -32020 | -32021 | -32022)),
                "400 with {code:?}"
            ),
        }
    } else if handled.modern && n > 0 {
        let code = check_response(answer).code;
        assert!(
            !matches!(code, Some(-32601 | -32020 | -32021 | -32022)),
            "{code:?} answered with 200"
        );
    }

    // 6. SSE: the notifications, then the response, as a host streams them.
    let sse_len = |d: &[u8]| d.len() + [0, 8, 24, 64][usize::from(data[0] & 3)];
    if req.priming {
        check_sse(48, req.sse_id, req.retry, b"");
    }
    for note in &notes {
        check_outgoing(note);
        check_sse(sse_len(note), req.sse_id, req.retry, note);
    }
    if n > 0 {
        check_sse(sse_len(answer), req.sse_id, req.retry, answer);
    }
});
