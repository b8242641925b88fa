//! The client sessions a device serves: a bounded table of MQTT client ids.
//!
//! A client starts a session with an `initialize` on the control topic; the device then
//! subscribes to that client's topics and remembers it here, so that it can subscribe again after
//! a reconnection (the broker forgets subscriptions with a clean session). The table holds `N`
//! sessions.
//!
//! On an open broker the id in an `initialize` is whatever its sender wrote, so a session counts
//! as **unconfirmed** until a message arrives on its RPC topic ([`Clients::heard`]): a real
//! client sends `notifications/initialized` there at once, an invented id never speaks. A new
//! client beyond `N` takes the place of the oldest unconfirmed session, whatever its age, else of
//! the confirmed one idle longest if that one has been idle long enough; otherwise it is refused
//! (answered "busy"), never a live session dropped. New sessions are also admitted at a bounded
//! rate ([`AdmissionRate`]): a flood of invented ids costs a few subscriptions per window.

use embassy_time::{Duration, Instant};
use heapless::String;
use mcp_core::Session;
use mcp_core::server::Peer;
use mcp_core::transport::mqtt::{AdmissionRate, Busy, ClientId, MAX_ID_LEN};

/// A client id kept in the table.
pub type Id = String<MAX_ID_LEN>;

/// Copies a checked id ([`ClientId`] is at most [`MAX_ID_LEN`] bytes, so it always fits).
pub fn owned(client: ClientId<'_>) -> Id {
    let mut id = Id::new();
    let _ = id.push_str(client.as_str());
    id
}

#[derive(Debug, Clone)]
struct Slot {
    id: Id,
    /// When its `initialize` admitted it.
    admitted: Instant,
    last_active: Instant,
    /// Something arrived on its RPC topic.
    confirmed: bool,
    /// What the engine knows of this client (its revision, whether it asks its user): lent to
    /// the shared engine with each of its messages.
    session: Session,
}

/// What [`Clients::admit`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admit {
    /// The client already had a session: nothing to subscribe.
    Known,
    /// A new session: subscribe to the client's topics.
    New,
    /// A new session in the place of this client's (unconfirmed, or idle long enough):
    /// unsubscribe from its topics, subscribe to the new client's.
    Replaced(Id),
    /// Refused, for this reason (answer it with `write_busy`; subscribe to nothing): every
    /// session is in use and none may be replaced, or new sessions come too fast.
    Refused(Busy),
}

/// Up to `N` client sessions.
#[derive(Debug, Clone)]
pub struct Clients<const N: usize> {
    slots: heapless::Vec<Slot, N>,
    admissions: AdmissionRate,
}

impl<const N: usize> Clients<N> {
    /// An empty table that admits new sessions at `rate`.
    pub const fn new(rate: AdmissionRate) -> Self {
        Clients {
            slots: heapless::Vec::new(),
            admissions: rate,
        }
    }

    /// The sessions held.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// No session is held.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The client has a session.
    pub fn contains(&self, id: &str) -> bool {
        self.slots.iter().any(|s| s.id == id)
    }

    /// Every client with a session.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.slots.iter().map(|s| s.id.as_str())
    }

    /// A message arrived on the client's RPC topic at `now`: it is active, and confirmed (not
    /// only an id named in an `initialize`). `false` when it has no session.
    pub fn heard(&mut self, id: &str, now: Instant) -> bool {
        match self.slots.iter_mut().find(|s| s.id == id) {
            Some(s) => {
                s.last_active = now;
                s.confirmed = true;
                true
            }
            None => false,
        }
    }

    /// A client starts (or restarts) a session at `now`. A full table gives it the place of the
    /// oldest unconfirmed session, else of the confirmed one idle longest if idle for `idle`;
    /// a new session also needs the rate's consent. A refusal changes nothing.
    pub fn admit(&mut self, client: ClientId<'_>, now: Instant, idle: Duration) -> Admit {
        if let Some(s) = self.slots.iter_mut().find(|s| s.id == client.as_str()) {
            s.last_active = now;
            return Admit::Known;
        }
        let full = self.slots.is_full();
        let place = if full {
            let unconfirmed = self
                .slots
                .iter()
                .enumerate()
                .filter(|(_, s)| !s.confirmed)
                .min_by_key(|(_, s)| s.admitted);
            let idlest = || {
                self.slots
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, s)| s.last_active)
                    .filter(|(_, s)| now.saturating_duration_since(s.last_active) >= idle)
            };
            match unconfirmed.or_else(idlest) {
                Some((i, _)) => Some(i),
                None => return Admit::Refused(Busy::Full { sessions: N }),
            }
        } else {
            None
        };
        if let Err(busy) = self.admissions.admit(now.as_millis()) {
            return Admit::Refused(busy);
        }
        let slot = Slot {
            id: owned(client),
            admitted: now,
            last_active: now,
            confirmed: false,
            session: Session::default(),
        };
        match place.and_then(|i| self.slots.get_mut(i)) {
            Some(old) => Admit::Replaced(core::mem::replace(old, slot).id),
            None => match self.slots.push(slot) {
                Ok(()) => Admit::New,
                // Not full (checked above): cannot happen.
                Err(_) => Admit::Refused(Busy::Full { sessions: N }),
            },
        }
    }

    /// The client's session, to lend to the engine with its message (`None`: it has none).
    pub fn session(&self, id: &str) -> Option<Session> {
        self.slots.iter().find(|s| s.id == id).map(|s| s.session)
    }

    /// Keeps what a message made of the client's session.
    pub fn set_session(&mut self, id: &str, session: Session) {
        if let Some(s) = self.slots.iter_mut().find(|s| s.id == id) {
            s.session = session;
        }
    }

    /// The client whose peer ([`ClientId::peer`]) is `peer`, if it has a session.
    pub fn by_peer(&self, peer: Peer) -> Option<&str> {
        self.slots
            .iter()
            .map(|s| s.id.as_str())
            .find(|id| ClientId::new(id).is_ok_and(|c| c.peer() == peer))
    }

    /// Ends a session; `false` when the client had none.
    pub fn forget(&mut self, id: &str) -> bool {
        match self.slots.iter().position(|s| s.id == id) {
            Some(i) => {
                self.slots.swap_remove(i);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, reason = "a test")]
    use super::*;

    fn at(s: u64) -> Instant {
        Instant::from_secs(s)
    }

    fn id(s: &str) -> ClientId<'_> {
        ClientId::new(s).unwrap()
    }

    /// No bound on the rate: the table's rule alone.
    fn unbounded<const N: usize>() -> Clients<N> {
        Clients::new(AdmissionRate::new(1, 0))
    }

    /// Issue 22: each client keeps its own session (one client's `initialize` never changes what
    /// the engine assumes of another), and what the engine emits for a client is found by its
    /// peer, not sent to whoever spoke last.
    #[test]
    fn each_client_has_its_own_session_and_is_found_by_its_peer() {
        use mcp_core::{Caps, Config, Principal, Server, Tool};
        let idle = Duration::from_secs(60);
        let mut t = unbounded::<4>();
        assert_eq!(t.admit(id("alice"), at(0), idle), Admit::New);
        assert_eq!(t.admit(id("bob"), at(0), idle), Admit::New);
        // Bob declares elicitation; the engine answers with his session.
        struct Dev;
        const NOOP: Tool<Dev> = Tool::new("self.noop", "Nothing", |_, _, _| {
            Ok(mcp_core::Output::bool(true))
        });
        let mut engine: Server<'_, Dev, Caps<2>> = Server::new(Config::new("d", "1"));
        engine.register(&NOOP).unwrap();
        let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}}}}"#;
        let input = mcp_core::Input::new(init, Principal::Model)
            .peer(id("bob").peer())
            .session(t.session("bob").unwrap());
        let mut out = [0u8; 1024];
        let h = engine
            .handle_with(input, &mut Dev, &mut out, &mut |_: &[u8]| {})
            .unwrap();
        t.set_session("bob", h.session.unwrap());
        assert!(t.session("bob").unwrap().elicits());
        assert!(!t.session("alice").unwrap().elicits(), "alice's is her own");
        assert_eq!(t.by_peer(id("alice").peer()), Some("alice"));
        assert_eq!(t.by_peer(id("bob").peer()), Some("bob"));
        assert_eq!(t.by_peer(id("carol").peer()), None);
    }

    #[test]
    fn a_full_table_of_confirmed_sessions_replaces_only_an_idle_one() {
        let idle = Duration::from_secs(60);
        let mut t = unbounded::<2>();
        assert_eq!(t.admit(id("a"), at(0), idle), Admit::New);
        assert_eq!(t.admit(id("b"), at(10), idle), Admit::New);
        assert!(t.heard("a", at(11)) && t.heard("b", at(10)));
        assert_eq!(t.admit(id("a"), at(20), idle), Admit::Known);
        // a was active at 20, b at 10: neither idle for 60 s at 50.
        assert_eq!(
            t.admit(id("c"), at(50), idle),
            Admit::Refused(Busy::Full { sessions: 2 })
        );
        assert!(!t.contains("c"));
        // At 75, b (10) has been idle 65 s: c takes its place.
        assert_eq!(
            t.admit(id("c"), at(75), idle),
            Admit::Replaced(owned(id("b")))
        );
        assert!(t.contains("a") && t.contains("c") && !t.contains("b"));
        assert_eq!(t.len(), 2);
        assert!(t.heard("a", at(80)));
        assert!(!t.heard("b", at(80)));
        assert!(t.forget("a"));
        assert!(!t.forget("a"));
        assert_eq!(t.ids().collect::<heapless::Vec<_, 2>>().as_slice(), ["c"]);
        assert_eq!(t.admit(id("d"), at(81), idle), Admit::New);
    }

    #[test]
    fn unconfirmed_sessions_give_their_place_first_oldest_first() {
        let idle = Duration::from_secs(3600);
        let mut t = unbounded::<3>();
        assert_eq!(t.admit(id("alice"), at(0), idle), Admit::New);
        assert!(t.heard("alice", at(0)));
        assert_eq!(t.admit(id("forged-0"), at(1), idle), Admit::New);
        assert_eq!(t.admit(id("forged-1"), at(2), idle), Admit::New);
        // Named again: active, still unconfirmed, still the oldest admitted.
        assert_eq!(t.admit(id("forged-0"), at(3), idle), Admit::Known);
        assert_eq!(
            t.admit(id("forged-2"), at(4), idle),
            Admit::Replaced(owned(id("forged-0")))
        );
        assert_eq!(
            t.admit(id("bob"), at(5), idle),
            Admit::Replaced(owned(id("forged-1")))
        );
        assert!(t.heard("bob", at(6)));
        // Alice (idle for an hour at most) and Bob stay; the one unconfirmed place turns over.
        assert_eq!(
            t.admit(id("forged-3"), at(7), idle),
            Admit::Replaced(owned(id("forged-2")))
        );
        assert!(t.contains("alice") && t.contains("bob") && t.contains("forged-3"));
        assert!(t.heard("forged-3", at(8)));
        assert_eq!(
            t.admit(id("forged-4"), at(9), idle),
            Admit::Refused(Busy::Full { sessions: 3 })
        );
    }

    #[test]
    fn new_sessions_come_at_a_bounded_rate_and_a_refusal_changes_nothing() {
        let idle = Duration::from_secs(3600);
        // Two per 10 s.
        let mut t = Clients::<4>::new(AdmissionRate::new(2, 10_000));
        assert_eq!(t.admit(id("a"), at(100), idle), Admit::New);
        assert_eq!(t.admit(id("b"), at(100), idle), Admit::New);
        assert_eq!(
            t.admit(id("c"), at(101), idle),
            Admit::Refused(Busy::Rate {
                per: 2,
                window_ms: 10_000,
                retry_ms: 4_000
            })
        );
        assert!(!t.contains("c"));
        // Known clients are not new sessions.
        assert_eq!(t.admit(id("a"), at(101), idle), Admit::Known);
        assert_eq!(t.admit(id("c"), at(105), idle), Admit::New);
        // A full table's refusal takes nothing from the rate.
        let mut full = Clients::<1>::new(AdmissionRate::new(1, 10_000));
        assert_eq!(full.admit(id("a"), at(0), idle), Admit::New);
        assert!(full.heard("a", at(0)));
        assert_eq!(
            full.admit(id("b"), at(20), idle),
            Admit::Refused(Busy::Full { sessions: 1 })
        );
        assert!(full.forget("a"));
        assert_eq!(full.admit(id("b"), at(20), idle), Admit::New);
    }

    #[test]
    fn the_longest_id_fits() {
        let long = "x".repeat(MAX_ID_LEN);
        let mut t = unbounded::<1>();
        assert_eq!(
            t.admit(id(&long), at(0), Duration::from_secs(1)),
            Admit::New
        );
        assert!(t.contains(&long));
    }
}
