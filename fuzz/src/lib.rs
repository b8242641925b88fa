//! Oracles shared by the fuzz targets.
//!
//! Every check here is written against serde_json (with `raw_value`), not against `mcp_core`'s
//! own parser, so that a bug in the engine's JSON layer cannot hide itself by agreeing with its
//! own oracle. Values are read as [`J`] (exact number tokens, members in document order) and
//! objects as [`entries`] (exact member text), never as `serde_json::Value`, whose visitor turns
//! objects keyed `$serde_json::private::…` into something else (see [`json`]):
//!
//! - [`classify`]: what the engine must answer to a message (nothing, a parse error, an invalid
//!   request with or without the id, or an answer echoing the id byte for byte), from the
//!   JSON-RPC 2.0 rules the engine documents.
//! - [`check_response`]: the bytes are exactly one JSON-RPC 2.0 response object.
//! - [`model`]: an independent implementation of the strict argument validator over
//!   `mcp_core::schema::Param`'s public getters.
//! - [`device`]: a small device with tools of every kind (validated action, user-only,
//!   read-only, long-running task, oversized output) whose handlers count their runs.
//! - [`approvals`] (feature `full`): a reference model of a person's yes, and
//!   [`confirm`]: the device with tools that ask first, and the driver of the `confirm` target.
#![allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]
#![allow(missing_docs)]

#[cfg(feature = "full")]
pub mod approvals;
#[cfg(feature = "full")]
pub mod confirm;
pub mod device;
pub mod json;
pub mod model;

use core::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

pub use json::{J, json_str};

/// The engine's default nesting limit (`mcp_core::wire::json::DEFAULT_MAX_DEPTH`).
pub const MAX_DEPTH: usize = 32;

/// The members of a JSON object in document order, duplicates kept, values as their exact text.
/// Keys are read as plain `String`s and values as `Box<RawValue>` straight from serde_json's
/// parser, so no key means anything special here.
pub struct Entries(pub Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entries;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Entries, A::Error> {
                let mut v = Vec::new();
                while let Some(entry) = m.next_entry::<String, Box<RawValue>>()? {
                    v.push(entry);
                }
                Ok(Entries(v))
            }
        }
        d.deserialize_map(V)
    }
}

/// The members of `text` when it is a JSON object.
pub fn entries(text: &[u8]) -> Option<Vec<(String, Box<RawValue>)>> {
    serde_json::from_slice::<Entries>(text).ok().map(|e| e.0)
}

/// The deepest array/object nesting of a valid JSON text.
pub fn depth(text: &[u8]) -> usize {
    let (mut d, mut max, mut in_str, mut esc) = (0usize, 0usize, false, false);
    for &b in text {
        if in_str {
            if esc {
                esc = false;
            } else if b == b'\\' {
                esc = true;
            } else if b == b'"' {
                in_str = false;
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'[' | b'{' => {
                d += 1;
                max = max.max(d);
            }
            b']' | b'}' => d = d.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// `text` as a JSON value, when the engine's checker must accept it: valid JSON (serde_json)
/// nested at most [`MAX_DEPTH`] levels.
pub fn parse_like_engine(text: &[u8]) -> Option<J> {
    parse_within(text, MAX_DEPTH)
}

/// The deepest nesting the engine's checker can follow at all
/// (`mcp_core::wire::json::MAX_DEPTH_LIMIT`): a message nested deeper than [`MAX_DEPTH`] but
/// within this is still read, only to answer it with its id; the xiaozhi envelope is read to
/// this depth.
pub const CHECKER_DEPTH: usize = 128;

/// `text` as a JSON value when it is valid JSON nested at most `max` levels.
pub fn parse_within(text: &[u8], max: usize) -> Option<J> {
    (depth(text) <= max).then(|| J::parse(text)).flatten()
}

/// `true` for a valid MCP request id token: a string, or a plain integer (no fraction, no
/// exponent) that fits `i64`; at most 128 bytes.
pub fn is_valid_id(raw: &str) -> bool {
    if raw.len() > 128 {
        return false;
    }
    if raw.starts_with('"') {
        return true;
    }
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && raw.parse::<i64>().is_ok()
}

/// What the engine must do with one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// A notification or a response from the peer: no answer.
    Silent,
    /// Not JSON, or nested deeper than the engine reads: -32700 echoing this raw id, or `null`.
    /// A message nested deeper than [`MAX_DEPTH`] that the checker can still follow
    /// ([`CHECKER_DEPTH`]) is read only to learn its id: a request (or an invalid one whose id
    /// is valid) gets it echoed; beyond that, or for what is no JSON, `null`.
    ParseError(Option<String>),
    /// Not a valid request: -32600 echoing this raw id, or `null`.
    Invalid(Option<String>),
    /// A request: one response echoing this raw id byte for byte (`tasks/result` may be parked).
    Answer {
        /// The raw id token.
        id: String,
        /// The decoded method name.
        method: String,
        /// The `params` member's text, when present.
        params: Option<String>,
    },
}

/// The JSON-RPC 2.0 rules, as documented by the engine: duplicates of `jsonrpc`/`id`/`method`/
/// `params` and bad ids are invalid without echo; a message with a valid method string and no id
/// is a notification (never answered); an id with `result`/`error` and no `method` is a peer
/// response; otherwise `jsonrpc` must be `"2.0"` and `method` a string.
///
/// A message refused only for its depth is classified again as deep as the checker can follow:
/// a notification or a response stays silent, anything with an id gets -32700 with that id.
pub fn classify(input: &[u8]) -> Expect {
    match classify_within(input, MAX_DEPTH) {
        Expect::ParseError(_) if depth(input) > MAX_DEPTH => {
            match classify_within(input, CHECKER_DEPTH) {
                Expect::Silent => Expect::Silent,
                Expect::Invalid(id) => Expect::ParseError(id),
                Expect::Answer { id, .. } => Expect::ParseError(Some(id)),
                Expect::ParseError(_) => Expect::ParseError(None),
            }
        }
        e => e,
    }
}

/// [`classify`] for a checker that follows `max` levels (the transports read a body's id and
/// routing members as deep as [`CHECKER_DEPTH`]).
pub fn classify_within(input: &[u8], max: usize) -> Expect {
    let Some(root) = parse_within(input, max) else {
        return Expect::ParseError(None);
    };
    if !root.is_object() {
        return Expect::Invalid(None);
    }
    let members = entries(input).expect("an object has entries");
    let (mut jsonrpc, mut id, mut method, mut params) = (None, None, None, None);
    let mut result_or_error = false;
    let mut duplicate = false;
    for (k, v) in &members {
        let slot = match k.as_str() {
            "jsonrpc" => &mut jsonrpc,
            "id" => &mut id,
            "method" => &mut method,
            "params" => &mut params,
            "result" | "error" => {
                result_or_error = true;
                continue;
            }
            _ => continue,
        };
        duplicate |= slot.is_some();
        *slot = Some(v.get().to_string());
    }
    if duplicate {
        return Expect::Invalid(None);
    }
    let valid_id = match &id {
        Some(raw) if is_valid_id(raw) => Some(raw.clone()),
        Some(_) => return Expect::Invalid(None),
        None => None,
    };
    let method_str = method.as_deref().and_then(json_str);
    let version_ok = jsonrpc.as_deref().and_then(json_str).as_deref() == Some("2.0");
    match (valid_id, method_str) {
        (None, Some(_)) => Expect::Silent,
        (Some(_), None) if method.is_none() && result_or_error => Expect::Silent,
        (id, _) if !version_ok => Expect::Invalid(id),
        (Some(id), Some(method)) => Expect::Answer { id, method, params },
        (id, _) => Expect::Invalid(id),
    }
}

/// One checked response.
#[derive(Debug)]
pub struct Response {
    /// The raw id token (`null`, a string with its quotes, or an integer).
    pub id: String,
    /// The error code, for an error response.
    pub code: Option<i64>,
    /// The error message, for an error response.
    pub message: Option<String>,
    /// The result, for a success response.
    pub result: Option<J>,
}

/// Checks that `out` is exactly one JSON-RPC 2.0 response object: `jsonrpc: "2.0"`, an `id`
/// (null, string or integer), exactly one of `result`/`error`, no other or repeated member, and an
/// error with an integer `code` and a string `message`.
pub fn check_response(out: &[u8]) -> Response {
    let shown = || String::from_utf8_lossy(out).into_owned();
    let value = J::parse(out).unwrap_or_else(|| panic!("response is not JSON: {}", shown()));
    assert!(value.is_object(), "response is not an object: {}", shown());
    let members = entries(out).expect("an object has entries");
    let mut seen: Vec<&str> = Vec::new();
    for (k, _) in &members {
        assert!(
            matches!(k.as_str(), "jsonrpc" | "id" | "result" | "error"),
            "unexpected member {k:?} in {}",
            shown()
        );
        assert!(
            !seen.contains(&k.as_str()),
            "repeated member {k:?} in {}",
            shown()
        );
        seen.push(k);
    }
    assert_eq!(value["jsonrpc"].as_str(), Some("2.0"), "{}", shown());
    let id = members
        .iter()
        .find(|(k, _)| k == "id")
        .map(|(_, v)| v.get().to_string())
        .unwrap_or_else(|| panic!("no id in {}", shown()));
    assert!(
        id == "null" || is_valid_id(&id),
        "bad id {id} in {}",
        shown()
    );
    let has_result = value.get("result").is_some();
    let has_error = value.get("error").is_some();
    assert!(has_result ^ has_error, "result xor error: {}", shown());
    let (mut code, mut message) = (None, None);
    if has_error {
        let e = &value["error"];
        assert!(e.is_object(), "{}", shown());
        for (k, _) in e.as_object().into_iter().flatten() {
            assert!(
                matches!(k.as_str(), "code" | "message" | "data"),
                "{}",
                shown()
            );
        }
        let c = e["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("error code is not an integer: {}", shown()));
        code = Some(c);
        let m = e["message"]
            .as_str()
            .unwrap_or_else(|| panic!("error message is not a string: {}", shown()));
        assert!(!m.is_empty(), "empty error message: {}", shown());
        message = Some(m.to_string());
    }
    Response {
        id,
        code,
        message,
        result: value.get("result").cloned(),
    }
}

/// Checks a server-initiated message from `poll`: a notification (a `method`, no `id`) or a
/// response. Returns the response, if it is one.
pub fn check_outgoing(out: &[u8]) -> Option<Response> {
    let v = J::parse(out)
        .unwrap_or_else(|| panic!("poll output is not JSON: {}", String::from_utf8_lossy(out)));
    if v.get("method").is_some() {
        assert_eq!(v["jsonrpc"].as_str(), Some("2.0"));
        assert!(v.get("id").is_none(), "a notification has no id: {v}");
        assert!(
            v["method"]
                .as_str()
                .is_some_and(|m| m.starts_with("notifications/")),
            "{v}"
        );
        return None;
    }
    Some(check_response(out))
}

/// Every method name the engine serves in some era or revision (anything else must be -32601).
/// A superset on purpose: which of them a given request may use depends on its era. The minimal
/// engine (no feature `full`) serves the legacy era only, without `server/discover` and
/// `tasks/update` (`modern`) or `resources/*`, `prompts/*` and `completion/complete` (`resources`).
pub const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    #[cfg(feature = "full")]
    "server/discover",
    "tools/list",
    "tools/call",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    #[cfg(feature = "full")]
    "tasks/update",
    #[cfg(feature = "full")]
    "resources/list",
    #[cfg(feature = "full")]
    "resources/templates/list",
    #[cfg(feature = "full")]
    "resources/read",
    #[cfg(feature = "full")]
    "prompts/list",
    #[cfg(feature = "full")]
    "prompts/get",
    #[cfg(feature = "full")]
    "completion/complete",
];
