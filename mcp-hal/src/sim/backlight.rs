//! [`SimBacklight`]: a PWM backlight that cannot be read back.

use super::Faults;
use crate::backlight::Backlight;
use crate::{ErrorKind, Percent};

/// A simulated PWM backlight.
///
/// `set_brightness` sets the duty cycle; [`brightness`](Backlight::brightness) answers
/// `Ok(None)`, because a PWM output cannot be read back (so a kit can only claim `applied`). The
/// level is visible to tests through [`level`](SimBacklight::level). It powers up at
/// [`INITIAL_LEVEL`](SimBacklight::INITIAL_LEVEL). No fault affects it: it is a direct pin
/// write, not queued, and has nothing to read back late.
#[derive(Debug, Clone)]
pub struct SimBacklight {
    faults: Faults,
    now_ms: u64,
    level: Percent,
    writes: u32,
}

impl SimBacklight {
    /// The level at power-up, in percent.
    pub const INITIAL_LEVEL: Percent = Percent::saturating(80);

    /// A backlight at [`INITIAL_LEVEL`](SimBacklight::INITIAL_LEVEL), at time 0.
    pub const fn new(faults: Faults) -> Self {
        SimBacklight {
            faults,
            now_ms: 0,
            level: Self::INITIAL_LEVEL,
            writes: 0,
        }
    }

    /// The duty cycle now driven (what the hardware cannot report).
    pub const fn level(&self) -> Percent {
        self.level
    }

    /// `set_brightness` calls.
    pub const fn writes(&self) -> u32 {
        self.writes
    }
}

sim_device!(SimBacklight);

impl Backlight for SimBacklight {
    fn set_brightness(&mut self, level: Percent) -> Result<(), ErrorKind> {
        self.level = level;
        self.writes = self.writes.saturating_add(1);
        Ok(())
    }

    fn brightness(&mut self) -> Result<Option<Percent>, ErrorKind> {
        Ok(None)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::sim::Fault;

    #[test]
    fn stores_the_level_and_cannot_read_it_back() {
        let mut b = SimBacklight::default();
        assert_eq!(b.level(), Percent::new(80).unwrap());
        assert_eq!(b.brightness(), Ok(None));
        assert_eq!(b.set_brightness(Percent::new(25).unwrap()), Ok(()));
        assert_eq!(b.level(), Percent::new(25).unwrap());
        assert_eq!(b.brightness(), Ok(None));
        assert_eq!(b.writes(), 1);
        b.set_time(100);
        b.set_time(50);
        assert_eq!(b.now_ms(), 100);
    }

    #[test]
    fn no_fault_affects_the_backlight() {
        for fault in Fault::ALL {
            let mut b = SimBacklight::new(Faults::only(fault));
            assert_eq!(b.faults(), Faults::only(fault));
            for v in [0, 55, 100] {
                assert_eq!(
                    b.set_brightness(Percent::new(v).unwrap()),
                    Ok(()),
                    "{fault}"
                );
                assert_eq!(b.level(), Percent::new(v).unwrap(), "{fault}");
                assert_eq!(b.brightness(), Ok(None), "{fault}");
            }
            assert_eq!(b.writes(), 3, "{fault}");
        }
        let mut b = SimBacklight::new(Faults::ALL);
        assert_eq!(b.set_brightness(Percent::MIN), Ok(()));
        assert_eq!(b.level(), Percent::MIN);
    }
}
