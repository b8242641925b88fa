//! `device://sensors/temperature` for async firmware: the blocking
//! [`kits::temperature`](crate::kits::temperature) resource, answered from the last sample.
//!
//! A resource reader cannot await (the engine calls it as a plain `fn`), so here the main loop
//! reads the [async thermometer](crate::asynch::sensor::Sensor) with
//! [`Watch::poll_async`], and `resources/read` answers the sample it took last (same contents:
//! `{"celsius":21.5}`; the error it got, if it failed; "not read yet" before the first poll).

use crate::kits::Watch;

pub use crate::kits::temperature::{NAME, POLICY, URI, watch};

/// Access to the board's thermometer watch (its last sample).
pub trait HasThermometer {
    /// The thermometer's [`Watch`], polled by the main loop.
    fn thermometer(&self) -> &Watch;
}

#[cfg(feature = "resources")]
fn read<C: HasThermometer>(ctx: &mut C, reply: &mut mcp_core::Reply<'_>) -> mcp_core::ToolResult {
    crate::kits::watch::read::read_latest(ctx.thermometer(), reply)
}

/// The live resource `device://sensors/temperature`, from the last sample. Feature
/// `resources`.
#[cfg(feature = "resources")]
pub const fn resource<C: HasThermometer>() -> mcp_core::registry::LiveResource<C> {
    crate::kits::temperature::listing(read::<C>)
}
