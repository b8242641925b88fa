//! `self.relay.set` over any [`Switch`], with an interlock guard.
//!
//! The guard ([`HasRelay::interlock`]) runs after validation and before the relay is driven,
//! inside the same critical section as the action, so that nothing can change the condition in
//! between (an interrupt that opens the door cannot slip in after the check). A refusal names the
//! guard and why, and nothing is driven.
//!
//! Evidence: with a feedback input, the kit reads it after driving the relay — agreement is
//! `measured`, disagreement a failed call naming the commanded state and the feedback; without
//! feedback, `applied`. A relay that declares a settle time ([`Switch::settle_ms`]) is given it:
//! within the board's call budget the kit waits inside the call on the board's delay ([`Wait`])
//! and answers as soon as the contacts agree (a 20 ms relay, stuck or not, answers in the call
//! that switched it); a longer one becomes a task (feature `tasks`) or, without it, fails
//! unconfirmed after waiting the budget, with `applied` evidence (see the
//! [kits docs](super#settle-times-waiting-in-the-call-or-a-task)). The guard's critical section
//! covers the check and the drive, never the wait.

use mcp_core::schema::Param;
use mcp_core::{
    Annotations, Args, Evidence, Level, Output, Reading, Reply, Tool, ToolError, ToolResult,
};
#[cfg(feature = "tasks")]
use mcp_core::{TaskHooks, TaskInfo, TaskPoll, TaskSupport};

use super::{Wait, device_error, settle, wait_limit};
use crate::switch::Switch;

/// Why an interlock guard refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The guard's name (`"door-closed"`).
    pub guard: &'static str,
    /// Why it refused (`"the door is open"`).
    pub reason: &'static str,
}

/// Access to the board's relay, its interlock, and (through [`Wait`]) its delay for the settle
/// time.
pub trait HasRelay: Wait {
    /// The relay type.
    type Relay: Switch;
    /// The relay.
    fn relay(&mut self) -> &mut Self::Relay;
    /// The interlock guard, asked before the relay is driven to `on`. Runs inside a critical
    /// section together with the action.
    ///
    /// The default allows everything: a board that switches anything dangerous (mains, a heater,
    /// a door lock) must override it, or the model can switch it whatever the sensors say.
    fn interlock(&mut self, on: bool) -> Result<(), Refusal> {
        let _ = on;
        Ok(())
    }
}

const PARAMS: &[Param] = &[Param::boolean(
    "on",
    "true to switch the load on, false to switch it off",
)];

fn measured(commanded: bool, observed: bool) -> Evidence {
    Evidence::new(Level::Measured)
        .commanded(Reading::Bool(commanded))
        .observed(Reading::Bool(observed))
}

const MISMATCH: &str = "The relay's feedback contact disagrees with the command";

fn handler<C: HasRelay>(ctx: &mut C, args: &Args<'_>, reply: &mut Reply<'_>) -> ToolResult {
    let on = args.bool("on")?;
    // Guard and action in one critical section.
    let driven = critical_section::with(|_| {
        ctx.interlock(on).map_err(Err)?;
        ctx.relay().set(on).map_err(Ok)
    });
    match driven {
        Ok(()) => {}
        Err(Err(refusal)) => {
            return Err(reply.error(format_args!(
                "Refused by interlock \"{}\": {}; the relay was not switched",
                refusal.guard, refusal.reason
            )));
        }
        Err(Ok(e)) => return Err(device_error(&e)),
    }
    let applied = Evidence::new(Level::Applied).commanded(Reading::Bool(on));
    let settle_ms = ctx.relay().settle_ms();
    let budget = ctx.call_budget_ms();
    let read = settle(
        ctx,
        wait_limit(settle_ms, budget),
        |c| c.relay().feedback(),
        // No feedback input: nothing to wait for.
        |f| f.is_none_or(|contacts| contacts == on),
    );
    match read {
        Err(_) => Err(
            ToolError::new("The relay was driven but its feedback could not be read")
                .with_evidence(applied),
        ),
        Ok((None, _)) => Ok(Output::bool(true).with_evidence(applied)),
        Ok((Some(observed), true)) => Ok(Output::bool(true).with_evidence(measured(on, observed))),
        Ok((Some(observed), false)) if settle_ms <= budget => {
            Err(ToolError::new(MISMATCH).with_evidence(measured(on, observed)))
        }
        Ok((Some(_), false)) if cfg!(feature = "tasks") => {
            Ok(Output::task(i64::from(on)).with_evidence(applied))
        }
        Ok((Some(observed), false)) => Err(reply
            .error(format_args!(
                "The relay was driven but its feedback did not confirm it within this device's \
                 {budget} ms call budget (the relay may take {settle_ms} ms; the feedback still \
                 reads {})",
                if observed { "on" } else { "off" }
            ))
            .with_evidence(applied)),
    }
}

#[cfg(feature = "tasks")]
fn poll<C: HasRelay>(ctx: &mut C, task: &TaskInfo) -> TaskPoll {
    let on = task.data != 0;
    let relay = ctx.relay();
    let settle = u64::from(relay.settle_ms());
    match relay.feedback() {
        Err(e) => TaskPoll::Done(Err(device_error(&e))),
        Ok(None) => TaskPoll::Done(Ok(Output::bool(true)
            .with_evidence(Evidence::new(Level::Applied).commanded(Reading::Bool(on))))),
        Ok(Some(observed)) if observed == on => {
            TaskPoll::Done(Ok(Output::bool(true).with_evidence(measured(on, observed))))
        }
        Ok(Some(observed)) if task.now_ms.saturating_sub(task.started_ms) >= settle => {
            TaskPoll::Done(Err(
                ToolError::new(MISMATCH).with_evidence(measured(on, observed))
            ))
        }
        Ok(Some(_)) => TaskPoll::Working(None),
    }
}

/// The tool `self.relay.set` (`on`: boolean). A settle time within the board's call budget is
/// waited out in the call; with the feature `tasks` the tool is long-running, so that a relay
/// declaring a longer one is confirmed by a task.
pub const fn set<C: HasRelay>() -> Tool<C> {
    let tool = Tool::new(
        "self.relay.set",
        "Switch the relay-controlled load on or off.",
        handler::<C>,
    )
    .params(PARAMS)
    .annotations(Annotations::new().idempotent(true).destructive(false));
    #[cfg(feature = "tasks")]
    let tool = tool.long_running(
        TaskSupport::Optional,
        TaskHooks {
            poll: poll::<C>,
            stop: None,
            timeout_ms: 10_000,
        },
    );
    tool
}
