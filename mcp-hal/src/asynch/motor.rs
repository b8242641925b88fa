//! Async twin of [`crate::motor`]: actuators that take time.
//!
//! Same contract as the blocking [`Actuator`](crate::motor::Actuator):
//! [`start_move`](Actuator::start_move) resolves as soon as the move is under way (not when it
//! ends), [`state`](Actuator::state) reports the *measured* position, and
//! [`stop`](Actuator::stop) is the safe-stop hook. [`range`](Actuator::range) and
//! [`tolerance`](Actuator::tolerance) are plain queries with no I/O, so they stay normal `fn`s.

pub use crate::motor::Motion;
pub use crate::{Error, ErrorKind, ErrorType};

device_trait! {
    /// A positioning actuator (async).
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
    blocking crate::motor::Actuator
}
