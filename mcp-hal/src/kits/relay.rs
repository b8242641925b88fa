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
    Annotations, Args, Evidence, Handler, Level, Output, Reading, Reply, Tool, ToolError,
    ToolResult,
};
#[cfg(feature = "tasks")]
use mcp_core::{TaskInfo, TaskPoll};

use super::{NOT_APPLIED, TASKS, Verdict, Wait, Window, command_failed, declare, settle};
use crate::switch::Switch;

/// Why an interlock guard refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The guard's name (`"door-closed"`).
    pub guard: &'static str,
    /// Why it refused (`"the door is open"`).
    pub reason: &'static str,
}

/// What the relay kit says of the load it switches when a call fails, in the board's words:
/// the sentences, not the rules (when a call fails, and the evidence it carries, stay the
/// kit's). A renamed kit gives its own ([`HasRelay::WORDS`]), changing the ones it needs:
/// `Words { disagrees: "The door sensor disagrees with the command", ..relay::WORDS }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Words {
    /// The feedback disagrees with the command once the settle time has passed.
    pub disagrees: &'static str,
    /// The relay was driven, but its feedback could not be read.
    pub unreadable: &'static str,
    /// The relay was driven, but its feedback did not agree within the call budget (what follows
    /// says the budget, the settle time and what the feedback reads).
    pub unconfirmed: &'static str,
    /// After an interlock's refusal: what was not done.
    pub not_switched: &'static str,
    /// What the feedback reads, on and off ("on" and "off"; a door's "open" and "closed").
    pub on: &'static str,
    /// See [`on`](Self::on).
    pub off: &'static str,
}

/// The kit's own words, for a relay-switched load.
pub const WORDS: Words = Words {
    disagrees: "The relay's feedback contact disagrees with the command",
    unreadable: "The relay was driven but its feedback could not be read",
    unconfirmed: "The relay was driven but its feedback did not confirm it",
    not_switched: "the relay was not switched",
    on: "on",
    off: "off",
};

/// Access to the board's relay, its interlock, the kit's words, and (through [`Wait`]) its delay
/// for the settle time.
pub trait HasRelay: Wait {
    /// The relay type.
    type Relay: Switch;
    /// What the kit says when a call fails; the kit's [`WORDS`] by default.
    const WORDS: Words = WORDS;
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

/// The tool's name.
pub const NAME: &str = "self.relay.set";

const PARAMS: &[Param] = &[Param::boolean(
    "on",
    "true to switch the load on, false to switch it off",
)];

/// The tool as listed, for the blocking kit (`Some(handler)`) and the async one (`None`).
pub(crate) const fn listing<C>(handler: Option<Handler<C>>) -> Tool<C> {
    declare(NAME, "Switch the relay-controlled load on or off.", handler)
        .params(PARAMS)
        .annotations(Annotations::new().idempotent(true).destructive(false))
}

fn measured(commanded: bool, observed: bool) -> Evidence {
    Evidence::new(Level::Measured)
        .commanded(Reading::Bool(commanded))
        .observed(Reading::Bool(observed))
}

/// Why the relay was not driven: the interlock refused, or the driver failed.
#[derive(Debug)]
pub(crate) enum Undriven {
    /// The interlock guard refused; nothing was driven.
    Refused(Refusal),
    /// The driver failed (its [`command_failed`](super::command_failed)).
    Failed(ToolError),
}

/// The failed call for a relay that was not driven to `on`.
pub(crate) fn undriven(words: &Words, why: Undriven, on: bool, reply: &mut Reply<'_>) -> ToolError {
    match why {
        Undriven::Refused(refusal) => reply
            .error_with(|w| {
                w.text("Refused by interlock \"");
                w.text(refusal.guard);
                w.text("\": ");
                w.text(refusal.reason);
                w.text("; ");
                w.text(words.not_switched);
            })
            .with_evidence(NOT_APPLIED.commanded(Reading::Bool(on))),
        Undriven::Failed(e) => e,
    }
}

/// `true` when the feedback agrees with the command `on` (no feedback input: nothing to wait
/// for).
pub(crate) const fn agrees(on: bool, feedback: Option<bool>) -> bool {
    match feedback {
        Some(contacts) => contacts == on,
        None => true,
    }
}

/// The answer once the relay is driven to `on`: the last feedback reading and its verdict (or
/// the read error).
pub(crate) fn conclude<E>(
    words: &Words,
    on: bool,
    read: Result<(Option<bool>, Verdict), E>,
    window: Window,
    reply: &mut Reply<'_>,
) -> ToolResult {
    let applied = Evidence::new(Level::Applied).commanded(Reading::Bool(on));
    let (observed, verdict) = match read {
        Err(_) => {
            return Err(ToolError::new(words.unreadable).with_evidence(applied));
        }
        Ok((None, _)) => return Ok(Output::bool(true).with_evidence(applied)),
        Ok((Some(observed), verdict)) => (observed, verdict),
    };
    match verdict {
        Verdict::Agrees => Ok(Output::bool(true).with_evidence(measured(on, observed))),
        Verdict::Disagrees => {
            Err(ToolError::new(words.disagrees).with_evidence(measured(on, observed)))
        }
        Verdict::Task => Ok(Output::task(i64::from(on)).with_evidence(applied)),
        Verdict::Unconfirmed => Err(reply
            .error_with(|w| {
                window.write_unconfirmed(w, words.unconfirmed);
                w.text("the feedback still reads ");
                w.text(if observed { words.on } else { words.off });
                w.text(")");
            })
            .with_evidence(applied)),
    }
}

fn handler<C: HasRelay>(ctx: &mut C, args: &Args<'_>, reply: &mut Reply<'_>) -> ToolResult {
    let on = args.bool("on")?;
    // Guard and action in one critical section.
    critical_section::with(|_| {
        ctx.interlock(on).map_err(Undriven::Refused)?;
        ctx.relay()
            .set(on)
            .map_err(|e| Undriven::Failed(command_failed(&e)))
    })
    .map_err(|why| undriven(&C::WORDS, why, on, reply))?;
    let window = Window::new(ctx.relay().settle_ms(), ctx.call_budget_ms(), TASKS);
    let read = settle(ctx, window, |c| c.relay().feedback(), |f| agrees(on, f));
    conclude(&C::WORDS, on, read, window, reply)
}

#[cfg(feature = "tasks")]
fn poll<C: HasRelay>(ctx: &mut C, task: &TaskInfo) -> TaskPoll {
    let on = task.data != 0;
    let relay = ctx.relay();
    let settle = u64::from(relay.settle_ms());
    match relay.feedback() {
        Err(e) => TaskPoll::Done(Err(super::device_error(&e))),
        Ok(None) => TaskPoll::Done(Ok(Output::bool(true)
            .with_evidence(Evidence::new(Level::Applied).commanded(Reading::Bool(on))))),
        Ok(Some(observed)) if observed == on => {
            TaskPoll::Done(Ok(Output::bool(true).with_evidence(measured(on, observed))))
        }
        Ok(Some(observed)) if task.now_ms.saturating_sub(task.started_ms) >= settle => {
            TaskPoll::Done(Err(
                ToolError::new(C::WORDS.disagrees).with_evidence(measured(on, observed))
            ))
        }
        Ok(Some(_)) => TaskPoll::Working(None),
    }
}

/// The question switching the load on asks a person (`set().confirm(relay::CONFIRM_ON)`;
/// mcp-core's feature `confirm`): switching on from the model then runs only after a person's
/// yes; switching off never asks. A board that knows what its relay switches asks in its own
/// words with [`confirm_on`].
pub const CONFIRM_ON: mcp_core::Confirm = confirm_on("Switch the relay-controlled load on?");

/// [`CONFIRM_ON`] in the board's own words: `question` is asked before the relay is switched on
/// (`set().confirm(relay::confirm_on("Open the garage door?"))`), never before it is switched
/// off.
pub const fn confirm_on(question: &'static str) -> mcp_core::Confirm {
    mcp_core::Confirm::new(question).when(switches_on)
}

fn switches_on(args: &Args<'_>) -> bool {
    args.bool("on") == Ok(true)
}

/// The tool `self.relay.set` (`on`: boolean). A settle time within the board's call budget is
/// waited out in the call; with the feature `tasks` the tool is long-running, so that a relay
/// declaring a longer one is confirmed by a task.
pub const fn set<C: HasRelay>() -> Tool<C> {
    let tool = listing(Some(handler::<C>));
    #[cfg(feature = "tasks")]
    let tool = super::settle_task(tool, poll::<C>);
    tool
}
