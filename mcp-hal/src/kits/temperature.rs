//! `device://sensors/temperature`: a thermometer as a live resource, read in degrees Celsius.
//!
//! | item | what |
//! |---|---|
//! | [`URI`] | `device://sensors/temperature` |
//! | `resource()` | the [`LiveResource`](mcp_core::registry::LiveResource) (feature `resources`): `resources/read` reads the thermometer **now** and answers `{"celsius":21.5}` (`application/json`); a read error is the resource's error |
//! | [`watch`] | its [`Watch`] with [`POLICY`]: poll it from the main loop and publish what it returns |
//!
//! The board implements [`HasThermometer`] with any [`Sensor`] whose unit is
//! [`Unit::Celsius`](crate::sensor::Unit::Celsius) (the JSON key is the unit's
//! [`key`](crate::sensor::Unit::key)).

use super::Watch;
use crate::publish::Policy;
use crate::sensor::Sensor;

/// The resource's URI.
pub const URI: &str = "device://sensors/temperature";

/// The resource's name.
pub const NAME: &str = "temperature";

/// The default policy: changes of 0.5 °C, 0.2 °C of hysteresis, at most one a second.
pub const POLICY: Policy = Policy::new(500).hysteresis(200).min_interval_ms(1000);

/// Access to the board's thermometer.
pub trait HasThermometer {
    /// The thermometer type.
    type Thermometer: Sensor;
    /// The thermometer.
    fn thermometer(&mut self) -> &mut Self::Thermometer;
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
        "Board temperature in degrees Celsius: {\"celsius\":21.5}. Subscribe for changes of 0.5 \
         degrees or more.",
    )
}

#[cfg(feature = "resources")]
fn read<C: HasThermometer>(ctx: &mut C, reply: &mut mcp_core::Reply<'_>) -> mcp_core::ToolResult {
    super::watch::read::read_now(ctx.thermometer(), reply)
}

/// The live resource `device://sensors/temperature`: `{"celsius":21.5}`, read from the thermometer at each
/// `resources/read`. Feature `resources`.
#[cfg(feature = "resources")]
pub const fn resource<C: HasThermometer>() -> mcp_core::registry::LiveResource<C> {
    listing(read::<C>)
}
