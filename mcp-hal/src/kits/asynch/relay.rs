//! `self.relay.set` over any async [`Switch`], with an interlock guard: the blocking
//! [`kits::relay`](crate::kits::relay) kit, awaited.
//!
//! Same name, parameter, annotations and evidence as the blocking kit: `measured` when the
//! feedback agrees (waited for up to the relay's settle time when it fits the call budget), a
//! failed call naming commanded and observed when it does not, `applied` without feedback. A
//! settle time beyond the budget cannot become a task here: after waiting the budget the call
//! fails with `applied` evidence, saying it was not confirmed in time.
//!
//! # The interlock and the critical section
//! The guard ([`HasRelay::interlock`], a plain `fn`) and the drive run in one critical section,
//! as in the blocking kit, so that nothing can change the guarded condition in between. A
//! critical section cannot be held across an `.await`, so the kit runs the guard and the **first
//! poll** of the drive's future inside it, with the executor's waker:
//!
//! * a drive that completes when first polled — a GPIO output (the
//!   [`GpioRelay`](crate::drivers::GpioRelay) implements the async twin that way), a
//!   [`BlockingAsync`](crate::asynch::BlockingAsync) driver — is switched atomically with its
//!   guard, exactly as in the blocking kit;
//! * a drive that has to wait (a relay behind an I2C port expander) is *started* inside the
//!   critical section and finishes outside it. If its guard must also cover the rest of the
//!   transfer, make the drive complete at once (a blocking transfer) or hold the guarded
//!   condition with the firmware's own lock.
//!
//! The wait for the feedback is never inside the critical section.

use core::future::{Future, poll_fn};
use core::pin::pin;

use mcp_core::{Args, Reply, Tool, ToolResult};

use super::{Wait, settle};
use crate::asynch::switch::Switch;
use crate::kits::relay::{Undriven, agrees, conclude, listing, undriven};
use crate::kits::{Window, command_failed};

pub use crate::kits::relay::{CONFIRM_ON, NAME, Refusal, WORDS, Words, confirm_on};

/// Access to the board's async relay, its interlock, and (through [`Wait`]) its delay for the
/// settle time.
pub trait HasRelay: Wait {
    /// The relay type.
    type Relay: Switch;
    /// What the kit says when a call fails; the kit's [`WORDS`] by default.
    const WORDS: Words = WORDS;
    /// The relay.
    fn relay(&mut self) -> &mut Self::Relay;
    /// The interlock guard, asked before the relay is driven to `on`. Runs inside a critical
    /// section together with the first poll of the drive (see the
    /// [module docs](self#the-interlock-and-the-critical-section)), so it is a plain `fn`: read
    /// the guarded condition from what the firmware already knows (a flag an interrupt or a
    /// task keeps), never from a bus.
    ///
    /// The default allows everything: a board that switches anything dangerous (mains, a heater,
    /// a door lock) must override it, or the model can switch it whatever the sensors say.
    fn interlock(&mut self, on: bool) -> Result<(), Refusal> {
        let _ = on;
        Ok(())
    }
}

/// The async tool `self.relay.set` (`on`: boolean); serve it with [`call`]. Ask a person before
/// it switches on with `.confirm(relay::CONFIRM_ON)` or [`confirm_on`] (a held call confirmed on
/// the device then runs through [`Server::poll_async`](mcp_core::Server::poll_async)).
pub const fn set<C: HasRelay>() -> Tool<C> {
    listing(None)
}

/// The old name of [`set`].
#[deprecated(note = "named as the blocking kit's constructor: `set()`")]
pub const fn tool<C: HasRelay>() -> Tool<C> {
    set()
}

/// Runs the tool: the guard and the drive, then the feedback until it agrees or the wait is
/// over.
pub async fn call<C: HasRelay>(ctx: &mut C, args: &Args<'_>, reply: &mut Reply<'_>) -> ToolResult {
    let on = args.bool("on")?;
    drive(ctx, on)
        .await
        .map_err(|why| undriven(&C::WORDS, why, on, reply))?;
    let window = Window::new(ctx.relay().settle_ms(), ctx.call_budget_ms(), false);
    let feedback = async |c: &mut C| c.relay().feedback().await;
    let read = settle(ctx, window, feedback, |f| agrees(on, f)).await;
    conclude(&C::WORDS, on, read, window, reply)
}

/// The guard, then the drive; the guard and the drive's first poll in one critical section.
async fn drive<C: HasRelay>(ctx: &mut C, on: bool) -> Result<(), Undriven> {
    let mut guarded = pin!(async {
        ctx.interlock(on).map_err(Undriven::Refused)?;
        ctx.relay()
            .set(on)
            .await
            .map_err(|e| Undriven::Failed(command_failed(&e)))
    });
    let mut first = true;
    poll_fn(|cx| {
        if core::mem::replace(&mut first, false) {
            critical_section::with(|_| guarded.as_mut().poll(cx))
        } else {
            guarded.as_mut().poll(cx)
        }
    })
    .await
}
