//! `self.reboot` (user-only, or [`confirmed`] by a person) over any async [`System`]: the
//! blocking [`kits::system`](crate::kits::system) kit, awaited. Evidence `scheduled`.

use mcp_core::{Args, Reply, Tool, ToolResult};

use crate::asynch::system::System;
use crate::kits::command_failed;
use crate::kits::system::{confirmed_listing, listing, scheduled};

pub use crate::kits::system::{CONFIRM, NAME, REBOOT_DELAY_MS};

/// Access to the board's async system control.
pub trait HasSystem {
    /// The system type.
    type System: System;
    /// The system control.
    fn system(&mut self) -> &mut Self::System;
}

/// The async user-only tool `self.reboot` (no parameters); serve it with [`call`].
pub const fn reboot<C: HasSystem>() -> Tool<C> {
    listing(None)
}

/// The old name of [`reboot`].
#[deprecated(note = "named as the blocking kit's constructor: `reboot()`")]
pub const fn tool<C: HasSystem>() -> Tool<C> {
    reboot()
}

/// The async `self.reboot` open to the model, behind a person's yes ([`CONFIRM`]): the blocking
/// [`kits::system::confirmed`](crate::kits::system::confirmed). A call the person confirms on
/// the device (a client without elicitation) runs through
/// [`Server::poll_async`](mcp_core::Server::poll_async).
pub const fn confirmed<C: HasSystem>() -> Tool<C> {
    confirmed_listing(None)
}

/// Runs the tool: arms a restart [`REBOOT_DELAY_MS`] after the answer.
pub async fn call<C: HasSystem>(ctx: &mut C, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    ctx.system()
        .schedule_reboot(REBOOT_DELAY_MS)
        .await
        .map_err(|e| command_failed(&e))?;
    scheduled()
}
