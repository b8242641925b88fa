//! `device://sensors/temperature` for async firmware: the blocking
//! [`kits::temperature`](crate::kits::temperature) resource, answered from the last sample.
//!
//! A resource reader cannot await (the engine calls it as a plain `fn`), so here the main loop
//! reads the [async thermometer](crate::asynch::sensor::Sensor) with [`poll`], which keeps the
//! sample in the board's [`Watch`], and `resources/read` answers the sample it took last (same
//! contents: `{"celsius":21.5}`; the error it got, if it failed; "not read yet" before the
//! first poll).
//!
//! [`HasThermometer`] is the blocking kit's trait with an async sensor, plus the watch that keeps
//! the last sample:
//!
//! | | blocking [`kits::temperature::HasThermometer`](crate::kits::temperature::HasThermometer) | async [`HasThermometer`] |
//! |---|---|---|
//! | `type Thermometer` | a [`Sensor`](crate::sensor::Sensor) | an async [`Sensor`] |
//! | `fn thermometer(&mut self) -> &mut Self::Thermometer` | read at each `resources/read` | read by [`poll`] |
//! | `fn thermometer_watch(&mut self) -> &mut Watch` | — (the main loop keeps its watch) | the last sample, for `resources/read` |

use crate::Error;
use crate::asynch::sensor::Sensor;
use crate::kits::Watch;

pub use crate::kits::temperature::{NAME, POLICY, URI, watch};

/// Access to the board's async thermometer, and its [`Watch`] (the last sample).
pub trait HasThermometer {
    /// The thermometer type: an async sensor in °C, or a
    /// [`BlockingAsync`](crate::asynch::BlockingAsync) around a blocking one.
    type Thermometer: Sensor;
    /// The thermometer.
    fn thermometer(&mut self) -> &mut Self::Thermometer;
    /// The thermometer's [`Watch`] (from [`watch`]): [`poll`] keeps the last sample there, and
    /// `resources/read` answers it.
    fn thermometer_watch(&mut self) -> &mut Watch;
}

/// Reads the thermometer at `now_ms` into its watch; the resource's URI when the change is to be
/// published ([`POLICY`], or the watch's own). Call it from the main loop:
/// `if let Some(uri) = temperature::poll(&mut board, now).await { server.publish(uri); }`.
pub async fn poll<C: HasThermometer>(ctx: &mut C, now_ms: u64) -> Option<&'static str> {
    let thermometer = ctx.thermometer();
    let value = thermometer.read().await.map_err(|e| e.kind());
    let unit = thermometer.unit();
    ctx.thermometer_watch().offer(now_ms, value, unit)
}

#[cfg(feature = "resources")]
fn read<C: HasThermometer>(ctx: &mut C, reply: &mut mcp_core::Reply<'_>) -> mcp_core::ToolResult {
    crate::kits::watch::read::read_latest(ctx.thermometer_watch(), reply)
}

/// The live resource `device://sensors/temperature`, from the last sample. Feature
/// `resources`.
#[cfg(feature = "resources")]
pub const fn resource<C: HasThermometer>() -> mcp_core::registry::LiveResource<C> {
    crate::kits::temperature::listing(read::<C>)
}
