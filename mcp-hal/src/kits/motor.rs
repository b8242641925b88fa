//! `self.motor.move_to`: a long-running move as an MCP task.
//!
//! The call starts the move and answers at once (a plain call: the task id and `scheduled`
//! evidence; a task-augmented call: a `CreateTaskResult`). The engine then polls the actuator:
//! progress while it moves, and at the end `measured` evidence from the encoder — success when
//! the measured position is within tolerance of the target, failure (with the safe-stop issued)
//! when it stalls short. Cancel and timeout also issue the safe-stop.

use mcp_core::schema::Param;
use mcp_core::{
    Annotations, Args, Evidence, Level, Output, Progress, Reading, Reply, TaskHooks, TaskInfo,
    TaskPoll, TaskSupport, Tool, ToolError, ToolResult,
};

use super::{NOT_APPLIED, command_failed, device_error};
use crate::motor::Actuator;

/// Access to the board's actuator.
pub trait HasMotor {
    /// The actuator type.
    type Motor: Actuator;
    /// The actuator.
    fn motor(&mut self) -> &mut Self::Motor;
}

/// The tool's name.
pub const NAME: &str = "self.motor.move_to";

/// The default move timeout (ms).
pub const DEFAULT_TIMEOUT_MS: u32 = 60_000;

struct Params<const MIN: i64, const MAX: i64>;

impl<const MIN: i64, const MAX: i64> Params<MIN, MAX> {
    const PARAMS: &'static [Param] =
        &[Param::integer("position", "Target position, in the actuator's units").range(MIN, MAX)];
}

/// Packs the start and target positions into the task's data word.
fn pack(start: i32, target: i32) -> i64 {
    (i64::from(start) << 32) | i64::from(target as u32)
}

fn unpack(data: i64) -> (i32, i32) {
    ((data >> 32) as i32, data as u32 as i32)
}

/// Evidence of a move that was not started, toward `target` (in the actuator's unit).
fn not_started<M: Actuator>(motor: &M, target: i64) -> Evidence {
    let e = NOT_APPLIED.commanded(Reading::Int(target));
    match motor.unit() {
        Some(unit) => e.unit(unit),
        None => e,
    }
}

/// `measured` evidence from the encoder, with the actuator's arrival tolerance and unit.
fn measured<M: Actuator>(motor: &M, target: i32, position: i32) -> Evidence {
    let e = Evidence::new(Level::Measured)
        .commanded(Reading::Int(target.into()))
        .observed(Reading::Int(position.into()))
        .tolerance(motor.tolerance());
    match motor.unit() {
        Some(unit) => e.unit(unit),
        None => e,
    }
}

fn arrived(position: i32, target: i32, tolerance: u32) -> bool {
    (i64::from(position) - i64::from(target)).unsigned_abs() <= u64::from(tolerance)
}

fn handler<C: HasMotor>(ctx: &mut C, args: &Args<'_>, reply: &mut Reply<'_>) -> ToolResult {
    let target = args.int("position")?;
    let motor = ctx.motor();
    let (min, max) = motor.range();
    let target = match i32::try_from(target) {
        Ok(t) if (min..=max).contains(&t) => t,
        _ => {
            let refused = reply.error_with(|w| {
                w.text("This actuator reaches ");
                w.int(min.into());
                w.text(" to ");
                w.int(max.into());
                w.text("; nothing was started");
            });
            return Err(refused.with_evidence(not_started(motor, target)));
        }
    };
    // (Nothing is started when the state cannot be read.)
    let now = motor
        .state()
        .map_err(|e| device_error(&e).with_evidence(not_started(motor, target.into())))?;
    if !now.moving && arrived(now.position, target, motor.tolerance()) {
        return Ok(Output::int(now.position.into()).with_evidence(measured(
            motor,
            target,
            now.position,
        )));
    }
    motor.start_move(target).map_err(|e| {
        let failed = command_failed(&e);
        match failed.evidence() {
            Some(ev) if ev.level == Level::NotApplied => {
                failed.with_evidence(not_started(motor, target.into()))
            }
            _ => failed,
        }
    })?;
    // What a model hears at the start: `scheduled, not done yet (commanded 600 steps)`.
    let started = Evidence::new(Level::Scheduled).commanded(Reading::Int(target.into()));
    let started = match motor.unit() {
        Some(unit) => started.unit(unit),
        None => started,
    };
    Ok(Output::task(pack(now.position, target)).with_evidence(started))
}

fn poll<C: HasMotor>(ctx: &mut C, task: &TaskInfo) -> TaskPoll {
    let (start, target) = unpack(task.data);
    let motor = ctx.motor();
    let tolerance = motor.tolerance();
    let state = match motor.state() {
        Ok(s) => s,
        Err(e) => return TaskPoll::Done(Err(device_error(&e))),
    };
    if state.moving {
        let total = (i64::from(target) - i64::from(start)).unsigned_abs() as f64;
        let done = (i64::from(state.position) - i64::from(start)).unsigned_abs() as f64;
        return TaskPoll::Working(Some(Progress {
            progress: done.min(total),
            total: Some(total),
        }));
    }
    let evidence = measured(motor, target, state.position);
    if !state.stalled && arrived(state.position, target, tolerance) {
        TaskPoll::Done(Ok(
            Output::int(state.position.into()).with_evidence(evidence)
        ))
    } else {
        TaskPoll::Done(Err(ToolError::new(
            "The actuator stopped before reaching its target",
        )
        .with_evidence(evidence)))
    }
}

fn stop<C: HasMotor>(ctx: &mut C, _: &TaskInfo) -> Result<(), ToolError> {
    ctx.motor().stop().map_err(|e| device_error(&e))
}

/// The task hooks of [`move_to`], with a chosen timeout: override the default with
/// `move_to::<C, 0, 1000>().long_running(TaskSupport::Optional, hooks::<C>(30_000))`.
pub const fn hooks<C: HasMotor>(timeout_ms: u32) -> TaskHooks<C> {
    TaskHooks {
        poll: poll::<C>,
        stop: Some(stop::<C>),
        timeout_ms,
    }
}

/// The long-running tool `self.motor.move_to` (`position`: integer `MIN..=MAX`).
pub const fn move_to<C: HasMotor, const MIN: i64, const MAX: i64>() -> Tool<C> {
    Tool::new(
        NAME,
        "Move the actuator to a position. Returns at once with a task; the task reports progress and the final position measured by the encoder.",
        handler::<C>,
    )
    .params(Params::<MIN, MAX>::PARAMS)
    .annotations(Annotations::new().idempotent(true).destructive(false))
    .long_running(TaskSupport::Optional, hooks::<C>(DEFAULT_TIMEOUT_MS))
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn positions_pack_and_unpack() {
        for (a, b) in [(0, 0), (-5, 1000), (i32::MIN, i32::MAX), (i32::MAX, -1)] {
            assert_eq!(unpack(pack(a, b)), (a, b));
        }
    }
}
