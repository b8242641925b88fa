//! What passes between the dispatch's stages: who calls ([`Caller`]), where a request's effects
//! go ([`Effects`]), what a `tools/call` needs once it has passed every step before its handler
//! ([`Tail`], and [`Parked`] with its arguments while an async handler is awaited), and what
//! dispatching a message came to ([`Flow`]).

use super::era::Era;
use super::{Handled, LogLevel, Notify, Peer, Principal};
use crate::registry::Tool;
use crate::schema::Args;
use crate::wire::json::Json;
use crate::wire::request::Id;

/// Where a request's effects go, handed down the dispatch as one (by reference: built once in
/// the dispatch's frame): the application's context (tools act on it), the sink for
/// notifications (progress, log messages), the facts the caller gets back, and the slot an async
/// tool's call is parked in (`None`: the caller cannot await one).
pub(crate) struct Effects<'e, 'i, 't, C> {
    pub(crate) ctx: &'e mut C,
    pub(crate) notify: &'e mut dyn Notify,
    pub(crate) handled: &'e mut Handled<'i>,
    pub(crate) park: Option<&'e mut Option<Parked<'i, 't, C>>>,
}

/// Who is calling: the principal the firmware states and the peer the transport tells apart.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caller<'i> {
    pub(crate) principal: Principal,
    pub(crate) peer: Peer,
    /// The whole message, for a call held while a person is asked.
    #[cfg_attr(
        not(feature = "confirm"),
        allow(dead_code, reason = "only a held call reads the message again")
    )]
    pub(crate) raw: &'i [u8],
    /// A person already confirmed this call (it is being dispatched again).
    #[cfg_attr(
        not(feature = "confirm"),
        allow(dead_code, reason = "only a confirmed call is dispatched again")
    )]
    pub(crate) confirmed: bool,
}

/// A validated `tools/call` whose handler has not run yet: what the handler needs, and what the
/// answer needs afterwards. The output buffer is not in it: it goes back to the caller, who lends
/// it again to run the handler and to render the answer.
pub(crate) struct Parked<'i, 't, C> {
    pub(super) args: Args<'i>,
    pub(super) tail: Tail<'i, 't, C>,
}

/// The parked call without its arguments: what the reply and the answer need.
pub(super) struct Tail<'i, 't, C> {
    pub(super) info: (&'static str, &'static str),
    pub(super) id: Id<'i>,
    pub(super) era: Era<'i>,
    pub(super) tool: &'t Tool<C>,
    pub(super) index: usize,
    /// The handler's scratch area is `out[..room]`; escaped string arguments are decoded
    /// into `out[room..]`.
    pub(super) room: usize,
    pub(super) key: Option<u64>,
    pub(super) augmented: bool,
    pub(super) ttl_ms: Option<u64>,
    pub(super) token: Option<Json<'i>>,
    pub(super) log_level: Option<LogLevel>,
    pub(super) principal: Principal,
    /// The client that made the call.
    pub(super) peer: Peer,
}

/// What dispatching a message came to: an answer of this length, or an async tool's call
/// parked in the caller's slot, waiting for its handler.
pub(crate) enum Flow {
    Len(usize),
    Parked,
}
