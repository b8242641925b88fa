//! `device://buttons/main` for async firmware: the blocking
//! [`kits::button`](crate::kits::button) resource as it is (its reader does no I/O: it answers
//! the count the board's [`Presses`] keeps). Poll with [`Presses::poll_async`] over an
//! [async button](crate::asynch::sensor::Button).

#[cfg(feature = "resources")]
pub use crate::kits::button::resource;
pub use crate::kits::button::{DEBOUNCE_MS, HasButton, NAME, POLICY, Presses, URI};
