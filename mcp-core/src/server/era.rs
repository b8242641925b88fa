//! The protocol era a request follows, and what a 2026-07-28 request states about itself: what
//! the answer's writers, the refusals and every method read of a request before it runs.

use crate::caller::LogLevel;
use crate::wire::json::{Json, JsonStr};

/// The protocol era a request follows: legacy (a session negotiated by `initialize`, or none),
/// or 2026-07-28 (everything stated per request in `params._meta`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Era<'i> {
    Legacy,
    #[cfg_attr(
        not(feature = "modern"),
        allow(dead_code, reason = "uninhabited without the 2026-07-28 revision")
    )]
    Modern(Modern<'i>),
}

/// What a 2026-07-28 request states about itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Modern<'i> {
    /// `io.modelcontextprotocol/clientCapabilities` declares the tasks extension.
    pub(crate) tasks: bool,
    /// `io.modelcontextprotocol/logLevel`.
    pub(crate) log_level: Option<LogLevel>,
    /// `progressToken`.
    pub(crate) progress_token: Option<Json<'i>>,
    /// `io.modelcontextprotocol/clientCapabilities`.
    pub(crate) caps: Option<Json<'i>>,
    /// [`IDEMPOTENCY_KEY`]: the client's word that a repeated request is a retransmission.
    pub(crate) idempotency_key: Option<JsonStr<'i>>,
    /// Without the feature `modern` no request follows the 2026-07-28 rules: this field makes
    /// [`Era::Modern`] uninhabited, so every branch for that era compiles away.
    #[cfg(not(feature = "modern"))]
    #[allow(
        dead_code,
        reason = "never read: it only makes the variant uninhabited"
    )]
    pub(crate) never: core::convert::Infallible,
}

#[cfg(feature = "modern")]
impl Modern<'_> {
    /// Nothing stated (a request refused before its `_meta` was read).
    pub(crate) const NONE: Self = Modern {
        tasks: false,
        log_level: None,
        progress_token: None,
        caps: None,
        idempotency_key: None,
    };
}

impl Era<'_> {
    pub(crate) const fn is_modern(&self) -> bool {
        matches!(self, Era::Modern(_))
    }
}
