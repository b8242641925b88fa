//! JSON-RPC 2.0 message classification: bytes → [`Message`].
//!
//! [`Message::parse`] checks the bytes ([`Json::parse`]) and sorts the message into a request
//! (has a valid `id`), a notification (no `id`, never answered), a response from the peer
//! (ignored), or an invalid request (answered with -32600). No state, no I/O.

use super::frame::{Frame, Member, Top};
use super::json::{Integer, Json, JsonError, JsonStr, Kind};

/// Ids longer than this (in raw bytes) are refused, so that an error echoing the id always fits
/// a small output buffer.
pub const MAX_ID_LEN: usize = 128;

/// Unsigned integers of up to this many digits always fit `i64`.
const MAX_PLAIN_DIGITS: usize = 18;

/// Raw JSON (a request id, a progress token) kept past its message, in `N` bytes and a one-byte
/// length (`N` ≤ 255): empty is none, as raw JSON never is. A task entry keeps two of these, so
/// the one-byte length and the missing `Option` tag save 16 bytes of RAM per task slot.
#[derive(Debug, Clone)]
pub(crate) struct KeptRaw<const N: usize>(heapless::Vec<u8, N, u8>);

impl<const N: usize> KeptRaw<N> {
    /// Nothing kept.
    pub(crate) const NONE: Self = KeptRaw(heapless::Vec::new());

    /// Keeps `raw` in place of what was kept, or nothing when `raw` is longer than `N`; returns
    /// whether it is kept. (In place: a task entry is not built twice on the dispatch's stack.)
    pub(crate) fn set(&mut self, raw: &[u8]) -> bool {
        self.0.clear();
        self.0.extend_from_slice(raw).is_ok() && self.is_some()
    }

    /// Keeps nothing.
    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }

    /// What is kept, if anything.
    pub(crate) fn get(&self) -> Option<&[u8]> {
        (!self.0.is_empty()).then_some(self.0.as_slice())
    }

    /// `true` when something is kept.
    pub(crate) fn is_some(&self) -> bool {
        !self.0.is_empty()
    }

    /// `true` when nothing is kept.
    pub(crate) fn is_none(&self) -> bool {
        self.0.is_empty()
    }
}

/// A request id, kept exactly as it appeared on the wire so that it is echoed byte-exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Id<'a> {
    raw: &'a [u8],
}

impl<'a> Id<'a> {
    /// The raw token: a JSON string with its quotes and escapes, or an integer.
    pub const fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// An id from bytes that were checked as an id before (a parked request's id).
    pub(crate) const fn from_checked_raw(raw: &'a [u8]) -> Self {
        Id { raw }
    }

    /// Checks a JSON value as an MCP request id: a string, or an integer that fits `i64`, written
    /// without fraction or exponent.
    pub fn from_json(v: Json<'a>) -> Option<Self> {
        if v.raw().len() > MAX_ID_LEN {
            return None;
        }
        let ok = match v.kind() {
            Kind::String => true,
            // Up to 18 digits always fit `i64`; longer ones are read exactly.
            Kind::Number => {
                v.is_plain_integer()
                    && (v.raw().len() <= MAX_PLAIN_DIGITS
                        || matches!(v.as_integer(), Some(Integer::Exact(_))))
            }
            _ => false,
        };
        ok.then_some(Id { raw: v.raw() })
    }
}

/// Why a message is not a valid JSON-RPC 2.0 request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Invalid {
    /// The message is a JSON array (a batch); MCP does not use batches.
    Batch,
    /// The message is not a JSON object.
    NotAnObject,
    /// A top-level member appears twice.
    DuplicateMember,
    /// `id` is `null`, fractional, a boolean, an object, an array, or too long.
    BadId,
    /// `jsonrpc` is missing or is not the string `"2.0"`.
    BadVersion,
    /// `method` is missing or not a string.
    BadMethod,
}

impl Invalid {
    /// The human-readable error message.
    pub const fn message(self) -> &'static str {
        match self {
            Invalid::Batch => {
                "Invalid Request: batches are not supported; send one message at a time"
            }
            Invalid::NotAnObject => "Invalid Request: a message must be a JSON object",
            Invalid::DuplicateMember => "Invalid Request: duplicate member in the message",
            Invalid::BadId => "Invalid Request: id must be a string or an integer",
            Invalid::BadVersion => "Invalid Request: jsonrpc must be \"2.0\"",
            Invalid::BadMethod => "Invalid Request: method must be a string",
        }
    }
}

/// A request: a method call that expects exactly one response.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The id, to echo.
    pub id: Id<'a>,
    /// The method name.
    pub method: JsonStr<'a>,
    /// The `params` member, if present (any JSON type; methods check it).
    pub params: Option<Json<'a>>,
}

/// One JSON-RPC message, classified.
#[derive(Debug, Clone, Copy)]
pub enum Message<'a> {
    /// A request (answer it).
    Request(Request<'a>),
    /// A notification (never answered).
    Notification {
        /// The method name.
        method: JsonStr<'a>,
        /// The `params` member, if present.
        params: Option<Json<'a>>,
    },
    /// A response or error object sent by the peer (ignored: this engine sends no requests yet).
    Response,
    /// Not a valid request: answer -32600 with this id (or `null`).
    Invalid {
        /// The id to echo, when the message had a valid one.
        id: Option<Id<'a>>,
        /// What is wrong.
        why: Invalid,
    },
}

impl<'a> Message<'a> {
    /// Checks and classifies one message. An `Err` is a parse error (-32700, `id: null`).
    pub fn parse(bytes: &'a [u8], max_depth: u8) -> Result<Self, JsonError> {
        Ok(Frame::parse(bytes, max_depth)?.message())
    }

    /// Classifies a checked JSON value.
    pub fn classify(root: Json<'a>) -> Self {
        let Some(members) = root.members() else {
            return Self::not_an_object(root);
        };
        let mut top = Top::default();
        for (key, value) in members {
            let slot = match super::frame::message_member(key) {
                Some(Member::Jsonrpc) => &mut top.jsonrpc,
                Some(Member::Id) => &mut top.id,
                Some(Member::Method) => &mut top.method,
                Some(Member::Params) => &mut top.params,
                _ => {
                    top.result_or_error |= super::frame::is_response_key(key);
                    continue;
                }
            };
            top.duplicate |= slot.is_some();
            *slot = Some(value);
        }
        top.classify()
    }

    /// A checked value that is not an object: a batch, or not a message at all.
    pub(crate) fn not_an_object(root: Json<'a>) -> Self {
        let why = if root.kind() == Kind::Array {
            Invalid::Batch
        } else {
            Invalid::NotAnObject
        };
        Message::Invalid { id: None, why }
    }
}

impl<'a> Frame<'a> {
    /// Classifies the message, as [`Message::classify`] does from the root.
    pub fn message(&self) -> Message<'a> {
        // The checking pass found a request in the spelling clients use: its id is a string or
        // unsigned digits, valid when short enough.
        if let Some((id, method, params)) = self.request() {
            let max = if id.raw().first() == Some(&b'"') {
                MAX_ID_LEN
            } else {
                MAX_PLAIN_DIGITS
            };
            if id.raw().len() <= max {
                let id = Id::from_checked_raw(id.raw());
                return Message::Request(Request { id, method, params });
            }
        }
        match self.top() {
            Some(top) => top.classify(),
            None => Message::not_an_object(self.root()),
        }
    }
}

impl<'a> Top<'a> {
    #[inline]
    pub(crate) fn classify(self) -> Message<'a> {
        let Top {
            jsonrpc,
            id,
            method,
            params,
            duplicate,
            result_or_error,
        } = self;
        let valid_id = id.and_then(Id::from_json);
        if duplicate {
            return Message::Invalid {
                id: None,
                why: Invalid::DuplicateMember,
            };
        }
        if id.is_some() && valid_id.is_none() {
            return Message::Invalid {
                id: None,
                why: Invalid::BadId,
            };
        }
        let method = method.map(|m| m.as_str());
        let version_ok = jsonrpc
            .is_some_and(|v| v.raw() == b"\"2.0\"" || v.as_str().is_some_and(|v| v.eq_str("2.0")));
        match (valid_id, method) {
            // A well-formed notification, or something that looks like one: never answered.
            (None, Some(Some(method))) => Message::Notification { method, params },
            (Some(_), None) if result_or_error => Message::Response,
            (id, _) if !version_ok => Message::Invalid {
                id,
                why: Invalid::BadVersion,
            },
            (Some(id), Some(Some(method))) => Message::Request(Request { id, method, params }),
            (id, _) => Message::Invalid {
                id,
                why: Invalid::BadMethod,
            },
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::wire::json::DEFAULT_MAX_DEPTH;

    fn parse(s: &str) -> Message<'_> {
        Message::parse(s.as_bytes(), DEFAULT_MAX_DEPTH).unwrap()
    }

    #[test]
    fn kept_raw_json_is_none_when_empty_or_too_long_and_set_in_place() {
        let mut k = KeptRaw::<4>::NONE;
        assert!(k.is_none() && k.get().is_none());
        assert!(k.set(b"\"ab\""));
        assert_eq!(k.get(), Some(&b"\"ab\""[..]));
        assert!(!k.set(b"12345"), "longer than N");
        assert!(
            k.is_none(),
            "a refused value leaves nothing of the one before"
        );
        assert!(k.set(b"7") && k.is_some());
        assert!(!k.set(b""));
        assert!(k.is_none());
        k.set(b"7");
        k.clear();
        assert_eq!(k.get(), None);
    }

    #[test]
    fn requests_keep_their_id_bytes() {
        for (msg, id) in [
            (r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, "1"),
            (
                r#"{"method":"ping","id":-9223372036854775808,"jsonrpc":"2.0"}"#,
                "-9223372036854775808",
            ),
            (
                r#"{"jsonrpc":"2.0","id":"a\"b\u00e9","method":"ping"}"#,
                r#""a\"b\u00e9""#,
            ),
            (r#"{"jsonrpc":"2.0","id":"","method":"ping"}"#, r#""""#),
        ] {
            match parse(msg) {
                Message::Request(r) => {
                    assert_eq!(r.id.raw(), id.as_bytes());
                    assert!(r.method.eq_str("ping"));
                }
                other => panic!("{msg}: {other:?}"),
            }
        }
    }

    #[test]
    fn invalid_ids_are_refused_without_echo() {
        for msg in [
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1.0,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1e2,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}"#,
        ] {
            assert!(
                matches!(
                    parse(msg),
                    Message::Invalid {
                        id: None,
                        why: Invalid::BadId
                    }
                ),
                "{msg}"
            );
        }
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":"{}","method":"ping"}}"#,
            "x".repeat(MAX_ID_LEN)
        );
        assert!(matches!(
            parse(&long),
            Message::Invalid {
                id: None,
                why: Invalid::BadId
            }
        ));
    }

    #[test]
    fn version_and_method_are_checked() {
        for (msg, why) in [
            (r#"{"id":1,"method":"ping"}"#, Invalid::BadVersion),
            (
                r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
                Invalid::BadVersion,
            ),
            (
                r#"{"jsonrpc":2.0,"id":1,"method":"ping"}"#,
                Invalid::BadVersion,
            ),
            (r#"{"jsonrpc":"2.0","id":1}"#, Invalid::BadMethod),
            (r#"{"jsonrpc":"2.0","id":1,"method":5}"#, Invalid::BadMethod),
        ] {
            match parse(msg) {
                Message::Invalid {
                    id: Some(id),
                    why: w,
                } => {
                    assert_eq!(id.raw(), b"1");
                    assert_eq!(w, why, "{msg}");
                }
                other => panic!("{msg}: {other:?}"),
            }
        }
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","method":1,"params":"bar"}"#),
            Message::Invalid {
                id: None,
                why: Invalid::BadMethod
            }
        ));
        assert!(matches!(
            parse(r#"{"foo":"boo"}"#),
            Message::Invalid { id: None, .. }
        ));
    }

    #[test]
    fn shapes_other_than_requests() {
        // Without an id to echo, and why.
        for (text, why) in [
            ("[1,2]", Invalid::Batch),
            ("[]", Invalid::Batch),
            ("\"ping\"", Invalid::NotAnObject),
            (
                r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#,
                Invalid::DuplicateMember,
            ),
            // Escaped member names are the same members.
            (
                r#"{"jsonrpc":"2.0","\u0069d":1,"method":"ping","id":2}"#,
                Invalid::DuplicateMember,
            ),
        ] {
            assert!(
                matches!(parse(text), Message::Invalid { id: None, why: w } if w == why),
                "{text}"
            );
        }
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Message::Notification { .. }
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":4,"result":{}}"#),
            Message::Response
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":4,"error":{"code":1}}"#),
            Message::Response
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","\u0069d":1,"m\u0065thod":"ping"}"#),
            Message::Request(_)
        ));
    }
}
