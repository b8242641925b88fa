//! Audio output: volume with read-back, and mute.
//!
//! # For driver authors
//! `set_volume` returning `Ok` means the command was *issued*. [`volume`](AudioCodec::volume) must
//! read the state back from the device (its register), not return a cached copy: the tool kit
//! compares the two and reports `read_back` evidence only when they agree. Declare what the codec
//! can really do in [`VolumeCaps`]: a codec that cannot go above 63 % says `max: 63`, and the kit
//! refuses higher values instead of pretending; a codec whose register has 64 steps says
//! `tolerance: VolumeCaps::tolerance_for_steps(64)` (2 %), so that reading back 39 after a command
//! of 40 counts as agreement (the nearest step the chip has) and 37 does not.
//!
//! # For HAL users
//! ```
//! use mcp_hal::audio::AudioCodec;
//! use mcp_hal::Percent;
//!
//! fn set_and_check<C: AudioCodec>(codec: &mut C, v: Percent) -> Result<bool, C::Error> {
//!     codec.set_volume(v)?;
//!     let caps = codec.volume_caps();
//!     Ok(caps.agrees(v, codec.volume()?))
//! }
//! ```

use crate::{ErrorType, Percent};

/// What a codec can represent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VolumeCaps {
    /// The highest volume the codec produces; higher requests are refused by the kit.
    pub max: Percent,
    /// `true` when [`AudioCodec::volume`] reads the device (otherwise the kit claims only
    /// `applied`).
    pub read_back: bool,
    /// Milliseconds a change may take to show in the read-back (0: at once): how long the kit
    /// waits for agreement (inside the call when it fits the board's call budget, else as a task)
    /// before it calls a disagreement a failure.
    pub settle_ms: u32,
    /// The resolution of the read-back, in percent: a read-back `r` after a command `v` agrees
    /// when `|r − v| ≤ tolerance`. 0: every percentage reads back as itself. Compute it from the
    /// register's step count with [`tolerance_for_steps`](VolumeCaps::tolerance_for_steps).
    pub tolerance: u8,
}

impl VolumeCaps {
    /// The read-back tolerance of a volume register with `steps` evenly spaced levels from 0 %
    /// to 100 %: one step, in whole percent (rounded to the nearest). It covers a driver that
    /// stores the level nearest to the command *or the one below it* (a chip that drops the low
    /// bits) and reads the level back as the nearest whole percent: the stored level is less
    /// than one step from the command, and rounding the read-back adds at most half a percent.
    ///
    /// `tolerance_for_steps(64)` is 2, `(192)` 1, `(256)` 0; fewer than 2 steps cannot follow a
    /// command at all: 100.
    ///
    /// A driver whose percentages each have a level of their own and round-trip exactly
    /// (the [`Es8311`](crate::drivers::Es8311) driver) declares 0 instead.
    pub const fn tolerance_for_steps(steps: u16) -> u8 {
        if steps < 2 {
            return 100;
        }
        let gaps = steps as u32 - 1;
        // round(100 / gaps) <= 100: the cast is lossless.
        ((200 + gaps) / (2 * gaps)) as u8
    }

    /// `true` when `observed` agrees with `commanded` within [`tolerance`](VolumeCaps::tolerance).
    pub const fn agrees(&self, commanded: Percent, observed: Percent) -> bool {
        commanded.get().abs_diff(observed.get()) <= self.tolerance
    }
}

device_trait! {
    /// An audio codec or amplifier with a volume control.
    pub trait AudioCodec: ErrorType {
        /// What the codec can represent.
        fn volume_caps(&self) -> VolumeCaps;
        /// Sets the output volume.
        fn set_volume(&mut self, volume: Percent) -> Result<(), Self::Error>;
        /// Reads the output volume back from the device.
        fn volume(&mut self) -> Result<Percent, Self::Error>;
        /// Mutes or unmutes the output.
        fn set_mute(&mut self, mute: bool) -> Result<(), Self::Error>;
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn tolerance_for_steps_examples() {
        assert_eq!(VolumeCaps::tolerance_for_steps(0), 100);
        assert_eq!(VolumeCaps::tolerance_for_steps(1), 100);
        assert_eq!(VolumeCaps::tolerance_for_steps(2), 100);
        assert_eq!(VolumeCaps::tolerance_for_steps(64), 2);
        assert_eq!(VolumeCaps::tolerance_for_steps(101), 1);
        assert_eq!(VolumeCaps::tolerance_for_steps(192), 1);
        assert_eq!(VolumeCaps::tolerance_for_steps(256), 0);
        assert_eq!(VolumeCaps::tolerance_for_steps(u16::MAX), 0);
    }

    /// The documented claim, checked exhaustively: for every step count, a driver that stores
    /// the level nearest to the command or the one below it, and reads the level back as the
    /// nearest percent, never reads back farther than the tolerance.
    #[test]
    fn tolerance_for_steps_covers_nearest_and_truncating_drivers() {
        // Every register width up to 10 bits; under Miri (which finds nothing more in plain
        // integer arithmetic, at ~150 s for the whole range) the first 64.
        let widest: u16 = if cfg!(miri) { 64 } else { 1024 };
        for steps in 2u16..=widest {
            let gaps = u64::from(steps - 1);
            let tolerance = VolumeCaps::tolerance_for_steps(steps);
            let caps = VolumeCaps {
                max: Percent::MAX,
                read_back: true,
                settle_ms: 0,
                tolerance,
            };
            // A level back to the nearest percent: round(level * 100 / gaps).
            let back = |level: u64| Percent::saturating(((level * 200 + gaps) / (2 * gaps)) as u8);
            for p in 0..=100u8 {
                let exact = u64::from(p) * gaps;
                let below = exact / 100;
                let nearest = (exact * 2 + 100) / 200;
                let v = Percent::saturating(p);
                for level in [below, nearest] {
                    assert!(
                        caps.agrees(v, back(level)),
                        "{steps} steps, {p} % -> level {level} reads {}, tolerance {tolerance}",
                        back(level).get()
                    );
                }
            }
        }
    }
}
