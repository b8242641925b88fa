//! Async twin of [`crate::system`]: whole-device actions.
//!
//! Same contract as the blocking [`System`](crate::system::System): a reboot is only ever
//! *scheduled*; the device that would confirm it is gone.

pub use crate::{Error, ErrorKind, ErrorType};

device_trait! {
    /// Device-level control (async).
    pub trait System: ErrorType {
        /// Arms a restart `delay_ms` from now.
        async fn schedule_reboot(&mut self, delay_ms: u32) -> Result<(), Self::Error>;
    }
    blocking crate::system::System
}
