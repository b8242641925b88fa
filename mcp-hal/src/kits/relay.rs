//! `self.relay.set` over any [`Switch`], with an interlock guard.
//!
//! The guard ([`HasRelay::interlock`]) runs after validation and before the relay is driven,
//! inside the same critical section as the action, so that nothing can change the condition in
//! between (an interrupt that opens the door cannot slip in after the check). A refusal names the
//! guard and why, and nothing is driven.
//!
//! Evidence: with a feedback input, the kit reads it after driving the relay — agreement is
//! `measured`, disagreement a failed call (or, when the relay declares a settle time, a task that
//! waits that long before deciding); without feedback, `applied`.

use mcp_core::schema::Param;
use mcp_core::{
    Annotations, Args, Evidence, Level, Output, Reading, Reply, Tool, ToolError, ToolResult,
};
#[cfg(feature = "tasks")]
use mcp_core::{TaskHooks, TaskInfo, TaskPoll, TaskSupport};

use super::device_error;
use crate::switch::Switch;

/// Why an interlock guard refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The guard's name (`"door-closed"`).
    pub guard: &'static str,
    /// Why it refused (`"the door is open"`).
    pub reason: &'static str,
}

/// Access to the board's relay, and its interlock.
pub trait HasRelay {
    /// The relay type.
    type Relay: Switch;
    /// The relay.
    fn relay(&mut self) -> &mut Self::Relay;
    /// The interlock guard, asked before the relay is driven to `on`. Runs inside a critical
    /// section together with the action. Allow everything by returning `Ok(())`.
    fn interlock(&mut self, on: bool) -> Result<(), Refusal>;
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
    let relay = ctx.relay();
    let applied = Evidence::new(Level::Applied).commanded(Reading::Bool(on));
    match relay.feedback() {
        Err(_) => Err(
            ToolError::new("The relay was driven but its feedback could not be read")
                .with_evidence(applied),
        ),
        Ok(None) => Ok(Output::bool(true).with_evidence(applied)),
        Ok(Some(observed)) if observed == on => {
            Ok(Output::bool(true).with_evidence(measured(on, observed)))
        }
        Ok(Some(_)) if cfg!(feature = "tasks") && relay.settle_ms() > 0 => {
            Ok(Output::task(i64::from(on)).with_evidence(applied))
        }
        Ok(Some(observed)) => Err(ToolError::new(MISMATCH).with_evidence(measured(on, observed))),
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

/// The tool `self.relay.set` (`on`: boolean). With the feature `tasks` it is long-running (a
/// relay that declares a settle time is confirmed by a task); without it, feedback that disagrees
/// fails the call at once (wait out the settle time in the driver then).
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
