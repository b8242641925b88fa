//! The client sessions of a server on a broker, and what recent `initialize`s declared:
//! [`Sessions`].

use super::{Busy, ClientId, MAX_ID_LEN};
use crate::server::{Peer, Session};

/// How long what an `initialize` declared is kept for its client to speak on its RPC topic
/// (ms): a client sends `notifications/initialized` as soon as it has the answer to its
/// `initialize`.
pub const HALF_OPEN_MS: u64 = 10_000;

/// A client id kept in a table ([`ClientId`] is at most [`MAX_ID_LEN`] bytes: it always fits).
pub type Id = heapless::String<MAX_ID_LEN>;

/// Copies a checked id.
pub fn owned(client: ClientId<'_>) -> Id {
    let mut id = Id::new();
    let _ = id.push_str(client.as_str());
    id
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Slot {
    id: Id,
    /// Half-open (an `initialize` noted): when it came. A session: when its client last spoke.
    at_ms: u64,
    /// What the engine knows of this client (its revision, whether it asks its user): lent to
    /// the shared engine with each of its messages.
    session: Session,
}

/// What [`Sessions::initialize`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opened {
    /// Answer it: hand the `initialize` to the engine with
    /// [`half_open_session`](Sessions::half_open_session) and note what it makes of it
    /// ([`set_half_open_session`](Sessions::set_half_open_session)); answer on the client's RPC
    /// topic; subscribe to nothing for it. No session exists for it, and none is refused or
    /// ended for it. `displaced`: the oldest note gave its place (that client, if real, still
    /// gets its session when it speaks: only what its `initialize` declared is gone).
    HalfOpen {
        /// The client whose noted `initialize` was dropped to make room.
        displaced: Option<Id>,
    },
    /// Refused: every place of the session table is in use by a client that completed its
    /// handshake and none has been idle long enough. Answer it with
    /// [`write_busy`](super::write_busy); nothing changed.
    Refused(Busy),
}

/// What [`Sessions::spoke`] made of a message on a client's RPC topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spoke {
    /// A client with a session: serve the message with this session (and keep what the engine
    /// makes of it: [`set_session`](Sessions::set_session)). `restarted`: the client completed a
    /// new handshake, and this session replaced the one it had.
    Served {
        /// The session to lend the engine.
        session: Session,
        /// A new handshake replaced the client's session.
        restarted: bool,
    },
    /// The client spoke on its own RPC topic for the first time (since it last had a session):
    /// it has a session now (subscribe to its presence and capability topics); serve the
    /// message with `session` — what its `initialize` declared when that is still noted, else
    /// [`Session::default`]'s (a client that declared nothing, served by 2024-11-05's rules).
    /// `replaced`: the client idle longest gave its place (unsubscribe from its topics, and let
    /// the engine forget it).
    Promoted {
        /// The session to lend the engine.
        session: Session,
        /// The client whose session ended to make room.
        replaced: Option<Id>,
    },
    /// The client spoke for the first time, but every place is in use: answer a request with
    /// [`write_busy`](super::write_busy); what its `initialize` declared is dropped.
    Refused(Busy),
}

/// The client sessions of a server on a broker: a bounded table of the clients that spoke on
/// their own RPC topic, and beside it a small note of what recent `initialize`s declared.
///
/// The control topic is open to every client by design — a client starts with an `initialize`
/// there — and the client id that names the sender is whatever the sender wrote. Only a
/// client's own RPC topic says who speaks (under broker ACLs that bind a client id to its RPC
/// topic, only that client can). So an `initialize` makes no session and holds no place: it is
/// answered (on that client's RPC topic), and what the engine made of it (the revision, the
/// capabilities, the name: a [`Session`]) is **noted** in a table of `H` places that live
/// [`HALF_OPEN_MS`] at most, the oldest giving way to a newcomer. A client's session is made
/// when it first speaks on its own RPC topic (`notifications/initialized`, which every client
/// sends at once), with what its `initialize` declared if that is still noted: so
///
/// - no number of forged `initialize`, however many and however fast, refuses, ends or delays
///   a real client, however slow its handshake: a flood can only crowd out the *note* of a real
///   client's `initialize` (more than `H` of them within its handshake), and that client is
///   then served as one that declared nothing — no elicitation, no tasks, 2024-11-05's rules,
///   no name — rather than not at all;
/// - a session gives its place only when it has been idle for `idle_ms` (another client may
///   then take it); with every place in use, a new client is told the server is busy
///   ([`Busy::Full`]), at its `initialize` or when it speaks;
/// - an `initialize` that names a client with a session (a client that restarted, or someone
///   using its id on the open control topic) changes nothing of that session until that client
///   says `notifications/initialized` on its own RPC topic; anything else it says is served in
///   the session it had.
///
/// A server that subscribes to every client's RPC topic at once (`$mcp-rpc/+/{server-id}/…`,
/// [`ServerTopics::rpc_filter`](super::ServerTopics::rpc_filter)) spends nothing on an
/// `initialize` but its note and its answer: it subscribes to a client's presence and
/// capability topics only once the client has spoken there ([`Spoke::Promoted`]).
///
/// No clock of its own: the caller passes its milliseconds (any monotonic clock).
///
/// ```
/// use mcp_core::transport::mqtt::{Busy, ClientId, Opened, Sessions, Spoke};
/// let mut table: Sessions<2, 4> = Sessions::new(600_000, 10_000);
/// let alice = ClientId::new("alice").unwrap();
/// assert_eq!(table.initialize(alice, 0), Opened::HalfOpen { displaced: None });
/// // A flood of invented ids only turns the notes over, and never refuses anyone.
/// for i in 0..100 {
///     let id = format!("forged-{i}");
///     assert!(matches!(table.initialize(ClientId::new(&id).unwrap(), 10), Opened::HalfOpen { .. }));
/// }
/// // Alice, however slow, gets her session when she speaks on her own RPC topic.
/// assert!(matches!(table.spoke(alice, true, 30), Spoke::Promoted { replaced: None, .. }));
/// assert_eq!(table.confirmed().collect::<Vec<_>>(), ["alice"]);
/// ```
#[derive(Debug, Clone)]
pub struct Sessions<const N: usize, const H: usize> {
    /// Sessions that completed their handshake.
    open: heapless::Vec<Slot, N>,
    /// Half-open sessions, oldest first.
    half: heapless::Vec<Slot, H>,
    limit: usize,
    idle_ms: u64,
    half_life_ms: u64,
}

impl<const N: usize, const H: usize> Sessions<N, H> {
    /// Empty tables: a session idle for `idle_ms` may give its place to a new client; a
    /// half-open one lives `half_life_ms` ([`HALF_OPEN_MS`]).
    pub const fn new(idle_ms: u64, half_life_ms: u64) -> Self {
        Sessions {
            open: heapless::Vec::new(),
            half: heapless::Vec::new(),
            limit: N,
            idle_ms,
            half_life_ms,
        }
    }

    /// Holds at most `limit` sessions (1 to `N`; a host whose limit is a setting).
    #[must_use]
    pub const fn limit(mut self, limit: usize) -> Self {
        self.limit = if limit == 0 {
            1
        } else if limit > N {
            N
        } else {
            limit
        };
        self
    }

    /// Sessions held (clients that completed their handshake).
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// No session is held.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// Noted `initialize`s held (whether or not their time is up yet).
    pub fn half_open(&self) -> usize {
        self.half.len()
    }

    /// The clients with a session, in the order they got it: the server subscribes again to
    /// their presence and capability topics after a reconnection.
    pub fn confirmed(&self) -> impl Iterator<Item = &str> {
        self.open.iter().map(|s| s.id.as_str())
    }

    /// `true` when the client has a session (not only a half-open one).
    pub fn contains(&self, id: &str) -> bool {
        self.open.iter().any(|s| s.id == id)
    }

    /// Forgets the noted `initialize`s whose time is up.
    fn expire(&mut self, now_ms: u64) {
        let life = self.half_life_ms;
        self.half.retain(|s| now_ms.saturating_sub(s.at_ms) < life);
    }

    /// The place a new session may take: a free one, or that of the session idle longest when
    /// it has been idle for `idle_ms` (`Some(Some(i))`); `None` when every place is in use.
    fn room(&self, now_ms: u64) -> Option<Option<usize>> {
        if self.open.len() < self.limit {
            return Some(None);
        }
        self.open
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| s.at_ms)
            .filter(|(_, s)| now_ms.saturating_sub(s.at_ms) >= self.idle_ms)
            .map(|(i, _)| Some(i))
    }

    /// The refusal when every place is in use.
    const fn full(&self) -> Busy {
        Busy::Full {
            sessions: self.limit,
        }
    }

    /// An `initialize` on the control topic naming `client`, at `now_ms`: noted (afresh for a
    /// client noted already: this is a new handshake), or a refusal when every place of the
    /// session table is in use and the client has none. A client that has a session keeps it
    /// until it completes the new handshake ([`spoke`](Self::spoke)).
    pub fn initialize(&mut self, client: ClientId<'_>, now_ms: u64) -> Opened {
        self.expire(now_ms);
        if !self.contains(client.as_str()) && self.room(now_ms).is_none() {
            return Opened::Refused(self.full());
        }
        // A new handshake starts afresh, as the newest.
        if let Some(i) = self.half.iter().position(|s| s.id == client.as_str()) {
            self.half.remove(i);
        }
        let mut displaced = None;
        if self.half.is_full() && !self.half.is_empty() {
            displaced = Some(self.half.remove(0).id);
        }
        let slot = Slot {
            id: owned(client),
            at_ms: now_ms,
            session: Session::NEW,
        };
        match self.half.push(slot) {
            Ok(()) => Opened::HalfOpen { displaced },
            // `H = 0`: nothing is noted; the client gets its session when it speaks.
            Err(_) => Opened::HalfOpen { displaced },
        }
    }

    /// The session to lend the engine with an `initialize` of `client` (a new client's: what the
    /// engine makes of it is the client's alone).
    pub fn half_open_session(&self, id: &str) -> Session {
        self.half
            .iter()
            .find(|s| s.id == id)
            .map_or(Session::NEW, |s| s.session)
    }

    /// A message on `client`'s own RPC topic at `now_ms` (the server's subscription has No
    /// Local: never its own echo); `initialized`: it is `notifications/initialized`
    /// ([`is_initialized`](super::is_initialized)). See [`Spoke`].
    pub fn spoke(&mut self, client: ClientId<'_>, initialized: bool, now_ms: u64) -> Spoke {
        self.expire(now_ms);
        let id = client.as_str();
        let half = self.half.iter().position(|s| s.id == id);
        if let Some(o) = self.open.iter().position(|s| s.id == id) {
            // A new handshake replaces the session only once the client itself completes it.
            let renewed = match half {
                Some(h) if initialized => Some(self.half.remove(h).session),
                _ => None,
            };
            let Some(slot) = self.open.get_mut(o) else {
                return Spoke::Refused(self.full());
            };
            slot.at_ms = now_ms;
            if let Some(session) = renewed {
                slot.session = session;
            }
            return Spoke::Served {
                session: slot.session,
                restarted: renewed.is_some(),
            };
        }
        let noted = half.map(|h| self.half.remove(h).session);
        let Some(place) = self.room(now_ms) else {
            return Spoke::Refused(self.full());
        };
        let session = noted.unwrap_or(Session::NEW);
        let slot = Slot {
            id: owned(client),
            at_ms: now_ms,
            session,
        };
        let replaced = match place.and_then(|i| self.open.get_mut(i)) {
            Some(old) => Some(core::mem::replace(old, slot).id),
            None => {
                if self.open.push(slot).is_err() {
                    // `room` said there is a free place: cannot happen.
                    return Spoke::Refused(self.full());
                }
                None
            }
        };
        Spoke::Promoted { session, replaced }
    }

    /// Keeps what a message on the client's RPC topic made of its session.
    pub fn set_session(&mut self, id: &str, session: Session) {
        if let Some(s) = self.open.iter_mut().find(|s| s.id == id) {
            s.session = session;
        }
    }

    /// Notes what the engine made of the client's `initialize`.
    pub fn set_half_open_session(&mut self, id: &str, session: Session) {
        if let Some(s) = self.half.iter_mut().find(|s| s.id == id) {
            s.session = session;
        }
    }

    /// The client whose peer ([`ClientId::peer`]) is `peer`, with a session or noted.
    pub fn by_peer(&self, peer: Peer) -> Option<&str> {
        self.open
            .iter()
            .chain(self.half.iter())
            .map(|s| s.id.as_str())
            .find(|id| ClientId::new(id).is_ok_and(|c| c.peer() == peer))
    }

    /// The client is gone (its `notifications/disconnected`): its session and any note of it
    /// end. Returns whether it had a session (then unsubscribe from its topics, and let the
    /// engine forget it).
    pub fn forget(&mut self, id: &str) -> bool {
        if let Some(i) = self.half.iter().position(|s| s.id == id) {
            self.half.remove(i);
        }
        match self.open.iter().position(|s| s.id == id) {
            Some(i) => {
                self.open.remove(i);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "a test")]
    use super::*;

    fn id(s: &str) -> ClientId<'_> {
        ClientId::new(s).unwrap()
    }

    const HOUR: u64 = 3_600_000;

    /// The session an engine makes of an `initialize` declaring `capabilities`.
    fn initialized(capabilities: &str) -> Session {
        let mut engine: crate::Server<'_, (), crate::Caps<1>> =
            crate::Server::new(crate::Config::new("d", "1"));
        let init = alloc_free_init(capabilities);
        let input =
            crate::Input::new(init.as_bytes(), crate::Principal::Model).session(Session::NEW);
        let mut out = [0u8; 1024];
        engine
            .handle_with(input, &mut (), &mut out, &mut |_: &[u8]| {})
            .unwrap()
            .session
            .unwrap()
    }

    fn alloc_free_init(capabilities: &str) -> heapless::String<256> {
        let mut s = heapless::String::new();
        let _ = core::fmt::Write::write_fmt(
            &mut s,
            format_args!(
                r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{capabilities}}}}}"#
            ),
        );
        s
    }

    #[test]
    fn a_handshake_completes_on_the_clients_own_topic() {
        let mut t: Sessions<2, 2> = Sessions::new(HOUR, 10_000);
        assert_eq!(
            t.initialize(id("alice"), 0),
            Opened::HalfOpen { displaced: None }
        );
        assert!(!t.contains("alice") && t.half_open() == 1);
        assert_eq!(t.half_open_session("alice"), Session::NEW);
        let s = initialized(r#"{"elicitation":{}}"#);
        assert!(s.elicits());
        t.set_half_open_session("alice", s);
        assert_eq!(
            t.spoke(id("alice"), true, 5),
            Spoke::Promoted {
                session: s,
                replaced: None
            }
        );
        assert!(t.contains("alice") && t.half_open() == 0);
        assert_eq!(
            t.spoke(id("alice"), false, 6),
            Spoke::Served {
                session: s,
                restarted: false
            }
        );
        assert_eq!(t.by_peer(id("alice").peer()), Some("alice"));
        assert!(t.forget("alice"));
        assert!(!t.forget("alice"));
        // Speaking again on her own topic makes her a session again (nothing of the old one).
        assert_eq!(
            t.spoke(id("alice"), false, 7),
            Spoke::Promoted {
                session: Session::NEW,
                replaced: None
            }
        );
    }

    #[test]
    fn a_client_gets_its_session_by_speaking_whatever_became_of_its_initialize() {
        let mut t: Sessions<4, 2> = Sessions::new(HOUR, 10_000);
        t.initialize(id("bob"), 0);
        let s = initialized(r#"{"elicitation":{}}"#);
        t.set_half_open_session("bob", s);
        // Bob is slow: a flood crowds out the note of his `initialize`.
        for i in 0..40 {
            let forged = alloc::format!("forged-{i}");
            assert!(matches!(
                t.initialize(id(&forged), 1),
                Opened::HalfOpen { .. }
            ));
        }
        assert_eq!(t.half_open_session("bob"), Session::NEW);
        // He is served all the same, as a client that declared nothing; nothing forged took a
        // place.
        assert_eq!(
            t.spoke(id("bob"), true, 1_500),
            Spoke::Promoted {
                session: Session::NEW,
                replaced: None
            }
        );
        assert_eq!(t.confirmed().collect::<alloc::vec::Vec<_>>(), ["bob"]);
        // A client that never sent an `initialize` is served as one, too.
        assert!(matches!(
            t.spoke(id("carol"), false, 1_600),
            Spoke::Promoted { .. }
        ));
        // Within its life, a noted `initialize` gives the session what it declared.
        t.initialize(id("dave"), 2_000);
        t.set_half_open_session("dave", s);
        assert_eq!(
            t.spoke(id("dave"), true, 2_500),
            Spoke::Promoted {
                session: s,
                replaced: None
            }
        );
    }

    #[test]
    fn notes_expire_and_turn_over_oldest_first() {
        let mut t: Sessions<4, 2> = Sessions::new(HOUR, 10_000);
        t.initialize(id("a"), 0);
        t.initialize(id("b"), 1);
        assert_eq!(
            t.initialize(id("c"), 2),
            Opened::HalfOpen {
                displaced: Some(owned(id("a")))
            }
        );
        // Named again: the newest, so b goes next.
        t.initialize(id("c"), 3);
        assert_eq!(
            t.initialize(id("d"), 4),
            Opened::HalfOpen {
                displaced: Some(owned(id("b")))
            }
        );
        let s = initialized(r#"{"tasks":{}}"#);
        t.set_half_open_session("d", s);
        t.set_half_open_session("c", s);
        t.set_half_open_session("a", s);
        assert_eq!(t.half_open_session("a"), Session::NEW, "a was displaced");
        // Past its life, a note is gone: c is served as a client that declared nothing.
        assert_eq!(
            t.spoke(id("c"), true, 10_003),
            Spoke::Promoted {
                session: Session::NEW,
                replaced: None
            }
        );
        assert_eq!(
            t.spoke(id("d"), true, 10_003),
            Spoke::Promoted {
                session: s,
                replaced: None
            }
        );
    }

    #[test]
    fn a_full_table_is_never_displaced_by_a_handshake_that_did_not_complete() {
        let mut t: Sessions<2, 4> = Sessions::new(60_000, 10_000);
        for c in ["alice", "bob"] {
            t.initialize(id(c), 0);
            assert!(matches!(t.spoke(id(c), true, 0), Spoke::Promoted { .. }));
        }
        // Every place in use: a newcomer is told so at once; the sessions stay.
        assert_eq!(
            t.initialize(id("carol"), 1_000),
            Opened::Refused(Busy::Full { sessions: 2 })
        );
        assert!(t.contains("alice") && t.contains("bob"));
        // Bob idle for a minute: carol may open, and takes his place when she speaks.
        assert!(matches!(
            t.spoke(id("alice"), false, 30_000),
            Spoke::Served { .. }
        ));
        assert!(matches!(
            t.initialize(id("carol"), 60_000),
            Opened::HalfOpen { .. }
        ));
        // Meanwhile bob speaks: no place is free any more when carol does.
        assert!(matches!(
            t.spoke(id("bob"), false, 60_001),
            Spoke::Served { .. }
        ));
        assert_eq!(
            t.spoke(id("carol"), true, 60_002),
            Spoke::Refused(Busy::Full { sessions: 2 })
        );
        assert_eq!(
            t.spoke(id("carol"), false, 60_003),
            Spoke::Refused(Busy::Full { sessions: 2 })
        );
        // Once alice has been idle long enough, a new client takes her place.
        t.initialize(id("dave"), 90_001);
        assert_eq!(
            t.spoke(id("dave"), true, 90_002),
            Spoke::Promoted {
                session: Session::NEW,
                replaced: Some(owned(id("alice")))
            }
        );
    }

    #[test]
    fn a_new_handshake_replaces_a_session_only_when_its_client_completes_it() {
        let mut t: Sessions<2, 2> = Sessions::new(HOUR, 10_000);
        t.initialize(id("alice"), 0);
        let first = initialized(r#"{"tasks":{}}"#);
        t.set_half_open_session("alice", first);
        t.spoke(id("alice"), true, 1);
        // Someone names alice in an initialize (or alice restarted): half-open beside it.
        assert!(matches!(
            t.initialize(id("alice"), 2),
            Opened::HalfOpen { .. }
        ));
        let forged = initialized(r#"{"elicitation":{}}"#);
        assert_ne!(forged, first);
        t.set_half_open_session("alice", forged);
        assert_eq!(
            t.spoke(id("alice"), false, 3),
            Spoke::Served {
                session: first,
                restarted: false
            }
        );
        // Her own `notifications/initialized` completes the new handshake.
        assert_eq!(
            t.spoke(id("alice"), true, 4),
            Spoke::Served {
                session: forged,
                restarted: true
            }
        );
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn the_limit_is_within_the_capacity() {
        let t: Sessions<4, 1> = Sessions::new(HOUR, 1).limit(9);
        assert_eq!(t.limit, 4);
        let t: Sessions<4, 1> = Sessions::new(HOUR, 1).limit(0);
        assert_eq!(t.limit, 1);
        // Nothing noted: the client still gets its session when it speaks.
        let mut t: Sessions<4, 0> = Sessions::new(HOUR, 1);
        assert_eq!(
            t.initialize(id("a"), 0),
            Opened::HalfOpen { displaced: None }
        );
        assert!(matches!(t.spoke(id("a"), true, 1), Spoke::Promoted { .. }));
    }
}
