//! Whole-device actions: reboot.
//!
//! # For driver authors
//! A reboot cannot confirm itself: the device that would report it is gone. `schedule_reboot`
//! arms a deferred restart (so that the response can still be sent) and the kit claims
//! `scheduled`, never "done".

use crate::ErrorType;

device_trait! {
    /// Device-level control.
    pub trait System: ErrorType {
        /// Arms a restart `delay_ms` from now.
        fn schedule_reboot(&mut self, delay_ms: u32) -> Result<(), Self::Error>;
    }
}
