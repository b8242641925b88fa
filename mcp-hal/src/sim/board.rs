//! [`SimBoard`]'s clock, faults and delay (its devices are listed once, in `sim/mod.rs`).

use super::{Faults, SimBoard};

impl SimBoard {
    /// The time last set on the board.
    pub const fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// The active faults.
    pub const fn faults(&self) -> Faults {
        self.faults
    }
}

impl Default for SimBoard {
    fn default() -> Self {
        Self::new(Faults::NONE)
    }
}

/// A delay on the simulated clock: it advances every device's time by the delay, at once, so
/// that a kit waiting for a settle time ([`kits::Wait`](crate::kits::Wait)) sees exactly the
/// effects due by then. The clock counts whole milliseconds: a delay of a fraction of one counts
/// as one (a delay is never shorter than asked).
impl embedded_hal::delay::DelayNs for SimBoard {
    fn delay_ns(&mut self, ns: u32) {
        self.delay_ms(ns.div_ceil(1_000_000));
    }

    fn delay_us(&mut self, us: u32) {
        self.delay_ms(us.div_ceil(1_000));
    }

    fn delay_ms(&mut self, ms: u32) {
        self.set_time(self.now_ms.saturating_add(u64::from(ms)));
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::ErrorKind;
    use crate::Percent;
    use crate::audio::AudioCodec;
    use crate::backlight::Backlight;
    use crate::motor::{Actuator, Motion};
    use crate::sensor::Sensor;
    use crate::sim::Fault;
    use crate::switch::Switch;
    use crate::system::System;

    fn p(v: u8) -> Percent {
        Percent::new(v).unwrap()
    }

    /// What every device observes after one command each, at t = 0 then t = 2000.
    #[derive(Debug, PartialEq, Eq)]
    struct Outcome {
        set_volume: Result<(), ErrorKind>,
        volume_at_once: Result<Percent, ErrorKind>,
        volume_later: Result<Percent, ErrorKind>,
        codec_settle: u32,
        codec_tolerance: u8,
        brightness: Result<Option<Percent>, ErrorKind>,
        level: Percent,
        relay_at_once: Result<Option<bool>, ErrorKind>,
        relay_later: Result<Option<bool>, ErrorKind>,
        relay_settle: u32,
        start_move: Result<(), ErrorKind>,
        motion_later: Motion,
        reboot: Result<(), ErrorKind>,
        scheduled_at: Option<u64>,
        temperature: Result<i32, ErrorKind>,
        battery: Result<i32, ErrorKind>,
    }

    fn run(faults: Faults) -> Outcome {
        let mut b = SimBoard::new(faults);
        let set_volume = b.codec.set_volume(p(80));
        let volume_at_once = b.codec.volume();
        b.backlight.set_brightness(p(30)).unwrap();
        b.relay.set(true).unwrap();
        let relay_at_once = b.relay.feedback();
        let start_move = b.motor.start_move(1000);
        let reboot = b.system.schedule_reboot(1000);
        b.set_time(2000);
        Outcome {
            set_volume,
            volume_at_once,
            volume_later: b.codec.volume(),
            codec_settle: b.codec.volume_caps().settle_ms,
            codec_tolerance: b.codec.volume_caps().tolerance,
            brightness: b.backlight.brightness(),
            level: b.backlight.level(),
            relay_at_once,
            relay_later: b.relay.feedback(),
            relay_settle: b.relay.settle_ms(),
            start_move,
            motion_later: b.motor.state().unwrap(),
            reboot,
            scheduled_at: b.system.scheduled_at(),
            temperature: b.thermometer.read(),
            battery: b.battery.read(),
        }
    }

    fn nominal() -> Outcome {
        Outcome {
            set_volume: Ok(()),
            volume_at_once: Ok(p(80)),
            volume_later: Ok(p(80)),
            codec_settle: 0,
            codec_tolerance: 0,
            brightness: Ok(None),
            level: p(30),
            relay_at_once: Ok(Some(true)),
            relay_later: Ok(Some(true)),
            relay_settle: 20,
            start_move: Ok(()),
            motion_later: Motion {
                position: 500,
                moving: true,
                stalled: false,
            },
            reboot: Ok(()),
            scheduled_at: Some(1000),
            temperature: Ok(21_500),
            battery: Ok(87_000),
        }
    }

    /// The fault matrix: each fault changes exactly the listed observations and nothing else.
    #[test]
    fn every_fault_changes_exactly_its_own_observations() {
        assert_eq!(run(Faults::NONE), nominal());
        for fault in Fault::ALL {
            let n = nominal();
            let expected = match fault {
                Fault::CodecNack => Outcome {
                    set_volume: Err(ErrorKind::NoAcknowledge),
                    volume_at_once: Err(ErrorKind::NoAcknowledge),
                    volume_later: Err(ErrorKind::NoAcknowledge),
                    ..n
                },
                Fault::Timeout => Outcome {
                    set_volume: Err(ErrorKind::Timeout),
                    volume_at_once: Err(ErrorKind::Timeout),
                    volume_later: Err(ErrorKind::Timeout),
                    ..n
                },
                Fault::CodecClamp => Outcome {
                    volume_at_once: Ok(p(63)),
                    volume_later: Ok(p(63)),
                    ..n
                },
                // 80 % is one of the 64 levels (register 153): only the caps change.
                Fault::CodecQuantized => Outcome {
                    codec_tolerance: 2,
                    ..n
                },
                Fault::ReadbackMismatch => Outcome {
                    volume_at_once: Ok(p(87)),
                    volume_later: Ok(p(87)),
                    ..n
                },
                Fault::RelayStuck => Outcome {
                    relay_at_once: Ok(Some(false)),
                    relay_later: Ok(Some(false)),
                    ..n
                },
                Fault::MotorStall => Outcome {
                    motion_later: Motion {
                        position: 400,
                        moving: false,
                        stalled: true,
                    },
                    ..n
                },
                Fault::QueueFull => Outcome {
                    start_move: Err(ErrorKind::QueueFull),
                    motion_later: Motion {
                        position: 0,
                        moving: false,
                        stalled: false,
                    },
                    reboot: Err(ErrorKind::QueueFull),
                    scheduled_at: None,
                    ..n
                },
                Fault::SensorNack => Outcome {
                    temperature: Err(ErrorKind::NoAcknowledge),
                    battery: Err(ErrorKind::NoAcknowledge),
                    ..n
                },
                Fault::Slow => Outcome {
                    volume_at_once: Ok(p(70)),
                    codec_settle: 2000,
                    relay_at_once: Ok(Some(false)),
                    relay_settle: 2000,
                    motion_later: Motion {
                        position: 125,
                        moving: true,
                        stalled: false,
                    },
                    ..n
                },
            };
            assert_eq!(run(Faults::only(fault)), expected, "{fault}");
        }
    }

    #[test]
    fn set_time_reaches_every_device_and_is_monotonic() {
        let mut b = SimBoard::default();
        b.set_time(1234);
        b.set_time(1000);
        assert_eq!(b.now_ms(), 1234);
        assert_eq!(b.codec.now_ms(), 1234);
        assert_eq!(b.backlight.now_ms(), 1234);
        assert_eq!(b.relay.now_ms(), 1234);
        assert_eq!(b.motor.now_ms(), 1234);
        assert_eq!(b.system.now_ms(), 1234);
        assert_eq!(b.thermometer.now_ms(), 1234);
        assert_eq!(b.battery.now_ms(), 1234);
        assert_eq!(b.button.now_ms(), 1234);
    }

    #[test]
    fn faults_reach_every_device() {
        let faults = Faults::only(Fault::Slow).with(Fault::RelayStuck);
        let mut b = SimBoard::new(faults);
        assert_eq!(b.faults(), faults);
        assert_eq!(b.codec.faults(), faults);
        assert_eq!(b.motor.faults(), faults);
        b.set_faults(Faults::NONE);
        assert_eq!(b.faults(), Faults::NONE);
        assert_eq!(b.codec.faults(), Faults::NONE);
        assert_eq!(b.backlight.faults(), Faults::NONE);
        assert_eq!(b.relay.faults(), Faults::NONE);
        assert_eq!(b.motor.faults(), Faults::NONE);
        assert_eq!(b.system.faults(), Faults::NONE);
        assert_eq!(b.thermometer.faults(), Faults::NONE);
        assert_eq!(b.battery.faults(), Faults::NONE);
        assert_eq!(b.button.faults(), Faults::NONE);
    }

    #[test]
    fn the_delay_advances_the_simulated_clock() {
        use embedded_hal::delay::DelayNs;
        let mut b = SimBoard::new(Faults::only(Fault::Slow));
        b.set_time(100);
        b.relay.set(true).unwrap();
        b.delay_ms(1999);
        assert_eq!(b.now_ms(), 2099);
        assert_eq!(b.relay.now_ms(), 2099);
        assert_eq!(b.relay.feedback(), Ok(Some(false)));
        b.delay_us(1);
        assert_eq!(b.now_ms(), 2100);
        assert_eq!(b.relay.feedback(), Ok(Some(true)));
        b.delay_ns(1_000_001);
        assert_eq!(b.now_ms(), 2102);
        b.delay_ns(0);
        assert_eq!(b.now_ms(), 2102);
    }

    #[test]
    fn board_can_be_a_static() {
        static BOARD: SimBoard = SimBoard::new(Faults::only(Fault::MotorStall));
        assert_eq!(BOARD.faults(), Faults::only(Fault::MotorStall));
        assert_eq!(BOARD.codec.stored_volume(), p(70));
    }
}
