//! `self.screen.set_brightness` over any [`Backlight`].
//!
//! A backlight that can report its level is read back (`read_back`; a reading that does not
//! agree within the backlight's declared [`tolerance`](Backlight::tolerance), `|observed −
//! commanded| ≤ tolerance`, fails the call); one that cannot (a PWM output) gets `applied`, never
//! more.

use mcp_core::schema::Param;
use mcp_core::{
    Annotations, Args, Evidence, Level, Output, Reading, Reply, Tool, ToolError, ToolResult,
};

use super::{device_error, percent};
use crate::backlight::Backlight;

/// Access to the board's backlight.
pub trait HasBacklight {
    /// The backlight type.
    type Backlight: Backlight;
    /// The backlight.
    fn backlight(&mut self) -> &mut Self::Backlight;
}

const PARAMS: &[Param] =
    &[Param::integer("brightness", "Brightness in percent, 0 (off) to 100").range(0, 100)];

fn handler<C: HasBacklight>(ctx: &mut C, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    let level = percent(args, "brightness")?;
    let backlight = ctx.backlight();
    backlight
        .set_brightness(level)
        .map_err(|e| device_error(&e))?;
    let commanded = Reading::Int(level.into());
    match backlight.brightness() {
        Err(_) => Err(
            ToolError::new("The brightness was set but could not be read back")
                .with_evidence(Evidence::new(Level::Applied).commanded(commanded)),
        ),
        Ok(None) => Ok(
            Output::bool(true).with_evidence(Evidence::new(Level::Applied).commanded(commanded))
        ),
        Ok(Some(observed)) => {
            let tolerance = backlight.tolerance();
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

/// The tool `self.screen.set_brightness` (`brightness`: integer 0–100).
pub const fn set_brightness<C: HasBacklight>() -> Tool<C> {
    Tool::new(
        "self.screen.set_brightness",
        "Set the brightness of the screen backlight.",
        handler::<C>,
    )
    .params(PARAMS)
    .annotations(Annotations::new().idempotent(true).destructive(false))
}
