//! How long to wait before connecting again: capped exponential backoff with "equal jitter".

use embassy_time::Duration;

/// The wait after each failed attempt: `first` doubling up to `max`, each wait then drawn
/// between half of it and all of it ("equal jitter"), so that devices that lost their broker
/// together do not all come back in the same instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The wait after the first failure.
    pub first: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Backoff {
    /// `first` doubling up to `max`.
    pub const fn new(first: Duration, max: Duration) -> Self {
        Backoff { first, max }
    }

    /// The wait after `failures` consecutive failures (1: the first), before jitter: `first`
    /// doubled `failures - 1` times, at most `max` (and at least 1 ms).
    pub fn ceiling(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(32);
        let first = self.first.as_millis().max(1);
        let full = first
            .saturating_mul(1u64 << doublings)
            .min(self.max.as_millis().max(first));
        Duration::from_millis(full)
    }

    /// The wait after `failures` consecutive failures: drawn between half of
    /// [`ceiling`](Self::ceiling) and all of it with the `random` bits given.
    pub fn delay(&self, failures: u32, random: u64) -> Duration {
        let full = self.ceiling(failures).as_millis();
        let half = full / 2;
        Duration::from_millis(half + random % (full - half + 1))
    }
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "a test")]
    use super::*;

    const B: Backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(30));

    #[test]
    fn doubles_up_to_the_cap() {
        let ceilings: [u64; 8] =
            core::array::from_fn(|i| B.ceiling(u32::try_from(i).unwrap() + 1).as_millis());
        assert_eq!(
            ceilings,
            [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
        assert_eq!(B.ceiling(0).as_millis(), 1000);
        assert_eq!(B.ceiling(u32::MAX).as_millis(), 30000);
    }

    #[test]
    fn jitter_stays_between_half_and_all() {
        for failures in 1..10 {
            let full = B.ceiling(failures).as_millis();
            for random in [0, 1, 499, 12_345, u64::MAX / 3, u64::MAX] {
                let d = B.delay(failures, random).as_millis();
                assert!(d >= full / 2 && d <= full, "{failures} {random}: {d}");
            }
            assert_eq!(B.delay(failures, 0).as_millis(), full / 2);
            assert_eq!(B.delay(failures, full - full / 2).as_millis(), full);
        }
    }

    #[test]
    fn degenerate_settings_still_wait() {
        let zero = Backoff::new(Duration::from_millis(0), Duration::from_millis(0));
        assert_eq!(zero.ceiling(5).as_millis(), 1);
        let inverted = Backoff::new(Duration::from_secs(5), Duration::from_secs(1));
        assert_eq!(inverted.ceiling(3).as_millis(), 5000);
    }
}
