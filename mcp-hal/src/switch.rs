//! On/off loads (relays, MOSFET switches), with an optional feedback input.
//!
//! # For driver authors
//! `set(true)` returning `Ok` means the coil was driven, not that the contacts closed. If the
//! board has a feedback input (an auxiliary contact, a current sense), report it from
//! [`feedback`](Switch::feedback): the kit then claims `measured` when it agrees and fails the call
//! when it does not. Declare how long the contacts may take in
//! [`settle_ms`](Switch::settle_ms), and do not wait in [`set`](Switch::set): the kit waits it out
//! inside the call on the board's delay when it fits the call budget, and makes the call a task
//! when it does not (see [`kits`](crate::kits#settle-times-waiting-in-the-call-or-a-task)).

use crate::ErrorType;

device_trait! {
    /// A switched load.
    pub trait Switch: ErrorType {
        /// Drives the output on or off.
        fn set(&mut self, on: bool) -> Result<(), Self::Error>;
        /// Reads the feedback input, or `None` when there is none.
        fn feedback(&mut self) -> Result<Option<bool>, Self::Error>;
        /// Milliseconds the feedback may lag the command (0: at once): how long the kit waits for
        /// agreement before it calls a disagreement a failure.
        fn settle_ms(&self) -> u32;
    }
}
