//! Screen backlight brightness.
//!
//! # For driver authors
//! Return `Ok(None)` from [`brightness`](Backlight::brightness) when the hardware cannot report
//! its level (a plain PWM output cannot): the kit then claims `applied`, never `read_back`.
//! One that can, but coarser than a percent (an LED driver with 32 current steps), declares
//! [`tolerance`](Backlight::tolerance) (see
//! [`VolumeCaps::tolerance_for_steps`](crate::audio::VolumeCaps::tolerance_for_steps) for how to
//! compute it): the kit counts a read-back within it as agreement.

use crate::{ErrorType, Percent};

device_trait! {
    /// A backlight with a brightness control.
    pub trait Backlight: ErrorType {
        /// Sets the brightness.
        fn set_brightness(&mut self, level: Percent) -> Result<(), Self::Error>;
        /// Reads the brightness back from the hardware, or `None` when it cannot be read.
        fn brightness(&mut self) -> Result<Option<Percent>, Self::Error>;
        /// The resolution of [`brightness`](Backlight::brightness), in percent: a reading `r` after
        /// setting `v` agrees when `|r − v| ≤ tolerance`. The default, 0, means exactly.
        fn tolerance(&self) -> u8 {
            0
        }
    }
}
