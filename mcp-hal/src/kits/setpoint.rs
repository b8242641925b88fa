//! A device driven to a value and measured by its own sensor, over any [`Setpoint`]: **set →
//! settle → read back → compare within the device's tolerance**. A fan's duty cycle and its
//! tachometer, a valve's opening and a flow meter, a heater's power and a thermometer: one kit.
//!
//! The kit cannot know what the device is, so the board says it:
//!
//! - the tool's parameter ([`HasSetpoint::PARAMS`]: one integer, with the board's name,
//!   description and range — the kit reads it by that name);
//! - the tool's name and description ([`Tool::rename`], [`Tool::describe`]; the kit's own,
//!   [`NAME`], says nothing of a device);
//! - the words its failures use ([`HasSetpoint::WORDS`], [`Words`]): "The fan does not reach
//!   the commanded speed" rather than the kit's generic sentence.
//!
//! The rules are the kit's: the evidence is `measured`, the commanded value the measurement the
//! device [expects](Setpoint::expected) for the command, the observed one what its sensor read,
//! with the device's [tolerance](Setpoint::tolerance) and [unit](Setpoint::unit); a measurement
//! that disagrees once the settle time has passed fails the call with both values. A settle time
//! within the board's call budget is waited out in the call; a longer one becomes a task (feature
//! `tasks`) or, without it, fails unconfirmed after waiting the budget, with `applied` evidence
//! (see the [kits docs](super#settle-times-waiting-in-the-call-or-a-task)). A driver that fails
//! the command gives [`command_failed`]'s evidence.
//!
//! ```
//! # #[cfg(feature = "sim")] {
//! use mcp_core::{Param, Tool};
//! use mcp_hal::kits::setpoint::{self, HasSetpoint, Words};
//! use mcp_hal::kits::{DelayNs, Wait};
//! use mcp_hal::sim::{SimBoard, SimFan};
//!
//! struct Board { sim: SimBoard, fan: SimFan }
//! impl Wait for Board {
//!     fn delay(&mut self) -> impl DelayNs + '_ { &mut self.sim }
//! }
//! impl HasSetpoint for Board {
//!     type Device = SimFan;
//!     const PARAMS: &'static [Param] =
//!         &[Param::integer("percent", "The speed, in percent of full speed").range(0, 100)];
//!     const WORDS: Words = Words {
//!         disagrees: "The fan does not reach the commanded speed",
//!         ..setpoint::WORDS
//!     };
//!     fn device(&mut self) -> &mut SimFan { &mut self.fan }
//! }
//! static FAN: Tool<Board> = setpoint::set()
//!     .rename("self.fan.set_speed")
//!     .describe("Set the speed of the cooling fan, in percent of its full speed (0 stops it).");
//! # assert_eq!(FAN.name(), "self.fan.set_speed");
//! # }
//! ```

use mcp_core::schema::Param;
use mcp_core::{Annotations, Args, Handler, Output, Reply, Tool, ToolError, ToolResult};
use mcp_core::{Evidence, Level, Reading};
#[cfg(feature = "tasks")]
use mcp_core::{TaskInfo, TaskPoll};

use super::{TASKS, Verdict, Wait, Window, command_failed, declare, settle};
use crate::setpoint::Setpoint;

/// What the kit says of the device when a call fails, in the board's words: the sentences, not
/// the rules (when a call fails, and the evidence it carries, stay the kit's). Change the ones
/// the device needs, the rest from [`WORDS`]: `Words { disagrees: "…", ..setpoint::WORDS }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Words {
    /// The measurement disagrees with the command once the settle time has passed.
    pub disagrees: &'static str,
    /// The command was issued, but the measurement could not be read.
    pub unreadable: &'static str,
    /// The command was issued, but the measurement did not agree within the call budget (what
    /// follows says the budget, the settle time and the reading).
    pub unconfirmed: &'static str,
}

/// The kit's own words, for a device it knows nothing of.
pub const WORDS: Words = Words {
    disagrees: "The device does not reach the commanded value",
    unreadable: "The value was commanded but its measurement could not be read",
    unconfirmed: "The value was commanded but its measurement did not confirm it",
};

/// Access to the board's device, the tool's parameter, the kit's words, and (through [`Wait`])
/// the board's delay for the settle time.
pub trait HasSetpoint: Wait {
    /// The device.
    type Device: Setpoint;
    /// The tool's parameter: one integer, with the board's name, description and range
    /// (`&[Param::integer("percent", "…").range(0, 100)]`). The kit reads the first parameter by
    /// its name; the validator has checked it against the range before the kit runs.
    const PARAMS: &'static [Param];
    /// What the kit says when a call fails; the kit's [`WORDS`] by default.
    const WORDS: Words = WORDS;
    /// The device.
    fn device(&mut self) -> &mut Self::Device;
}

/// The kit's tool name; a board renames the tool ([`Tool::rename`]).
pub const NAME: &str = "self.setpoint.set";

/// The tool as listed, for the blocking kit (`Some(handler)`) and the async one (`None`).
pub(crate) const fn listing<C>(handler: Option<Handler<C>>, params: &'static [Param]) -> Tool<C> {
    declare(
        NAME,
        "Set the device to a value; the answer says what its sensor measured.",
        handler,
    )
    .params(params)
    .annotations(Annotations::new().idempotent(true).destructive(false))
}

/// The name the kit reads the value by: the first declared parameter's.
pub(crate) fn param(params: &'static [Param]) -> &'static str {
    params.first().map_or("value", |p| p.name())
}

/// What the device says of a command: the measurement it expects, how close it must be, in
/// which unit, and how long it may take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expect {
    pub(crate) value: i64,
    pub(crate) tolerance: u32,
    pub(crate) unit: Option<&'static str>,
}

impl Expect {
    /// `true` when `measured` agrees with it.
    pub(crate) const fn agrees(&self, measured: i64) -> bool {
        measured.abs_diff(self.value) <= self.tolerance as u64
    }

    fn evidence(&self, level: Level) -> Evidence {
        let e = Evidence::new(level)
            .commanded(Reading::Int(self.value))
            .tolerance(self.tolerance);
        match self.unit {
            Some(u) => e.unit(u),
            None => e,
        }
    }

    /// `measured` evidence of a reading.
    pub(crate) fn measured(&self, observed: i64) -> Evidence {
        self.evidence(Level::Measured)
            .observed(Reading::Int(observed))
    }

    /// `applied` evidence: commanded, not confirmed.
    pub(crate) fn applied(&self) -> Evidence {
        self.evidence(Level::Applied)
    }
}

/// The answer once the device was commanded: the last measurement and its verdict (or the read
/// error). `command` is the tool's value, kept as a task's data.
pub(crate) fn conclude<E>(
    words: &Words,
    command: i64,
    expect: Expect,
    read: Result<(i64, Verdict), E>,
    window: Window,
    reply: &mut Reply<'_>,
) -> ToolResult {
    let (observed, verdict) = match read {
        Err(_) => return Err(ToolError::new(words.unreadable).with_evidence(expect.applied())),
        Ok(r) => r,
    };
    match verdict {
        Verdict::Agrees => Ok(Output::bool(true).with_evidence(expect.measured(observed))),
        Verdict::Disagrees => {
            Err(ToolError::new(words.disagrees).with_evidence(expect.measured(observed)))
        }
        Verdict::Task => Ok(Output::task(command).with_evidence(expect.applied())),
        Verdict::Unconfirmed => Err(reply
            .error_with(|w| {
                window.write_unconfirmed(w, words.unconfirmed);
                w.text("the measurement reads ");
                w.int(observed);
                if let Some(u) = expect.unit {
                    w.text(" ");
                    w.text(u);
                }
                w.text(")");
            })
            .with_evidence(expect.applied())),
    }
}

/// What `device` expects of the command `value`.
fn expect_of<D: Setpoint>(device: &D, value: i64) -> Expect {
    Expect {
        value: device.expected(value),
        tolerance: device.tolerance(),
        unit: device.unit(),
    }
}

fn handler<C: HasSetpoint>(ctx: &mut C, args: &Args<'_>, reply: &mut Reply<'_>) -> ToolResult {
    let value = args.int(param(C::PARAMS))?;
    ctx.device().set(value).map_err(|e| command_failed(&e))?;
    let expect = expect_of(ctx.device(), value);
    let window = Window::new(ctx.device().settle_ms(), ctx.call_budget_ms(), TASKS);
    let read = settle(ctx, window, |c| c.device().read(), |m| expect.agrees(m));
    conclude(&C::WORDS, value, expect, read, window, reply)
}

#[cfg(feature = "tasks")]
fn poll<C: HasSetpoint>(ctx: &mut C, task: &TaskInfo) -> TaskPoll {
    let device = ctx.device();
    let expect = expect_of(device, task.data);
    let settle = u64::from(device.settle_ms());
    match device.read() {
        Err(e) => TaskPoll::Done(Err(super::device_error(&e))),
        Ok(m) if expect.agrees(m) => {
            TaskPoll::Done(Ok(Output::bool(true).with_evidence(expect.measured(m))))
        }
        Ok(m) if task.now_ms.saturating_sub(task.started_ms) >= settle => TaskPoll::Done(Err(
            ToolError::new(C::WORDS.disagrees).with_evidence(expect.measured(m)),
        )),
        Ok(_) => TaskPoll::Working(None),
    }
}

/// The tool `self.setpoint.set` over the board's device, with the board's parameter
/// ([`HasSetpoint::PARAMS`]); rename and describe it as the device it drives. A settle time
/// within the board's call budget is waited out in the call; with the feature `tasks` the tool is
/// long-running, so that a longer one is confirmed by a task.
pub const fn set<C: HasSetpoint>() -> Tool<C> {
    let tool = listing(Some(handler::<C>), C::PARAMS);
    #[cfg(feature = "tasks")]
    let tool = super::settle_task(tool, poll::<C>);
    tool
}
