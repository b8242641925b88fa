//! `self.audio_speaker.set_volume` over any async [`AudioCodec`]: the blocking
//! [`kits::audio`](crate::kits::audio) kit, awaited.
//!
//! Same name, parameters, annotations, tolerance and evidence as the blocking kit, down to the
//! byte; only the I/O is awaited. A codec that declares a settle time is read back until it
//! agrees, inside the call, for up to the settle time when it fits the board's call budget
//! ([`Wait`]); a longer one cannot become a task here: after waiting the budget the call fails
//! with `applied` evidence, saying it was not confirmed in time and what it read (see the
//! [async kits docs](super#settle-times)).

use mcp_core::{Args, Reply, Tool, ToolResult};

use super::{Wait, settle};
use crate::asynch::audio::AudioCodec;
use crate::kits::audio::{accept, conclude, listing};
use crate::kits::{Window, command_failed};

pub use crate::kits::audio::NAME;

/// Access to the board's async codec, and (through [`Wait`]) its delay for settle times.
pub trait HasCodec: Wait {
    /// The codec type: an async driver, a shared-bus device handle, or a
    /// [`BlockingAsync`](crate::asynch::BlockingAsync) around a blocking driver.
    type Codec: AudioCodec;
    /// The codec.
    fn codec(&mut self) -> &mut Self::Codec;
}

/// The async tool `self.audio_speaker.set_volume` (`volume`: integer 0–100); serve it with
/// [`call`].
pub const fn set_volume<C: HasCodec>() -> Tool<C> {
    listing(None)
}

/// The old name of [`set_volume`].
#[deprecated(note = "named as the blocking kit's constructor: `set_volume()`")]
pub const fn tool<C: HasCodec>() -> Tool<C> {
    set_volume()
}

/// Runs the tool: writes the volume, then reads it back until it agrees or the wait is over.
pub async fn call<C: HasCodec>(ctx: &mut C, args: &Args<'_>, reply: &mut Reply<'_>) -> ToolResult {
    let caps = ctx.codec().volume_caps();
    let volume = accept(&caps, args, reply)?;
    ctx.codec()
        .set_volume(volume)
        .await
        .map_err(|e| command_failed(&e))?;
    let window = Window::new(caps.settle_ms, ctx.call_budget_ms(), false);
    let read = if caps.read_back {
        let read_back = async |c: &mut C| c.codec().volume().await;
        Some(settle(ctx, window, read_back, |v| caps.agrees(volume, v)).await)
    } else {
        None
    };
    conclude(&caps, volume, read, window, reply)
}
