//! `self.reboot` (user-only) over any async [`System`]: the blocking
//! [`kits::system`](crate::kits::system) kit, awaited. Evidence `scheduled`.

use mcp_core::{Args, Reply, Tool, ToolResult};

use crate::asynch::system::System;
use crate::kits::device_error;
use crate::kits::system::{REBOOT_DELAY_MS, listing, scheduled};

pub use crate::kits::system::NAME;

/// Access to the board's async system control.
pub trait HasSystem {
    /// The system type.
    type System: System;
    /// The system control.
    fn system(&mut self) -> &mut Self::System;
}

/// The async user-only tool `self.reboot` (no parameters); serve it with [`call`].
pub const fn tool<C: HasSystem>() -> Tool<C> {
    listing(None)
}

/// Runs the tool: arms a restart [`REBOOT_DELAY_MS`] after the answer.
pub async fn call<C: HasSystem>(ctx: &mut C, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    ctx.system()
        .schedule_reboot(REBOOT_DELAY_MS)
        .await
        .map_err(|e| device_error(&e))?;
    scheduled()
}
