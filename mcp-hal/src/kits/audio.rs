//! `self.audio_speaker.set_volume` over any [`AudioCodec`].
//!
//! The kit writes the volume, reads it back from the codec and compares within the codec's
//! declared resolution ([`VolumeCaps::tolerance`](crate::audio::VolumeCaps::tolerance)): the
//! read-back *agrees* when `|observed − commanded| ≤ tolerance` (exactly equal for a codec that
//! declares 0). The tolerance travels in the evidence.
//!
//! A codec that declares a settle time is given it: within the board's call budget the kit waits
//! inside the call ([`Wait`]), beyond it the call becomes a task (see the
//! [kits docs](super#settle-times-waiting-in-the-call-or-a-task)).
//!
//! | outcome | result |
//! |---|---|
//! | read-back agrees (at once, or within a settle time that fits the budget) | `true`, evidence `read_back` (commanded, observed, tolerance) |
//! | read-back still differs once a settle time within the budget (or none) has passed | failed, evidence `read_back` (commanded, observed, tolerance) |
//! | read-back differs, settle time beyond the budget, feature `tasks` | a task (evidence `applied`), finished by read-back within the settle time |
//! | read-back differs, settle time beyond the budget, no `tasks` | after waiting the budget: failed, evidence `applied`, the message says it was not confirmed in time |
//! | codec without read-back | `true`, evidence `applied` |
//! | above the codec's declared maximum | failed, nothing written |
//! | bus error | failed, no evidence |

use mcp_core::schema::Param;
use mcp_core::{
    Annotations, Args, Evidence, Handler, Level, Output, Reading, Reply, Tool, ToolError,
    ToolResult,
};
#[cfg(feature = "tasks")]
use mcp_core::{TaskInfo, TaskPoll};

use super::{NOT_APPLIED, TASKS, Verdict, Wait, Window, command_failed, declare, percent, settle};
use crate::Percent;
use crate::audio::{AudioCodec, VolumeCaps};

/// Access to the board's codec, and (through [`Wait`]) its delay for settle times.
pub trait HasCodec: Wait {
    /// The codec type.
    type Codec: AudioCodec;
    /// The codec.
    fn codec(&mut self) -> &mut Self::Codec;
}

/// The tool's name.
pub const NAME: &str = "self.audio_speaker.set_volume";

const PARAMS: &[Param] =
    &[Param::integer("volume", "Volume in percent, 0 (silent) to 100 (loudest)").range(0, 100)];

/// The tool as listed, for the blocking kit (`Some(handler)`) and the async one (`None`).
pub(crate) const fn listing<C>(handler: Option<Handler<C>>) -> Tool<C> {
    declare(
        NAME,
        "Set the volume of the audio speaker to an absolute level. For a change relative to the \
         current volume, read the current volume first, from a status tool if the device has one.",
        handler,
    )
    .params(PARAMS)
    .annotations(Annotations::new().idempotent(true).destructive(false))
}

fn evidence(caps: &VolumeCaps, commanded: Percent, observed: Percent) -> Evidence {
    Evidence::new(Level::ReadBack)
        .commanded(Reading::Int(commanded.into()))
        .observed(Reading::Int(observed.into()))
        .tolerance(u32::from(caps.tolerance))
}

const MISMATCH: &str = "The codec reports a different volume than commanded";

/// The commanded volume, refused (nothing written) above the codec's declared maximum.
pub(crate) fn accept(
    caps: &VolumeCaps,
    args: &Args<'_>,
    reply: &mut Reply<'_>,
) -> Result<Percent, ToolError> {
    let volume = percent(args, "volume")?;
    if volume > caps.max {
        return Err(reply
            .error_with(|w| {
                w.text("This codec's maximum volume is ");
                w.uint(caps.max.get().into());
                w.text("%; nothing was changed");
            })
            .with_evidence(NOT_APPLIED.commanded(Reading::Int(volume.into()))));
    }
    Ok(volume)
}

/// The answer once `volume` is written: `read` is `None` for a codec without read-back, else the
/// last read-back and its verdict (or the read error).
pub(crate) fn conclude<E>(
    caps: &VolumeCaps,
    volume: Percent,
    read: Option<Result<(Percent, Verdict), E>>,
    window: Window,
    reply: &mut Reply<'_>,
) -> ToolResult {
    let applied = Evidence::new(Level::Applied).commanded(Reading::Int(volume.into()));
    let (observed, verdict) = match read {
        None => return Ok(Output::bool(true).with_evidence(applied)),
        Some(Err(_)) => {
            return Err(
                ToolError::new("The volume was written but could not be read back")
                    .with_evidence(applied),
            );
        }
        Some(Ok(read)) => read,
    };
    match verdict {
        Verdict::Agrees => Ok(Output::bool(true).with_evidence(evidence(caps, volume, observed))),
        Verdict::Disagrees => {
            Err(ToolError::new(MISMATCH).with_evidence(evidence(caps, volume, observed)))
        }
        Verdict::Task => Ok(Output::task(volume.into()).with_evidence(applied)),
        Verdict::Unconfirmed => Err(reply
            .error_with(|w| {
                w.text("The volume was written but not confirmed within this device's ");
                w.uint(window.budget_ms.into());
                w.text(" ms call budget (the codec may take ");
                w.uint(window.settle_ms.into());
                w.text(" ms; it still reads ");
                w.uint(observed.get().into());
                w.text("%)");
            })
            .with_evidence(applied)),
    }
}

fn handler<C: HasCodec>(ctx: &mut C, args: &Args<'_>, reply: &mut Reply<'_>) -> ToolResult {
    let caps = ctx.codec().volume_caps();
    let volume = accept(&caps, args, reply)?;
    ctx.codec()
        .set_volume(volume)
        .map_err(|e| command_failed(&e))?;
    let window = Window::new(caps.settle_ms, ctx.call_budget_ms(), TASKS);
    let read = caps.read_back.then(|| {
        settle(
            ctx,
            window,
            |c| c.codec().volume(),
            |v| caps.agrees(volume, v),
        )
    });
    conclude(&caps, volume, read, window, reply)
}

#[cfg(feature = "tasks")]
fn poll<C: HasCodec>(ctx: &mut C, task: &TaskInfo) -> TaskPoll {
    let Some(commanded) = Percent::from_i64(task.data) else {
        return TaskPoll::Done(Err(ToolError::new("Tool bug: bad task data")));
    };
    let codec = ctx.codec();
    let caps = codec.volume_caps();
    let settle = u64::from(caps.settle_ms);
    match codec.volume() {
        Err(e) => TaskPoll::Done(Err(super::device_error(&e))),
        Ok(observed) if caps.agrees(commanded, observed) => TaskPoll::Done(Ok(
            Output::bool(true).with_evidence(evidence(&caps, commanded, observed))
        )),
        Ok(observed) if task.now_ms.saturating_sub(task.started_ms) >= settle => TaskPoll::Done(
            Err(ToolError::new(MISMATCH).with_evidence(evidence(&caps, commanded, observed))),
        ),
        Ok(_) => TaskPoll::Working(None),
    }
}

/// The tool `self.audio_speaker.set_volume` (`volume`: integer 0–100). A settle time within the
/// board's call budget is waited out in the call; with the feature `tasks` the tool is
/// long-running, so that a codec declaring a longer one is confirmed by a task.
pub const fn set_volume<C: HasCodec>() -> Tool<C> {
    let tool = listing(Some(handler::<C>));
    #[cfg(feature = "tasks")]
    let tool = super::settle_task(tool, poll::<C>);
    tool
}
