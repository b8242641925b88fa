//! Async twin of [`crate::switch`]: on/off loads with an optional feedback input.
//!
//! Same contract as the blocking [`Switch`](crate::switch::Switch): `set(true)` resolving to `Ok`
//! means the coil was driven, not that the contacts closed. [`settle_ms`](Switch::settle_ms) is a
//! plain query with no I/O, so it stays a normal `fn`.

pub use crate::{Error, ErrorKind, ErrorType};

device_trait! {
    /// A switched load (async).
    pub trait Switch: ErrorType {
        /// Drives the output on or off.
        async fn set(&mut self, on: bool) -> Result<(), Self::Error>;
        /// Reads the feedback input, or `None` when there is none.
        async fn feedback(&mut self) -> Result<Option<bool>, Self::Error>;
        /// Milliseconds the feedback may lag the command (0: at once). No I/O.
        fn settle_ms(&self) -> u32;
    }
    blocking crate::switch::Switch
}
