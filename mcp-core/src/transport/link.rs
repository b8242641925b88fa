//! What every outbound link shares, sans-IO (the caller keeps time, sleeps, and reads and
//! writes the socket): when to connect again ([`Reconnect`]) and when a quiet link is dead
//! ([`Keepalive`]). The xiaozhi device link ([`xiaozhi`](super::xiaozhi)), the MCP endpoint link
//! ([`endpoint`](super::endpoint)) and mcp-host's MQTT client follow the same rules, on the
//! host and on the firmware.

/// When a device connects again: capped exponential backoff with "equal jitter", counted in
/// connections that ended without a session.
///
/// What a session is, each link says: on the xiaozhi device wire the backend's hello arrived
/// (`xiaozhi::HELLO_TIMEOUT_MS`); on an MCP endpoint the link stayed up long enough to be
/// healthy (`endpoint::HEALTHY_MS`). Every connection that ends before that — refused, timed
/// out, closed by the peer right after the upgrade, no hello in time — is one more failure: the
/// wait doubles from `first_ms` up to `max_ms`. An accepted TCP connection or WebSocket upgrade
/// is not progress; only a session is, and after a connection that had one the next wait is the
/// first step again.
/// The wait is drawn between half of the step and all of it, so that a fleet that lost its
/// backend together does not return together. No clock and no randomness of its own: the caller
/// sleeps, and passes a random number in.
///
/// ```
/// use mcp_core::transport::link::Reconnect;
/// let mut r = Reconnect::new(1_000, 30_000);
/// // A backend that accepts and closes at once: 1, 2, 4, 8, 16, then 30 s (before jitter).
/// let steps: Vec<u32> = (0..7).map(|_| r.ended(false, u32::MAX)).collect();
/// assert_eq!(steps, [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
/// // A session, then the link drops: the first step again.
/// assert_eq!(r.ended(true, u32::MAX), 1_000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Reconnect {
    first_ms: u32,
    max_ms: u32,
    failures: u32,
}

impl Reconnect {
    /// 1 s, doubling up to 30 s (xiaozhi-esp32's firmware, and most device SDKs).
    pub const DEFAULT: Reconnect = Reconnect::new(1_000, 30_000);

    /// A backoff whose first step is `first_ms`, doubling up to `max_ms` (at least `first_ms`).
    pub const fn new(first_ms: u32, max_ms: u32) -> Self {
        Reconnect {
            first_ms,
            max_ms,
            failures: 0,
        }
    }

    /// A connection ended; `session`: the backend's hello had arrived on it. Returns how long
    /// to wait before the next attempt (ms): the [`step`](Self::step) for the connections that
    /// ended without a session since the last one that had a session, drawn between half of it
    /// and all of it by `random` (any value; `u32::MAX` gives the whole step).
    pub fn ended(&mut self, session: bool, random: u32) -> u32 {
        self.failures = if session {
            1
        } else {
            self.failures.saturating_add(1)
        };
        Self::jitter(self.step(self.failures), random)
    }

    /// Connections ended without a session since the last one that had a session (counting
    /// that one as the first); 0 before any ended.
    pub const fn failures(&self) -> u32 {
        self.failures
    }

    /// The wait before jitter after `failures` such ends (1: the first): the first step doubled
    /// `failures - 1` times, at most the maximum (and never below the first step).
    pub const fn step(&self, failures: u32) -> u32 {
        let doublings = match failures.checked_sub(1) {
            Some(d) if d < 31 => d,
            Some(_) => 31,
            None => 0,
        };
        let max = if self.max_ms > self.first_ms {
            self.max_ms
        } else {
            self.first_ms
        };
        let step = self.first_ms.saturating_mul(1 << doublings);
        if step < max { step } else { max }
    }

    /// "Equal jitter": between half of `step_ms` and all of it, `random` choosing where (in
    /// proportion: 0 gives the half, `u32::MAX` the whole).
    pub fn jitter(step_ms: u32, random: u32) -> u32 {
        let half = step_ms / 2;
        let span = step_ms - half;
        let part = u64::from(random) * u64::from(span) / u64::from(u32::MAX);
        half + u32::try_from(part).unwrap_or(span)
    }
}

/// When a quiet link gets a ping, and when it is dead: a ping after `interval_ms` without hearing
/// from the peer (and again every `interval_ms` while it stays quiet), and the link declared dead
/// once nothing at all — a message, a ping, a pong — has come for `timeout_ms`. No clock of its
/// own: the caller says when it heard something and asks what is due at its own time.
///
/// ```
/// use mcp_core::transport::link::{Due, Keepalive};
/// let mut k = Keepalive::new(15_000, 45_000);
/// k.heard(0);
/// assert_eq!(k.due(10_000), Due::Wait(15_000));
/// assert_eq!(k.due(15_000), Due::Ping);
/// assert_eq!(k.due(20_000), Due::Wait(30_000));
/// k.heard(21_000); // a pong
/// assert_eq!(k.due(30_000), Due::Wait(36_000));
/// assert_eq!(k.due(66_000), Due::Dead);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Keepalive {
    interval_ms: u32,
    timeout_ms: u32,
    heard_ms: u64,
    pinged_ms: u64,
}

/// What a [`Keepalive`] says is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Due {
    /// Send a ping now (it is taken as sent).
    Ping,
    /// Nothing came for the timeout: the link is dead; close it.
    Dead,
    /// Nothing until this time (ms, the caller's clock).
    Wait(u64),
}

impl Keepalive {
    /// Pings after `interval_ms` of quiet; dead after `timeout_ms` of silence.
    pub const fn new(interval_ms: u32, timeout_ms: u32) -> Self {
        Keepalive {
            interval_ms,
            timeout_ms,
            heard_ms: 0,
            pinged_ms: 0,
        }
    }

    /// Something came from the peer at `now_ms` (or the link opened then).
    pub fn heard(&mut self, now_ms: u64) {
        self.heard_ms = now_ms;
        self.pinged_ms = now_ms;
    }

    /// What is due at `now_ms`.
    pub fn due(&mut self, now_ms: u64) -> Due {
        let dead_at = self.heard_ms.saturating_add(u64::from(self.timeout_ms));
        if now_ms >= dead_at {
            return Due::Dead;
        }
        let ping_at = self
            .heard_ms
            .max(self.pinged_ms)
            .saturating_add(u64::from(self.interval_ms.max(1)));
        if now_ms >= ping_at {
            self.pinged_ms = now_ms;
            return Due::Ping;
        }
        Due::Wait(ping_at.min(dead_at))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_wait_grows_on_every_end_without_a_session_and_resets_only_after_one() {
        let mut r = Reconnect::DEFAULT;
        assert_eq!(r.failures(), 0);
        // Refused, accepted and closed, no hello in time: all the same, the wait doubles to 30 s.
        let whole: [u32; 8] = core::array::from_fn(|_| r.ended(false, u32::MAX));
        assert_eq!(
            whole,
            [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]
        );
        assert_eq!(r.failures(), 8);
        // The least the jitter gives is half of the step.
        assert_eq!(r.ended(false, 0), 15_000);
        // A session: the next wait is the first step again, then it grows as before.
        assert_eq!(r.ended(true, u32::MAX), 1_000);
        assert_eq!(r.failures(), 1);
        assert_eq!(r.ended(false, u32::MAX), 2_000);
        // An endless run of failures stays at the cap (no overflow).
        for _ in 0..100 {
            r.ended(false, 7);
        }
        assert_eq!(r.failures(), 102);
        assert_eq!(r.step(u32::MAX), 30_000);
        assert_eq!(r.step(0), 1_000);
        // A maximum below the first step: the first step.
        assert_eq!(Reconnect::new(5_000, 1_000).step(9), 5_000);
        assert_eq!(Reconnect::new(u32::MAX, u32::MAX).step(40), u32::MAX);
    }

    #[test]
    fn jitter_stays_between_half_and_all_of_the_step() {
        for step in [0, 1, 2, 3, 999, 1_000, 30_000, u32::MAX - 1, u32::MAX] {
            for random in [0, 1, 2, 12_345, u32::MAX / 2, u32::MAX - 1, u32::MAX] {
                let w = Reconnect::jitter(step, random);
                assert!(w >= step / 2 && w <= step, "{step} {random}: {w}");
            }
            assert_eq!(Reconnect::jitter(step, 0), step / 2);
            assert_eq!(Reconnect::jitter(step, u32::MAX), step);
        }
        assert_eq!(Reconnect::jitter(30_000, u32::MAX), 30_000);
        assert_eq!(Reconnect::jitter(30_000, u32::MAX / 2), 22_499);
    }

    #[test]
    fn a_quiet_link_is_pinged_then_declared_dead() {
        let mut k = Keepalive::new(100, 300);
        k.heard(1_000);
        assert_eq!(k.due(1_050), Due::Wait(1_100));
        assert_eq!(k.due(1_100), Due::Ping);
        assert_eq!(k.due(1_100), Due::Wait(1_200));
        assert_eq!(k.due(1_250), Due::Ping);
        assert_eq!(k.due(1_299), Due::Wait(1_300));
        assert_eq!(k.due(1_300), Due::Dead);
        // Anything heard puts it off.
        k.heard(1_300);
        assert_eq!(k.due(1_350), Due::Wait(1_400));
        // No overflow at the end of time.
        let mut k = Keepalive::new(u32::MAX, u32::MAX);
        k.heard(u64::MAX - 1);
        assert_eq!(k.due(u64::MAX - 1), Due::Wait(u64::MAX));
    }
}
