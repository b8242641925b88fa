//! The faults a simulated board can suffer: [`Fault`] and the set of active ones, [`Faults`].

use core::fmt;

/// One injectable fault. Each names a way real hardware lies or refuses; see
/// [`description`](Fault::description) and the [module docs](super) for the exact effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Fault {
    /// `codec-nack`: every I2C transfer to the codec is NACKed. [`SimCodec`](super::SimCodec)'s
    /// `set_volume`, `volume` and `set_mute` fail with
    /// [`ErrorKind::NoAcknowledge`](crate::ErrorKind::NoAcknowledge) and change nothing.
    CodecNack = 0,
    /// `codec-clamp`: the codec silently caps the volume at
    /// [`SimCodec::CLAMP_MAX`](super::SimCodec::CLAMP_MAX) (63 %); its caps still claim 100 %.
    CodecClamp = 1,
    /// `readback-mismatch`: the codec's read-back reports the stored volume plus
    /// [`SimCodec::MISMATCH_OFFSET`](super::SimCodec::MISMATCH_OFFSET) (7), wrapping within
    /// 0..=100: `(v + 7) % 101`. It differs from the stored value for every input.
    ReadbackMismatch = 2,
    /// `relay-stuck`: the relay's feedback contact never leaves its initial (off) state.
    RelayStuck = 3,
    /// `motor-stall`: a move stops 40 % of the way from its start to its target (rounded toward
    /// the start) and reports `stalled: true`; the fan's rotor is held (its tachometer reads 0).
    MotorStall = 4,
    /// `queue-full`: the action queue rejects new work. [`SimMotor`](super::SimMotor)'s
    /// `start_move` and [`SimSystem`](super::SimSystem)'s `schedule_reboot` fail with
    /// [`ErrorKind::QueueFull`](crate::ErrorKind::QueueFull) and do nothing. Direct writes
    /// (codec, backlight, relay) are unaffected.
    QueueFull = 5,
    /// `slow`: effects take [`SLOW_MS`](super::SLOW_MS) (2000 ms) to appear. The codec read-back
    /// and the relay feedback lag the write by 2000 ms, the fan spins up in 2000 ms, the motor
    /// runs at a quarter of its speed, and the devices declare it (`VolumeCaps::settle_ms`,
    /// `Switch::settle_ms`, `Setpoint::settle_ms`).
    Slow = 6,
    /// `timeout`: the codec does not answer. Its `set_volume`, `volume` and `set_mute` fail with
    /// [`ErrorKind::Timeout`](crate::ErrorKind::Timeout) and change nothing. Not in
    /// [`Fault::CLI`].
    Timeout = 7,
    /// `codec-quantized`: an honest codec with a coarse register. The DAC keeps
    /// [`SimCodec::QUANTIZED_STEPS`](super::SimCodec::QUANTIZED_STEPS) (64) volume levels, keeps
    /// the level at or below each command, and reads it back as the nearest whole percent
    /// (40 % reads back as 39 %); its caps declare the matching tolerance (2 %). Not a failure:
    /// the kit confirms every percentage.
    CodecQuantized = 8,
    /// `sensor-nack`: the sensors' I2C bus NACKs. [`SimThermometer`](super::SimThermometer) and
    /// [`SimBattery`](super::SimBattery) reads fail with
    /// [`ErrorKind::NoAcknowledge`](crate::ErrorKind::NoAcknowledge) (their resources answer
    /// errors, and nothing is published). The button, a GPIO, is unaffected.
    SensorNack = 9,
}

impl Fault {
    /// Every fault, in declaration order (the order [`Faults`] iterates in).
    pub const ALL: [Fault; 10] = [
        Fault::CodecNack,
        Fault::CodecClamp,
        Fault::ReadbackMismatch,
        Fault::RelayStuck,
        Fault::MotorStall,
        Fault::QueueFull,
        Fault::Slow,
        Fault::Timeout,
        Fault::CodecQuantized,
        Fault::SensorNack,
    ];

    /// The board-level faults a simulator's command line offers (device-sim's `--fault` list):
    /// [`ALL`](Fault::ALL) without [`Timeout`](Fault::Timeout).
    pub const CLI: [Fault; 9] = [
        Fault::CodecNack,
        Fault::CodecClamp,
        Fault::CodecQuantized,
        Fault::ReadbackMismatch,
        Fault::RelayStuck,
        Fault::MotorStall,
        Fault::QueueFull,
        Fault::Slow,
        Fault::SensorNack,
    ];

    /// The command-line name, e.g. `"codec-nack"`.
    pub const fn name(self) -> &'static str {
        match self {
            Fault::CodecNack => "codec-nack",
            Fault::CodecClamp => "codec-clamp",
            Fault::ReadbackMismatch => "readback-mismatch",
            Fault::RelayStuck => "relay-stuck",
            Fault::MotorStall => "motor-stall",
            Fault::QueueFull => "queue-full",
            Fault::Slow => "slow",
            Fault::Timeout => "timeout",
            Fault::CodecQuantized => "codec-quantized",
            Fault::SensorNack => "sensor-nack",
        }
    }

    /// One human sentence saying what the fault does (for `--help` and logs).
    pub const fn description(self) -> &'static str {
        match self {
            Fault::CodecNack => {
                "Every I2C transfer to the codec is NACKed: volume and mute calls fail and change nothing"
            }
            Fault::CodecClamp => {
                "The codec silently caps the volume at 63 % (its capabilities still claim 100 %)"
            }
            Fault::ReadbackMismatch => {
                "The codec's read-back is wrong: it reports the stored volume + 7, wrapping past 100 to 0"
            }
            Fault::RelayStuck => {
                "The relay contacts never move: its feedback input always reads off"
            }
            Fault::MotorStall => {
                "The motor stops 40 % of the way to its target and reports a stall; the fan's rotor is held"
            }
            Fault::QueueFull => {
                "The action queue is full: motor moves and reboots are refused and nothing starts"
            }
            Fault::Slow => {
                "Effects take 2 s to appear: codec read-back, relay feedback and the fan's speed lag 2000 ms, the motor runs at quarter speed"
            }
            Fault::Timeout => {
                "The codec does not answer: volume and mute calls time out and change nothing"
            }
            Fault::CodecQuantized => {
                "The codec has 64 volume steps: 40 % reads back as 39 % (its capabilities declare a 2 % tolerance)"
            }
            Fault::SensorNack => {
                "The sensors' I2C bus NACKs: temperature and battery reads fail (the button still works)"
            }
        }
    }

    /// The fault with this command-line name (exact, case-sensitive), or `None`.
    pub fn from_name(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.name() == name)
    }

    const fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of active [`Fault`]s: a small bitset, `Copy`, buildable in `const` context.
///
/// ```
/// use mcp_hal::sim::{Fault, Faults};
///
/// const FAULTS: Faults = Faults::NONE.with(Fault::Slow).with(Fault::RelayStuck);
/// assert!(FAULTS.contains(Fault::Slow));
/// assert_eq!(Faults::parse("relay-stuck, slow"), Ok(FAULTS));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Faults(u16);

impl Faults {
    /// No fault: every device behaves nominally.
    pub const NONE: Faults = Faults(0);
    /// Every fault at once.
    pub const ALL: Faults = Faults((1 << Fault::ALL.len()) - 1);

    /// The set holding only `fault`.
    pub const fn only(fault: Fault) -> Faults {
        Faults(fault.bit())
    }

    /// This set plus `fault`.
    #[must_use]
    pub const fn with(self, fault: Fault) -> Faults {
        Faults(self.0 | fault.bit())
    }

    /// This set without `fault`.
    #[must_use]
    pub const fn without(self, fault: Fault) -> Faults {
        Faults(self.0 & !fault.bit())
    }

    /// The faults in either set.
    #[must_use]
    pub const fn union(self, other: Faults) -> Faults {
        Faults(self.0 | other.0)
    }

    /// `true` when `fault` is active.
    pub const fn contains(self, fault: Fault) -> bool {
        self.0 & fault.bit() != 0
    }

    /// `true` when no fault is active.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// How many faults are active.
    pub const fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// Activates `fault`.
    pub fn insert(&mut self, fault: Fault) {
        *self = self.with(fault);
    }

    /// Deactivates `fault`.
    pub fn remove(&mut self, fault: Fault) {
        *self = self.without(fault);
    }

    /// The active faults, in [`Fault::ALL`] order.
    pub fn iter(self) -> FaultsIter {
        FaultsIter {
            set: self,
            rest: Fault::ALL.iter(),
        }
    }

    /// Parses a comma-separated list of fault names (`"codec-nack,slow"`; blanks around names
    /// are ignored, an empty list is [`Faults::NONE`]). A name may repeat.
    pub fn parse(list: &str) -> Result<Faults, UnknownFault<'_>> {
        let mut set = Faults::NONE;
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            set.insert(Fault::from_name(name).ok_or(UnknownFault(name))?);
        }
        Ok(set)
    }
}

impl From<Fault> for Faults {
    fn from(fault: Fault) -> Faults {
        Faults::only(fault)
    }
}

impl FromIterator<Fault> for Faults {
    fn from_iter<I: IntoIterator<Item = Fault>>(iter: I) -> Faults {
        iter.into_iter().fold(Faults::NONE, Faults::with)
    }
}

impl IntoIterator for Faults {
    type Item = Fault;
    type IntoIter = FaultsIter;
    fn into_iter(self) -> FaultsIter {
        self.iter()
    }
}

/// Formats as the comma-separated names (`codec-nack,slow`), or `none` for the empty set.
impl fmt::Display for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        for (i, fault) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(fault.name())?;
        }
        Ok(())
    }
}

/// Iterator over the faults in a [`Faults`] set (see [`Faults::iter`]).
#[derive(Debug, Clone)]
pub struct FaultsIter {
    set: Faults,
    rest: core::slice::Iter<'static, Fault>,
}

impl Iterator for FaultsIter {
    type Item = Fault;
    fn next(&mut self) -> Option<Fault> {
        let set = self.set;
        self.rest.by_ref().copied().find(|f| set.contains(*f))
    }
}

/// A name that [`Faults::parse`] did not recognise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownFault<'a>(pub &'a str);

impl fmt::Display for UnknownFault<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown fault `{}` (known:", self.0)?;
        for fault in Fault::ALL {
            write!(f, " {}", fault.name())?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn names_round_trip_for_every_fault() {
        for fault in Fault::ALL {
            assert_eq!(Fault::from_name(fault.name()), Some(fault));
            assert!(!fault.description().is_empty());
            assert_eq!(format!("{fault}"), fault.name());
        }
        let names: Vec<_> = Fault::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(
            names,
            [
                "codec-nack",
                "codec-clamp",
                "readback-mismatch",
                "relay-stuck",
                "motor-stall",
                "queue-full",
                "slow",
                "timeout",
                "codec-quantized",
                "sensor-nack"
            ]
        );
        assert_eq!(Fault::from_name("Codec-Nack"), None);
        assert_eq!(Fault::from_name(""), None);
        assert_eq!(Fault::from_name("stall"), None);
    }

    #[test]
    fn cli_list_is_all_but_timeout() {
        assert_eq!(Fault::CLI.len(), Fault::ALL.len() - 1);
        assert!(!Fault::CLI.contains(&Fault::Timeout));
        assert!(Fault::CLI.iter().all(|f| Fault::ALL.contains(f)));
    }

    #[test]
    fn bits_are_distinct_and_all_covers_them() {
        let mut seen = 0u16;
        for fault in Fault::ALL {
            assert_eq!(seen & fault.bit(), 0);
            seen |= fault.bit();
        }
        assert_eq!(Faults::ALL, Faults(seen));
        assert_eq!(Faults::ALL.len(), 10);
        assert_eq!(Faults::ALL.iter().collect::<Vec<_>>(), Fault::ALL);
    }

    #[test]
    fn set_operations() {
        const SET: Faults = Faults::NONE.with(Fault::Slow).with(Fault::CodecNack);
        assert!(SET.contains(Fault::Slow));
        assert!(SET.contains(Fault::CodecNack));
        assert!(!SET.contains(Fault::Timeout));
        assert_eq!(SET.len(), 2);
        assert_eq!(
            SET.iter().collect::<Vec<_>>(),
            [Fault::CodecNack, Fault::Slow]
        );
        assert_eq!(SET.without(Fault::Slow), Faults::only(Fault::CodecNack));
        assert_eq!(SET.without(Fault::Timeout), SET);

        let mut s = Faults::NONE;
        assert!(s.is_empty());
        s.insert(Fault::MotorStall);
        s.insert(Fault::MotorStall);
        assert_eq!(s.len(), 1);
        s.remove(Fault::MotorStall);
        assert_eq!(s, Faults::NONE);

        let collected: Faults = [Fault::Timeout, Fault::QueueFull].into_iter().collect();
        assert_eq!(
            collected,
            Faults::from(Fault::QueueFull).with(Fault::Timeout)
        );
        assert_eq!(
            Faults::only(Fault::Slow).union(Faults::only(Fault::RelayStuck)),
            Faults::NONE.with(Fault::RelayStuck).with(Fault::Slow)
        );
        let mut n = 0;
        for fault in Faults::ALL {
            assert!(Faults::ALL.contains(fault));
            n += 1;
        }
        assert_eq!(n, 10);
    }

    #[test]
    fn parse_and_display() {
        assert_eq!(Faults::parse(""), Ok(Faults::NONE));
        assert_eq!(Faults::parse(" , "), Ok(Faults::NONE));
        assert_eq!(
            Faults::parse("slow, codec-nack,slow"),
            Ok(Faults::NONE.with(Fault::CodecNack).with(Fault::Slow))
        );
        assert_eq!(Faults::parse("slow,nope"), Err(UnknownFault("nope")));
        assert!(
            format!("{}", UnknownFault("nope"))
                .starts_with("unknown fault `nope` (known: codec-nack")
        );
        assert_eq!(format!("{}", Faults::NONE), "none");
        assert_eq!(
            format!("{}", Faults::NONE.with(Fault::Slow).with(Fault::CodecNack)),
            "codec-nack,slow"
        );
        let all = format!("{}", Faults::ALL);
        assert_eq!(Faults::parse(&all), Ok(Faults::ALL));
    }
}
