//! `device://sensors/battery` for async firmware: the blocking
//! [`kits::battery`](crate::kits::battery) resource, answered from the last sample (see
//! [`asynch::temperature`](super::temperature) for why, and how [`HasBattery`] relates to the
//! blocking kit's trait).

use crate::Error;
use crate::asynch::sensor::Sensor;
use crate::kits::Watch;

pub use crate::kits::battery::{NAME, POLICY, URI, watch};

/// Access to the board's async battery gauge, and its [`Watch`] (the last sample).
pub trait HasBattery {
    /// The gauge type: an async sensor in %, or a
    /// [`BlockingAsync`](crate::asynch::BlockingAsync) around a blocking one.
    type Battery: Sensor;
    /// The gauge.
    fn battery(&mut self) -> &mut Self::Battery;
    /// The gauge's [`Watch`] (from [`watch`]): [`poll`] keeps the last sample there, and
    /// `resources/read` answers it.
    fn battery_watch(&mut self) -> &mut Watch;
}

/// Reads the gauge at `now_ms` into its watch; the resource's URI when the change is to be
/// published ([`POLICY`], or the watch's own).
pub async fn poll<C: HasBattery>(ctx: &mut C, now_ms: u64) -> Option<&'static str> {
    let battery = ctx.battery();
    let value = battery.read().await.map_err(|e| e.kind());
    let unit = battery.unit();
    ctx.battery_watch().offer(now_ms, value, unit)
}

#[cfg(feature = "resources")]
fn read<C: HasBattery>(ctx: &mut C, reply: &mut mcp_core::Reply<'_>) -> mcp_core::ToolResult {
    crate::kits::watch::read::read_latest(ctx.battery_watch(), reply)
}

/// The live resource `device://sensors/battery`, from the last sample. Feature `resources`.
#[cfg(feature = "resources")]
pub const fn resource<C: HasBattery>() -> mcp_core::registry::LiveResource<C> {
    crate::kits::battery::listing(read::<C>)
}
