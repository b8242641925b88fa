//! Ready-made MCP tools that bind a device trait to the standard xiaozhi tool names and schemas.
//!
//! Each kit is a `const fn` returning a [`Tool`](mcp_core::Tool) over your board type `C`; your
//! board implements the small access trait the kit needs (`HasCodec`, `HasRelay`, …):
//!
//! ```
//! use mcp_hal::kits::{audio, system};
//! use mcp_hal::sim::{SimBoard, SimCodec, SimSystem};
//! use mcp_hal::sim::Faults;
//! use mcp_core::{Config, Server, Tool};
//!
//! struct Board { sim: SimBoard }
//! impl audio::HasCodec for Board {
//!     type Codec = SimCodec;
//!     fn codec(&mut self) -> &mut SimCodec { &mut self.sim.codec }
//! }
//! impl system::HasSystem for Board {
//!     type System = SimSystem;
//!     fn system(&mut self) -> &mut SimSystem { &mut self.sim.system }
//! }
//!
//! static SET_VOLUME: Tool<Board> = audio::set_volume();
//! static REBOOT: Tool<Board> = system::reboot();
//!
//! let mut server: Server<'_, Board, 8> = Server::new(Config::new("board", "1.0"));
//! server.register(&SET_VOLUME).unwrap().register(&REBOOT).unwrap();
//! # let _ = Board { sim: SimBoard::new(Faults::NONE) };
//! ```
//!
//! | kit | tool | evidence |
//! |---|---|---|
//! | [`audio::set_volume`] | `self.audio_speaker.set_volume` | `read_back` within the codec's tolerance; a disagreeing read-back fails the call |
//! | [`screen::set_brightness`] | `self.screen.set_brightness` | `read_back` (within the backlight's tolerance) where readable, else `applied` |
//! | [`status::get_device_status`] | `self.get_device_status` | — (a read) |
//! | [`system::reboot`] | `self.reboot` (user-only) | `scheduled` |
//! | [`relay::set`] | `self.relay.set` (interlock guard) | `measured` with feedback, else `applied` |
//! | [`motor::move_to`] | `self.motor.move_to` (long-running task) | `measured` (encoder, within the actuator's tolerance, in its unit) |
//!
//! **Agreement.** Wherever a kit compares what it reads or measures with what it commanded, the
//! two agree when `|observed − commanded| ≤ tolerance`, the tolerance being what the device
//! declares ([`VolumeCaps::tolerance`](crate::audio::VolumeCaps::tolerance),
//! [`Backlight::tolerance`](crate::backlight::Backlight::tolerance),
//! [`Actuator::tolerance`](crate::motor::Actuator::tolerance); 0 means exactly). The tolerance is
//! carried in the evidence (`"tolerance":2`, text `within ±2`), so a reading one step off is
//! reported as what it is: the nearest value the hardware has.
//!
//! Effects that take time (a codec or relay that declares a settle time, every motor move) are
//! MCP tasks: the call answers at once with a task id and the evidence it has so far; the final
//! evidence arrives through `tasks/get`/`tasks/result` or the status tool
//! ([`mcp_core::server::status_tool`]). The server therefore needs a task table (`TASKS > 0`, the
//! default).
//!
//! Without this crate's feature `tasks` (on by default) no kit is long-running: `motor` is
//! absent, and `audio::set_volume` and `relay::set` fail a disagreeing read-back at once, settle
//! time or not (a driver that needs time should wait it out itself and declare `settle_ms` 0).
//! They then register on a server without a task table (`TASKS = 0`), which links no task code.

pub mod audio;
#[cfg(feature = "tasks")]
pub mod motor;
pub mod relay;
pub mod screen;
pub mod status;
pub mod system;

use mcp_core::{Args, ToolError};

use crate::{Error, Percent};

/// The [`ToolError`] for a device error: its kind's message, no evidence (nothing is known to
/// have happened).
pub fn device_error<E: Error>(e: &E) -> ToolError {
    ToolError::new(e.kind().message())
}

/// Reads a validated 0..=100 integer argument as a [`Percent`].
pub(crate) fn percent(args: &Args<'_>, name: &str) -> Result<Percent, ToolError> {
    Percent::from_i64(args.int(name)?).ok_or(ToolError::new(
        "Tool bug: the schema let a value outside 0..=100 through",
    ))
}
