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
            ErrorKind::Other => "The device reported an error",
        }
    }
}

/// A device error that can say which [`ErrorKind`] it is.
pub trait Error: Debug {
    /// The kind of error.
    fn kind(&self) -> ErrorKind;
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
