//! [`SimCodec`]: an ES8311-style codec with a real DAC volume register.

use super::{Delayed, Fault, Faults, SLOW_MS};
use crate::audio::{AudioCodec, VolumeCaps};
use crate::{ErrorKind, Percent};

/// A simulated ES8311 audio codec.
///
/// The DAC volume lives in register 0x32, where 0x00 is -95.5 dB and 0xBF is 0 dB. A percentage
/// `p` is written as `(p * 0xBF + 50) / 100` and the register `r` reads back as
/// `(r * 100 + 0x5F) / 0xBF`, an exact round trip for 0..=100 (see
/// [`percent_to_register`](SimCodec::percent_to_register)). It powers up at
/// [`INITIAL_VOLUME`](SimCodec::INITIAL_VOLUME), unmuted.
///
/// Faults: `codec-nack` and `timeout` make every chip access fail with
/// [`ErrorKind::NoAcknowledge`] / [`ErrorKind::Timeout`] and change nothing (NACK wins when both
/// are set); `codec-clamp` caps what is stored at [`CLAMP_MAX`](SimCodec::CLAMP_MAX);
/// `readback-mismatch` adds [`MISMATCH_OFFSET`](SimCodec::MISMATCH_OFFSET) to what
/// [`volume`](AudioCodec::volume) reports, modulo 101; `slow` makes a write reach the register
/// [`SLOW_MS`] after it was issued (a write issued while an earlier one is still pending replaces
/// it) and declares `settle_ms: 2000`. Mute is not delayed. `codec-quantized` makes the DAC keep
/// only [`QUANTIZED_STEPS`](SimCodec::QUANTIZED_STEPS) (64) levels: register values that are
/// multiples of [`QUANTIZED_STRIDE`](SimCodec::QUANTIZED_STRIDE) (3), `0x00` to `0xBD`, in
/// 1.5 dB steps. A write stores the level at or below the percentage's register value (see
/// [`quantize`](SimCodec::quantize)), the read-back converts it to the nearest whole percent as
/// always (40 % reads back as 39 %, 100 % as 99 %), and the caps declare
/// `tolerance: VolumeCaps::tolerance_for_steps(64)` (2).
#[derive(Debug, Clone)]
pub struct SimCodec {
    faults: Faults,
    now_ms: u64,
    register: Delayed<u8>,
    muted: bool,
    commanded: Option<Percent>,
    attempts: u32,
    writes: u32,
    reads: u32,
    mute_writes: u32,
}

impl SimCodec {
    /// The volume at power-up, in percent.
    pub const INITIAL_VOLUME: Percent = Percent::saturating(70);
    /// The highest volume stored under [`Fault::CodecClamp`].
    pub const CLAMP_MAX: Percent = Percent::saturating(63);
    /// What [`Fault::ReadbackMismatch`] adds to the read-back (modulo 101).
    pub const MISMATCH_OFFSET: u8 = 7;
    /// The DAC volume register's address.
    pub const VOLUME_REGISTER: u8 = 0x32;
    /// The register value for 0 dB (100 %).
    pub const REGISTER_MAX: u8 = 0xBF;
    /// The volume levels the DAC keeps under [`Fault::CodecQuantized`].
    pub const QUANTIZED_STEPS: u16 = 64;
    /// The register distance between two levels under [`Fault::CodecQuantized`]: the levels are
    /// `0, 3, 6, …, 189` (`0xBD`).
    pub const QUANTIZED_STRIDE: u8 = 3;

    /// A codec at [`INITIAL_VOLUME`](SimCodec::INITIAL_VOLUME), unmuted, at time 0.
    pub const fn new(faults: Faults) -> Self {
        SimCodec {
            faults,
            now_ms: 0,
            register: Delayed::new(Self::percent_to_register(Self::INITIAL_VOLUME)),
            muted: false,
            commanded: None,
            attempts: 0,
            writes: 0,
            reads: 0,
            mute_writes: 0,
        }
    }

    /// The register value for a percentage: `(p * 0xBF + 50) / 100`.
    pub const fn percent_to_register(p: Percent) -> u8 {
        // p <= 100, so the result is at most 0xBF.
        ((p.get() as u32 * Self::REGISTER_MAX as u32 + 50) / 100) as u8
    }

    /// The percentage a register value reads back as: `(r * 100 + 0x5F) / 0xBF` (values above
    /// 0xBF read as 100 %).
    pub const fn register_to_percent(register: u8) -> Percent {
        let r = if register > Self::REGISTER_MAX {
            Self::REGISTER_MAX
        } else {
            register
        };
        Percent::saturating(((r as u32 * 100 + 0x5F) / Self::REGISTER_MAX as u32) as u8)
    }

    /// The register value a write of `register` leaves under [`Fault::CodecQuantized`]: the
    /// level at or below it, a multiple of [`QUANTIZED_STRIDE`](SimCodec::QUANTIZED_STRIDE).
    pub const fn quantize(register: u8) -> u8 {
        register / Self::QUANTIZED_STRIDE * Self::QUANTIZED_STRIDE
    }

    /// The volume register (0x32) as the chip holds it now (under `slow`, the old value until
    /// the write is due).
    pub fn register(&self) -> u8 {
        self.register.get(self.now_ms)
    }

    /// The volume the register holds now, in percent, before any read-back fault.
    pub fn stored_volume(&self) -> Percent {
        Self::register_to_percent(self.register())
    }

    /// `true` when the output is muted.
    pub const fn muted(&self) -> bool {
        self.muted
    }

    /// The volume last passed to a `set_volume` that the chip accepted, if any.
    pub const fn commanded(&self) -> Option<Percent> {
        self.commanded
    }

    /// `set_volume` calls, successful or not.
    pub const fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Volume writes the chip accepted.
    pub const fn writes(&self) -> u32 {
        self.writes
    }

    /// Volume reads the chip answered.
    pub const fn reads(&self) -> u32 {
        self.reads
    }

    /// Mute writes the chip accepted.
    pub const fn mute_writes(&self) -> u32 {
        self.mute_writes
    }

    /// The bus error, when a fault makes the chip unreachable.
    fn bus(&self) -> Result<(), ErrorKind> {
        if self.faults.contains(Fault::CodecNack) {
            Err(ErrorKind::NoAcknowledge)
        } else if self.faults.contains(Fault::Timeout) {
            Err(ErrorKind::Timeout)
        } else {
            Ok(())
        }
    }
}

sim_device!(SimCodec, settles: register, set_faults: "A write already pending under `slow` keeps its due time.");

impl AudioCodec for SimCodec {
    fn volume_caps(&self) -> VolumeCaps {
        VolumeCaps {
            max: Percent::MAX,
            read_back: true,
            settle_ms: if self.faults.contains(Fault::Slow) {
                SLOW_MS
            } else {
                0
            },
            // Nominally every percent has its own register value and reads back as itself.
            tolerance: if self.faults.contains(Fault::CodecQuantized) {
                VolumeCaps::tolerance_for_steps(Self::QUANTIZED_STEPS)
            } else {
                0
            },
        }
    }

    fn set_volume(&mut self, volume: Percent) -> Result<(), ErrorKind> {
        self.attempts = self.attempts.saturating_add(1);
        self.bus()?;
        let stored = if self.faults.contains(Fault::CodecClamp) {
            volume.min(Self::CLAMP_MAX)
        } else {
            volume
        };
        let delay = if self.faults.contains(Fault::Slow) {
            SLOW_MS
        } else {
            0
        };
        let register = Self::percent_to_register(stored);
        let register = if self.faults.contains(Fault::CodecQuantized) {
            Self::quantize(register)
        } else {
            register
        };
        self.register.set(register, self.now_ms, delay);
        self.commanded = Some(volume);
        self.writes = self.writes.saturating_add(1);
        Ok(())
    }

    fn volume(&mut self) -> Result<Percent, ErrorKind> {
        self.bus()?;
        self.reads = self.reads.saturating_add(1);
        let stored = self.stored_volume();
        if self.faults.contains(Fault::ReadbackMismatch) {
            let off = (stored.get() + Self::MISMATCH_OFFSET) % 101;
            Ok(Percent::saturating(off))
        } else {
            Ok(stored)
        }
    }

    fn set_mute(&mut self, mute: bool) -> Result<(), ErrorKind> {
        self.bus()?;
        self.muted = mute;
        self.mute_writes = self.mute_writes.saturating_add(1);
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn p(v: u8) -> Percent {
        Percent::new(v).unwrap()
    }

    fn codec(fault: Fault) -> SimCodec {
        SimCodec::new(Faults::only(fault))
    }

    #[test]
    fn register_round_trip_is_exact_for_every_percent() {
        for v in 0..=100 {
            let reg = SimCodec::percent_to_register(p(v));
            assert!(reg <= 0xBF);
            assert_eq!(
                SimCodec::register_to_percent(reg),
                p(v),
                "{v}% -> {reg:#04x}"
            );
        }
        assert_eq!(SimCodec::percent_to_register(p(0)), 0x00);
        assert_eq!(SimCodec::percent_to_register(p(100)), 0xBF);
        assert_eq!(SimCodec::percent_to_register(p(50)), 96); // (50*191+50)/100 = 96
        assert_eq!(SimCodec::percent_to_register(p(70)), 134);
        assert_eq!(SimCodec::register_to_percent(0xFF), p(100));
        // The register is monotonic in the percentage.
        for v in 0..100 {
            assert!(SimCodec::percent_to_register(p(v)) < SimCodec::percent_to_register(p(v + 1)));
        }
    }

    #[test]
    fn nominal_write_reads_back_at_once() {
        let mut c = SimCodec::default();
        assert_eq!(c.register(), 134);
        assert_eq!(c.volume(), Ok(p(70)));
        assert_eq!(
            c.volume_caps(),
            VolumeCaps {
                max: Percent::MAX,
                read_back: true,
                settle_ms: 0,
                tolerance: 0
            }
        );
        assert_eq!(c.set_volume(p(40)), Ok(()));
        assert_eq!(c.register(), SimCodec::percent_to_register(p(40)));
        assert_eq!(c.volume(), Ok(p(40)));
        assert_eq!(c.commanded(), Some(p(40)));
        assert_eq!((c.attempts(), c.writes(), c.reads()), (1, 1, 2));
        assert_eq!(c.set_mute(true), Ok(()));
        assert!(c.muted());
        assert_eq!(c.mute_writes(), 1);
        assert_eq!(c.set_mute(false), Ok(()));
        assert!(!c.muted());
    }

    #[test]
    fn a_nack_or_a_timeout_fails_every_chip_access_and_changes_nothing() {
        for (fault, kind) in [
            (Fault::CodecNack, ErrorKind::NoAcknowledge),
            (Fault::Timeout, ErrorKind::Timeout),
        ] {
            let mut c = codec(fault);
            assert_eq!(c.set_volume(p(10)), Err(kind));
            assert_eq!(c.volume(), Err(kind));
            assert_eq!(c.set_mute(true), Err(kind));
            assert_eq!(
                c.register(),
                SimCodec::percent_to_register(p(70)),
                "{fault:?}"
            );
            assert_eq!(c.stored_volume(), p(70), "{fault:?}");
            assert!(!c.muted(), "{fault:?}");
            assert_eq!(c.commanded(), None, "{fault:?}");
            assert_eq!(
                (c.attempts(), c.writes(), c.reads(), c.mute_writes()),
                (1, 0, 0, 0),
                "{fault:?}"
            );
            // Caps do not touch the chip.
            assert_eq!(c.volume_caps().max, Percent::MAX);
            assert_eq!(c.volume_caps().settle_ms, 0);
        }
    }

    #[test]
    fn nack_wins_over_timeout() {
        let mut c = SimCodec::new(Faults::only(Fault::Timeout).with(Fault::CodecNack));
        assert_eq!(c.set_volume(p(10)), Err(ErrorKind::NoAcknowledge));
        assert_eq!(c.volume(), Err(ErrorKind::NoAcknowledge));
    }

    #[test]
    fn codec_clamp_silently_caps_at_63() {
        let mut c = codec(Fault::CodecClamp);
        assert_eq!(c.volume_caps().max, Percent::MAX); // silent: caps still claim 100
        assert_eq!(c.set_volume(p(80)), Ok(()));
        assert_eq!(c.register(), SimCodec::percent_to_register(p(63)));
        assert_eq!(c.register(), 120);
        assert_eq!(c.volume(), Ok(p(63)));
        assert_eq!(c.commanded(), Some(p(80)));
        assert_eq!(c.set_volume(p(63)), Ok(()));
        assert_eq!(c.volume(), Ok(p(63)));
        assert_eq!(c.set_volume(p(20)), Ok(()));
        assert_eq!(c.volume(), Ok(p(20)));
        assert_eq!(c.set_volume(p(100)), Ok(()));
        assert_eq!(c.volume(), Ok(p(63)));
        assert_eq!(c.writes(), 4);
    }

    #[test]
    fn readback_mismatch_adds_7_modulo_101_and_always_differs() {
        let mut c = codec(Fault::ReadbackMismatch);
        for v in 0..=100u8 {
            c.set_volume(p(v)).unwrap();
            // The register holds the right value; only the read-back lies.
            assert_eq!(c.stored_volume(), p(v));
            let read = c.volume().unwrap();
            assert_eq!(read.get(), (v + 7) % 101);
            assert_ne!(read, p(v));
        }
        c.set_volume(p(40)).unwrap();
        assert_eq!(c.volume(), Ok(p(47)));
        c.set_volume(p(94)).unwrap();
        assert_eq!(c.volume(), Ok(p(0)));
        c.set_volume(p(100)).unwrap();
        assert_eq!(c.volume(), Ok(p(6)));
        assert_eq!(c.volume_caps().settle_ms, 0);
    }

    #[test]
    fn clamp_and_mismatch_combine() {
        let mut c = SimCodec::new(Faults::only(Fault::CodecClamp).with(Fault::ReadbackMismatch));
        c.set_volume(p(80)).unwrap();
        assert_eq!(c.volume(), Ok(p(70)));
    }

    #[test]
    fn slow_read_back_shows_the_old_value_until_2000_ms() {
        let mut c = codec(Fault::Slow);
        assert_eq!(c.volume_caps().settle_ms, 2000);
        c.set_time(10_000);
        c.set_volume(p(30)).unwrap();
        c.set_time(11_999);
        assert_eq!(c.volume(), Ok(p(70)));
        assert_eq!(c.register(), 134);
        c.set_time(12_000);
        assert_eq!(c.volume(), Ok(p(30)));
        assert_eq!(c.register(), SimCodec::percent_to_register(p(30)));
        // Mute is not delayed.
        c.set_mute(true).unwrap();
        assert!(c.muted());
    }

    #[test]
    fn slow_write_during_a_pending_one_replaces_it() {
        let mut c = codec(Fault::Slow);
        c.set_volume(p(30)).unwrap();
        c.set_time(1000);
        c.set_volume(p(50)).unwrap();
        c.set_time(2000);
        assert_eq!(c.volume(), Ok(p(70)));
        c.set_time(2999);
        assert_eq!(c.volume(), Ok(p(70)));
        c.set_time(3000);
        assert_eq!(c.volume(), Ok(p(50)));
    }

    #[test]
    fn slow_without_set_time_reads_are_computed_from_the_clock() {
        let mut c = codec(Fault::Slow);
        c.set_volume(p(30)).unwrap();
        c.set_time(1500);
        c.set_time(500); // backwards: ignored
        assert_eq!(c.now_ms(), 1500);
        assert_eq!(c.volume(), Ok(p(70)));
        c.set_time(2000);
        assert_eq!(c.volume(), Ok(p(30)));
    }

    #[test]
    fn board_faults_for_other_devices_leave_the_codec_nominal() {
        for fault in [Fault::RelayStuck, Fault::MotorStall, Fault::QueueFull] {
            let mut c = codec(fault);
            assert_eq!(c.volume_caps().settle_ms, 0, "{fault}");
            for v in [0, 40, 80, 100] {
                assert_eq!(c.set_volume(p(v)), Ok(()), "{fault}");
                assert_eq!(c.volume(), Ok(p(v)), "{fault}");
            }
            assert_eq!(c.set_mute(true), Ok(()));
            assert!(c.muted());
        }
    }

    #[test]
    fn quantized_keeps_64_levels_and_reads_back_within_its_tolerance() {
        let mut c = codec(Fault::CodecQuantized);
        let caps = c.volume_caps();
        assert_eq!(caps.tolerance, 2);
        assert_eq!(caps.settle_ms, 0);
        let mut levels = std::collections::BTreeSet::new();
        let mut off = 0;
        for v in 0..=100 {
            c.set_volume(p(v)).unwrap();
            assert_eq!(c.register() % SimCodec::QUANTIZED_STRIDE, 0, "{v}");
            assert!(c.register() <= SimCodec::percent_to_register(p(v)), "{v}");
            levels.insert(c.register());
            let read = c.volume().unwrap();
            assert_eq!(read, c.stored_volume());
            assert!(caps.agrees(p(v), read), "{v} read back as {}", read.get());
            off += usize::from(read != p(v));
        }
        // 64 levels from 0x00 to 0xBD: exactly the 64 reachable ones.
        assert_eq!(levels.len(), 64);
        assert_eq!(levels.last(), Some(&0xBD));
        // Half the percentages read back one off: a strict comparison would fail them.
        assert_eq!(off, 50);
        c.set_volume(p(40)).unwrap();
        assert_eq!(c.register(), 75);
        assert_eq!(c.volume(), Ok(p(39)));
        c.set_volume(p(100)).unwrap();
        assert_eq!(c.volume(), Ok(p(99)));
        c.set_volume(p(50)).unwrap();
        assert_eq!(c.volume(), Ok(p(50)));
    }

    #[test]
    fn set_faults_applies_to_later_calls() {
        let mut c = SimCodec::default();
        c.set_faults(Faults::only(Fault::CodecNack));
        assert_eq!(c.faults(), Faults::only(Fault::CodecNack));
        assert_eq!(c.set_volume(p(5)), Err(ErrorKind::NoAcknowledge));
        c.set_faults(Faults::NONE);
        assert_eq!(c.set_volume(p(5)), Ok(()));
        assert_eq!(c.volume(), Ok(p(5)));
    }
}
