//! Ready-made MCP tools that bind a device trait to the standard xiaozhi tool names and schemas.
//!
//! Each kit is a `const fn` returning a [`Tool`] over your board type `C`; your
//! board implements the small access trait the kit needs (`HasCodec`, `HasRelay`, …), and, for
//! kits that may wait for an effect inside a call, [`Wait`]: the board's delay and call budget.
//! Every kit's tool name is its module's `NAME`; a board renames and re-describes a kit's tool
//! as its own (see [below](self#renaming-and-re-describing)).
//!
//! **Async firmware** (embassy, esp-hal's async drivers) uses the twins in [`asynch`]: the same
//! tools over the [async device traits](crate::asynch), served by
//! [`Server::handle_async`](mcp_core::Server::handle_async) and dispatched with
//! [`dispatch_kits!`](crate::dispatch_kits). They share everything but the I/O with the kits
//! here (the listings, evidence, verdicts and messages are one code), so their answers are
//! byte-identical for the same device state; they cannot be long-running (see
//! [`asynch`](asynch#settle-times)).
//!
//! ```
//! # #[cfg(feature = "sim")] {
//! use mcp_hal::kits::{audio, system, DelayNs, Wait};
//! use mcp_hal::sim::{SimBoard, SimCodec, SimSystem};
//! use mcp_hal::sim::Faults;
//! use mcp_core::{Caps, Config, Server, Tool};
//!
//! struct Board { sim: SimBoard }
//! impl Wait for Board {
//!     // The simulated board's delay advances its clock; firmware returns its HAL's delay.
//!     fn delay(&mut self) -> impl DelayNs + '_ { &mut self.sim }
//! }
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
//! let mut server: Server<'_, Board, Caps<8>> = Server::new(Config::new("board", "1.0"));
//! server.register(&SET_VOLUME).unwrap().register(&REBOOT).unwrap();
//! # let _ = Board { sim: SimBoard::new(Faults::NONE) };
//! # }
//! ```
//!
//! | kit | tool | evidence | async twin |
//! |---|---|---|---|
//! | [`audio::set_volume`] | `self.audio_speaker.set_volume` | `read_back` within the codec's tolerance, waited for up to the codec's settle time; a disagreeing read-back fails the call | [`asynch::audio`] |
//! | [`mute::set_mute`] | `self.audio_speaker.set_mute` | `applied` (the trait cannot read the mute state back) | [`asynch::mute`] |
//! | [`screen::set_brightness`] | `self.screen.set_brightness` | `read_back` (within the backlight's tolerance) where readable, else `applied` | [`asynch::screen`] |
//! | [`status::get_device_status`] | `self.get_device_status` | — (a read) | [`asynch::status`] |
//! | [`system::reboot`] | `self.reboot` (user-only; [`system::confirmed`]: open to the model, a person confirms first) | `scheduled` | [`asynch::system`] |
//! | [`relay::set`] | `self.relay.set` (interlock guard) | `measured` with feedback (waited for up to the relay's settle time; a disagreement fails the call), else `applied` | [`asynch::relay`] |
//! | [`setpoint::set`] | `self.setpoint.set`, renamed by the board (a fan, a valve; the parameter is the board's) | `measured`: the device's own sensor, within its tolerance, waited for up to the settle time (a disagreement fails the call) | [`asynch::setpoint`] |
//! | [`motor::move_to`] | `self.motor.move_to` (long-running task) | `measured` (encoder, within the actuator's tolerance, in its unit) | none: a task needs the engine's blocking poll hooks |
//! | [`firmware::upgrade`] (features `ota` and `tasks`) | `self.upgrade_firmware` (user-only or confirmed; long-running task), `self.firmware.write`, `self.firmware.status` | `scheduled` → `read_back` (the slot's SHA-256) → `measured` after the restart (the new version answers); a rollback fails the status | none: a task |
//!
//! and three resources (see [below](self#resources-sensors-and-buttons-that-speak-first)).
//!
//! # Renaming and re-describing
//! A kit's tool is a [`Tool`] like any other: [`Tool::rename`] and [`Tool::describe`] give it
//! the board's own name and words, [`Tool::params`] its own parameter descriptions (with the
//! kit's parameter names and ranges), and a kit that asks a person first takes the board's own
//! question ([`relay::confirm_on`]). What it does and the evidence it gives stay the kit's:
//!
//! ```
//! # #[cfg(all(feature = "sim", feature = "tasks"))] {
//! use mcp_core::{Param, Tool};
//! use mcp_hal::kits::relay;
//! # type Board = mcp_hal::sim::DemoBoard;
//!
//! static GARAGE_DOOR: Tool<Board> = relay::set()
//!     .rename("self.garage_door.set")
//!     .describe("Open or close the garage door.")
//!     .params(&[Param::boolean("on", "true to open the door, false to close it")])
//!     .confirm(relay::confirm_on("Open the garage door?"));
//! # assert_eq!(GARAGE_DOOR.name(), "self.garage_door.set");
//! # }
//! ```
//!
//! The kits' own descriptions name no other tool: a board registers the kits it has, one by one,
//! and a description sending the model to a tool the board lacks would fail the call it leads
//! to. The hint that the model should read the state before a relative change lives in the
//! status kit's description, which the model sees only where the board has it. (The engine
//! checks a new name at registration like any other; an async kit renamed is dispatched by its
//! new name, see [`dispatch_kits!`](crate::dispatch_kits).)
//!
//! # Resources: sensors and buttons that speak first
//! Three kits bind a reading to a live resource
//! ([`LiveResource`](mcp_core::registry::LiveResource), registered with
//! `Server::register_resource`; the resources need this crate's feature `resources`, which
//! turns on mcp-core's). Each module has the resource's `URI`, a `const fn resource<C>()`
//! over a small access trait, and the state the main loop polls to decide when a change is
//! published ([`publish`](crate::publish): threshold, hysteresis, minimum interval):
//!
//! | kit | resource | contents | board implements | main loop polls |
//! |---|---|---|---|---|
//! | [`temperature`] | `device://sensors/temperature` | `{"celsius":21.5}` | [`temperature::HasThermometer`] ([`Sensor`](crate::sensor::Sensor) in °C) | a [`Watch`] ([`temperature::watch`]) |
//! | [`battery`] | `device://sensors/battery` | `{"percent":87}` | [`battery::HasBattery`] ([`Sensor`](crate::sensor::Sensor) in %) | a [`Watch`] ([`battery::watch`]) |
//! | [`button`] | `device://buttons/main` | `{"presses":3}` | [`button::HasButton`] (its [`Presses`](button::Presses)) | the [`Presses`](button::Presses), with the [`Button`](crate::sensor::Button) |
//!
//! Readings are milli-units printed as decimals without floats ([`Milli`](crate::sensor::Milli)):
//! the contents are the same bytes with or without mcp-core's feature `float`. Publishing is one
//! line per sensor in the main loop:
//!
//! ```
//! # #[cfg(all(feature = "resources", feature = "sim"))] {
//! use mcp_core::{Caps, Config, Server};
//! use mcp_core::registry::LiveResource;
//! use mcp_hal::kits::{temperature, Watch};
//! use mcp_hal::sim::{Faults, SimThermometer};
//!
//! struct Board { thermometer: SimThermometer }
//! impl temperature::HasThermometer for Board {
//!     type Thermometer = SimThermometer;
//!     fn thermometer(&mut self) -> &mut SimThermometer { &mut self.thermometer }
//! }
//! static TEMPERATURE: LiveResource<Board> = temperature::resource();
//!
//! let mut board = Board { thermometer: SimThermometer::new(Faults::NONE) };
//! let mut server: Server<'_, Board, Caps<8>> = Server::new(Config::new("board", "1.0"));
//! server.register_resource(&TEMPERATURE).unwrap();
//! server.subscribe(temperature::URI); // or a client's resources/subscribe
//! let mut watch: Watch = temperature::watch();
//! let mut out = [0u8; 512];
//! for now in (0..5_000).step_by(10) {
//!     if now == 2_000 { board.thermometer.set_millicelsius(30_000); }
//!     if let Some(uri) = watch.poll(now, &mut board.thermometer) { server.publish(uri); }
//!     let n = server.poll(now, &mut board, &mut out);
//!     if n > 0 {
//!         assert_eq!(now, 2_000);
//!         assert!(core::str::from_utf8(&out[..n]).unwrap().contains("notifications/resources/updated"));
//!     }
//! }
//! # }
//! ```
//!
//! **Agreement.** Wherever a kit compares what it reads or measures with what it commanded, the
//! two agree when `|observed − commanded| ≤ tolerance`, the tolerance being what the device
//! declares ([`VolumeCaps::tolerance`](crate::audio::VolumeCaps::tolerance),
//! [`Backlight::tolerance`](crate::backlight::Backlight::tolerance),
//! [`Actuator::tolerance`](crate::motor::Actuator::tolerance); 0 means exactly). The tolerance is
//! carried in the evidence (`"tolerance":2`, text `within ±2`), so a reading one step off is
//! reported as what it is: the nearest value the hardware has.
//!
//! # Settle times: waiting in the call, or a task
//! A codec or relay may declare a settle time: how long its read-back or feedback may lag the
//! command ([`VolumeCaps::settle_ms`](crate::audio::VolumeCaps::settle_ms),
//! [`Switch::settle_ms`](crate::switch::Switch::settle_ms)). One rule decides what the call
//! answers, with the board's call budget ([`Wait::call_budget_ms`], default
//! [`DEFAULT_CALL_BUDGET_MS`] = 200 ms):
//!
//! | declared settle time | with feature `tasks` (default) | without it |
//! |---|---|---|
//! | 0 | read at once: agreement or a failure with both values | the same |
//! | ≤ the budget | **waited inside the call** on the board's delay, reading every [`SETTLE_POLL_MS`] ms: agreement as soon as it shows (`read_back`/`measured`), else, once the settle time has passed, a failure with the commanded and observed values | the same |
//! | > the budget | read once; if it does not agree yet, an MCP task (evidence `applied`) that the engine polls until agreement or the settle time | waited up to the budget; if it still does not agree, a failure with `applied` evidence saying it was not confirmed in time (and what it read) |
//!
//! So a 20 ms relay answers `measured` (or fails naming its feedback) in the call that switched
//! it, and only a 2 s action becomes a task; without `tasks` a call never claims more than it saw
//! within its budget. Tasks need a task table on the server (`TASKS > 0`, the default): the
//! final evidence arrives through `tasks/get`/`tasks/result` or the status tool
//! ([`mcp_core::server::status_tool`]). Every motor move is a task.
//!
//! Without this crate's feature `tasks` no kit is long-running: `motor` is absent, and the kits
//! register on a server without a task table (`TASKS = 0`), which links no task code.
//!
//! The [async kits](asynch) always answer by the right-hand column: an async tool cannot be
//! long-running (the engine's task hooks are blocking `fn`s), whatever the features.
//!
//! # The delay
//! [`Wait`] is the one way a kit waits: it asks the board for an `embedded-hal` 1.0
//! [`DelayNs`] (re-exported here) each time it pauses. On firmware that is the HAL's blocking
//! delay (esp-hal's `Delay`, a busy wait on a timer); on a simulated board it is the board
//! itself, whose delay advances the simulated clock
//! ([`SimBoard`](crate::sim::SimBoard) implements [`DelayNs`]), so that tests are exact. A wait
//! blocks the caller for at most the budget; lower [`Wait::call_budget_ms`] where that matters
//! more than an answer in one call. The async kits' twin, [`asynch::Wait`], asks for an
//! `embedded-hal-async` delay instead (`embassy_time::Delay`) and awaits it, so the executor runs
//! other tasks while a call waits.

pub mod asynch;
pub mod audio;
pub mod battery;
pub mod button;
#[cfg(all(feature = "ota", feature = "tasks"))]
pub mod firmware;
#[cfg(feature = "tasks")]
pub mod motor;
pub mod mute;
pub mod relay;
pub mod screen;
pub mod setpoint;
pub mod status;
pub mod system;
pub mod temperature;
mod watch;

pub use watch::{Sample, Watch};

use mcp_core::{Args, Evidence, Handler, Level, Tool, ToolError};
#[cfg(feature = "tasks")]
use mcp_core::{TaskHooks, TaskInfo, TaskPoll, TaskSupport};

pub use embedded_hal::delay::DelayNs;

use crate::{Error, Percent};

/// The call budget of a board that does not choose one: 200 ms.
pub const DEFAULT_CALL_BUDGET_MS: u32 = 200;

/// How often a kit reads the device while it waits for an effect to settle, in milliseconds.
pub const SETTLE_POLL_MS: u32 = 5;

/// Waiting inside a call: the board's delay and how long a call may wait (see the
/// [module docs](self#settle-times-waiting-in-the-call-or-a-task)).
///
/// Required by the kits whose devices declare settle times ([`audio::HasCodec`],
/// [`relay::HasRelay`]).
pub trait Wait {
    /// A delay on the board's clock, for one pause. Firmware returns its HAL's blocking delay
    /// (`&mut self.delay`); a simulated board returns something that advances its clock.
    fn delay(&mut self) -> impl DelayNs + '_;

    /// The longest one call waits for an effect to settle, in milliseconds. Actions that declare
    /// a longer settle time become tasks (feature `tasks`) or fail unconfirmed. The default is
    /// [`DEFAULT_CALL_BUDGET_MS`].
    fn call_budget_ms(&self) -> u32 {
        DEFAULT_CALL_BUDGET_MS
    }
}

/// `true` when the blocking kits may hand a long settle time to a task (feature `tasks`).
pub(crate) const TASKS: bool = cfg!(feature = "tasks");

/// How a call waits for a device that declares a settle time, and what it concludes from the last
/// reading: the table of the [module docs](self#settle-times-waiting-in-the-call-or-a-task), as
/// data. Shared by the blocking kits and the [async ones](asynch), which differ only in how they
/// read and pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    /// The device's declared settle time.
    pub(crate) settle_ms: u32,
    /// The board's call budget.
    pub(crate) budget_ms: u32,
    /// A task may take over a settle time beyond the budget: the blocking kits with feature
    /// `tasks`. Never for the async kits (the engine's task hooks are blocking).
    pub(crate) tasks: bool,
}

/// What a kit concludes from its last reading (see [`Window::verdict`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The reading agrees with the command: confirmed.
    Agrees,
    /// The whole settle time was waited and the reading still disagrees: a failed call.
    Disagrees,
    /// The settle time exceeds the budget and a task takes over.
    Task,
    /// The settle time exceeds the budget, no task can take over, and the budget has been
    /// waited: not confirmed in time.
    Unconfirmed,
}

impl Window {
    /// The window of a device declaring `settle_ms`, on a board with `budget_ms`.
    pub(crate) const fn new(settle_ms: u32, budget_ms: u32, tasks: bool) -> Self {
        Window {
            settle_ms,
            budget_ms,
            tasks,
        }
    }

    /// How long the call waits for agreement: all of the settle time when it fits the budget;
    /// nothing when a task takes over; else the whole budget.
    pub(crate) const fn limit(&self) -> u32 {
        if self.settle_ms <= self.budget_ms {
            self.settle_ms
        } else if self.tasks {
            0
        } else {
            self.budget_ms
        }
    }

    /// The verdict on the last reading, once the wait is over.
    pub(crate) const fn verdict(&self, agrees: bool) -> Verdict {
        if agrees {
            Verdict::Agrees
        } else if self.settle_ms <= self.budget_ms {
            Verdict::Disagrees
        } else if self.tasks {
            Verdict::Task
        } else {
            Verdict::Unconfirmed
        }
    }

    /// The beginning of the failure of a call whose effect did not show within the budget:
    /// `{lead} within this device's 200 ms call budget (it may take 2000 ms; ` — the kit then
    /// says what the device still reads, and closes the parenthesis.
    pub(crate) fn write_unconfirmed(&self, w: &mut mcp_core::wire::Writer<'_>, lead: &str) {
        w.text(lead);
        w.text(" within this device's ");
        w.uint(self.budget_ms.into());
        w.text(" ms call budget (it may take ");
        w.uint(self.settle_ms.into());
        w.text(" ms; ");
    }

    /// The pacing of the wait, from the first reading on.
    pub(crate) const fn pacer(&self) -> Pacer {
        Pacer {
            limit: self.limit(),
            waited: 0,
        }
    }
}

/// Paces the readings of a wait: the first is immediate, then one every [`SETTLE_POLL_MS`] until
/// agreement or the window's limit.
#[derive(Debug)]
pub(crate) struct Pacer {
    limit: u32,
    waited: u32,
}

impl Pacer {
    /// After a reading that `agrees` or not: the pause before the next reading, or `None` when
    /// the wait is over.
    pub(crate) fn pause(&mut self, agrees: bool) -> Option<u32> {
        if agrees || self.waited >= self.limit {
            return None;
        }
        let step = SETTLE_POLL_MS.min(self.limit - self.waited);
        self.waited += step;
        Some(step)
    }
}

/// Reads with `read` until `agrees` holds or the window's limit has been waited, pausing on the
/// board's delay (see [`Pacer`]). Returns the last reading and the verdict on it; a read error
/// ends the wait.
#[inline]
pub(crate) fn settle<C: Wait + ?Sized, T: Copy, E>(
    ctx: &mut C,
    window: Window,
    mut read: impl FnMut(&mut C) -> Result<T, E>,
    agrees: impl Fn(T) -> bool,
) -> Result<(T, Verdict), E> {
    let mut pacer = window.pacer();
    loop {
        let value = read(ctx)?;
        let ok = agrees(value);
        match pacer.pause(ok) {
            Some(ms) => ctx.delay().delay_ms(ms),
            None => return Ok((value, window.verdict(ok))),
        }
    }
}

/// A kit's tool before its parameters and annotations: blocking with `Some(handler)`, async
/// ([`Tool::new_async`]) with `None`. Each kit builds its listing once on this, for both forms.
pub(crate) const fn declare<C>(
    name: &'static str,
    description: &'static str,
    handler: Option<Handler<C>>,
) -> Tool<C> {
    match handler {
        Some(handler) => Tool::new(name, description, handler),
        None => Tool::new_async(name, description),
    }
}

/// Makes a blocking kit long-running, so that a settle time beyond the call budget is confirmed
/// by a task that `poll` drives (nothing to stop: the write is done).
#[cfg(feature = "tasks")]
pub(crate) const fn settle_task<C>(
    tool: Tool<C>,
    poll: fn(&mut C, &TaskInfo) -> TaskPoll,
) -> Tool<C> {
    tool.long_running(
        TaskSupport::Optional,
        TaskHooks {
            poll,
            stop: None,
            timeout_ms: 10_000,
        },
    )
}

/// The [`ToolError`] for a device error while reading (a read-back, a task's progress): its
/// [`message`](Error::message) (which names the chip when the driver does), no evidence of its
/// own (a task's failure then says what was started: the engine reports it with the task's start
/// evidence). For a command the device failed, [`command_failed`].
pub fn device_error<E: Error>(e: &E) -> ToolError {
    ToolError::new(e.message())
}

/// Evidence of a command that did not take effect (refused before the device was driven): the
/// engine adds the call's commanded value (`… — not applied (commanded 40)`).
pub const NOT_APPLIED: Evidence = Evidence::new(Level::NotApplied);

/// The [`ToolError`] for a command the device failed: its [`message`](Error::message), and how
/// much of the command the device knows to have taken effect, from the error's kind —
/// [`Level::NotApplied`] when the device refused it (an I2C NACK, a full queue, another chip, a
/// command it cannot do), [`Level::Unknown`] when it lost track (a bus error, a timeout, any
/// other). The engine adds the call's commanded value, so the failure reads `The device did not
/// acknowledge (I2C NACK); nothing was changed — not applied (commanded 40)`.
pub fn command_failed<E: Error>(e: &E) -> ToolError {
    let level = match e.kind() {
        crate::ErrorKind::NoAcknowledge
        | crate::ErrorKind::QueueFull
        | crate::ErrorKind::WrongDevice
        | crate::ErrorKind::Unsupported => Level::NotApplied,
        _ => Level::Unknown,
    };
    ToolError::new(e.message()).with_evidence(Evidence::new(level))
}

/// Reads a 0..=100 integer argument as a [`Percent`], for a kit of your own: declare the
/// parameter with `.range(0, 100)` and the validator has already refused anything else, so the
/// value always fits. Errors are the argument's [`AccessError`](mcp_core::schema::AccessError)
/// (absent, wrong type) or, when the declared range is wider than 0..=100, a tool-bug message;
/// either way a failed call, never a truncated value.
///
/// ```
/// use mcp_core::{Args, Output, Param, Reply, Tool, ToolResult};
/// use mcp_hal::Percent;
///
/// struct Board { fan: Percent }
/// fn set_fan(board: &mut Board, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
///     board.fan = mcp_hal::kits::percent(args, "speed")?;
///     Ok(Output::bool(true))
/// }
/// static SET_FAN: Tool<Board> = Tool::new("self.fan.set_speed", "Set the fan speed.", set_fan)
///     .params(&[Param::integer("speed", "Fan speed, percent").range(0, 100)]);
/// ```
pub fn percent(args: &Args<'_>, name: &str) -> Result<Percent, ToolError> {
    Percent::from_i64(args.int(name)?).ok_or(ToolError::new(
        "Tool bug: the schema let a value outside 0..=100 through",
    ))
}
