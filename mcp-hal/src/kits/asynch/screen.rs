//! `self.screen.set_brightness` over any async [`Backlight`]: the blocking
//! [`kits::screen`](crate::kits::screen) kit, awaited. `read_back` (within the backlight's
//! tolerance) where the level can be read, else `applied`.

use mcp_core::{Args, Reply, Tool, ToolResult};

use crate::asynch::backlight::Backlight;
use crate::kits::command_failed;
use crate::kits::screen::{accept, conclude, listing};

pub use crate::kits::screen::NAME;

/// Access to the board's async backlight.
pub trait HasBacklight {
    /// The backlight type.
    type Backlight: Backlight;
    /// The backlight.
    fn backlight(&mut self) -> &mut Self::Backlight;
}

/// The async tool `self.screen.set_brightness` (`brightness`: integer 0–100); serve it with
/// [`call`].
pub const fn set_brightness<C: HasBacklight>() -> Tool<C> {
    listing(None)
}

/// The old name of [`set_brightness`].
#[deprecated(note = "named as the blocking kit's constructor: `set_brightness()`")]
pub const fn tool<C: HasBacklight>() -> Tool<C> {
    set_brightness()
}

/// Runs the tool: sets the brightness, then reads it back where the hardware can.
pub async fn call<C: HasBacklight>(ctx: &mut C, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    let level = accept(args)?;
    let backlight = ctx.backlight();
    backlight
        .set_brightness(level)
        .await
        .map_err(|e| command_failed(&e))?;
    let read = backlight.brightness().await;
    conclude(level, read, backlight.tolerance())
}
