//! In-memory devices with fault injection, for simulators and tests (feature `sim`).
//!
//! # The model
//! A [`SimBoard`] holds one simulated device per trait of this crate: a [`SimCodec`]
//! ([`AudioCodec`](crate::audio::AudioCodec)), a [`SimBacklight`]
//! ([`Backlight`](crate::backlight::Backlight)), a [`SimRelay`] ([`Switch`](crate::switch::Switch)),
//! a [`SimMotor`] ([`Actuator`](crate::motor::Actuator)) and a [`SimSystem`]
//! ([`System`](crate::system::System)), and the readings: a [`SimThermometer`] and a [`SimBattery`]
//! ([`Sensor`](crate::sensor::Sensor)s), a [`SimButton`] ([`Button`](crate::sensor::Button)), a
//! [`SimFan`] with its tachometer and a [`SimCamera`] whose frames the device encodes as PNG,
//! which the simulator sets (`board.thermometer.set_millicelsius(31_500)`,
//! `board.button.press(now_ms)`). Each behaves like the hardware it stands for, including
//! what that hardware can *not* prove: the codec has a real volume register that is read back,
//! the backlight is a PWM output that cannot be read, the relay has a feedback contact, the motor
//! is measured by an encoder, and a reboot only ever gets scheduled.
//!
//! **Time is explicit.** Nothing here owns a clock. The caller passes the current time in
//! milliseconds with `set_time(now_ms)` (on each device, or once on the [`SimBoard`]); time is
//! monotonic, so a time earlier than the last one is ignored. Everything that takes time — a
//! motor move, a slow read-back, a scheduled reboot — is computed from the time of the command
//! and the time last set, so a test can look at any instant exactly.
//!
//! **Faults are a set.** A [`Faults`] value (a `Copy` bitset of [`Fault`]s) is given at
//! construction and can be changed with `set_faults`. Exact effects:
//!
//! | fault | effect |
//! |---|---|
//! | `codec-nack` | codec `set_volume`, `volume`, `set_mute` → [`ErrorKind::NoAcknowledge`](crate::ErrorKind::NoAcknowledge), nothing changes |
//! | `codec-clamp` | codec stores at most 63 % (`set_volume(80)` stores 63); caps still say max 100 |
//! | `codec-quantized` | codec keeps 64 levels (register multiples of 3, the level at or below the command): `set_volume(40)` reads back 39; caps declare `tolerance` 2 |
//! | `readback-mismatch` | codec `volume()` reports `(stored + 7) % 101` (never equal to what is stored) |
//! | `relay-stuck` | relay feedback always reads off (its initial state) |
//! | `motor-stall` | a move stops at `start + (target - start) * 2 / 5` (40 %, truncated toward the start), `stalled: true` |
//! | `queue-full` | motor `start_move` and system `schedule_reboot` → [`ErrorKind::QueueFull`](crate::ErrorKind::QueueFull), nothing starts |
//! | `slow` | codec read-back and relay feedback lag the write by [`SLOW_MS`]; motor at quarter speed; codec `settle_ms` 2000, relay `settle_ms` 2000 |
//! | `timeout` | codec `set_volume`, `volume`, `set_mute` → [`ErrorKind::Timeout`](crate::ErrorKind::Timeout), nothing changes |
//! | `sensor-nack` | thermometer and battery `read` → [`ErrorKind::NoAcknowledge`](crate::ErrorKind::NoAcknowledge) |
//!
//! A fault touches only the devices listed; every other device behaves nominally under it. When
//! both `codec-nack` and `timeout` are active, the NACK wins (the address phase fails first).
//!
//! **Counters.** Every device counts the calls that took effect (`writes()`, `starts()`,
//! `stops()`, `schedules()`, …), so a test can check that a retransmitted request did not act
//! twice.
//!
//! **Errors** are [`ErrorKind`](crate::ErrorKind) itself.
//!
//! Everything is `no_std`, allocation-free and `const`-constructible, so a board can live in a
//! `static` of an emulator firmware.
//!
//! **The demo board.** [`DemoBoard`] (with the default feature `tasks`) is a [`SimBoard`] bound
//! to every kit, with a door-sensor interlock, a screen theme and the standard tool set
//! ([`DemoBoard::TOOLS`]): what a simulator, an emulator firmware or a test registers instead of
//! writing the bindings again (see [`demo`]).
//!
//! ```
//! use mcp_hal::audio::AudioCodec;
//! use mcp_hal::sim::{Fault, Faults, SimBoard};
//! use mcp_hal::Percent;
//!
//! let mut board = SimBoard::new(Faults::only(Fault::Slow));
//! board.set_time(1_000);
//! board.codec.set_volume(Percent::new(40).unwrap()).unwrap();
//! assert_eq!(board.codec.volume_caps().settle_ms, 2000);
//! assert_eq!(board.codec.volume().unwrap().get(), 70); // still the old value
//! board.set_time(3_000);
//! assert_eq!(board.codec.volume().unwrap().get(), 40);
//! ```

/// What every simulated device has alike: its clock and its faults, read and set by inherent
/// methods (`set_time`, `now_ms`, `faults`, `set_faults`), `Default` (no faults) and
/// [`ErrorKind`](crate::ErrorKind) for its errors.
///
/// The device has the fields `faults: Faults` and `now_ms: u64` and a
/// `const fn new(faults: Faults)`. `settles: field` names a [`Delayed`] that `set_time` also
/// settles at the new time; `set_faults: "…"` adds a sentence to the docs of `set_faults`.
macro_rules! sim_device {
    ($device:ident $(, settles: $delayed:ident)? $(, set_faults: $note:literal)?) => {
        impl $device {
            /// Sets the current time in milliseconds (ignored when earlier than the last one).
            pub fn set_time(&mut self, now_ms: u64) {
                $crate::sim::advance(&mut self.now_ms, now_ms);
                $(self.$delayed.settle(self.now_ms);)?
            }

            /// The time last set.
            pub const fn now_ms(&self) -> u64 {
                self.now_ms
            }

            /// The active faults.
            pub const fn faults(&self) -> $crate::sim::Faults {
                self.faults
            }

            /// Replaces the active faults.
            $(#[doc = $note])?
            pub fn set_faults(&mut self, faults: $crate::sim::Faults) {
                self.faults = faults;
            }
        }

        impl Default for $device {
            fn default() -> Self {
                Self::new($crate::sim::Faults::NONE)
            }
        }

        impl $crate::ErrorType for $device {
            type Error = $crate::ErrorKind;
        }
    };
}

/// The board's devices, each once: [`SimBoard`]'s fields, [`new`](SimBoard::new),
/// [`set_time`](SimBoard::set_time) and [`set_faults`](SimBoard::set_faults) follow from the list
/// (every device has `new(faults)`, `set_time` and `set_faults`: [`sim_device!`]), and so does
/// [`SimBoard::DEVICES`], their names.
macro_rules! sim_board {
    ($($(#[$doc:meta])* $field:ident: $device:ident,)*) => {
        /// A whole simulated board: one device per trait, sharing a fault set and a time.
        ///
        /// The fields are public so that each device can be lent to its tool kit
        /// (`&mut board.codec`) and inspected by tests. Use [`set_time`](SimBoard::set_time) and
        /// [`set_faults`](SimBoard::set_faults) on the board to keep the devices in step.
        #[derive(Debug, Clone)]
        pub struct SimBoard {
            faults: Faults,
            now_ms: u64,
            $($(#[$doc])* pub $field: $device,)*
        }

        impl SimBoard {
            /// The devices' names, as the fields are named, in the list's order: what a view of
            /// the whole board (a simulator's page) shows one each of.
            pub const DEVICES: &'static [&'static str] = &[$(stringify!($field)),*];

            /// Every device in its power-up state, at time 0, with `faults` active.
            pub const fn new(faults: Faults) -> Self {
                SimBoard {
                    faults,
                    now_ms: 0,
                    $($field: $device::new(faults),)*
                }
            }

            /// Sets the current time of every device, in milliseconds (ignored when earlier
            /// than the last one).
            pub fn set_time(&mut self, now_ms: u64) {
                advance(&mut self.now_ms, now_ms);
                let now = self.now_ms;
                $(self.$field.set_time(now);)*
            }

            /// Replaces the active faults on every device (see each device's `set_faults` for
            /// what happens to work already under way).
            pub fn set_faults(&mut self, faults: Faults) {
                self.faults = faults;
                $(self.$field.set_faults(faults);)*
            }
        }
    };
}

sim_board! {
    /// The audio codec.
    codec: SimCodec,
    /// The screen backlight.
    backlight: SimBacklight,
    /// The relay with its feedback contact.
    relay: SimRelay,
    /// The positioning motor.
    motor: SimMotor,
    /// The reboot line.
    system: SimSystem,
    /// The thermometer (I2C).
    thermometer: SimThermometer,
    /// The battery's fuel gauge (I2C).
    battery: SimBattery,
    /// The main button (GPIO).
    button: SimButton,
    /// The cooling fan, with its tachometer.
    fan: SimFan,
    /// The camera, whose frames the device encodes as PNG.
    camera: SimCamera,
}

mod asynch;
mod backlight;
mod board;
mod camera;
mod codec;
#[cfg(feature = "tasks")]
pub mod demo;
mod fan;
mod fault;
mod firmware;
mod motor;
mod relay;
mod sensor;
mod system;

pub use backlight::SimBacklight;
pub use camera::{Frame, FrameSize, SimCamera};
pub use codec::SimCodec;
#[cfg(feature = "tasks")]
pub use demo::{
    ANSWER_BYTES, CAPTURE_SIDE, DEMO_TOOLS, DOORBELL, DemoBoard, DemoTool, HOT, HOT_MILLICELSIUS,
    SimTime, Timebase, largest_side,
};
pub use fan::SimFan;
pub use fault::{Fault, Faults, FaultsIter, UnknownFault};
pub use firmware::{IMAGE_MAGIC, SimFirmware, write_image_header};
pub use motor::SimMotor;
pub use relay::SimRelay;
pub use sensor::{SimBattery, SimButton, SimThermometer};
pub use system::SimSystem;

/// How late effects appear under [`Fault::Slow`], in milliseconds.
pub const SLOW_MS: u32 = 2000;

/// Moves `clock` forward to `now_ms`; a time in the past is ignored.
fn advance(clock: &mut u64, now_ms: u64) {
    if now_ms > *clock {
        *clock = now_ms;
    }
}

/// A value whose latest write becomes visible only at a due time.
///
/// A write made while an earlier one is still pending replaces it: the visible value stays the
/// last settled one until the new write is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Delayed<T> {
    settled: T,
    pending: Option<(T, u64)>,
}

impl<T: Copy> Delayed<T> {
    const fn new(value: T) -> Self {
        Delayed {
            settled: value,
            pending: None,
        }
    }

    /// The value visible at `now_ms`.
    fn get(&self, now_ms: u64) -> T {
        match self.pending {
            Some((value, due)) if now_ms >= due => value,
            _ => self.settled,
        }
    }

    /// The value last written, visible or not yet.
    fn target(&self) -> T {
        self.pending.map_or(self.settled, |(value, _)| value)
    }

    /// Folds a pending write that is due at `now_ms` into the settled value.
    fn settle(&mut self, now_ms: u64) {
        self.settled = self.get(now_ms);
        if self.pending.is_some_and(|(_, due)| now_ms >= due) {
            self.pending = None;
        }
    }

    /// Writes `value` at `now_ms`, visible `delay_ms` later (at once for 0).
    fn set(&mut self, value: T, now_ms: u64, delay_ms: u32) {
        self.settle(now_ms);
        if delay_ms == 0 {
            self.settled = value;
            self.pending = None;
        } else {
            self.pending = Some((value, now_ms.saturating_add(u64::from(delay_ms))));
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_board_names_each_device_once() {
        let names = SimBoard::DEVICES;
        assert!(
            names.contains(&"fan") && names.contains(&"camera"),
            "{names:?}"
        );
        let mut sorted = names.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
    }

    #[test]
    fn advance_is_monotonic() {
        let mut clock = 0;
        advance(&mut clock, 500);
        assert_eq!(clock, 500);
        advance(&mut clock, 499);
        assert_eq!(clock, 500);
        advance(&mut clock, 501);
        assert_eq!(clock, 501);
    }

    #[test]
    fn delayed_value_appears_at_its_due_time() {
        let mut d = Delayed::new(1u8);
        d.set(2, 100, 0);
        assert_eq!(d.get(100), 2);
        d.set(3, 1000, 2000);
        assert_eq!(d.get(2999), 2);
        assert_eq!(d.target(), 3, "the value written, not yet visible");
        assert_eq!(d.get(3000), 3);
        d.settle(2999);
        assert_eq!(d.pending, Some((3, 3000)));
        d.settle(3000);
        assert_eq!(d, Delayed::new(3));
    }

    #[test]
    fn a_newer_pending_write_replaces_the_older() {
        let mut d = Delayed::new(false);
        d.set(true, 0, 2000);
        d.set(false, 1000, 2000);
        assert!(!d.get(2000));
        assert!(!d.get(3000));
        d.set(true, 4000, 2000);
        assert!(!d.get(5999));
        assert!(d.get(6000));
    }

    #[test]
    fn due_time_saturates() {
        let mut d = Delayed::new(0u8);
        d.set(1, u64::MAX - 1, 2000);
        assert_eq!(d.get(u64::MAX - 1), 0);
        assert_eq!(d.get(u64::MAX), 1);
    }
}
