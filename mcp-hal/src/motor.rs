//! Actuators that take time: start a move, poll it, stop it.
//!
//! # For driver authors
//! [`start_move`](Actuator::start_move) returns as soon as the move is under way.
//! [`state`](Actuator::state) reports the *measured* position (an encoder, a limit switch), not
//! the commanded one. [`stop`](Actuator::stop) is the safe-stop hook: it must bring the actuator
//! to a safe halt from any state and be callable at any time, including twice.

use crate::ErrorType;

/// What an actuator is doing, as measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Motion {
    /// Measured position, in the actuator's units.
    pub position: i32,
    /// `true` while it is still moving.
    pub moving: bool,
    /// `true` when it stopped without reaching the target (blocked, overcurrent).
    pub stalled: bool,
}

device_trait! {
    /// A positioning actuator (a motor with an encoder, a valve, a blind).
    pub trait Actuator: ErrorType {
        /// The reachable positions, inclusive.
        fn range(&self) -> (i32, i32);
        /// How close to the target counts as arrived, in the actuator's units: a measured
        /// position `p` agrees with the target `t` when `|p − t| ≤ tolerance`. It is carried in
        /// the evidence.
        fn tolerance(&self) -> u32;
        /// The unit of positions (`"steps"`, `"mm"`, `"°"`), carried in the evidence so that a
        /// model reads "observed 498 steps", not a bare number. The default is `None` (unnamed).
        fn unit(&self) -> Option<&'static str> {
            None
        }
        /// Starts moving towards `target`.
        fn start_move(&mut self, target: i32) -> Result<(), Self::Error>;
        /// Reads the measured state.
        fn state(&mut self) -> Result<Motion, Self::Error>;
        /// Safe-stop: halts the actuator.
        fn stop(&mut self) -> Result<(), Self::Error>;
    }
}
