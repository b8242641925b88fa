//! When a device tells its clients that a reading changed: a publish [`Policy`] applied by a
//! [`Gate`], a [`Debouncer`] that turns a bouncing button into counted presses, and a
//! [`Threshold`] that says when a reading crossed a level (an event worth a turn of its own).
//!
//! # The model
//! A firmware's main loop samples its sensors often (every few milliseconds), and each
//! published change costs a `notifications/resources/updated` on every subscribed link, after
//! which the client reads the resource again. A noisy ADC reports a different value at every
//! sample; publishing each would flood the link for nothing. A [`Gate`] sees every sample and
//! says which ones are worth publishing, by its [`Policy`]:
//!
//! | setting | a sample is published when… |
//! |---|---|
//! | `threshold` | it differs from the last published value by at least this much (in the sample's units; 0 counts as 1) |
//! | `hysteresis` | …and by `threshold + hysteresis` when it goes back against the direction of the last published change (so a value dithering between two ADC codes is published once, not at each flicker) |
//! | `min_interval_ms` | …and at least this long after the last publication; a change seen earlier waits, and is published at the first sample after the interval *if the value still differs by the threshold then* (a spike that came back is never published) |
//! | `heartbeat_ms` (0: none) | or, whatever the value, when nothing was published for this long |
//!
//! The first sample is the **baseline**: it is not published (a client learns it when it
//! reads), and the comparisons start from it. So, with no heartbeat, a [`Gate`] publishes at
//! most once per `min_interval_ms`, and a signal whose noise spans less than `threshold` is
//! published only when it really moves: once per step of at least `threshold`, however long it
//! stays there.
//!
//! Time is the caller's: every call passes `now_ms` from the firmware's monotonic clock (the
//! one it passes to [`Server::poll`](mcp_core::Server::poll)). Everything here is `Copy`,
//! `const`-constructible and allocation-free.
//!
//! ```
//! use mcp_hal::publish::{Gate, Policy};
//!
//! // 0.5 °C steps (readings in milli-degrees), 0.2 °C hysteresis, at most once a second.
//! let mut gate = Gate::new(Policy::new(500).hysteresis(200).min_interval_ms(1000));
//! assert!(!gate.update(0, 21_000)); // the baseline
//! assert!(!gate.update(10, 21_300)); // less than the threshold
//! assert!(gate.update(20, 21_600)); // +0.6 °C: published
//! assert!(!gate.update(30, 21_100)); // back by 0.5 °C: not enough against the direction
//! assert!(!gate.update(40, 22_200)); // +0.6 °C, but within a second of the last one: waits…
//! assert!(gate.update(1020, 22_200)); // …and goes out once the interval has passed
//! ```
//!
//! # Buttons
//! A mechanical contact bounces for a few milliseconds when it closes and opens. A
//! [`Debouncer`] accepts a new level only once the raw samples have shown it for `stable_ms`
//! and counts a press at each accepted release-to-press transition. It needs samples during
//! the press: sample at least every `stable_ms / 2` or so, and a press shorter than the
//! sampling period may be missed (a firmware that must catch every tap counts edges in an
//! interrupt instead).

/// When a [`Gate`] publishes: see the [module docs](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Policy {
    threshold: u32,
    hysteresis: u32,
    min_interval_ms: u32,
    heartbeat_ms: u32,
}

impl Policy {
    /// Every change is published at once (threshold 1, no hysteresis, no interval): for values
    /// that change rarely and never flicker, like a press count.
    pub const EVERY_CHANGE: Policy = Policy::new(1);

    /// Publish changes of at least `threshold` (0 counts as 1), with no hysteresis, no minimum
    /// interval and no heartbeat; add those with the builder methods.
    pub const fn new(threshold: u32) -> Self {
        Policy {
            threshold: if threshold == 0 { 1 } else { threshold },
            hysteresis: 0,
            min_interval_ms: 0,
            heartbeat_ms: 0,
        }
    }

    /// The extra change needed against the direction of the last published change.
    #[must_use]
    pub const fn hysteresis(mut self, hysteresis: u32) -> Self {
        self.hysteresis = hysteresis;
        self
    }

    /// The least time between two publications, in milliseconds.
    #[must_use]
    pub const fn min_interval_ms(mut self, ms: u32) -> Self {
        self.min_interval_ms = ms;
        self
    }

    /// Publish at least this often even without a change, in milliseconds (0: never).
    #[must_use]
    pub const fn heartbeat_ms(mut self, ms: u32) -> Self {
        self.heartbeat_ms = ms;
        self
    }

    /// The threshold (at least 1).
    pub const fn threshold(&self) -> u32 {
        self.threshold
    }
}

/// Applies a [`Policy`] to a stream of samples: [`update`](Gate::update) says which to publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    policy: Policy,
    /// The last published value, or the baseline; `None` before the first sample.
    reference: Option<i32>,
    /// The direction of the last published change (`true`: up); `None` before the first.
    rising: Option<bool>,
    /// When `reference` was taken.
    since_ms: u64,
    /// Something was published (the minimum interval applies).
    published: bool,
}

impl Gate {
    /// A gate with no baseline yet.
    pub const fn new(policy: Policy) -> Self {
        Gate {
            policy,
            reference: None,
            rising: None,
            since_ms: 0,
            published: false,
        }
    }

    /// Offers the sample `value`, taken at `now_ms`; `true` when it is to be published (it then
    /// becomes the reference the next samples are compared with). The first sample is the
    /// baseline and returns `false`. A time earlier than the last publication counts as no time
    /// passed.
    pub fn update(&mut self, now_ms: u64, value: i32) -> bool {
        let Some(reference) = self.reference else {
            self.reference = Some(value);
            self.since_ms = now_ms;
            return false;
        };
        let p = self.policy;
        let delta = i64::from(value) - i64::from(reference);
        let up = delta > 0;
        let needed = match self.rising {
            Some(rising) if rising != up => i64::from(p.threshold) + i64::from(p.hysteresis),
            _ => i64::from(p.threshold),
        };
        let changed = delta != 0 && delta.abs() >= needed;
        let elapsed = now_ms.saturating_sub(self.since_ms);
        let due = !self.published || elapsed >= u64::from(p.min_interval_ms);
        let heartbeat = p.heartbeat_ms != 0 && elapsed >= u64::from(p.heartbeat_ms);
        if !(changed && due || heartbeat) {
            return false;
        }
        if changed {
            self.rising = Some(up);
        }
        self.reference = Some(value);
        self.since_ms = now_ms;
        self.published = true;
        true
    }

    /// The value clients last learnt: the last published one, or the baseline; `None` before
    /// the first sample.
    pub const fn reference(&self) -> Option<i32> {
        self.reference
    }

    /// The policy.
    pub const fn policy(&self) -> Policy {
        self.policy
    }

    /// Forgets the baseline: the next sample is a new one (after a sensor was replaced, say).
    pub fn reset(&mut self) {
        *self = Gate::new(self.policy);
    }
}

/// A button's debounced state and its press count (see the [module docs](self#buttons)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Debouncer {
    stable_ms: u32,
    /// The last raw sample, and since when the raw samples have shown it.
    raw: bool,
    raw_since_ms: u64,
    pressed: bool,
    presses: u32,
}

impl Debouncer {
    /// Released, no presses counted; a new level is accepted once it has been sampled steadily
    /// for `stable_ms` (0: at once).
    pub const fn new(stable_ms: u32) -> Self {
        Debouncer {
            stable_ms,
            raw: false,
            raw_since_ms: 0,
            pressed: false,
            presses: 0,
        }
    }

    /// Feeds the raw level sampled at `now_ms` (`true`: held down); `true` when this sample
    /// completes a press (the count went up).
    pub fn update(&mut self, now_ms: u64, raw_pressed: bool) -> bool {
        if raw_pressed != self.raw {
            self.raw = raw_pressed;
            self.raw_since_ms = now_ms;
        }
        let steady = now_ms.saturating_sub(self.raw_since_ms) >= u64::from(self.stable_ms);
        if self.raw == self.pressed || !steady {
            return false;
        }
        self.pressed = self.raw;
        if self.pressed {
            self.presses = self.presses.saturating_add(1);
        }
        self.pressed
    }

    /// The debounced level: `true` while the button is (steadily) held down.
    pub const fn is_pressed(&self) -> bool {
        self.pressed
    }

    /// Presses counted so far (saturating at `u32::MAX`).
    pub const fn presses(&self) -> u32 {
        self.presses
    }

    /// How long a level must be steady, in milliseconds.
    pub const fn stable_ms(&self) -> u32 {
        self.stable_ms
    }
}

/// A level a reading crosses upwards (a temperature above 40 °C), once per crossing: the reading
/// must fall `hysteresis` below the level before a new crossing counts, so a value dithering
/// around the level is one crossing, not one per flicker. For an event that starts a turn
/// (`mcp_core::transport::xiaozhi::Event`), where a [`Gate`] would publish every step.
///
/// ```
/// use mcp_hal::publish::Threshold;
/// let mut hot = Threshold::above(40_000, 1_000); // milli-°C: 40 °C, re-armed below 39 °C
/// assert!(!hot.update(21_500));
/// assert!(hot.update(50_000)); // crossed
/// assert!(!hot.update(39_500)); // not below 39 °C: still above, as far as the event goes
/// assert!(!hot.update(41_000));
/// assert!(!hot.update(38_000)); // re-armed…
/// assert!(hot.update(40_500)); // …and crossed again
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threshold {
    level: i32,
    hysteresis: u32,
    above: bool,
}

impl Threshold {
    /// Crossings of `level` upwards; re-armed once the reading is `hysteresis` below it. A
    /// first reading already above the level counts as a crossing.
    pub const fn above(level: i32, hysteresis: u32) -> Self {
        Threshold {
            level,
            hysteresis,
            above: false,
        }
    }

    /// Feeds a reading; `true` when it crossed the level (upwards) since the last crossing.
    pub fn update(&mut self, value: i32) -> bool {
        let rearm = i64::from(self.level) - i64::from(self.hysteresis);
        if self.above {
            if i64::from(value) < rearm {
                self.above = false;
            }
            return false;
        }
        self.above = value > self.level;
        self.above
    }

    /// The level.
    pub const fn level(&self) -> i32 {
        self.level
    }
}

#[cfg(test)]
mod test {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used, reason = "a test")] // a test

    use super::*;

    /// A deterministic noise source (xorshift), uniform in `-amplitude..=amplitude`.
    struct Noise(u64);

    impl Noise {
        fn next(&mut self, amplitude: i32) -> i32 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            let span = 2 * u64::try_from(amplitude).unwrap() + 1;
            i32::try_from(self.0 % span).unwrap() - amplitude
        }
    }

    /// Feeds `series` (one sample every `period_ms`) through a gate; the times of publications.
    fn run(policy: Policy, period_ms: u64, series: impl IntoIterator<Item = i32>) -> Vec<u64> {
        let mut gate = Gate::new(policy);
        series
            .into_iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let t = i as u64 * period_ms;
                gate.update(t, v).then_some(t)
            })
            .collect()
    }

    /// A noisy ADC at a steady 21.3 °C (±0.2 °C of noise, sampled every 10 ms for ten minutes)
    /// is never published with a 0.5 °C threshold: 60 000 samples, zero notifications.
    #[test]
    fn noise_below_the_threshold_is_never_published() {
        let mut noise = Noise(0x5eed);
        let series = (0..60_000).map(|_| 21_300 + noise.next(200));
        assert_eq!(run(Policy::new(500), 10, series), Vec::<u64>::new());
    }

    /// A staircase (+1 °C every 10 s, then back down) under ±0.2 °C of noise: each step is
    /// published exactly once, within one sample of when it happens.
    #[test]
    fn every_step_past_the_threshold_is_published_once() {
        let mut noise = Noise(42);
        let levels = [20, 21, 22, 23, 22, 21, 25, 24];
        let series: Vec<i32> = levels
            .iter()
            .flat_map(|l| core::iter::repeat_n(l * 1000, 1000))
            .map(|v| v + noise.next(200))
            .collect();
        let policy = Policy::new(500).hysteresis(200).min_interval_ms(1000);
        let published = run(policy, 10, series);
        // One publication per step after the baseline level, within a few samples of it (a
        // step against the last direction needs 0.7 °C, which noise may delay by a sample).
        assert_eq!(published.len(), levels.len() - 1, "{published:?}");
        for (k, t) in published.iter().enumerate() {
            let step = (k as u64 + 1) * 10_000;
            assert!((step..step + 100).contains(t), "step {k} published at {t}");
        }
    }

    /// An ADC dithering between two adjacent codes (a classic at a code boundary): with a
    /// threshold of one code every flicker would be a change; one code of hysteresis makes it
    /// one publication, and the minimum interval bounds the rest when there is none.
    #[test]
    fn hysteresis_stops_a_flicker_between_two_codes() {
        let series = || (0..10_000).map(|i| 100 + (i % 2));
        assert_eq!(run(Policy::new(1).hysteresis(1), 1, series()), [1]);
        // Without hysteresis: at most one per interval (10 s of samples, 1 s interval).
        let flood = run(Policy::new(1).min_interval_ms(1000), 1, series());
        assert_eq!(flood.len(), 10);
        assert!(flood.windows(2).all(|w| w[1] - w[0] >= 1000));
    }

    /// Noise far larger than the threshold: the publications are bounded by the minimum
    /// interval, whatever the signal does.
    #[test]
    fn the_minimum_interval_bounds_publications() {
        let mut noise = Noise(7);
        // 100 s of samples at 1 ms (10 s under Miri, which is ~1000x slower).
        let samples: u64 = if cfg!(miri) { 10_000 } else { 100_000 };
        let series: Vec<i32> = (0..samples).map(|_| noise.next(5_000)).collect();
        let published = run(Policy::new(100).min_interval_ms(250), 1, series);
        // At most one per 250 ms, plus the first; noise this large fills most intervals.
        let most = samples / 250 + 1;
        assert!(published.len() as u64 <= most, "{}", published.len());
        assert!(published.len() as u64 > most * 3 / 4, "{}", published.len());
        assert!(published.windows(2).all(|w| w[1] - w[0] >= 250));
    }

    /// A change held back by the interval goes out when the interval ends, with the value then;
    /// a spike that is over by then is not published at all.
    #[test]
    fn a_held_back_change_is_published_only_if_it_lasts() {
        let mut g = Gate::new(Policy::new(10).min_interval_ms(100));
        assert!(!g.update(0, 0));
        assert!(g.update(1, 50));
        assert!(!g.update(2, 100)); // too soon
        assert!(g.update(101, 100));
        assert_eq!(g.reference(), Some(100));
        assert!(!g.update(150, 300)); // a spike, too soon…
        assert!(!g.update(160, 100)); // …and it is over
        assert!(!g.update(300, 100)); // nothing to publish
        assert_eq!(g.reference(), Some(100));
    }

    #[test]
    fn the_heartbeat_publishes_a_steady_value() {
        let published = run(
            Policy::new(1000).heartbeat_ms(5000),
            100,
            core::iter::repeat_n(7, 200),
        );
        assert_eq!(published, [5000, 10_000, 15_000]);
        // Without a heartbeat, nothing.
        assert!(run(Policy::new(1000), 100, core::iter::repeat_n(7, 200)).is_empty());
    }

    #[test]
    fn extremes_and_a_clock_that_goes_back() {
        let mut g = Gate::new(Policy::new(0).min_interval_ms(10));
        assert_eq!(g.policy().threshold(), 1);
        assert!(!g.update(100, i32::MIN));
        assert!(g.update(100, i32::MAX)); // the first change is due at once
        assert!(!g.update(50, i32::MIN)); // earlier: no time has passed
        assert!(g.update(110, i32::MIN));
        g.reset();
        assert_eq!(g.reference(), None);
        assert!(!g.update(0, 5));
    }

    /// A press with 5 ms of bounce at each edge, sampled every millisecond.
    fn bouncy_press(down_at: u64, hold_ms: u64) -> impl Fn(u64) -> bool {
        move |t| {
            let up_at = down_at + hold_ms;
            if t < down_at || t >= up_at + 5 {
                false
            } else if t < down_at + 5 || t >= up_at {
                t.is_multiple_of(2)
            } else {
                true
            }
        }
    }

    #[test]
    fn a_bouncing_press_counts_once() {
        let mut d = Debouncer::new(20);
        let press = bouncy_press(100, 80);
        let mut counted = Vec::new();
        for t in 0..400 {
            if d.update(t, press(t)) {
                counted.push(t);
            }
        }
        // The last bounce ends at 104: steady from there, accepted 20 ms later.
        assert_eq!(counted, [124]);
        assert_eq!(d.presses(), 1);
        assert!(!d.is_pressed());
        // Bounces alone (shorter than the steady time) never count.
        let mut d = Debouncer::new(20);
        for t in 0..1000 {
            d.update(t, t.is_multiple_of(7));
        }
        assert_eq!(d.presses(), 0);
    }

    #[test]
    fn ten_presses_count_ten_and_release_is_debounced_too() {
        let mut d = Debouncer::new(20);
        let presses: Vec<_> = (0..10).map(|k| bouncy_press(1000 + k * 200, 60)).collect();
        let mut states = Vec::new();
        for t in 0..4000 {
            let raw = presses.iter().any(|p| p(t));
            d.update(t, raw);
            states.push(d.is_pressed());
        }
        assert_eq!(d.presses(), 10);
        // Pressed at 1024 (steady from 1004), released at 1085 (steady from 1065).
        assert!(!states[1023] && states[1024] && states[1084] && !states[1085]);
    }

    #[test]
    fn sampled_slowly_a_press_still_counts_and_zero_is_immediate() {
        let mut d = Debouncer::new(20);
        assert!(!d.update(0, false));
        assert!(!d.update(30, true));
        assert!(d.update(60, true));
        assert!(!d.update(90, true));
        let mut d = Debouncer::new(0);
        assert!(d.update(5, true));
        assert!(!d.update(6, false));
        assert!(d.update(7, true));
        assert_eq!((d.presses(), d.stable_ms()), (2, 0));
    }

    #[test]
    fn a_threshold_is_crossed_once_per_excursion() {
        let mut t = Threshold::above(40_000, 1_000);
        let seen: Vec<bool> = [
            21_000,
            40_000,
            40_001,
            45_000,
            39_001,
            40_500,
            38_999,
            39_500,
            40_001,
            i32::MIN,
            i32::MAX,
        ]
        .iter()
        .map(|&v| t.update(v))
        .collect();
        assert_eq!(
            seen,
            [
                false, false, true, false, false, false, false, false, true, false, true
            ]
        );
        assert_eq!(t.level(), 40_000);
        // A first reading above the level is a crossing; a hysteresis wider than the range
        // never overflows.
        let mut t = Threshold::above(i32::MIN, u32::MAX);
        assert!(t.update(0));
        assert!(!t.update(i32::MIN));
    }
}
