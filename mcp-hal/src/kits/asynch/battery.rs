//! `device://sensors/battery` for async firmware: the blocking
//! [`kits::battery`](crate::kits::battery) resource, answered from the last sample (see
//! [`asynch::temperature`](super::temperature) for why).

use crate::kits::Watch;

pub use crate::kits::battery::{NAME, POLICY, URI, watch};

/// Access to the board's battery watch (its last sample).
pub trait HasBattery {
    /// The battery gauge's [`Watch`], polled by the main loop.
    fn battery(&self) -> &Watch;
}

#[cfg(feature = "resources")]
fn read<C: HasBattery>(ctx: &mut C, reply: &mut mcp_core::Reply<'_>) -> mcp_core::ToolResult {
    crate::kits::watch::read::read_latest(ctx.battery(), reply)
}

/// The live resource `device://sensors/battery`, from the last sample. Feature `resources`.
#[cfg(feature = "resources")]
pub const fn resource<C: HasBattery>() -> mcp_core::registry::LiveResource<C> {
    crate::kits::battery::listing(read::<C>)
}
