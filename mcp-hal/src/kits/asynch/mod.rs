//! The kits for async firmware: the same tools over the [async twins](crate::asynch), for
//! [`Server::handle_async`](mcp_core::Server::handle_async).
//!
//! Every async kit is the blocking kit of the same name with its I/O awaited: same tool name,
//! parameters, annotations, tolerance, evidence, messages — the answers are byte-identical for
//! the same device state (the listing, the evidence and the verdicts are the blocking kits'
//! code, shared). Each kit is a module with three items:
//!
//! | item | what |
//! |---|---|
//! | `NAME` | the tool's name (the blocking kit's) |
//! | `const fn set_volume<C>() -> Tool<C>` (the blocking kit's constructor's name) | the async tool ([`Tool::new_async`](mcp_core::Tool::new_async)), to register |
//! | `async fn call<C>(ctx: &mut C, args: &Args, reply: &mut Reply) -> ToolResult` | runs it |
//!
//! and a small access trait for the board, the async twin of the blocking kit's, with the same
//! name and items (`HasCodec` with an async [`AudioCodec`](crate::asynch::audio::AudioCodec),
//! …). A blocking driver serves an async kit wrapped in
//! [`BlockingAsync`](crate::asynch::BlockingAsync). Going from blocking to async, a board
//! changes its imports (`kits::audio` → `kits::asynch::audio`) and its driver types, not its kit
//! calls.
//!
//! | kit | tool | board implements | evidence |
//! |---|---|---|---|
//! | [`audio::set_volume`] | `self.audio_speaker.set_volume` | [`audio::HasCodec`] + [`Wait`] | `read_back` within the codec's tolerance, waited for up to its settle time within the budget |
//! | [`mute::set_mute`] | `self.audio_speaker.set_mute` | [`audio::HasCodec`] + [`Wait`] | `applied` (the trait cannot read mute back) |
//! | [`screen::set_brightness`] | `self.screen.set_brightness` | [`screen::HasBacklight`] | `read_back` where readable, else `applied` |
//! | [`relay::set`] | `self.relay.set` (interlock guard) | [`relay::HasRelay`] + [`Wait`] | `measured` with feedback (waited for up to the settle time within the budget), else `applied` |
//! | [`setpoint::set`] | `self.setpoint.set`, renamed by the board (its parameter the board's) | [`setpoint::HasSetpoint`] + [`Wait`] | `measured` by the device's sensor within its tolerance, waited for up to the settle time within the budget |
//! | [`status::get_device_status`] | `self.get_device_status` | [`status::StatusReport`] | — (a read) |
//! | [`system::reboot`] | `self.reboot` (user-only; [`system::confirmed`]: open to the model, a person confirms first) | [`system::HasSystem`] | `scheduled` |
//!
//! Every kit's tool can be renamed and re-described as the blocking ones (see
//! [renaming](crate::kits#renaming-and-re-describing)); list a renamed one in
//! [`dispatch_kits!`](crate::dispatch_kits) with its name (`relay as "self.garage_door.set"`).
//! A tool that asks a person first ([`system::confirmed`], `relay::set().confirm(…)`) is held
//! when the client cannot ask (xiaozhi): the call a person confirms on the device then runs
//! through [`Server::poll_async`](mcp_core::Server::poll_async), with the same handler.
//!
//! **Resources.** [`temperature`], [`battery`] and [`button`] are the blocking resource kits
//! for async firmware. A resource reader cannot await, so `resources/read` answers the last
//! sample instead of reading the sensor then: the main loop reads the sensors with the kits'
//! `poll` ([`temperature::poll`], [`battery::poll`]), which keeps each sample in the board's
//! [`Watch`](crate::kits::Watch) (the button's [`Presses`](crate::kits::button::Presses), polled
//! with [`Presses::poll_async`](crate::kits::button::Presses::poll_async), likewise).
//!
//! **No motor kit.** `self.motor.move_to` is a long-running task, and the engine drives tasks
//! through blocking poll hooks ([`TaskHooks`](mcp_core::TaskHooks)); an async tool cannot be
//! long-running. Serve the motor with the blocking [`kits::motor`](crate::kits::motor) next to
//! the async kits (blocking tools run as usual through `handle_async`), over a driver whose
//! `state` and `stop` are cheap enough to call blocking.
//!
//! # Settle times
//! The rule of the [blocking kits](crate::kits#settle-times-waiting-in-the-call-or-a-task)
//! without tasks: a settle time within the board's call budget ([`Wait::call_budget_ms`], default
//! [`DEFAULT_CALL_BUDGET_MS`]) is waited inside the call on the board's async delay, reading every
//! [`SETTLE_POLL_MS`](crate::kits::SETTLE_POLL_MS) ms, and the call answers as soon as the device
//! agrees (or fails with commanded and observed once the settle time has passed). A longer
//! settle time cannot become a task here: the call waits the whole budget, then fails with
//! `applied` evidence and a message saying it was not confirmed in time and what it read —
//! exactly what the blocking kits answer without the feature `tasks`. The wait is an `.await`
//! on the board's delay, so the executor runs other tasks meanwhile.
//!
//! # Registering and dispatching
//! Register the kits' tools like any others (here as a board's associated const, which works for
//! a board generic over its drivers too), and hand each call to its kit with
//! [`dispatch_kits!`](crate::dispatch_kits), which writes the `match` on the tool name:
//!
//! ```
//! use embedded_hal_async::i2c::I2c;
//! use embedded_hal::digital::OutputPin;
//! use mcp_core::{Call, Caps, Config, Input, Principal, Server, Tool};
//! use mcp_hal::drivers::{asynch::Es8311, GpioRelay};
//! use mcp_hal::kits::asynch::{audio, mute, relay, DelayNs, Wait};
//! use mcp_hal::kits::relay::Refusal;
//! # use embedded_hal_mock::eh1::{delay::NoopDelay, digital, i2c};
//!
//! /// The firmware's board: an ES8311 on the async I2C bus (its transfers bounded on the HAL's
//! /// delay), a relay on a GPIO, the HAL's delay.
//! struct Board<B, P, D> { codec: Es8311<B, D>, relay: GpioRelay<P>, delay: D }
//!
//! impl<B, P, D: DelayNs> Wait for Board<B, P, D> {
//!     fn delay(&mut self) -> impl DelayNs + '_ { &mut self.delay }
//! }
//! impl<B: I2c, P, D: DelayNs> audio::HasCodec for Board<B, P, D> {
//!     type Codec = Es8311<B, D>;
//!     fn codec(&mut self) -> &mut Es8311<B, D> { &mut self.codec }
//! }
//! impl<B, P: OutputPin, D: DelayNs> relay::HasRelay for Board<B, P, D> {
//!     type Relay = GpioRelay<P>;
//!     fn relay(&mut self) -> &mut GpioRelay<P> { &mut self.relay }
//!     fn interlock(&mut self, _on: bool) -> Result<(), Refusal> { Ok(()) }
//! }
//!
//! impl<B: I2c + 'static, P: OutputPin + 'static, D: DelayNs + 'static> Board<B, P, D> {
//!     const TOOLS: &'static [&'static Tool<Self>] =
//!         &[&audio::set_volume(), &mute::set_mute(), &relay::set()];
//! }
//!
//! /// The notifications a call emits while it runs (`notifications/progress`, and
//! /// `notifications/message` at or above the level the client set), copied until the transport
//! /// sends them, ahead of the answer.
//! type Notes = heapless::Deque<heapless::Vec<u8, 256>, 4>;
//!
//! /// One message in: its notifications queued in `notes`, the answer's length out.
//! async fn serve<B: I2c + 'static, P: OutputPin + 'static, D: DelayNs + 'static>(
//!     server: &mut Server<'static, Board<B, P, D>, Caps<8>>,
//!     board: &mut Board<B, P, D>,
//!     msg: &[u8],
//!     out: &mut [u8],
//!     notes: &mut Notes,
//! ) -> usize {
//!     let input = Input::new(msg, Principal::Model);
//!     let run = async |board: &mut Board<B, P, D>, call: Call<'_, '_>| {
//!         mcp_hal::dispatch_kits!(board, call, [audio, mute, relay])
//!     };
//!     // The bytes are the engine's scratch space, valid during the callback: copy them. (A
//!     // notification longer than a slot, or beyond the fourth of one call, is dropped.)
//!     let mut notify = |note: &[u8]| {
//!         if let Ok(copy) = heapless::Vec::from_slice(note) {
//!             let _ = notes.push_back(copy);
//!         }
//!     };
//!     let handled = server.handle_async(input, board, out, &mut notify, run).await;
//!     handled.map_or(0, |h| h.len)
//! }
//!
//! # let bus = i2c::Mock::new(&[
//! #     i2c::Transaction::write(0x18, vec![0x32, 0x4C]),
//! #     i2c::Transaction::write_read(0x18, vec![0x32], vec![0x4C]),
//! # ]);
//! # let coil = digital::Mock::new(&[]);
//! let mut board = Board {
//!     codec: Es8311::new(bus, Es8311::ADDRESS_CE_LOW, NoopDelay::new()),
//!     relay: GpioRelay::new(coil),
//!     delay: NoopDelay::new(),
//! };
//! let mut server = Server::new(Config::new("board", "1.0"));
//! server.register_all(Board::TOOLS).expect("three tools fit");
//! let msg = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"self.audio_speaker.set_volume","arguments":{"volume":40}}}"#;
//! let mut out = [0u8; 1024];
//! // Any executor will do (embassy's on firmware); here a loop with a no-op waker.
//! fn block_on<F: core::future::Future>(f: F) -> F::Output {
//!     let mut f = core::pin::pin!(f);
//!     let cx = &mut core::task::Context::from_waker(core::task::Waker::noop());
//!     loop {
//!         if let core::task::Poll::Ready(v) = f.as_mut().poll(cx) { return v; }
//!     }
//! }
//! let mut notes = Notes::new();
//! let n = block_on(serve(&mut server, &mut board, msg, &mut out, &mut notes));
//! // The transport sends the notifications first (none here: the kits report no progress),
//! // then the answer.
//! # let mut sent = 0;
//! while let Some(note) = notes.pop_front() {
//!     # sent += note.len();
//!     // transport.send(&note).await;
//! }
//! # assert_eq!(sent, 0);
//! let answer = core::str::from_utf8(&out[..n]).unwrap();
//! assert!(answer.contains(r#""_meta":{"io.github.mcu-mcp/evidence":{"level":"read_back","commanded":40,"observed":40}}"#));
//! # board.codec.release().0.done();
//! # board.relay.release().0.done();
//! ```
//!
//! A tool of the firmware's own joins the list as a module with the same three items (or a
//! `match` arm in front of the macro); a registered async tool that no kit in the list serves
//! fails with a message naming it ([`not_served`]).

pub mod audio;
pub mod battery;
pub mod button;
pub mod mute;
pub mod relay;
pub mod screen;
pub mod setpoint;
pub mod status;
pub mod system;
pub mod temperature;

use mcp_core::{Reply, ToolError};

pub use embedded_hal_async::delay::DelayNs;

pub use super::DEFAULT_CALL_BUDGET_MS;
use super::{Verdict, Window};

/// Waiting inside a call, async: the board's async delay and how long a call may wait. The twin
/// of the blocking [`kits::Wait`](crate::kits::Wait), with the same default budget.
///
/// Required by the kits whose devices declare settle times ([`audio::HasCodec`],
/// [`relay::HasRelay`]).
pub trait Wait {
    /// A delay on the board's clock, for one pause: the HAL's async delay (`&mut self.delay`, an
    /// `embassy_time::Delay`), or a [`BlockingAsync`](crate::asynch::BlockingAsync) around a
    /// blocking one.
    fn delay(&mut self) -> impl DelayNs + '_;

    /// The longest one call waits for an effect to settle, in milliseconds; an action that
    /// declares longer fails unconfirmed after waiting this long. The default is
    /// [`DEFAULT_CALL_BUDGET_MS`].
    fn call_budget_ms(&self) -> u32 {
        DEFAULT_CALL_BUDGET_MS
    }
}

/// The blocking kits' wait ([`kits::settle`](super::settle)), awaited: reads with `read` until
/// `agrees` holds or the window's limit has been waited, pausing on the board's async delay.
pub(crate) async fn settle<C: Wait + ?Sized, T: Copy, E>(
    ctx: &mut C,
    window: Window,
    mut read: impl AsyncFnMut(&mut C) -> Result<T, E>,
    agrees: impl Fn(T) -> bool,
) -> Result<(T, Verdict), E> {
    let mut pacer = window.pacer();
    loop {
        let value = read(ctx).await?;
        let ok = agrees(value);
        match pacer.pause(ok) {
            Some(ms) => ctx.delay().delay_ms(ms).await,
            None => return Ok((value, window.verdict(ok))),
        }
    }
}

/// The failed call for an async tool that no kit given to [`dispatch_kits!`](crate::dispatch_kits)
/// serves: a firmware bug (the tool is registered, its handler is missing), named in the message.
pub fn not_served(tool: &str, reply: &mut Reply<'_>) -> ToolError {
    reply.error_with(|w| {
        w.text("Tool bug: the firmware has no async handler for ");
        w.text(tool);
        w.text("; nothing ran");
    })
}

/// Hands an async tool's [`Call`](mcp_core::Call) to the kit that serves it: inside the handler
/// given to [`Server::handle_async`](mcp_core::Server::handle_async),
/// `dispatch_kits!(ctx, call, [kit, …])` compares `call.tool` with each kit module's `NAME` and
/// awaits that module's `call(ctx, call.args, call.reply)`; a tool no kit serves fails with
/// [`not_served`](crate::kits::asynch::not_served).
///
/// A kit registered under another name ([`Tool::rename`](mcp_core::Tool::rename)) is listed with
/// that name after `as`: `dispatch_kits!(ctx, call, [audio, relay as "self.garage_door.set"])`
/// (any `&str` expression: `relay as Board::DOOR.name()`).
///
/// A kit is any module path with a `NAME` and an `async fn call` of that shape: the async kits of
/// [`kits::asynch`](crate::kits::asynch) (`audio`, `mute`, `screen`, `relay`, `status`,
/// `system`), or the firmware's own. See the
/// [`kits::asynch` docs](crate::kits::asynch#registering-and-dispatching) for a whole example.
///
/// A firmware's own async tool joins the list as a module of the same shape:
///
/// ```
/// use mcp_core::{Call, ToolResult};
///
/// /// The firmware's own async tool, in the kits' shape.
/// mod fan {
///     use mcp_core::{Args, Output, Reply, Tool, ToolResult};
///     pub trait HasFan { async fn spin(&mut self); }
///     pub const NAME: &str = "self.fan.spin";
///     pub const fn spin<C: HasFan>() -> Tool<C> {
///         Tool::new_async(NAME, "Spin the fan")
///     }
///     pub async fn call<C: HasFan>(ctx: &mut C, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
///         ctx.spin().await;
///         Ok(Output::bool(true))
///     }
/// }
///
/// /// The handler to give `Server::handle_async` (with the standard kits the board implements
/// /// listed too: `[mcp_hal::kits::asynch::audio, fan]`).
/// async fn run<C: fan::HasFan>(board: &mut C, call: Call<'_, '_>) -> ToolResult {
///     mcp_hal::dispatch_kits!(board, call, [fan])
/// }
/// ```
#[macro_export]
macro_rules! dispatch_kits {
    (@name $($kit:ident)::+) => { $($kit)::+::NAME };
    (@name $($kit:ident)::+ as $name:expr) => { $name };
    ($ctx:expr, $call:expr, [$($($kit:ident)::+ $(as $name:expr)?),+ $(,)?]) => {{
        let call = $call;
        let ctx = $ctx;
        $(
            if call.tool == $crate::dispatch_kits!(@name $($kit)::+ $(as $name)?) {
                $($kit)::+::call(ctx, call.args, call.reply).await
            } else
        )+
        {
            ::core::result::Result::Err($crate::kits::asynch::not_served(call.tool, call.reply))
        }
    }};
}
