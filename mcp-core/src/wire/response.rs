//! JSON-RPC 2.0 response envelopes, written into a [`Writer`].

use super::protocol::{self, join};
use super::request::Id;
use super::writer::Writer;

/// A JSON-RPC error code. Protocol problems only: a tool that ran and failed is not one of these
/// (it is a result with `isError: true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ErrorCode {
    /// -32700: the bytes are not JSON.
    ParseError,
    /// -32600: JSON, but not a valid request object.
    InvalidRequest,
    /// -32601: no such method.
    MethodNotFound,
    /// -32602: the method exists but its params are wrong (including an unknown tool).
    InvalidParams,
    /// -32603: the server could not produce the response.
    InternalError,
    /// -32002 (before 2026-07-28): no resource with that URI.
    ResourceNotFound,
    /// -32020 (2026-07-28): an HTTP header is missing, malformed, or disagrees with the body.
    HeaderMismatch,
    /// -32021 (2026-07-28): the request needs a client capability it did not declare.
    MissingRequiredClientCapability,
    /// -32022 (2026-07-28): the requested protocol version is not supported.
    UnsupportedProtocolVersion,
}

impl ErrorCode {
    /// The numeric code.
    pub const fn code(self) -> i32 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::ResourceNotFound => -32002,
            ErrorCode::HeaderMismatch => -32020,
            ErrorCode::MissingRequiredClientCapability => -32021,
            ErrorCode::UnsupportedProtocolVersion => -32022,
        }
    }

    /// `,"error":{"code":N,"message":` for this code, as one constant piece.
    const fn error_head(self) -> &'static [u8] {
        macro_rules! head {
            ($code:ident) => {
                join!(
                    protocol::ERROR_OPEN,
                    &code_text(ErrorCode::$code.code()),
                    protocol::MESSAGE
                )
            };
        }
        match self {
            ErrorCode::ParseError => head!(ParseError),
            ErrorCode::InvalidRequest => head!(InvalidRequest),
            ErrorCode::MethodNotFound => head!(MethodNotFound),
            ErrorCode::InvalidParams => head!(InvalidParams),
            ErrorCode::InternalError => head!(InternalError),
            ErrorCode::ResourceNotFound => head!(ResourceNotFound),
            ErrorCode::HeaderMismatch => head!(HeaderMismatch),
            ErrorCode::MissingRequiredClientCapability => head!(MissingRequiredClientCapability),
            ErrorCode::UnsupportedProtocolVersion => head!(UnsupportedProtocolVersion),
        }
    }
}

/// A JSON-RPC error code (`-99999` to `-10000`, as they all are) in decimal.
const fn code_text(code: i32) -> [u8; 6] {
    assert!(-99_999 <= code && code <= -10_000, "five digits");
    const fn digit(n: u32, place: u32) -> u8 {
        b'0' + (n / place % 10) as u8
    }
    let n = code.unsigned_abs();
    [
        b'-',
        digit(n, 10_000),
        digit(n, 1_000),
        digit(n, 100),
        digit(n, 10),
        digit(n, 1),
    ]
}

fn head(w: &mut Writer<'_>, id: Option<Id<'_>>) {
    w.raw(protocol::RESPONSE_HEAD);
    match id {
        Some(id) => w.raw(id.raw()),
        None => w.raw(b"null"),
    }
}

/// Writes `{"jsonrpc":"2.0","id":ID,"result":{`, in two pieces: the start of a response whose
/// result is an object, left open for its members (and for the caller's `}}`).
pub(crate) fn open_result_object(w: &mut Writer<'_>, id: Id<'_>) {
    head(w, Some(id));
    w.raw(protocol::RESULT_OPEN);
}

/// Writes `{"jsonrpc":"2.0","id":ID,"result":…}`; `result` writes the result value.
pub fn write_result(w: &mut Writer<'_>, id: Id<'_>, result: impl FnOnce(&mut Writer<'_>)) {
    head(w, Some(id));
    w.raw(protocol::RESULT);
    result(w);
    w.raw(b"}");
}

/// Writes `{"jsonrpc":"2.0","id":ID|null,"error":{"code":N,"message":"…","data":…}}`; `message`
/// writes the message text (it is escaped as it is written), `data` the optional data value.
pub fn write_error(
    w: &mut Writer<'_>,
    id: Option<Id<'_>>,
    code: ErrorCode,
    message: impl FnOnce(&mut Writer<'_>),
    data: Option<impl FnOnce(&mut Writer<'_>)>,
) {
    head(w, id);
    w.raw(code.error_head());
    w.begin_string();
    message(w);
    w.end_string();
    if let Some(data) = data {
        w.raw(protocol::DATA);
        data(w);
    }
    w.raw(b"}}");
}

/// [`write_error`] without `data`, its message writer a trait object: one compiled copy of the
/// envelope for the engine's rare error answers, instead of one per generic instance.
#[inline(never)]
pub(crate) fn write_error_dyn(
    w: &mut Writer<'_>,
    id: Option<Id<'_>>,
    code: ErrorCode,
    message: &mut dyn FnMut(&mut Writer<'_>),
) {
    write_error(w, id, code, message, NO_DATA);
}

/// An error response alone at the start of `out` (see [`write_error_dyn`]): its length, or 0
/// when `out` cannot hold it.
#[inline(never)]
pub(crate) fn error_into(
    out: &mut [u8],
    id: Option<Id<'_>>,
    code: ErrorCode,
    message: &mut dyn FnMut(&mut Writer<'_>),
) -> usize {
    let mut w = Writer::new(out);
    write_error_dyn(&mut w, id, code, message);
    if w.fits() { w.needed() } else { 0 }
}

/// No `data` member, for [`write_error`].
pub const NO_DATA: Option<fn(&mut Writer<'_>)> = None;

#[cfg(test)]
mod test {
    use super::*;
    use crate::wire::json::{DEFAULT_MAX_DEPTH, Json};

    #[test]
    fn error_heads_carry_the_codes() {
        for code in [
            ErrorCode::ParseError,
            ErrorCode::InvalidRequest,
            ErrorCode::MethodNotFound,
            ErrorCode::InvalidParams,
            ErrorCode::InternalError,
            ErrorCode::ResourceNotFound,
            ErrorCode::HeaderMismatch,
            ErrorCode::MissingRequiredClientCapability,
            ErrorCode::UnsupportedProtocolVersion,
        ] {
            let expected = format!(",\"error\":{{\"code\":{},\"message\":", code.code());
            assert_eq!(code.error_head(), expected.as_bytes(), "{code:?}");
        }
    }

    #[test]
    fn envelopes() {
        let id = Id::from_json(Json::parse(br#""x\"1""#, DEFAULT_MAX_DEPTH).unwrap()).unwrap();
        let mut buf = [0u8; 128];
        let mut w = Writer::new(&mut buf);
        write_result(&mut w, id, |w| w.raw(b"{}"));
        assert_eq!(
            w.written().unwrap(),
            br#"{"jsonrpc":"2.0","id":"x\"1","result":{}}"#
        );
        let mut w = Writer::new(&mut buf);
        write_error(
            &mut w,
            None,
            ErrorCode::ParseError,
            |w| w.text("bad \"json\""),
            NO_DATA,
        );
        assert_eq!(
            w.written().unwrap(),
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad \"json\""}}"#
        );
    }
}
