//! What is refused before any method runs: a 2026-07-28 request whose `_meta` lacks what that
//! revision requires, or names a version this engine does not speak.

use super::Status;
use super::dispatch::Era;
#[cfg(feature = "modern")]
use super::dispatch::{Modern, members, once};
#[cfg(feature = "modern")]
use super::initialize::write_supported_versions;
use super::respond::Respond;
#[cfg(feature = "modern")]
use super::{LogLevel, MAX_IDEMPOTENCY_KEY_LEN, MAX_PROGRESS_TOKEN_LEN, MODERN_REVISION};
use crate::wire::frame::Frame;
#[cfg(feature = "modern")]
use crate::wire::frame::{Found, Member};
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
    #[allow(dead_code)]
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
                    w.json_str(requested);
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
    let modern_refusal = |msg| {
        let m = Modern {
            tasks: false,
            log_level: None,
            progress_token: None,
            caps: None,
            idempotency_key: None,
        };
        (Era::Modern(m), Some(Refusal::Meta(msg)))
    };
    // The checking pass recorded `params._meta`'s members (those of an object, once each).
    let Some([version, caps, level, token, key]) = once(
        [
            Member::ProtocolVersion,
            Member::ClientCapabilities,
            Member::LogLevel,
            Member::ProgressToken,
            Member::IdempotencyKey,
        ]
        .map(|m| frame.get(m)),
    )
    .filter(|_| frame.get(Member::Meta) != Found::Repeated) else {
        return if stateless {
            modern_refusal(NO_META)
        } else {
            (Era::Legacy, None)
        };
    };
    let Some(version) = version else {
        return if stateless {
            modern_refusal(NO_META)
        } else {
            (Era::Legacy, None)
        };
    };
    let mut modern = Modern {
        tasks: false,
        log_level: None,
        progress_token: None,
        caps: None,
        idempotency_key: None,
    };
    let refuse = |r| (Era::Modern(modern), Some(r));
    let Some(version) = version.as_str() else {
        return refuse(Refusal::Meta(
            "Invalid params: io.modelcontextprotocol/protocolVersion must be a string",
        ));
    };
    let Some(caps) = caps.filter(|c| c.members().is_some()) else {
        return refuse(Refusal::Meta(
            "Invalid params: _meta needs io.modelcontextprotocol/clientCapabilities (an object)",
        ));
    };
    if !version.eq_str(MODERN_REVISION) {
        return refuse(Refusal::Version(version));
    }
    let mut idempotency_key = None;
    if let Some(key) = key {
        match key.as_str() {
            Some(k) if !k.raw().is_empty() && k.raw().len() <= MAX_IDEMPOTENCY_KEY_LEN => {
                idempotency_key = Some(k);
            }
            _ => return refuse(Refusal::Meta(BAD_IDEMPOTENCY_KEY)),
        }
    }
    if let Some(level) = level {
        match level.as_str().and_then(LogLevel::parse) {
            Some(l) => modern.log_level = Some(l),
            None => return refuse(Refusal::Meta(BAD_LOG_LEVEL)),
        }
    }
    modern.caps = Some(caps);
    modern.idempotency_key = idempotency_key;
    modern.tasks = members(Some(caps), ["extensions"])
        .ok()
        .and_then(|[e]| {
            members(
                e.filter(|e| e.members().is_some()),
                ["io.modelcontextprotocol/tasks"],
            )
            .ok()
        })
        .is_some_and(|[t]| t.is_some());
    modern.progress_token = token.filter(|t| {
        t.raw().len() <= MAX_PROGRESS_TOKEN_LEN
            && (t.kind() == Kind::String || t.is_plain_integer())
    });
    (Era::Modern(modern), None)
}
