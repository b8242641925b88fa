//! [`SimRelay`]: a relay with a feedback contact.

use super::{Delayed, Fault, Faults, SLOW_MS};
use crate::ErrorKind;
use crate::switch::Switch;

/// A simulated relay with an auxiliary feedback contact.
///
/// `set(on)` drives the coil ([`coil`](SimRelay::coil)); the contacts follow, and
/// [`feedback`](Switch::feedback) reads them: `Ok(Some(contacts))`. It powers up off. Nominally
/// the contacts follow at once and the relay declares [`SETTLE_MS`](SimRelay::SETTLE_MS) (20 ms).
///
/// Faults: `relay-stuck` keeps the contacts in their initial state, so the feedback always reads
/// off; `slow` makes the contacts follow the coil [`SLOW_MS`] late (a command issued while an
/// earlier one is still pending replaces it) and declares `settle_ms` = 2000. No fault makes the
/// relay return an error: driving a coil is a direct pin write.
#[derive(Debug, Clone)]
pub struct SimRelay {
    faults: Faults,
    now_ms: u64,
    coil: bool,
    contacts: Delayed<bool>,
    writes: u32,
}

impl SimRelay {
    /// The settle time declared when nothing is slow, in milliseconds.
    pub const SETTLE_MS: u32 = 20;

    /// A relay with the coil off, at time 0.
    pub const fn new(faults: Faults) -> Self {
        SimRelay {
            faults,
            now_ms: 0,
            coil: false,
            contacts: Delayed::new(false),
            writes: 0,
        }
    }

    /// The commanded coil state.
    pub const fn coil(&self) -> bool {
        self.coil
    }

    /// The contact state the feedback input reads now.
    pub fn contacts(&self) -> bool {
        if self.faults.contains(Fault::RelayStuck) {
            false
        } else {
            self.contacts.get(self.now_ms)
        }
    }

    /// `set` calls.
    pub const fn writes(&self) -> u32 {
        self.writes
    }
}

sim_device!(SimRelay, settles: contacts, set_faults: "A command already pending under `slow` keeps its due time.");

impl Switch for SimRelay {
    fn set(&mut self, on: bool) -> Result<(), ErrorKind> {
        self.coil = on;
        let delay = if self.faults.contains(Fault::Slow) {
            SLOW_MS
        } else {
            0
        };
        self.contacts.set(on, self.now_ms, delay);
        self.writes = self.writes.saturating_add(1);
        Ok(())
    }

    fn feedback(&mut self) -> Result<Option<bool>, ErrorKind> {
        Ok(Some(self.contacts()))
    }

    fn settle_ms(&self) -> u32 {
        if self.faults.contains(Fault::Slow) {
            SLOW_MS
        } else {
            Self::SETTLE_MS
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn relay(fault: Fault) -> SimRelay {
        SimRelay::new(Faults::only(fault))
    }

    #[test]
    fn nominal_feedback_follows_at_once() {
        let mut r = SimRelay::default();
        assert_eq!(r.feedback(), Ok(Some(false)));
        assert_eq!(r.settle_ms(), 20);
        assert_eq!(r.set(true), Ok(()));
        assert!(r.coil());
        assert_eq!(r.feedback(), Ok(Some(true)));
        assert_eq!(r.set(false), Ok(()));
        assert!(!r.coil());
        assert_eq!(r.feedback(), Ok(Some(false)));
        assert_eq!(r.writes(), 2);
    }

    #[test]
    fn relay_stuck_feedback_never_leaves_off() {
        let mut r = relay(Fault::RelayStuck);
        assert_eq!(r.settle_ms(), 20);
        assert_eq!(r.set(true), Ok(()));
        assert!(r.coil());
        assert_eq!(r.feedback(), Ok(Some(false)));
        r.set_time(60_000);
        assert_eq!(r.feedback(), Ok(Some(false)));
        assert_eq!(r.set(false), Ok(()));
        assert_eq!(r.feedback(), Ok(Some(false)));
        assert_eq!(r.writes(), 2);
    }

    #[test]
    fn relay_stuck_wins_over_slow() {
        let mut r = SimRelay::new(Faults::only(Fault::RelayStuck).with(Fault::Slow));
        r.set(true).unwrap();
        r.set_time(5000);
        assert_eq!(r.feedback(), Ok(Some(false)));
        assert_eq!(r.settle_ms(), 2000);
    }

    #[test]
    fn slow_feedback_follows_2000_ms_late() {
        let mut r = relay(Fault::Slow);
        assert_eq!(r.settle_ms(), 2000);
        r.set_time(500);
        r.set(true).unwrap();
        assert!(r.coil());
        assert_eq!(r.feedback(), Ok(Some(false)));
        r.set_time(2499);
        assert_eq!(r.feedback(), Ok(Some(false)));
        r.set_time(2500);
        assert_eq!(r.feedback(), Ok(Some(true)));
        r.set(false).unwrap();
        r.set_time(4499);
        assert_eq!(r.feedback(), Ok(Some(true)));
        r.set_time(4500);
        assert_eq!(r.feedback(), Ok(Some(false)));
    }

    #[test]
    fn other_faults_leave_the_relay_nominal() {
        for fault in Fault::ALL {
            if matches!(fault, Fault::RelayStuck | Fault::Slow) {
                continue;
            }
            let mut r = relay(fault);
            assert_eq!(r.settle_ms(), 20, "{fault}");
            assert_eq!(r.set(true), Ok(()), "{fault}");
            assert_eq!(r.feedback(), Ok(Some(true)), "{fault}");
            assert_eq!(r.set(false), Ok(()), "{fault}");
            assert_eq!(r.feedback(), Ok(Some(false)), "{fault}");
        }
    }

    #[test]
    fn time_going_backwards_is_ignored() {
        let mut r = relay(Fault::Slow);
        r.set_time(1000);
        r.set(true).unwrap();
        r.set_time(3000);
        r.set_time(0);
        assert_eq!(r.now_ms(), 3000);
        assert!(r.contacts());
    }
}
