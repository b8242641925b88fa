//! A relay (or MOSFET load switch) on a GPIO output, with an optional feedback input.
//!
//! [`GpioRelay`] implements [`Switch`]. `set(true)` drives the coil driver's input and returns:
//! `Ok` means the pin was driven, not that the contacts closed. What the kit can claim depends on
//! the board:
//!
//! * **No feedback** ([`GpioRelay::new`]): [`feedback`](Switch::feedback) is `Ok(None)`, so the
//!   kit claims only `applied`. Reading the output pin's own latch back would prove nothing about
//!   the contacts, so this driver does not pretend to.
//! * **Feedback input** ([`GpioRelay::with_feedback`]): an auxiliary contact, an opto-coupler on
//!   the load side or a current-sense comparator, read through an [`InputPin`]. The kit reads it
//!   and claims `measured` as soon as it agrees with the command, waiting up to
//!   [`settle_ms`](Switch::settle_ms) on the board's delay (in the call when that fits the call
//!   budget), and fails the call, naming what it read, when it still does not.
//!
//! Both the coil driver and the feedback input can be active-high or active-low: many relay
//! modules switch on when their input is pulled *low* (see [`GpioRelay::active_low`]).
//!
//! The constructors do not touch the pins. Create the output pin at its "off" level in the HAL
//! (high for an active-low module) so the relay does not click at boot.
//!
//! # Example
//! ```
//! # use embedded_hal_mock::eh1::digital::{Mock, State, Transaction};
//! use mcp_hal::drivers::GpioRelay;
//! use mcp_hal::switch::Switch;
//!
//! # let coil = Mock::new(&[Transaction::set(State::Low)]);
//! # let aux = Mock::new(&[Transaction::get(State::High)]);
//! // Active-low relay module on `coil`; its auxiliary contact pulls `aux` high when closed and
//! // may take up to 20 ms to follow.
//! let mut relay = GpioRelay::with_feedback(coil, aux, true, 20).active_low();
//! relay.set(true)?;
//! // ... wait relay.settle_ms() ...
//! assert_eq!(relay.feedback()?, Some(true));
//! # let (mut coil, mut aux) = relay.release();
//! # coil.done();
//! # aux.done();
//! # type E = embedded_hal_mock::eh1::MockError;
//! # Ok::<(), mcp_hal::drivers::GpioRelayError<E, E>>(())
//! ```

use core::convert::Infallible;
use core::fmt;

use embedded_hal::digital::{self, InputPin, OutputPin};

use crate::switch::Switch;
use crate::{ErrorKind, ErrorType};

/// Marker for a relay without a feedback input: [`feedback`](Switch::feedback) is `Ok(None)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NoFeedback;

/// A GPIO relay error: which pin failed, with the pin's own error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GpioRelayError<O, I = Infallible> {
    /// Driving the coil output failed; the relay state is unknown.
    Coil(O),
    /// Reading the feedback input failed; the relay was driven but is unconfirmed.
    Feedback(I),
}

impl<O: digital::Error, I: digital::Error> crate::Error for GpioRelayError<O, I> {
    /// The failed pin's kind (see `From<digital::ErrorKind>` for [`ErrorKind`]: today always
    /// [`ErrorKind::Other`], `embedded-hal`'s digital errors carry no finer kind).
    fn kind(&self) -> ErrorKind {
        match self {
            GpioRelayError::Coil(e) => e.kind().into(),
            GpioRelayError::Feedback(e) => e.kind().into(),
        }
    }
}

impl<O: fmt::Debug, I: fmt::Debug> fmt::Display for GpioRelayError<O, I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpioRelayError::Coil(e) => write!(f, "relay coil output error: {e:?}"),
            GpioRelayError::Feedback(e) => write!(f, "relay feedback input error: {e:?}"),
        }
    }
}

impl<O: fmt::Debug, I: fmt::Debug> core::error::Error for GpioRelayError<O, I> {}

/// A relay driven by a GPIO output, with an optional feedback input `F` ([`NoFeedback`] by
/// default, or an [`InputPin`]).
#[derive(Debug)]
pub struct GpioRelay<O, F = NoFeedback> {
    coil: O,
    coil_active_high: bool,
    feedback: F,
    feedback_active_high: bool,
    settle_ms: u32,
}

impl<O> GpioRelay<O, NoFeedback> {
    /// A relay without feedback whose coil is on while `coil` is high (call
    /// [`active_low`](Self::active_low) for the opposite). The kit can claim only `applied`.
    pub const fn new(coil: O) -> Self {
        Self {
            coil,
            coil_active_high: true,
            feedback: NoFeedback,
            feedback_active_high: true,
            settle_ms: 0,
        }
    }
}

impl<O, I> GpioRelay<O, I> {
    /// A relay whose coil is on while `coil` is high (call [`active_low`](Self::active_low) for
    /// the opposite), with a feedback input. `active_high`: `true` when `feedback` reads high
    /// while the load is on (contacts closed), `false` when it reads low. `settle_ms`: how long
    /// the feedback may lag the command (a mechanical relay needs 5 to 20 ms).
    pub const fn with_feedback(coil: O, feedback: I, active_high: bool, settle_ms: u32) -> Self {
        Self {
            coil,
            coil_active_high: true,
            feedback,
            feedback_active_high: active_high,
            settle_ms,
        }
    }
}

impl<O, F> GpioRelay<O, F> {
    /// The coil driver is on while the output is *low* (most opto-isolated relay modules).
    #[must_use]
    pub const fn active_low(mut self) -> Self {
        self.coil_active_high = false;
        self
    }

    /// `true` when the coil is on while the output is high.
    pub const fn is_active_high(&self) -> bool {
        self.coil_active_high
    }

    /// Gives the pins back: `(coil, feedback)`.
    pub fn release(self) -> (O, F) {
        (self.coil, self.feedback)
    }

    fn drive(&mut self, on: bool) -> Result<(), O::Error>
    where
        O: OutputPin,
    {
        if on == self.coil_active_high {
            self.coil.set_high()
        } else {
            self.coil.set_low()
        }
    }
}

impl<O: OutputPin> ErrorType for GpioRelay<O, NoFeedback> {
    type Error = GpioRelayError<O::Error, Infallible>;
}

impl<O: OutputPin> Switch for GpioRelay<O, NoFeedback> {
    fn set(&mut self, on: bool) -> Result<(), Self::Error> {
        self.drive(on).map_err(GpioRelayError::Coil)
    }

    /// Always `Ok(None)`: there is no feedback input.
    fn feedback(&mut self) -> Result<Option<bool>, Self::Error> {
        Ok(None)
    }

    /// 0: there is nothing to wait for.
    fn settle_ms(&self) -> u32 {
        0
    }
}

impl<O: OutputPin, I: InputPin> ErrorType for GpioRelay<O, I> {
    type Error = GpioRelayError<O::Error, I::Error>;
}

impl<O: OutputPin, I: InputPin> Switch for GpioRelay<O, I> {
    fn set(&mut self, on: bool) -> Result<(), Self::Error> {
        self.drive(on).map_err(GpioRelayError::Coil)
    }

    /// Reads the feedback input: `Some(true)` when it is at its active level.
    fn feedback(&mut self) -> Result<Option<bool>, Self::Error> {
        let high = self.feedback.is_high().map_err(GpioRelayError::Feedback)?;
        Ok(Some(high == self.feedback_active_high))
    }

    fn settle_ms(&self) -> u32 {
        self.settle_ms
    }
}

/// The async twin, for async firmware: GPIO writes and reads complete at once, so each method
/// does its work when first polled and is never `Pending`. That keeps the async relay kit's
/// interlock and drive in one critical section
/// (see [`kits::asynch::relay`](crate::kits::asynch::relay)).
impl<O, F> crate::asynch::switch::Switch for GpioRelay<O, F>
where
    Self: Switch,
{
    async fn set(&mut self, on: bool) -> Result<(), Self::Error> {
        Switch::set(self, on)
    }

    async fn feedback(&mut self) -> Result<Option<bool>, Self::Error> {
        Switch::feedback(self)
    }

    fn settle_ms(&self) -> u32 {
        Switch::settle_ms(self)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::Error as _;
    use embedded_hal_mock::eh1::MockError;
    use embedded_hal_mock::eh1::digital::{Mock, State, Transaction};
    use std::io::ErrorKind as IoKind;

    /// Releases the relay and checks that each pin saw every transaction it expected.
    fn done(relay: GpioRelay<Mock, Mock>) {
        let (mut coil, mut aux) = relay.release();
        coil.done();
        aux.done();
    }

    #[test]
    fn active_high_drives_high_for_on() {
        let coil = Mock::new(&[
            Transaction::set(State::High),
            Transaction::set(State::Low),
            Transaction::set(State::High),
        ]);
        let mut relay = GpioRelay::new(coil);
        assert!(relay.is_active_high());
        relay.set(true).unwrap();
        relay.set(false).unwrap();
        relay.set(true).unwrap();
        let (mut coil, NoFeedback) = relay.release();
        coil.done();
    }

    #[test]
    fn active_low_drives_low_for_on() {
        let coil = Mock::new(&[Transaction::set(State::Low), Transaction::set(State::High)]);
        let mut relay = GpioRelay::new(coil).active_low();
        assert!(!relay.is_active_high());
        relay.set(true).unwrap();
        relay.set(false).unwrap();
        relay.release().0.done();
    }

    #[test]
    fn without_feedback_reports_none_and_touches_no_pin() {
        let coil = Mock::new(&[]);
        let mut relay = GpioRelay::new(coil);
        assert_eq!(relay.feedback(), Ok(None));
        assert_eq!(relay.settle_ms(), 0);
        relay.release().0.done();
    }

    /// The coil is driven at its active level for `on`, and the feedback reads `true` at its
    /// own active level, whichever way each pin is wired.
    #[test]
    fn each_pin_follows_its_own_polarity() {
        use State::{High, Low};
        // (coil active-low, coil on/off levels, feedback active-high, feedback closed/open)
        for (coil_active_low, [coil_on, coil_off], aux_active_high, [closed, open], settle) in [
            (false, [High, Low], true, [High, Low], 15),
            (true, [Low, High], false, [Low, High], 8),
            (true, [Low, High], true, [High, Low], 20),
        ] {
            let coil = Mock::new(&[Transaction::set(coil_on), Transaction::set(coil_off)]);
            let aux = Mock::new(&[Transaction::get(closed), Transaction::get(open)]);
            let relay = GpioRelay::with_feedback(coil, aux, aux_active_high, settle);
            let mut relay = if coil_active_low {
                relay.active_low()
            } else {
                relay
            };
            assert_eq!(relay.settle_ms(), settle);
            relay.set(true).unwrap();
            assert_eq!(relay.feedback(), Ok(Some(true)));
            relay.set(false).unwrap();
            assert_eq!(relay.feedback(), Ok(Some(false)));
            done(relay);
        }
    }

    #[test]
    fn feedback_can_disagree_with_the_command() {
        // A welded contact: commanded off, still reads closed. The driver reports what it reads.
        let coil = Mock::new(&[Transaction::set(State::Low)]);
        let aux = Mock::new(&[Transaction::get(State::High)]);
        let mut relay = GpioRelay::with_feedback(coil, aux, true, 0);
        relay.set(false).unwrap();
        assert_eq!(relay.feedback(), Ok(Some(true)));
        done(relay);
    }

    #[test]
    fn coil_error_is_reported_as_coil() {
        let err = MockError::Io(IoKind::NotConnected);
        let coil = Mock::new(&[Transaction::set(State::High).with_error(err.clone())]);
        let mut relay = GpioRelay::new(coil);
        let got = relay.set(true).unwrap_err();
        assert_eq!(got, GpioRelayError::Coil(err));
        assert_eq!(got.kind(), ErrorKind::Other);
        relay.release().0.done();
    }

    #[test]
    fn feedback_error_is_reported_as_feedback() {
        let err = MockError::Io(IoKind::TimedOut);
        let coil = Mock::new(&[]);
        let aux = Mock::new(&[Transaction::get(State::High).with_error(err.clone())]);
        let mut relay = GpioRelay::with_feedback(coil, aux, true, 5);
        let got = relay.feedback().unwrap_err();
        assert_eq!(got, GpioRelayError::Feedback(err));
        assert_eq!(got.kind(), ErrorKind::Other);
        done(relay);
    }

    /// The async twin drives the same pins, and every future is ready when first polled.
    #[test]
    fn the_async_twin_drives_the_same_pins_at_once() {
        use crate::asynch::switch::Switch as AsyncSwitch;
        use core::future::Future;
        use core::task::{Context, Poll, Waker};

        fn at_once<F: Future>(f: F) -> F::Output {
            match core::pin::pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
                Poll::Ready(v) => v,
                Poll::Pending => panic!("a GPIO relay future was pending"),
            }
        }
        let coil = Mock::new(&[Transaction::set(State::Low), Transaction::set(State::High)]);
        let aux = Mock::new(&[Transaction::get(State::Low), Transaction::get(State::Low)]);
        let mut relay = GpioRelay::with_feedback(coil, aux, false, 12).active_low();
        assert_eq!(AsyncSwitch::settle_ms(&relay), 12);
        assert_eq!(at_once(AsyncSwitch::set(&mut relay, true)), Ok(()));
        assert_eq!(at_once(AsyncSwitch::feedback(&mut relay)), Ok(Some(true)));
        assert_eq!(at_once(AsyncSwitch::set(&mut relay, false)), Ok(()));
        // Welded: still reads closed.
        assert_eq!(at_once(AsyncSwitch::feedback(&mut relay)), Ok(Some(true)));
        done(relay);
        let mut bare = GpioRelay::new(Mock::new(&[]));
        assert_eq!(at_once(AsyncSwitch::feedback(&mut bare)), Ok(None));
        bare.release().0.done();
    }
}
