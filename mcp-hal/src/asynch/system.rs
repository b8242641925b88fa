//! Async twin of [`crate::system`]: whole-device actions.
//!
//! Same contract as the blocking [`System`](crate::system::System): a reboot is only ever
//! *scheduled*; the device that would confirm it is gone.

pub use crate::{Error, ErrorKind, ErrorType};

/// Device-level control (async).
#[allow(
    async_fn_in_trait,
    reason = "no Send bound: embedded executors run on one core, as embedded-hal-async's traits"
)]
pub trait System: ErrorType {
    /// Arms a restart `delay_ms` from now.
    async fn schedule_reboot(&mut self, delay_ms: u32) -> Result<(), Self::Error>;
}

impl<T: System + ?Sized> System for &mut T {
    #[inline]
    async fn schedule_reboot(&mut self, delay_ms: u32) -> Result<(), Self::Error> {
        T::schedule_reboot(self, delay_ms).await
    }
}
