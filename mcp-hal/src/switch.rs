//! On/off loads (relays, MOSFET switches), with an optional feedback input.
//!
//! # For driver authors
//! `set(true)` returning `Ok` means the coil was driven, not that the contacts closed. If the
//! board has a feedback input (an auxiliary contact, a current sense), report it from
//! [`feedback`](Switch::feedback): the kit then claims `measured` when it agrees and fails the call
//! when it does not. Declare how long the contacts may take in
//! [`settle_ms`](Switch::settle_ms).

use crate::ErrorType;

/// A switched load.
pub trait Switch: ErrorType {
    /// Drives the output on or off.
    fn set(&mut self, on: bool) -> Result<(), Self::Error>;
    /// Reads the feedback input, or `None` when there is none.
    fn feedback(&mut self) -> Result<Option<bool>, Self::Error>;
    /// Milliseconds the feedback may lag the command (0: at once).
    fn settle_ms(&self) -> u32;
}

impl<T: Switch + ?Sized> Switch for &mut T {
    fn set(&mut self, on: bool) -> Result<(), Self::Error> {
        T::set(self, on)
    }
    fn feedback(&mut self) -> Result<Option<bool>, Self::Error> {
        T::feedback(self)
    }
    fn settle_ms(&self) -> u32 {
        T::settle_ms(self)
    }
}
