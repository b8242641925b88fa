//! Async twin of [`crate::backlight`]: screen backlight brightness.
//!
//! Same contract as the blocking [`Backlight`](crate::backlight::Backlight): resolve
//! [`brightness`](Backlight::brightness) to `Ok(None)` when the hardware cannot report its level.

pub use crate::{Error, ErrorKind, ErrorType};

use crate::Percent;

device_trait! {
    /// A backlight with a brightness control (async).
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
    blocking crate::backlight::Backlight
}
