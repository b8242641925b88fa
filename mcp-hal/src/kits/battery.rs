//! `device://sensors/battery`: a battery's state of charge as a live resource, in percent.
//!
//! | item | what |
//! |---|---|
//! | [`URI`] | `device://sensors/battery` |
//! | `resource()` | the [`LiveResource`](mcp_core::registry::LiveResource) (feature `resources`): `resources/read` reads the fuel gauge **now** and answers `{"percent":87}` (`application/json`); a read error is the resource's error |
//! | [`watch`] | its [`Watch`] with [`POLICY`]: poll it from the main loop and publish what it returns |
//!
//! The board implements [`HasBattery`] with any [`Sensor`] whose unit is
//! [`Unit::Percent`](crate::sensor::Unit::Percent) (a fuel gauge, or a voltage divider on an
//! ADC with the discharge curve applied in the driver).

use super::Watch;
use crate::publish::Policy;
use crate::sensor::Sensor;

/// The resource's URI.
pub const URI: &str = "device://sensors/battery";

/// The resource's name.
pub const NAME: &str = "battery";

/// The default policy: changes of 1 %, 0.5 % of hysteresis, at most one every 5 s.
pub const POLICY: Policy = Policy::new(1000).hysteresis(500).min_interval_ms(5000);

/// Access to the board's battery gauge.
pub trait HasBattery {
    /// The gauge type.
    type Battery: Sensor;
    /// The gauge.
    fn battery(&mut self) -> &mut Self::Battery;
}

/// The resource's [`Watch`], with [`POLICY`] (change it with [`Watch::policy`]).
pub const fn watch() -> Watch {
    Watch::new(URI, POLICY)
}

/// The resource as listed, over `read` (the blocking kit reads now, the async one its last
/// sample).
#[cfg(feature = "resources")]
pub(crate) const fn listing<C>(
    read: mcp_core::registry::Reader<C>,
) -> mcp_core::registry::LiveResource<C> {
    mcp_core::registry::LiveResource::new(URI, NAME, "application/json", read).description(
        "Battery charge in percent: {\"percent\":87}. Subscribe for changes of 1 percent or more.",
    )
}

#[cfg(feature = "resources")]
fn read<C: HasBattery>(ctx: &mut C, reply: &mut mcp_core::Reply<'_>) -> mcp_core::ToolResult {
    super::watch::read::read_now(ctx.battery(), reply)
}

/// The live resource `device://sensors/battery`: `{"percent":87}`, read from the gauge at each
/// `resources/read`. Feature `resources`.
#[cfg(feature = "resources")]
pub const fn resource<C: HasBattery>() -> mcp_core::registry::LiveResource<C> {
    listing(read::<C>)
}
