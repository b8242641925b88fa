//! `self.audio_speaker.set_mute` over any [`AudioCodec`].
//!
//! The trait can mute and unmute, but it has no way to read the mute state back, so the kit
//! claims what it can prove and no more: `applied` (the driver returned OK), with the commanded
//! state. A codec driver that can read its mute bits back (the
//! [`Es8311`](crate::drivers::Es8311) can, with `is_muted`) still gets `applied` here: the kit
//! only knows the trait.
//!
//! | outcome | result |
//! |---|---|
//! | the driver returned OK | `true`, evidence `applied` (commanded `mute`) |
//! | bus error | failed, no evidence |
//!
//! The access trait is the volume kit's [`HasCodec`].

use mcp_core::schema::Param;
use mcp_core::{
    Annotations, Args, Evidence, Handler, Level, Output, Reading, Reply, Tool, ToolError,
    ToolResult,
};

use super::audio::HasCodec;
use super::{command_failed, declare};
use crate::audio::AudioCodec;

/// The tool's name.
pub const NAME: &str = "self.audio_speaker.set_mute";

const PARAMS: &[Param] = &[Param::boolean(
    "mute",
    "true to silence the audio speaker, false to let it play again",
)];

/// The tool as listed, for the blocking kit (`Some(handler)`) and the async one (`None`).
pub(crate) const fn listing<C>(handler: Option<Handler<C>>) -> Tool<C> {
    declare(
        NAME,
        "Mute or unmute the audio speaker. The volume setting is kept.",
        handler,
    )
    .params(PARAMS)
    .annotations(Annotations::new().idempotent(true).destructive(false))
}

/// The commanded state.
pub(crate) fn accept(args: &Args<'_>) -> Result<bool, ToolError> {
    Ok(args.bool("mute")?)
}

/// The answer once the driver accepted the command: `applied`, never more.
pub(crate) const fn conclude(mute: bool) -> ToolResult {
    Ok(Output::bool(true)
        .with_evidence(Evidence::new(Level::Applied).commanded(Reading::Bool(mute))))
}

fn handler<C: HasCodec>(ctx: &mut C, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    let mute = accept(args)?;
    ctx.codec().set_mute(mute).map_err(|e| command_failed(&e))?;
    conclude(mute)
}

/// The tool `self.audio_speaker.set_mute` (`mute`: boolean).
pub const fn set_mute<C: HasCodec>() -> Tool<C> {
    listing(Some(handler::<C>))
}
