//! Async twin of [`crate::switch`]: on/off loads with an optional feedback input.
//!
//! Same contract as the blocking [`Switch`](crate::switch::Switch): `set(true)` resolving to `Ok`
//! means the coil was driven, not that the contacts closed. [`settle_ms`](Switch::settle_ms) is a
//! plain query with no I/O, so it stays a normal `fn`.

pub use crate::{Error, ErrorKind, ErrorType};

/// A switched load (async).
#[allow(
    async_fn_in_trait,
    reason = "no Send bound: embedded executors run on one core, as embedded-hal-async's traits"
)]
pub trait Switch: ErrorType {
    /// Drives the output on or off.
    async fn set(&mut self, on: bool) -> Result<(), Self::Error>;
    /// Reads the feedback input, or `None` when there is none.
    async fn feedback(&mut self) -> Result<Option<bool>, Self::Error>;
    /// Milliseconds the feedback may lag the command (0: at once). No I/O.
    fn settle_ms(&self) -> u32;
}

impl<T: Switch + ?Sized> Switch for &mut T {
    #[inline]
    async fn set(&mut self, on: bool) -> Result<(), Self::Error> {
        T::set(self, on).await
    }
    #[inline]
    async fn feedback(&mut self) -> Result<Option<bool>, Self::Error> {
        T::feedback(self).await
    }
    #[inline]
    fn settle_ms(&self) -> u32 {
        T::settle_ms(self)
    }
}
