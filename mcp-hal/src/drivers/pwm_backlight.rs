//! A backlight dimmed by a PWM output.
//!
//! [`PwmBacklight`] implements [`Backlight`]: [`set_brightness`](Backlight::set_brightness) sets
//! the duty cycle with [`SetDutyCycle::set_duty_cycle_percent`], which scales the percentage onto
//! the timer's own resolution.
//!
//! # Why there is no read-back
//! [`brightness`](Backlight::brightness) is always `Ok(None)`. A PWM output has no sensor: the
//! only thing the driver could return is the duty it last wrote (or the timer's compare register,
//! which holds the same number), and that proves nothing about the panel: the backlight supply
//! may be off, the LED driver's enable low, the trace open. Returning that number as a "reading"
//! would let the kit claim `read_back` for a value nobody measured, so the kit claims only
//! `applied` for this driver. A backlight with a real sense path (an LED driver IC with a status
//! register, a current-sense ADC) should get its own driver that reports it.
//!
//! # Polarity
//! Some backlights are on when the PWM pin is *low* (a P-channel switch, an LED driver with an
//! active-low dimming input). [`PwmBacklight::inverted`] writes `100 - level` so that the
//! brightness still means brightness.
//!
//! # Example
//! ```
//! # use embedded_hal_mock::eh1::pwm::{Mock, Transaction};
//! use mcp_hal::backlight::Backlight;
//! use mcp_hal::drivers::PwmBacklight;
//! use mcp_hal::Percent;
//!
//! # let pwm = Mock::new(&[Transaction::max_duty_cycle(1000), Transaction::set_duty_cycle(250)]);
//! let mut backlight = PwmBacklight::inverted(pwm);
//! backlight.set_brightness(Percent::new(75).unwrap_or_default())?; // duty 25 %
//! assert_eq!(backlight.brightness()?, None);
//! # backlight.release().done();
//! # Ok::<(), mcp_hal::drivers::PwmBacklightError<embedded_hal_mock::eh1::MockError>>(())
//! ```

use core::fmt;

use embedded_hal::pwm::{self, SetDutyCycle};

use crate::backlight::Backlight;
use crate::{ErrorKind, ErrorType, Percent};

/// A PWM backlight error: setting the duty cycle failed, with the PWM driver's own error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PwmBacklightError<E>(pub E);

impl<E: pwm::Error> crate::Error for PwmBacklightError<E> {
    /// [`ErrorKind::Other`]: `embedded-hal`'s PWM errors carry no finer kind.
    fn kind(&self) -> ErrorKind {
        ErrorKind::Other
    }
}

impl<E: fmt::Debug> fmt::Display for PwmBacklightError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "backlight PWM error: {:?}", self.0)
    }
}

impl<E: fmt::Debug> core::error::Error for PwmBacklightError<E> {}

/// A backlight on a PWM channel. Owns the channel; get it back with
/// [`release`](PwmBacklight::release).
#[derive(Debug)]
pub struct PwmBacklight<P> {
    pwm: P,
    inverted: bool,
}

impl<P> PwmBacklight<P> {
    /// A backlight that is brighter the longer the PWM output is high (duty = level).
    /// Does not touch the channel.
    pub const fn new(pwm: P) -> Self {
        Self {
            pwm,
            inverted: false,
        }
    }

    /// A backlight that is brighter the longer the PWM output is *low* (duty = 100 % - level).
    /// Does not touch the channel.
    pub const fn inverted(pwm: P) -> Self {
        Self {
            pwm,
            inverted: true,
        }
    }

    /// `true` for an active-low backlight.
    pub const fn is_inverted(&self) -> bool {
        self.inverted
    }

    /// Gives the PWM channel back.
    pub fn release(self) -> P {
        self.pwm
    }

    /// The duty cycle, in percent, that shows `level`.
    const fn duty_percent(&self, level: Percent) -> u8 {
        if self.inverted {
            // `Percent` keeps level <= 100, so this does not wrap.
            Percent::MAX.get() - level.get()
        } else {
            level.get()
        }
    }
}

impl<P: SetDutyCycle> ErrorType for PwmBacklight<P> {
    type Error = PwmBacklightError<P::Error>;
}

impl<P: SetDutyCycle> Backlight for PwmBacklight<P> {
    /// Sets the duty cycle to `level` (or `100 - level` when inverted), scaled onto the timer's
    /// resolution by [`SetDutyCycle::set_duty_cycle_percent`].
    fn set_brightness(&mut self, level: Percent) -> Result<(), Self::Error> {
        let duty = self.duty_percent(level);
        self.pwm
            .set_duty_cycle_percent(duty)
            .map_err(PwmBacklightError)
    }

    /// Always `Ok(None)`: a PWM output cannot be read back (see the module docs).
    fn brightness(&mut self) -> Result<Option<Percent>, Self::Error> {
        Ok(None)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::Error as _;
    use embedded_hal_mock::eh1::MockError;
    use embedded_hal_mock::eh1::pwm::{Mock, Transaction};
    use std::io::ErrorKind as IoKind;

    fn pct(v: u8) -> Percent {
        Percent::new(v).unwrap()
    }

    /// Each level is written as its share of the timer's resolution (its complement when
    /// inverted), the resolution asked for at each write.
    #[test]
    fn each_level_is_written_as_its_share_of_the_timers_resolution() {
        // (inverted, the timer's resolution, [(level in %, duty written)])
        for (inverted, max, writes) in [
            (false, 1000, &[(40, 400), (0, 0), (100, 1000)][..]),
            // 8-bit timer: 40 % of 255 is 102; 33 % is 84 (84.15 truncated by embedded-hal).
            (false, 255, &[(40, 102), (33, 84)]),
            (true, 1000, &[(30, 700), (0, 1000), (100, 0)]),
        ] {
            let expected: Vec<Transaction> = writes
                .iter()
                .flat_map(|&(_, duty)| {
                    [
                        Transaction::max_duty_cycle(max),
                        Transaction::set_duty_cycle(duty),
                    ]
                })
                .collect();
            let pwm = Mock::new(&expected);
            let mut bl = if inverted {
                PwmBacklight::inverted(pwm)
            } else {
                PwmBacklight::new(pwm)
            };
            assert_eq!(bl.is_inverted(), inverted);
            for &(level, _) in writes {
                bl.set_brightness(pct(level)).unwrap();
            }
            bl.release().done();
        }
    }

    #[test]
    fn brightness_is_never_read_back() {
        // Only the write's transactions are expected: reading must not touch the PWM.
        let pwm = Mock::new(&[
            Transaction::max_duty_cycle(100),
            Transaction::set_duty_cycle(60),
        ]);
        let mut bl = PwmBacklight::new(pwm);
        assert_eq!(bl.brightness(), Ok(None));
        bl.set_brightness(pct(60)).unwrap();
        // Not even after a write: the last commanded value is not a reading.
        assert_eq!(bl.brightness(), Ok(None));
        bl.release().done();
    }

    #[test]
    fn pwm_error_is_returned() {
        let err = MockError::Io(IoKind::NotConnected);
        let pwm = Mock::new(&[
            Transaction::max_duty_cycle(1000),
            Transaction::set_duty_cycle(500).with_error(err.clone()),
        ]);
        let mut bl = PwmBacklight::new(pwm);
        let got = bl.set_brightness(pct(50)).unwrap_err();
        assert_eq!(got, PwmBacklightError(err));
        assert_eq!(got.kind(), ErrorKind::Other);
        bl.release().done();
    }
}
