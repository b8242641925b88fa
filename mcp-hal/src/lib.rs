//! # mcp-hal
//!
//! Hardware traits for [`mcp_core`] devices, in the style of `embedded-hal`. This release is a
//! placeholder that fixes the crate's place in the workspace; the traits, drivers and tool kits
//! arrive with the next release.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use mcp_core::{Evidence, Level, Reading};
