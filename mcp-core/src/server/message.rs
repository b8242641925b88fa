//! One message in ([`Input`]), what came of it ([`Handled`]), and the HTTP status class a
//! transport answers with ([`Status`]).

use super::{Delivery, Event, Peer, Principal, Receipt, Session};

/// One incoming message, for [`Server::handle_with`](super::Server::handle_with).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Input<'i> {
    /// The message bytes.
    pub bytes: &'i [u8],
    /// Who is on the other end.
    pub principal: Principal,
    /// The transport requires the 2026-07-28 (stateless) rules even if the body does not say so
    /// (its `MCP-Protocol-Version` header names that revision): a body without the required
    /// `_meta` is then refused with -32602 instead of being served as a legacy request.
    pub stateless: bool,
    /// Who sent it, as the transport tells peers apart: the scope of retransmissions.
    pub peer: Peer,
    /// The client's session, when the transport keeps one per client ([`Session`]); `None`: the
    /// engine's own (a point-to-point link).
    pub session: Option<Session>,
    /// A held call dispatched again after a person said yes.
    pub(crate) confirmed: bool,
}

impl<'i> Input<'i> {
    /// A message from `principal`, era decided by its body.
    pub const fn new(bytes: &'i [u8], principal: Principal) -> Self {
        Input {
            bytes,
            principal,
            stateless: false,
            peer: Peer::ONLY,
            session: None,
            confirmed: false,
        }
    }

    setters! {
        /// Lends the sending client's session (a transport serving several clients with one
        /// engine; see [`Session`]). The session after the message comes back in
        /// [`Handled::session`].
        session(session: Session) => session = Some(session);
        /// Names the peer (default [`Peer::ONLY`]: a point-to-point link).
        peer(peer: Peer) => peer = peer;
        /// Requires the 2026-07-28 rules.
        stateless(yes: bool) => stateless = yes;
    }
}

/// What [`Server::handle`](super::Server::handle) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Handled<'i> {
    /// Length of the response written at the start of the output buffer (0: send nothing now).
    pub len: usize,
    /// An event for the application, if any.
    pub event: Option<Event<'i>>,
    /// The HTTP status class the specification mandates for this response.
    pub status: Status,
    /// The request followed the 2026-07-28 (stateless) rules.
    pub modern: bool,
    /// A request was accepted but its answer comes later from [`Server::poll`](super::Server::poll) (a parked
    /// `tasks/result`, a call held for a person's yes or for its outcome); a Streamable HTTP
    /// transport keeps the response stream open for it.
    pub deferred: bool,
    /// The tool whose handler ran for this message, if one did. A host whose other engines act
    /// on the same board passes it to their [`Server::touched`](super::Server::touched), so that none of them answers a
    /// later retransmission with evidence this call made stale.
    pub ran: Option<&'static str>,
    /// The remembered answer of an acting call (run now, or replayed): tell the engine what
    /// became of it with [`Server::delivered`](super::Server::delivered).
    pub receipt: Option<Receipt>,
    /// `Some` when the answer is a replay: the request was a retransmission and nothing ran
    /// again. The value is what the transport had reported about the first answer.
    pub replay: Option<Delivery>,
    /// The client's session after this message, when the input lent one ([`Input::session`]):
    /// keep it for the client's next message.
    pub session: Option<Session>,
}

impl Handled<'_> {
    /// Nothing written, nothing to report.
    pub(crate) const fn empty() -> Self {
        Handled {
            len: 0,
            event: None,
            status: Status::Ok,
            modern: false,
            deferred: false,
            ran: None,
            receipt: None,
            replay: None,
            session: None,
        }
    }
}

/// [`Server::handle`](super::Server::handle) could not write even an error response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum HandleError {
    /// The output buffer is smaller than [`MIN_OUT_LEN`].
    #[error("output buffer smaller than {MIN_OUT_LEN} bytes")]
    OutputTooSmall,
}

/// The smallest output buffer [`Server::handle`](super::Server::handle) accepts: enough for any error response,
/// including one that echoes a [`MAX_ID_LEN`](crate::wire::request::MAX_ID_LEN)-byte id.
pub const MIN_OUT_LEN: usize = 320;

/// The HTTP status class the specification mandates for a response, for transports that have one
/// (Streamable HTTP); stdio and UART transports ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Status {
    /// 200 (or 202 when there is no response).
    Ok,
    /// 400: a malformed 2026-07-28 request, an unsupported version, a missing capability.
    BadRequest,
    /// 404: an unknown or removed method on the 2026-07-28 path.
    NotFound,
}
