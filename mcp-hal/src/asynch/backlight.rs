//! Async twin of [`crate::backlight`]: screen backlight brightness.
//!
//! Same contract as the blocking [`Backlight`](crate::backlight::Backlight): resolve
//! [`brightness`](Backlight::brightness) to `Ok(None)` when the hardware cannot report its level.

pub use crate::{Error, ErrorKind, ErrorType};

use crate::Percent;

/// A backlight with a brightness control (async).
#[allow(
    async_fn_in_trait,
    reason = "no Send bound: embedded executors run on one core, as embedded-hal-async's traits"
)]
pub trait Backlight: ErrorType {
    /// Sets the brightness.
    async fn set_brightness(&mut self, level: Percent) -> Result<(), Self::Error>;
    /// Reads the brightness back from the hardware, or `None` when it cannot be read.
    async fn brightness(&mut self) -> Result<Option<Percent>, Self::Error>;
    /// The resolution of [`brightness`](Backlight::brightness), in percent (see the blocking
    /// [`Backlight::tolerance`](crate::backlight::Backlight::tolerance)). No I/O. Default 0.
    fn tolerance(&self) -> u8 {
        0
    }
}

impl<T: Backlight + ?Sized> Backlight for &mut T {
    #[inline]
    async fn set_brightness(&mut self, level: Percent) -> Result<(), Self::Error> {
        T::set_brightness(self, level).await
    }
    #[inline]
    async fn brightness(&mut self) -> Result<Option<Percent>, Self::Error> {
        T::brightness(self).await
    }
    #[inline]
    fn tolerance(&self) -> u8 {
        T::tolerance(self)
    }
}
