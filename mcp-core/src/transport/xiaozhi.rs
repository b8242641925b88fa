//! The xiaozhi envelope: how xiaozhi devices carry MCP over their WebSocket (or MQTT) channel.
//!
//! The device opens with a hello announcing `"features":{"mcp":true}`; the server answers with its
//! own hello carrying a `session_id`. MCP messages then travel as
//! `{"session_id":"…","type":"mcp","payload":{…JSON-RPC…}}`. Other message types (audio control,
//! `listen`, `tts`, …) are not MCP and are left to the firmware.
//!
//! Backends send MCP before the hello exchange completes and sometimes without `session_id`:
//! [`Envelope::mcp_payload`] accepts both. A payload that is a string (JSON-in-a-string) is not a
//! JSON-RPC object and is dropped.

use crate::wire::json::{Json, JsonError, JsonStr};
use crate::wire::writer::Writer;

/// The hello a device sends first, announcing MCP support.
pub const DEVICE_HELLO: &str = concat!(
    r#"{"type":"hello","version":1,"features":{"mcp":true},"transport":"websocket","#,
    r#""audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}"#
);

/// The longest backend `session_id` (decoded bytes) a device echoes in its replies or logs.
/// Backends name sessions with UUIDs (36 bytes) or similar tokens.
pub const MAX_SESSION_ID_LEN: usize = 128;

/// `true` when a backend's `session_id` may be echoed and logged: 1 to [`MAX_SESSION_ID_LEN`]
/// bytes once decoded, every character printable ASCII (space to `~`). Anything else — a 1 MiB
/// id, control characters (a line break or an escape sequence in a log), non-ASCII (look-alike
/// and bidirectional characters) — is no session id a device should repeat; the transport
/// ignores it (replies carry no `session_id` then). Work is bounded: a raw form longer than six
/// times the limit (every character a `\uXXXX` escape) is refused without decoding.
pub fn is_usable_session_id(id: JsonStr<'_>) -> bool {
    if id.raw().is_empty() || id.raw().len() > 6 * MAX_SESSION_ID_LEN {
        return false;
    }
    let mut len = 0;
    for c in id.chars() {
        if !(' '..='~').contains(&c) {
            return false;
        }
        len += 1;
    }
    len <= MAX_SESSION_ID_LEN
}

/// A parsed envelope (any `type`).
#[derive(Debug, Clone, Copy)]
pub struct Envelope<'a> {
    /// `session_id`, if present and a string.
    pub session_id: Option<JsonStr<'a>>,
    /// `type`, if present and a string.
    pub kind: Option<JsonStr<'a>>,
    /// `payload`, if present.
    pub payload: Option<Json<'a>>,
}

impl<'a> Envelope<'a> {
    /// Parses one envelope. Unknown members are ignored.
    pub fn parse(bytes: &'a [u8], max_depth: u8) -> Result<Self, JsonError> {
        let root = Json::parse(bytes, max_depth)?;
        let mut env = Envelope {
            session_id: None,
            kind: None,
            payload: None,
        };
        for (k, v) in root.members().into_iter().flatten() {
            if k.eq_str("session_id") {
                env.session_id = v.as_str();
            } else if k.eq_str("type") {
                env.kind = v.as_str();
            } else if k.eq_str("payload") {
                env.payload = Some(v);
            }
        }
        Ok(env)
    }

    /// The `session_id` when it is present and usable ([`is_usable_session_id`]); `None` when it
    /// is absent, not a string, or unusable (compare with [`session_id`](Self::session_id) to
    /// tell an unusable one apart).
    pub fn usable_session_id(&self) -> Option<JsonStr<'a>> {
        self.session_id.filter(|s| is_usable_session_id(*s))
    }

    /// `true` when `type` is `kind`.
    pub fn is(&self, kind: &str) -> bool {
        self.kind.is_some_and(|k| k.eq_str(kind))
    }

    /// The JSON-RPC message carried by an `mcp` envelope: the payload's bytes when it is an
    /// object (hand them to [`Server::handle`](crate::Server::handle)).
    pub fn mcp_payload(&self) -> Option<&'a [u8]> {
        let payload = self.payload.filter(|_| self.is("mcp"))?;
        payload.members().map(|_| payload.raw())
    }
}

/// Wraps a response in an `mcp` envelope, in place: writes the envelope head, lets `inner` write
/// the payload after it, then closes the envelope. Returns the total length, or 0 when `inner`
/// wrote nothing (a notification needs no answer) or the envelope does not fit.
///
/// ```
/// use mcp_core::transport::xiaozhi::wrap;
/// let mut out = [0u8; 128];
/// let n = wrap(Some("s1"), &mut out, |buf| {
///     buf[..2].copy_from_slice(b"{}");
///     2
/// });
/// assert_eq!(&out[..n], br#"{"session_id":"s1","type":"mcp","payload":{}}"#);
/// ```
pub fn wrap(
    session_id: Option<&str>,
    out: &mut [u8],
    inner: impl FnOnce(&mut [u8]) -> usize,
) -> usize {
    let mut w = Writer::new(out);
    w.raw(b"{");
    if let Some(id) = session_id {
        w.key("session_id");
        w.string(id);
        w.raw(b",");
    }
    w.raw(b"\"type\":\"mcp\",\"payload\":");
    if !w.fits() {
        return 0;
    }
    let head = w.needed();
    let Some(room) = out.len().checked_sub(head + 1) else {
        return 0;
    };
    let Some(body) = out.get_mut(head..head + room) else {
        return 0;
    };
    let n = inner(body);
    if n == 0 || n > room {
        return 0;
    }
    match out.get_mut(head + n) {
        Some(b) => *b = b'}',
        None => return 0,
    }
    head + n + 1
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::wire::json::DEFAULT_MAX_DEPTH;

    #[test]
    fn envelopes_with_and_without_session() {
        let e = Envelope::parse(br#"{"session_id":"x","type":"mcp","payload":{"jsonrpc":"2.0","id":1,"method":"ping"}}"#, DEFAULT_MAX_DEPTH).unwrap();
        assert_eq!(
            e.mcp_payload(),
            Some(&br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#[..])
        );
        assert!(e.session_id.unwrap().eq_str("x"));
        let e = Envelope::parse(
            br#"{"type":"mcp","payload":{"jsonrpc":"2.0","method":"x"}}"#,
            DEFAULT_MAX_DEPTH,
        )
        .unwrap();
        assert!(e.mcp_payload().is_some());
        let e = Envelope::parse(
            br#"{"type":"mcp","payload":"{\"jsonrpc\":\"2.0\"}"}"#,
            DEFAULT_MAX_DEPTH,
        )
        .unwrap();
        assert_eq!(e.mcp_payload(), None);
        let e = Envelope::parse(br#"{"type":"listen","payload":{}}"#, DEFAULT_MAX_DEPTH).unwrap();
        assert_eq!(e.mcp_payload(), None);
        let hello: serde_json::Value = serde_json::from_str(DEVICE_HELLO).unwrap();
        assert_eq!(hello["features"]["mcp"], true);
    }

    #[test]
    fn session_ids_are_bounded_before_anyone_echoes_them() {
        let sid = |json: &str| {
            let text = format!(r#"{{"type":"hello","session_id":{json}}}"#);
            let e = Envelope::parse(text.as_bytes(), DEFAULT_MAX_DEPTH).unwrap();
            (e.session_id.is_some(), e.usable_session_id().is_some())
        };
        assert_eq!(
            sid(r#""3f2b9a4e-1c3d-4e5f-8a9b-0c1d2e3f4a5b""#),
            (true, true)
        );
        assert_eq!(sid(r#""a b~!""#), (true, true));
        assert_eq!(sid(&format!(r#""{}""#, "x".repeat(128))), (true, true));
        assert_eq!(sid(&format!(r#""{}""#, "x".repeat(129))), (true, false));
        // Escapes count as what they decode to.
        assert_eq!(
            sid(&format!(r#""{}""#, "\\u0041".repeat(128))),
            (true, true)
        );
        assert_eq!(
            sid(&format!(r#""{}""#, "\\u0041".repeat(129))),
            (true, false)
        );
        // A megabyte of id (a few KiB under Miri, where checking a megabyte takes half an hour).
        let huge = if cfg!(miri) { 1 << 12 } else { 1 << 20 };
        assert_eq!(sid(&format!(r#""{}""#, "y".repeat(huge))), (true, false));
        for bad in [
            r#""""#,
            r#""a\nb""#,
            r#""a\u001b[31mb""#,
            r#""tab\there""#,
            r#""del\u007f""#,
            r#""\u202eevil""#,
            r#""会话""#,
        ] {
            assert_eq!(sid(bad), (true, false), "{bad}");
        }
        assert_eq!(sid("42"), (false, false));
    }

    #[test]
    fn wrap_escapes_and_handles_empty_and_overflow() {
        let mut out = [0u8; 64];
        let n = wrap(Some("a\"b"), &mut out, |b| {
            b[..2].copy_from_slice(b"{}");
            2
        });
        let v: serde_json::Value = serde_json::from_slice(&out[..n]).unwrap();
        assert_eq!(v["session_id"], "a\"b");
        assert_eq!(wrap(None, &mut out, |_| 0), 0);
        let n = wrap(None, &mut out, |b| {
            b[..2].copy_from_slice(b"{}");
            2
        });
        assert_eq!(&out[..n], br#"{"type":"mcp","payload":{}}"#);
        assert_eq!(wrap(Some("s"), &mut [0u8; 10], |_| 1), 0);
    }
}
