//! [`SimFan`]: a PWM-driven fan with a tachometer.

use super::{Delayed, Fault, Faults, SLOW_MS};
use crate::setpoint::Setpoint;
use crate::{ErrorKind, Percent};

/// A simulated cooling fan: a PWM duty cycle sets its speed, and a tachometer measures it.
///
/// [`set_speed`](SimFan::set_speed) drives the PWM. The rotor reaches the new speed after
/// [`SPIN_MS`](SimFan::SPIN_MS); [`rpm`](SimFan::rpm) reads the tachometer, which shows the old
/// speed until then. Full speed is [`MAX_RPM`](SimFan::MAX_RPM), and the tachometer is exact
/// within [`TOLERANCE_RPM`](SimFan::TOLERANCE_RPM). As a [`Setpoint`] (the
/// [setpoint kit](crate::kits::setpoint)'s device) it takes percent and is measured in rpm.
/// Faults: `slow` makes the spin-up take [`SLOW_MS`] (declared), `motor-stall` holds the rotor
/// (the tachometer reads 0 rpm whatever the duty).
#[derive(Debug, Clone)]
pub struct SimFan {
    faults: Faults,
    now_ms: u64,
    speed: Delayed<Percent>,
    writes: u32,
}

impl SimFan {
    /// The speed at full duty cycle.
    pub const MAX_RPM: i64 = 3000;
    /// How far the tachometer may read from the commanded speed.
    pub const TOLERANCE_RPM: u32 = 30;
    /// How long the rotor takes to reach a new speed: within the kits' default call budget, so a
    /// call waits for it.
    pub const SPIN_MS: u32 = 150;

    /// A fan at rest, at time 0.
    pub const fn new(faults: Faults) -> Self {
        SimFan {
            faults,
            now_ms: 0,
            speed: Delayed::new(Percent::saturating(0)),
            writes: 0,
        }
    }

    /// The speed `duty` drives the fan at, in rpm.
    pub const fn rpm_at(duty: Percent) -> i64 {
        Self::MAX_RPM * duty.get() as i64 / 100
    }

    /// Drives the PWM at `duty`; the rotor follows within [`SPIN_MS`](SimFan::SPIN_MS) (with the
    /// fault `slow`, [`SLOW_MS`]).
    pub fn set_speed(&mut self, duty: Percent) {
        let spin = self.spin_ms();
        self.speed.set(duty, self.now_ms, spin);
        self.writes = self.writes.saturating_add(1);
    }

    /// The duty cycle last commanded (the rotor may still be on its way to its speed).
    pub fn duty(&self) -> Percent {
        self.speed.target()
    }

    /// The tachometer's reading, in rpm (0 while the fault `motor-stall` holds the rotor).
    pub fn rpm(&self) -> i64 {
        if self.faults.contains(Fault::MotorStall) {
            return 0;
        }
        Self::rpm_at(self.speed.get(self.now_ms))
    }

    /// How long the rotor takes to reach a new speed under the active faults.
    const fn spin_ms(&self) -> u32 {
        if self.faults.contains(Fault::Slow) {
            SLOW_MS
        } else {
            Self::SPIN_MS
        }
    }

    /// `set_speed` calls.
    pub const fn writes(&self) -> u32 {
        self.writes
    }
}

sim_device!(SimFan, settles: speed);

impl Setpoint for SimFan {
    /// `value` in percent of full speed; a value outside 0..=100 is refused (unsupported).
    fn set(&mut self, value: i64) -> Result<(), ErrorKind> {
        let duty = Percent::from_i64(value).ok_or(ErrorKind::Unsupported)?;
        self.set_speed(duty);
        Ok(())
    }
    fn read(&mut self) -> Result<i64, ErrorKind> {
        Ok(self.rpm())
    }
    fn expected(&self, value: i64) -> i64 {
        Percent::from_i64(value).map_or(0, Self::rpm_at)
    }
    fn tolerance(&self) -> u32 {
        Self::TOLERANCE_RPM
    }
    fn unit(&self) -> Option<&'static str> {
        Some("rpm")
    }
    fn settle_ms(&self) -> u32 {
        self.spin_ms()
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_tachometer_follows_the_duty_after_the_spin_up() {
        let mut fan = SimFan::default();
        assert_eq!(fan.rpm(), 0);
        fan.set_time(1000);
        fan.set_speed(Percent::new(40).unwrap());
        assert_eq!(fan.rpm(), 0, "the rotor has not sped up yet");
        assert_eq!(fan.duty().get(), 40, "commanded");
        fan.set_time(1000 + u64::from(SimFan::SPIN_MS) - 1);
        assert_eq!(fan.rpm(), 0);
        fan.set_time(1000 + u64::from(SimFan::SPIN_MS));
        assert_eq!(fan.rpm(), 1200);
        assert_eq!(fan.writes(), 1);
    }
}
