//! Async twin of [`crate::motor`]: actuators that take time.
//!
//! Same contract as the blocking [`Actuator`](crate::motor::Actuator):
//! [`start_move`](Actuator::start_move) resolves as soon as the move is under way (not when it
//! ends), [`state`](Actuator::state) reports the *measured* position, and
//! [`stop`](Actuator::stop) is the safe-stop hook. [`range`](Actuator::range) and
//! [`tolerance`](Actuator::tolerance) are plain queries with no I/O, so they stay normal `fn`s.

pub use crate::motor::Motion;
pub use crate::{Error, ErrorKind, ErrorType};

/// A positioning actuator (async).
#[allow(
    async_fn_in_trait,
    reason = "no Send bound: embedded executors run on one core, as embedded-hal-async's traits"
)]
pub trait Actuator: ErrorType {
    /// The reachable positions, inclusive. No I/O.
    fn range(&self) -> (i32, i32);
    /// How close to the target counts as arrived. No I/O.
    fn tolerance(&self) -> u32;
    /// The unit of positions (see the blocking
    /// [`Actuator::unit`](crate::motor::Actuator::unit)). No I/O. Default `None`.
    fn unit(&self) -> Option<&'static str> {
        None
    }
    /// Starts moving towards `target`.
    async fn start_move(&mut self, target: i32) -> Result<(), Self::Error>;
    /// Reads the measured state.
    async fn state(&mut self) -> Result<Motion, Self::Error>;
    /// Safe-stop: halts the actuator.
    async fn stop(&mut self) -> Result<(), Self::Error>;
}

impl<T: Actuator + ?Sized> Actuator for &mut T {
    #[inline]
    fn range(&self) -> (i32, i32) {
        T::range(self)
    }
    #[inline]
    fn tolerance(&self) -> u32 {
        T::tolerance(self)
    }
    #[inline]
    fn unit(&self) -> Option<&'static str> {
        T::unit(self)
    }
    #[inline]
    async fn start_move(&mut self, target: i32) -> Result<(), Self::Error> {
        T::start_move(self, target).await
    }
    #[inline]
    async fn state(&mut self) -> Result<Motion, Self::Error> {
        T::state(self).await
    }
    #[inline]
    async fn stop(&mut self) -> Result<(), Self::Error> {
        T::stop(self).await
    }
}
