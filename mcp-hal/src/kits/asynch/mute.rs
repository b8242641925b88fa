//! `self.audio_speaker.set_mute` over any async [`AudioCodec`]:
//! the blocking [`kits::mute`](crate::kits::mute) kit, awaited. Evidence `applied`: the trait
//! cannot read the mute state back. The access trait is the async volume kit's [`HasCodec`].

use mcp_core::{Args, Reply, Tool, ToolResult};

use super::audio::HasCodec;
use crate::asynch::audio::AudioCodec;
use crate::kits::command_failed;
use crate::kits::mute::{accept, conclude, listing};

pub use crate::kits::mute::NAME;

/// The async tool `self.audio_speaker.set_mute` (`mute`: boolean); serve it with [`call`].
pub const fn set_mute<C: HasCodec>() -> Tool<C> {
    listing(None)
}

/// The old name of [`set_mute`].
#[deprecated(note = "named as the blocking kit's constructor: `set_mute()`")]
pub const fn tool<C: HasCodec>() -> Tool<C> {
    set_mute()
}

/// Runs the tool: mutes or unmutes the codec.
pub async fn call<C: HasCodec>(ctx: &mut C, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    let mute = accept(args)?;
    ctx.codec()
        .set_mute(mute)
        .await
        .map_err(|e| command_failed(&e))?;
    conclude(mute)
}
