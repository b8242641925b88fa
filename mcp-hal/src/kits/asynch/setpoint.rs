//! The [setpoint kit](crate::kits::setpoint) over any async
//! [`Setpoint`]: set → settle → read back → compare, awaited.
//!
//! Same parameter (the board's [`HasSetpoint::PARAMS`]), words, evidence and messages as the
//! blocking kit. A settle time beyond the call budget cannot become a task here: after waiting
//! the budget the call fails with `applied` evidence, saying it was not confirmed in time.

use mcp_core::schema::Param;
use mcp_core::{Args, Reply, Tool, ToolResult};

use super::{Wait, settle};
use crate::asynch::setpoint::Setpoint;
use crate::kits::setpoint::{Expect, conclude, listing, param};
use crate::kits::{Window, command_failed};

pub use crate::kits::setpoint::{NAME, WORDS, Words};

/// Access to the board's async device, the tool's parameter, the kit's words, and (through
/// [`Wait`]) the board's async delay for the settle time: the blocking
/// [`HasSetpoint`](crate::kits::setpoint::HasSetpoint)'s twin.
pub trait HasSetpoint: Wait {
    /// The device.
    type Device: Setpoint;
    /// The tool's parameter: one integer, with the board's name, description and range.
    const PARAMS: &'static [Param];
    /// What the kit says when a call fails; the kit's [`WORDS`] by default.
    const WORDS: Words = WORDS;
    /// The device.
    fn device(&mut self) -> &mut Self::Device;
}

/// The async tool `self.setpoint.set` (the board's parameter); serve it with [`call`], rename it
/// as the device it drives.
pub const fn set<C: HasSetpoint>() -> Tool<C> {
    listing(None, C::PARAMS)
}

/// Runs the tool: the command, then the measurement until it agrees or the wait is over.
pub async fn call<C: HasSetpoint>(
    ctx: &mut C,
    args: &Args<'_>,
    reply: &mut Reply<'_>,
) -> ToolResult {
    let value = args.int(param(C::PARAMS))?;
    ctx.device()
        .set(value)
        .await
        .map_err(|e| command_failed(&e))?;
    let device = ctx.device();
    let expect = Expect {
        value: device.expected(value),
        tolerance: device.tolerance(),
        unit: device.unit(),
    };
    let window = Window::new(device.settle_ms(), ctx.call_budget_ms(), false);
    let measure = async |c: &mut C| c.device().read().await;
    let read = settle(ctx, window, measure, |m| expect.agrees(m)).await;
    conclude(&C::WORDS, value, expect, read, window, reply)
}
