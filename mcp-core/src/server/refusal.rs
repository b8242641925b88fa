//! What is refused before any method runs: a 2026-07-28 request whose `_meta` lacks what that
//! revision requires, or names a version this engine does not speak.

use super::Status;
use super::era::Era;
#[cfg(feature = "modern")]
use super::era::Modern;
#[cfg(feature = "modern")]
use super::initialize::write_supported_versions;
#[cfg(feature = "modern")]
use super::params::{members, once};
use super::respond::Respond;
#[cfg(feature = "modern")]
use super::{LogLevel, MAX_IDEMPOTENCY_KEY_LEN, MAX_PROGRESS_TOKEN_LEN, MODERN_REVISION};
use crate::wire::frame::Frame;
#[cfg(feature = "modern")]
use crate::wire::frame::{Found, Member};
#[cfg(feature = "modern")]
use crate::wire::json::Json;
use crate::wire::json::JsonStr;
#[cfg(feature = "modern")]
use crate::wire::json::Kind;
#[cfg(feature = "modern")]
use crate::wire::protocol;
use crate::wire::response::ErrorCode;
#[cfg(feature = "modern")]
use crate::wire::writer::Writer;

#[cfg(feature = "modern")]
const BAD_IDEMPOTENCY_KEY: &str = "Invalid params: io.github.mcu-mcp/idempotencyKey must be a non-empty string of at most 128 bytes";

/// The most characters of a requested protocol version that a -32022 echoes (a real one has ten);
/// fewer when the buffer has no room for them (`Writer::echo`).
#[cfg(feature = "modern")]
const MAX_ECHOED_VERSION_CHARS: usize = 16;

pub(super) const BAD_LOG_LEVEL: &str = "Invalid params: level must be one of debug, info, notice, warning, error, critical, alert, emergency";

/// Why a 2026-07-28 request is refused before dispatch.
pub(super) enum Refusal<'i> {
    /// A required `_meta` field is missing or malformed: -32602, HTTP 400.
    Meta(&'static str),
    /// The requested version is not spoken: -32022 with the supported list, HTTP 400.
    #[cfg(feature = "modern")]
    Version(JsonStr<'i>),
    /// Only the lifetime, without the feature `modern`.
    #[cfg(not(feature = "modern"))]
    #[allow(dead_code, reason = "never built: it only carries the lifetime")]
    Never(
        core::marker::PhantomData<JsonStr<'i>>,
        core::convert::Infallible,
    ),
}

impl Refusal<'_> {
    #[inline(never)]
    pub(super) fn answer(self, respond: Respond<'_, '_>) -> usize {
        match self {
            Refusal::Meta(msg) => {
                respond.status.set(Status::BadRequest);
                respond.error_text(ErrorCode::InvalidParams, msg)
            }
            #[cfg(not(feature = "modern"))]
            Refusal::Never(_, never) => match never {},
            #[cfg(feature = "modern")]
            Refusal::Version(requested) => respond.error_with(
                ErrorCode::UnsupportedProtocolVersion,
                |w| w.text("Unsupported protocol version"),
                Some(|w: &mut Writer<'_>| {
                    w.raw(protocol::SUPPORTED_OPEN);
                    write_supported_versions(w);
                    w.raw(protocol::REQUESTED);
                    w.begin_string();
                    // After it: `"` and the closing braces of data, error and response.
                    w.echo(requested, MAX_ECHOED_VERSION_CHARS, 4);
                    w.end_string();
                    w.raw(b"}");
                }),
            ),
        }
    }
}

/// Without the feature `modern` every request is a legacy one (`params._meta` is not read); a
/// transport that requires the 2026-07-28 rules gets -32602 (HTTP 400).
#[cfg(not(feature = "modern"))]
pub(super) fn classify<'i>(_: &Frame<'i>, stateless: bool) -> (Era<'i>, Option<Refusal<'i>>) {
    let refusal = stateless.then_some(Refusal::Meta(
        "Invalid params: this device does not speak the 2026-07-28 protocol revision",
    ));
    (Era::Legacy, refusal)
}

/// Sorts a request into its era from `params._meta` (or the transport's word), and checks what
/// 2026-07-28 requires there. (Not inlined: its temporaries stay out of the dispatch's frame.)
#[cfg(feature = "modern")]
#[inline(never)]
pub(super) fn classify<'i>(frame: &Frame<'i>, stateless: bool) -> (Era<'i>, Option<Refusal<'i>>) {
    const NO_META: &str = "Invalid params: a 2026-07-28 request needs params._meta with \
                           io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities";
    if !stateless && frame.get(Member::Meta) == Found::Absent {
        // The common case: no `_meta`, no transport rule: a legacy request.
        return (Era::Legacy, None);
    }
    // The checking pass recorded `params._meta`'s members (those of an object, once each).
    let meta = once(
        [
            Member::ProtocolVersion,
            Member::ClientCapabilities,
            Member::LogLevel,
            Member::ProgressToken,
            Member::IdempotencyKey,
        ]
        .map(|m| frame.get(m)),
    )
    .filter(|_| frame.get(Member::Meta) != Found::Repeated);
    let Some([Some(version), caps, level, token, key]) = meta else {
        // No protocol version: a legacy request, unless the transport requires 2026-07-28.
        return match stateless {
            true => (Era::Modern(Modern::NONE), Some(Refusal::Meta(NO_META))),
            false => (Era::Legacy, None),
        };
    };
    match modern(version, caps, level, token, key) {
        Ok(m) => (Era::Modern(m), None),
        Err(refusal) => (Era::Modern(Modern::NONE), Some(refusal)),
    }
}

/// What a 2026-07-28 request states in `_meta`, checked: the version (a string, one spoken),
/// the client's capabilities (an object), and when present the idempotency key, the log level
/// and the progress token.
#[cfg(feature = "modern")]
fn modern<'i>(
    version: Json<'i>,
    caps: Option<Json<'i>>,
    level: Option<Json<'i>>,
    token: Option<Json<'i>>,
    key: Option<Json<'i>>,
) -> Result<Modern<'i>, Refusal<'i>> {
    let Some(version) = version.as_str() else {
        return Err(Refusal::Meta(
            "Invalid params: io.modelcontextprotocol/protocolVersion must be a string",
        ));
    };
    let Some(caps) = caps.filter(|c| c.members().is_some()) else {
        return Err(Refusal::Meta(
            "Invalid params: _meta needs io.modelcontextprotocol/clientCapabilities (an object)",
        ));
    };
    if !version.eq_str(MODERN_REVISION) {
        return Err(Refusal::Version(version));
    }
    let idempotency_key = match key.map(|k| k.as_str()) {
        None => None,
        Some(Some(k)) if !k.raw().is_empty() && k.raw().len() <= MAX_IDEMPOTENCY_KEY_LEN => Some(k),
        Some(_) => return Err(Refusal::Meta(BAD_IDEMPOTENCY_KEY)),
    };
    let log_level = match level.map(|l| l.as_str().and_then(LogLevel::parse)) {
        None => None,
        Some(Some(l)) => Some(l),
        Some(None) => return Err(Refusal::Meta(BAD_LOG_LEVEL)),
    };
    let tasks = members(Some(caps), ["extensions"])
        .ok()
        .and_then(|[e]| {
            members(
                e.filter(|e| e.members().is_some()),
                ["io.modelcontextprotocol/tasks"],
            )
            .ok()
        })
        .is_some_and(|[t]| t.is_some());
    let progress_token = token.filter(|t| {
        t.raw().len() <= MAX_PROGRESS_TOKEN_LEN
            && (t.kind() == Kind::String || t.is_plain_integer())
    });
    Ok(Modern {
        tasks,
        log_level,
        progress_token,
        caps: Some(caps),
        idempotency_key,
    })
}
