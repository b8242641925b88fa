//! `self.screen.set_brightness` over any [`Backlight`].
//!
//! A backlight that can report its level is read back (`read_back`; a reading that does not
//! agree within the backlight's declared [`tolerance`](Backlight::tolerance), `|observed −
//! commanded| ≤ tolerance`, fails the call); one that cannot (a PWM output) gets `applied`, never
//! more.

use mcp_core::schema::Param;
use mcp_core::{
    Annotations, Args, Evidence, Handler, Level, Output, Reading, Reply, Tool, ToolError,
    ToolResult,
};

use super::{command_failed, declare, percent};
use crate::Percent;
use crate::backlight::Backlight;

/// Access to the board's backlight.
pub trait HasBacklight {
    /// The backlight type.
    type Backlight: Backlight;
    /// The backlight.
    fn backlight(&mut self) -> &mut Self::Backlight;
}

/// The tool's name.
pub const NAME: &str = "self.screen.set_brightness";

const PARAMS: &[Param] =
    &[Param::integer("brightness", "Brightness in percent, 0 (off) to 100").range(0, 100)];

/// The tool as listed, for the blocking kit (`Some(handler)`) and the async one (`None`).
pub(crate) const fn listing<C>(handler: Option<Handler<C>>) -> Tool<C> {
    declare(NAME, "Set the brightness of the screen backlight.", handler)
        .params(PARAMS)
        .annotations(Annotations::new().idempotent(true).destructive(false))
}

/// The commanded level.
pub(crate) fn accept(args: &Args<'_>) -> Result<Percent, ToolError> {
    percent(args, "brightness")
}

/// The answer once `level` is set: what the backlight reads back (`None`: it cannot), or the
/// read error, and its declared tolerance.
pub(crate) fn conclude<E>(
    level: Percent,
    read: Result<Option<Percent>, E>,
    tolerance: u8,
) -> ToolResult {
    let commanded = Reading::Int(level.into());
    let applied = Evidence::new(Level::Applied).commanded(commanded);
    match read {
        Err(_) => Err(
            ToolError::new("The brightness was set but could not be read back")
                .with_evidence(applied),
        ),
        Ok(None) => Ok(Output::bool(true).with_evidence(applied)),
        Ok(Some(observed)) => {
            let e = Evidence::new(Level::ReadBack)
                .commanded(commanded)
                .observed(Reading::Int(observed.into()))
                .tolerance(u32::from(tolerance));
            if level.get().abs_diff(observed.get()) <= tolerance {
                Ok(Output::bool(true).with_evidence(e))
            } else {
                Err(
                    ToolError::new("The backlight reports a different brightness than commanded")
                        .with_evidence(e),
                )
            }
        }
    }
}

fn handler<C: HasBacklight>(ctx: &mut C, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    let level = accept(args)?;
    let backlight = ctx.backlight();
    backlight
        .set_brightness(level)
        .map_err(|e| command_failed(&e))?;
    conclude(level, backlight.brightness(), backlight.tolerance())
}

/// The tool `self.screen.set_brightness` (`brightness`: integer 0–100).
pub const fn set_brightness<C: HasBacklight>() -> Tool<C> {
    listing(Some(handler::<C>))
}
