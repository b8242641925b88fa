//! `self.reboot` (user-only) over any [`System`]: the restart is armed with a delay so that the
//! answer can still be sent, and the evidence is `scheduled` — a reboot never confirms itself.

use mcp_core::{Annotations, Args, Evidence, Handler, Level, Output, Reply, Tool, ToolResult};

use super::{command_failed, declare};
use crate::system::System;

/// Access to the board's system control.
pub trait HasSystem {
    /// The system type.
    type System: System;
    /// The system control.
    fn system(&mut self) -> &mut Self::System;
}

/// The tool's name.
pub const NAME: &str = "self.reboot";

/// How long after the answer the device restarts.
pub const REBOOT_DELAY_MS: u32 = 1000;

/// The tool as listed, for the blocking kit (`Some(handler)`) and the async one (`None`).
pub(crate) const fn listing<C>(handler: Option<Handler<C>>) -> Tool<C> {
    declare(
        NAME,
        "Reboot the device. It restarts one second after answering and is offline for a few seconds.",
        handler,
    )
    .user_only()
    .annotations(Annotations::new().destructive(true))
}

/// The answer once the restart is armed: `scheduled`, never more.
pub(crate) const fn scheduled() -> ToolResult {
    Ok(Output::bool(true).with_evidence(Evidence::new(Level::Scheduled)))
}

fn handler<C: HasSystem>(ctx: &mut C, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    ctx.system()
        .schedule_reboot(REBOOT_DELAY_MS)
        .map_err(|e| command_failed(&e))?;
    scheduled()
}

/// The question a reboot asks a person (`reboot().confirm(system::CONFIRM)`; mcp-core's feature
/// `confirm`): a call from the model then runs only after a person's yes.
pub const CONFIRM: mcp_core::Confirm = mcp_core::Confirm::new("Reboot the device?");

/// The user-only tool `self.reboot` (no parameters).
pub const fn reboot<C: HasSystem>() -> Tool<C> {
    listing(Some(handler::<C>))
}

/// The tool open to the model behind a person's yes, as listed, for the blocking kit
/// (`Some(handler)`) and the async one (`None`).
pub(crate) const fn confirmed_listing<C>(handler: Option<Handler<C>>) -> Tool<C> {
    declare(
        NAME,
        "Reboot the device. A person confirms it first; it restarts one second after answering and is offline for a few seconds.",
        handler,
    )
    .annotations(Annotations::new().destructive(true))
    .confirm(CONFIRM)
}

/// `self.reboot` open to the model, behind a person's yes ([`CONFIRM`]): the confirmation
/// takes the place of user-only. The model may ask for a reboot; it happens only when a person
/// confirms it (the client's elicitation, or the button on the device).
pub const fn confirmed<C: HasSystem>() -> Tool<C> {
    confirmed_listing(Some(handler::<C>))
}
