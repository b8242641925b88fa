//! The board: generic over its codec, its relay and its delay, so the same tool set serves the
//! QEMU bench parts here and real peripherals on a chip. Its tools are an associated const —
//! a `static` cannot be generic, and `&audio::set_volume()` outside a const would be a temporary.

use embedded_hal_async::delay::DelayNs;
use mcp_core::Tool;
use mcp_hal::asynch::audio::AudioCodec;
use mcp_hal::asynch::switch::Switch;
use mcp_hal::kits::asynch::{Wait, audio, mute, relay};

/// A codec, a relay and a delay.
#[derive(Debug)]
pub struct Board<C, R, D> {
    /// The codec.
    pub codec: C,
    /// The relay.
    pub relay: R,
    /// The delay the kits wait with (settle times).
    pub delay: D,
}

impl<C, R, D: DelayNs> Wait for Board<C, R, D> {
    fn delay(&mut self) -> impl DelayNs + '_ {
        &mut self.delay
    }
}

impl<C: AudioCodec, R, D: DelayNs> audio::HasCodec for Board<C, R, D> {
    type Codec = C;
    fn codec(&mut self) -> &mut C {
        &mut self.codec
    }
}

/// Nothing on this board can make switching unsafe: the default interlock (allow) stands. The
/// relay drives the garage door, and its failures say so.
impl<C, R: Switch, D: DelayNs> relay::HasRelay for Board<C, R, D> {
    type Relay = R;
    const WORDS: relay::Words = relay::Words {
        disagrees: "The door's auxiliary contact disagrees with the command: the door did not move",
        unreadable: "The door was driven but its auxiliary contact could not be read",
        unconfirmed: "The door was driven but its auxiliary contact did not confirm it",
        not_switched: "the door was not moved",
        on: "open",
        off: "closed",
    };
    fn relay(&mut self) -> &mut R {
        &mut self.relay
    }
}

/// The garage door's tool: the relay kit under the board's own name and words (its description,
/// and its failures: [`relay::HasRelay::WORDS`] above), asking a person
/// before the door opens (never before it closes).
pub const GARAGE_DOOR: &str = "self.garage_door.set";

impl<C: AudioCodec + 'static, R: Switch + 'static, D: DelayNs + 'static> Board<C, R, D> {
    /// Every tool of this board, in listing order.
    pub const TOOLS: &'static [&'static Tool<Self>] = &[
        &audio::set_volume(),
        &mute::set_mute(),
        &relay::set()
            .rename(GARAGE_DOOR)
            .describe(
                "Open (on: true) or close (on: false) the garage door. Opening asks a person \
                 first; the door's auxiliary contact confirms where it went.",
            )
            .confirm(relay::confirm_on("Open the garage door?")),
    ];
}
