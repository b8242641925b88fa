//! The xiaozhi envelope: how xiaozhi devices carry MCP over their WebSocket (or MQTT) channel.
//!
//! The device opens with a hello announcing `"features":{"mcp":true}`; the server answers with its
//! own hello carrying a `session_id`. MCP messages then travel as
//! `{"session_id":"…","type":"mcp","payload":{…JSON-RPC…}}`. Other message types (audio control,
//! `listen`, `tts`, …) are not MCP and are left to the firmware.
//!
//! Backends send MCP before the hello exchange completes and sometimes without `session_id`:
//! [`Envelope::mcp_payload`] accepts both. A payload that is a string (JSON-in-a-string) is not a
//! JSON-RPC object and is dropped. A payload nested deeper than the engine reads still reaches
//! it (the envelope is read as deep as the checker can follow), and a text that is no envelope
//! at all is answered as the engine answers anything unreadable: every request gets an answer.
//!
//! **The link's rule** (for the firmware's WebSocket client; no clock here, the caller keeps
//! time): a connection has a *session* once the backend's hello arrived. The device waits
//! [`HELLO_TIMEOUT_MS`] for it, then closes the connection and connects again — a backend may
//! drop a hello (xinnan's server drops one that arrives while it still loads the device's
//! configuration) and would otherwise leave the device without a session until its idle close.
//! [`Reconnect`] says how long to wait before the next attempt: the wait grows on every
//! connection that ends without a session (refused, timed out, closed right after the upgrade,
//! no hello in time) and starts again from the first step only after one that had a session.

use crate::wire::json::{Json, JsonError, JsonStr, MAX_DEPTH_LIMIT};
use crate::wire::protocol;
use crate::wire::writer::Writer;

/// The hello a device sends first, announcing MCP support.
pub const DEVICE_HELLO: &str = concat!(
    r#"{"type":"hello","version":1,"features":{"mcp":true},"transport":"websocket","#,
    r#""audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}"#
);

/// How long a device waits for the backend's hello, from sending its own, before it closes the
/// connection and connects again (ms): 10 s, as xiaozhi-esp32's firmware waits.
pub const HELLO_TIMEOUT_MS: u32 = 10_000;

/// When a xiaozhi device connects again: capped exponential backoff with "equal jitter", counted
/// in connections that ended without a session.
///
/// Every connection that ends before the backend's hello arrived — refused, timed out, closed by
/// the backend right after the upgrade (one that turns away a device without a `Device-Id`
/// does), no hello within [`HELLO_TIMEOUT_MS`] — is one more failure: the wait doubles from
/// `first_ms` up to `max_ms`. An accepted TCP connection or WebSocket upgrade is not progress;
/// only a session is, and after a connection that had one the next wait is the first step again.
/// The wait is drawn between half of the step and all of it, so that a fleet that lost its
/// backend together does not return together. No clock and no randomness of its own: the caller
/// sleeps, and passes a random number in.
///
/// ```
/// use mcp_core::transport::xiaozhi::Reconnect;
/// let mut r = Reconnect::new(1_000, 30_000);
/// // A backend that accepts and closes at once: 1, 2, 4, 8, 16, then 30 s (before jitter).
/// let steps: Vec<u32> = (0..7).map(|_| r.ended(false, u32::MAX)).collect();
/// assert_eq!(steps, [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
/// // A session, then the link drops: the first step again.
/// assert_eq!(r.ended(true, u32::MAX), 1_000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Reconnect {
    first_ms: u32,
    max_ms: u32,
    failures: u32,
}

impl Reconnect {
    /// 1 s, doubling up to 30 s (xiaozhi-esp32's firmware, and most device SDKs).
    pub const DEFAULT: Reconnect = Reconnect::new(1_000, 30_000);

    /// A backoff whose first step is `first_ms`, doubling up to `max_ms` (at least `first_ms`).
    pub const fn new(first_ms: u32, max_ms: u32) -> Self {
        Reconnect {
            first_ms,
            max_ms,
            failures: 0,
        }
    }

    /// A connection ended; `session`: the backend's hello had arrived on it. Returns how long
    /// to wait before the next attempt (ms): the [`step`](Self::step) for the connections that
    /// ended without a session since the last one that had a session, drawn between half of it
    /// and all of it by `random` (any value; `u32::MAX` gives the whole step).
    pub fn ended(&mut self, session: bool, random: u32) -> u32 {
        self.failures = if session {
            1
        } else {
            self.failures.saturating_add(1)
        };
        Self::jitter(self.step(self.failures), random)
    }

    /// Connections ended without a session since the last one that had a session (counting
    /// that one as the first); 0 before any ended.
    pub const fn failures(&self) -> u32 {
        self.failures
    }

    /// The wait before jitter after `failures` such ends (1: the first): the first step doubled
    /// `failures - 1` times, at most the maximum (and never below the first step).
    pub const fn step(&self, failures: u32) -> u32 {
        let doublings = match failures.checked_sub(1) {
            Some(d) if d < 31 => d,
            Some(_) => 31,
            None => 0,
        };
        let max = if self.max_ms > self.first_ms {
            self.max_ms
        } else {
            self.first_ms
        };
        let step = self.first_ms.saturating_mul(1 << doublings);
        if step < max { step } else { max }
    }

    /// "Equal jitter": between half of `step_ms` and all of it, `random` choosing where (in
    /// proportion: 0 gives the half, `u32::MAX` the whole).
    pub fn jitter(step_ms: u32, random: u32) -> u32 {
        let half = step_ms / 2;
        let span = step_ms - half;
        let part = u64::from(random) * u64::from(span) / u64::from(u32::MAX);
        half + u32::try_from(part).unwrap_or(span)
    }
}

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
    ///
    /// The envelope is checked as deep as the checker can follow ([`MAX_DEPTH_LIMIT`]), not to
    /// the engine's limit: only its own members are read here, and a payload nested deeper than
    /// the engine reads ([`Config::max_depth`](crate::Config::max_depth)) must still reach it,
    /// so that the engine answers the request -32700 with its id instead of the device staying
    /// silent. An `Err` is a text nobody can read as an envelope: a transport answers it as the
    /// engine answers any unreadable message (hand the text itself to the engine: -32700 with
    /// `id: null`, in an `mcp` envelope).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, JsonError> {
        let root = Json::parse(bytes, MAX_DEPTH_LIMIT)?;
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
    match session_id {
        Some(id) => {
            w.raw(protocol::SESSION_ENVELOPE_OPEN);
            w.string(id);
            w.raw(b",");
        }
        None => w.raw(b"{"),
    }
    w.raw(protocol::MCP_PAYLOAD);
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

    #[test]
    fn envelopes_with_and_without_session() {
        let e = Envelope::parse(br#"{"session_id":"x","type":"mcp","payload":{"jsonrpc":"2.0","id":1,"method":"ping"}}"#).unwrap();
        assert_eq!(
            e.mcp_payload(),
            Some(&br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#[..])
        );
        assert!(e.session_id.unwrap().eq_str("x"));
        let e =
            Envelope::parse(br#"{"type":"mcp","payload":{"jsonrpc":"2.0","method":"x"}}"#).unwrap();
        assert!(e.mcp_payload().is_some());
        let e = Envelope::parse(br#"{"type":"mcp","payload":"{\"jsonrpc\":\"2.0\"}"}"#).unwrap();
        assert_eq!(e.mcp_payload(), None);
        let e = Envelope::parse(br#"{"type":"listen","payload":{}}"#).unwrap();
        assert_eq!(e.mcp_payload(), None);
        let hello: serde_json::Value = serde_json::from_str(DEVICE_HELLO).unwrap();
        assert_eq!(hello["features"]["mcp"], true);
    }

    /// Issue 33, finding 7: a payload nested deeper than an engine reads is still handed on
    /// (the engine answers it with its id); only what the checker cannot follow is refused.
    #[test]
    fn a_deep_payload_still_reaches_the_engine() {
        let nested = |depth: usize| "[".repeat(depth) + &"]".repeat(depth);
        let text = format!(
            r#"{{"type":"mcp","payload":{{"jsonrpc":"2.0","id":7,"method":"ping","params":{{"a":{}}}}}}}"#,
            nested(40)
        );
        let e = Envelope::parse(text.as_bytes()).unwrap();
        assert!(e.mcp_payload().is_some_and(|p| p.len() > 80));
        let text = format!(r#"{{"type":"mcp","payload":{{"a":{}}}}}"#, nested(200));
        assert_eq!(
            Envelope::parse(text.as_bytes()).err(),
            Some(JsonError::TooDeep(MAX_DEPTH_LIMIT))
        );
    }

    #[test]
    fn session_ids_are_bounded_before_anyone_echoes_them() {
        let sid = |json: &str| {
            let text = format!(r#"{{"type":"hello","session_id":{json}}}"#);
            let e = Envelope::parse(text.as_bytes()).unwrap();
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
    fn the_wait_grows_on_every_end_without_a_session_and_resets_only_after_one() {
        let mut r = Reconnect::DEFAULT;
        assert_eq!(r.failures(), 0);
        // Refused, accepted and closed, no hello in time: all the same, the wait doubles to 30 s.
        let whole: [u32; 8] = core::array::from_fn(|_| r.ended(false, u32::MAX));
        assert_eq!(
            whole,
            [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]
        );
        assert_eq!(r.failures(), 8);
        // The least the jitter gives is half of the step.
        assert_eq!(r.ended(false, 0), 15_000);
        // A session: the next wait is the first step again, then it grows as before.
        assert_eq!(r.ended(true, u32::MAX), 1_000);
        assert_eq!(r.failures(), 1);
        assert_eq!(r.ended(false, u32::MAX), 2_000);
        // An endless run of failures stays at the cap (no overflow).
        for _ in 0..100 {
            r.ended(false, 7);
        }
        assert_eq!(r.failures(), 102);
        assert_eq!(r.step(u32::MAX), 30_000);
        assert_eq!(r.step(0), 1_000);
        // A maximum below the first step: the first step.
        assert_eq!(Reconnect::new(5_000, 1_000).step(9), 5_000);
        assert_eq!(Reconnect::new(u32::MAX, u32::MAX).step(40), u32::MAX);
    }

    #[test]
    fn jitter_stays_between_half_and_all_of_the_step() {
        for step in [0, 1, 2, 3, 999, 1_000, 30_000, u32::MAX - 1, u32::MAX] {
            for random in [0, 1, 2, 12_345, u32::MAX / 2, u32::MAX - 1, u32::MAX] {
                let w = Reconnect::jitter(step, random);
                assert!(w >= step / 2 && w <= step, "{step} {random}: {w}");
            }
            assert_eq!(Reconnect::jitter(step, 0), step / 2);
            assert_eq!(Reconnect::jitter(step, u32::MAX), step);
        }
        assert_eq!(Reconnect::jitter(30_000, u32::MAX), 30_000);
        assert_eq!(Reconnect::jitter(30_000, u32::MAX / 2), 22_499);
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
