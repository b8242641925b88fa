//! The client sessions a device serves: a bounded table of MQTT client ids.
//!
//! A client starts a session with an `initialize` on the control topic; the device then
//! subscribes to that client's topics and remembers it here, so that it can subscribe again after
//! a reconnection (the broker forgets subscriptions with a clean session). The table holds `N`
//! sessions. A new client beyond that takes the place of the one idle longest, if that one has
//! been idle long enough; otherwise it is refused (answered "busy"), never a live session dropped.

use embassy_time::{Duration, Instant};
use heapless::String;
use mcp_core::transport::mqtt::{ClientId, MAX_ID_LEN};

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
    last_active: Instant,
}

/// What [`Clients::admit`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admit {
    /// The client already had a session: nothing to subscribe.
    Known,
    /// A new session: subscribe to the client's topics.
    New,
    /// A new session in the place of this client's, idle long enough: unsubscribe from its
    /// topics, subscribe to the new client's.
    Replaced(Id),
    /// Every session is in use and none has been idle long enough: refuse the client.
    Full,
}

/// Up to `N` client sessions.
#[derive(Debug, Clone, Default)]
pub struct Clients<const N: usize> {
    slots: heapless::Vec<Slot, N>,
}

impl<const N: usize> Clients<N> {
    /// An empty table.
    pub const fn new() -> Self {
        Clients {
            slots: heapless::Vec::new(),
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

    /// The client was heard from at `now`; `false` when it has no session.
    pub fn touch(&mut self, id: &str, now: Instant) -> bool {
        match self.slots.iter_mut().find(|s| s.id == id) {
            Some(s) => {
                s.last_active = now;
                true
            }
            None => false,
        }
    }

    /// A client starts (or restarts) a session at `now`. A full table gives the place of the
    /// session idle longest to it when that one has been idle for `idle`.
    pub fn admit(&mut self, client: ClientId<'_>, now: Instant, idle: Duration) -> Admit {
        if self.touch(client.as_str(), now) {
            return Admit::Known;
        }
        let slot = Slot {
            id: owned(client),
            last_active: now,
        };
        let Err(slot) = self.slots.push(slot) else {
            return Admit::New;
        };
        let idlest = self
            .slots
            .iter_mut()
            .min_by_key(|s| s.last_active)
            .filter(|s| now.saturating_duration_since(s.last_active) >= idle);
        match idlest {
            Some(old) => Admit::Replaced(core::mem::replace(old, slot).id),
            None => Admit::Full,
        }
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

    #[test]
    fn a_full_table_replaces_only_an_idle_session() {
        let idle = Duration::from_secs(60);
        let mut t = Clients::<2>::new();
        assert_eq!(t.admit(id("a"), at(0), idle), Admit::New);
        assert_eq!(t.admit(id("b"), at(10), idle), Admit::New);
        assert_eq!(t.admit(id("a"), at(20), idle), Admit::Known);
        // a was active at 20, b at 10: neither idle for 60 s at 50.
        assert_eq!(t.admit(id("c"), at(50), idle), Admit::Full);
        assert!(!t.contains("c"));
        // At 75, b (10) has been idle 65 s: c takes its place.
        assert_eq!(
            t.admit(id("c"), at(75), idle),
            Admit::Replaced(owned(id("b")))
        );
        assert!(t.contains("a") && t.contains("c") && !t.contains("b"));
        assert_eq!(t.len(), 2);
        assert!(t.touch("a", at(80)));
        assert!(!t.touch("b", at(80)));
        assert!(t.forget("a"));
        assert!(!t.forget("a"));
        assert_eq!(t.ids().collect::<heapless::Vec<_, 2>>().as_slice(), ["c"]);
        assert_eq!(t.admit(id("d"), at(81), idle), Admit::New);
    }

    #[test]
    fn the_longest_id_fits() {
        let long = "x".repeat(MAX_ID_LEN);
        let mut t = Clients::<1>::new();
        assert_eq!(
            t.admit(id(&long), at(0), Duration::from_secs(1)),
            Admit::New
        );
        assert!(t.contains(&long));
    }
}
