//! Screen backlight brightness.
//!
//! # For driver authors
//! Return `Ok(None)` from [`brightness`](Backlight::brightness) when the hardware cannot report
//! its level (a plain PWM output cannot): the kit then claims `applied`, never `read_back`.

use crate::{ErrorType, Percent};

/// A backlight with a brightness control.
pub trait Backlight: ErrorType {
    /// Sets the brightness.
    fn set_brightness(&mut self, level: Percent) -> Result<(), Self::Error>;
    /// Reads the brightness back from the hardware, or `None` when it cannot be read.
    fn brightness(&mut self) -> Result<Option<Percent>, Self::Error>;
}

impl<T: Backlight + ?Sized> Backlight for &mut T {
    fn set_brightness(&mut self, level: Percent) -> Result<(), Self::Error> {
        T::set_brightness(self, level)
    }
    fn brightness(&mut self) -> Result<Option<Percent>, Self::Error> {
        T::brightness(self)
    }
}
