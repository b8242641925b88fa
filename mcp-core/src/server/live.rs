//! What the server keeps of live resources (feature `resources`): the registered resources, the
//! session's subscriptions and the 2026-07-28 listen streams, in the storage its capacities
//! give ([`Live`], [`Listen`]). The code that serves them is `resources.rs`.

use super::{Capacities, Peer};
use crate::wire::request::{KeptRaw, MAX_ID_LEN};

/// One 2026-07-28 `subscriptions/listen` stream.
#[derive(Debug)]
pub struct Listen {
    /// The listen request's id (raw JSON), none for a free slot.
    pub(super) id: KeptRaw<MAX_ID_LEN>,
    /// The client that opened it: ids are that client's, and only it can end the stream.
    pub(super) peer: Peer,
    /// The live resources it listens to.
    pub(super) resources: u64,
    /// Published changes not yet written on it.
    pub(super) pending: u64,
}

impl Listen {
    /// A free slot.
    pub(crate) const FREE: Listen = Listen {
        id: KeptRaw::NONE,
        peer: Peer::ONLY,
        resources: 0,
        pending: 0,
    };

    /// The stream `peer` opened with the request `id`.
    pub(super) fn is(&self, peer: Peer, id: &[u8]) -> bool {
        self.peer == peer && self.id.get() == Some(id)
    }
}

/// Live resources, the session's subscriptions and the listen streams.
pub(crate) struct Live<'t, C: 't, K: Capacities> {
    pub(super) resources: K::Live<'t, C>,
    /// Subscribed through `resources/subscribe` (or [`Server::subscribe`]).
    pub(super) subscribed: u64,
    /// Published changes not yet written to the session.
    pub(super) pending: u64,
    pub(super) listens: K::Listens,
}

impl<'t, C, K: Capacities> Live<'t, C, K> {
    pub(crate) const fn new(resources: K::Live<'t, C>, listens: K::Listens) -> Self {
        Live {
            resources,
            subscribed: 0,
            pending: 0,
            listens,
        }
    }
}
