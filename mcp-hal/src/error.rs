//! The error model shared by every trait in this crate.
//!
//! This follows embedded-hal (`Error` / `ErrorKind` / `ErrorType`), with one difference: a single
//! [`ErrorKind`] serves all device traits instead of one per module. The kinds that matter to a
//! tool result (a bus NACK, a full queue, a stall) are the same for a codec, a relay or a motor,
//! and one enum keeps the mapping to messages in one place ([`ErrorKind::message`]).

use core::convert::Infallible;
use core::fmt::Debug;

/// What went wrong, in terms a tool result can report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The device did not acknowledge (I2C NACK).
    NoAcknowledge,
    /// Bus error (arbitration loss, framing, a stuck line).
    Bus,
    /// The device did not answer in time.
    Timeout,
    /// The device's action queue rejected new work.
    QueueFull,
    /// A moving part stopped short of its target.
    Stalled,
    /// The device cannot do this (no read-back, out of its range).
    Unsupported,
    /// Another device answered at the driver's address: a probe read a chip ID that is not the
    /// driver's chip.
    WrongDevice,
    /// Anything else.
    Other,
}

impl ErrorKind {
    /// A short sentence for a tool result.
    pub const fn message(self) -> &'static str {
        match self {
            ErrorKind::NoAcknowledge => {
                "The device did not acknowledge (I2C NACK); nothing was changed"
            }
            ErrorKind::Bus => "Bus error talking to the device; the state is unknown",
            ErrorKind::Timeout => "The device did not answer in time; the state is unknown",
            ErrorKind::QueueFull => {
                "The device is busy: its action queue is full; nothing was started"
            }
            ErrorKind::Stalled => "The actuator stalled before reaching its target",
            ErrorKind::Unsupported => "The device cannot do this",
            ErrorKind::WrongDevice => {
                "Another chip answered at the device's address (wrong chip ID); nothing was changed"
            }
            ErrorKind::Other => "The device reported an error",
        }
    }
}

/// An `embedded-hal` I2C error kind in this crate's terms: a NACK (address or data) stays a NACK;
/// bus errors, arbitration loss and receive overruns are [`ErrorKind::Bus`]; anything else
/// (including kinds a later `embedded-hal` adds) is [`ErrorKind::Other`].
///
/// A driver over an I2C bus maps its bus error with `e.kind().into()`.
impl From<embedded_hal::i2c::ErrorKind> for ErrorKind {
    fn from(kind: embedded_hal::i2c::ErrorKind) -> Self {
        use embedded_hal::i2c::ErrorKind as I2c;
        match kind {
            I2c::NoAcknowledge(_) => ErrorKind::NoAcknowledge,
            I2c::Bus | I2c::ArbitrationLoss | I2c::Overrun => ErrorKind::Bus,
            _ => ErrorKind::Other,
        }
    }
}

/// An `embedded-hal` digital (GPIO) error kind in this crate's terms: [`ErrorKind::Other`], the
/// only kind `embedded-hal` defines for pins (and the answer for any it adds later).
impl From<embedded_hal::digital::ErrorKind> for ErrorKind {
    fn from(kind: embedded_hal::digital::ErrorKind) -> Self {
        match kind {
            embedded_hal::digital::ErrorKind::Other => ErrorKind::Other,
            _ => ErrorKind::Other,
        }
    }
}

/// A device error that can say which [`ErrorKind`] it is, and what to tell a person about it.
pub trait Error: Debug {
    /// The kind of error.
    fn kind(&self) -> ErrorKind;

    /// A short sentence for a tool result: the kits answer a failed call with it. A driver
    /// overrides it to name its chip ("The ES8311 codec did not acknowledge on I2C…"), so that
    /// whoever reads the failure knows which part to check. The default is the kind's
    /// [`message`](ErrorKind::message), which names no device.
    fn message(&self) -> &'static str {
        self.kind().message()
    }
}

impl Error for Infallible {
    fn kind(&self) -> ErrorKind {
        match *self {}
    }
}

impl Error for ErrorKind {
    fn kind(&self) -> ErrorKind {
        *self
    }
}

/// The error type of a device: the supertrait of every device trait.
pub trait ErrorType {
    /// The error type.
    type Error: Error;
}

impl<T: ErrorType + ?Sized> ErrorType for &mut T {
    type Error = T::Error;
}

#[cfg(test)]
mod test {
    use super::*;
    use embedded_hal::digital::ErrorKind as Digital;
    use embedded_hal::i2c::{ErrorKind as I2c, NoAcknowledgeSource};

    #[test]
    fn every_i2c_kind_maps() {
        for (i2c, want) in [
            (
                I2c::NoAcknowledge(NoAcknowledgeSource::Address),
                ErrorKind::NoAcknowledge,
            ),
            (
                I2c::NoAcknowledge(NoAcknowledgeSource::Data),
                ErrorKind::NoAcknowledge,
            ),
            (
                I2c::NoAcknowledge(NoAcknowledgeSource::Unknown),
                ErrorKind::NoAcknowledge,
            ),
            (I2c::Bus, ErrorKind::Bus),
            (I2c::ArbitrationLoss, ErrorKind::Bus),
            (I2c::Overrun, ErrorKind::Bus),
            (I2c::Other, ErrorKind::Other),
        ] {
            assert_eq!(ErrorKind::from(i2c), want, "{i2c:?}");
        }
    }

    #[test]
    fn every_digital_kind_maps() {
        assert_eq!(ErrorKind::from(Digital::Other), ErrorKind::Other);
    }

    /// The `_` arms (`embedded-hal`'s kinds are `#[non_exhaustive]`): in the I2C match, `Other`
    /// is not named and reaches the fallback, which is `Other`; a digital kind added later (none
    /// can be built today) gets the same answer.
    #[test]
    fn unnamed_kinds_fall_back_to_other() {
        assert_eq!(ErrorKind::from(I2c::Other), ErrorKind::Other);
        assert_eq!(ErrorKind::from(Digital::Other), ErrorKind::Other);
    }
}
