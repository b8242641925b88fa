//! custom-board's parts, apart from the machine they run on: the drivers ([`amp`], [`latch`]),
//! the parts standing in for them on the bench ([`bench`]), the [`Board`] and its tools, the
//! async handler the firmware serves them with ([`run`]) and its engine ([`engine`]).
//!
//! The firmware (`src/main.rs`) adds the machine: QEMU's UART, clock and exit device. A host
//! test adds its own delay instead and drives the same engine and board with
//! `mcp_core::testing::Client` (`tests/host.rs`): `cargo test --target` the host's triple (this
//! folder's `.cargo/config.toml` builds for riscv32imc by default).
#![no_std]

pub mod amp;
pub mod bench;
pub mod board;
pub mod latch;

pub use board::{Board, GARAGE_DOOR};

/// The README's Rust, compiled and run as doctests (`cargo test --target` the host's).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

use embedded_hal_async::delay::DelayNs;
use mcp_core::{Call, Config, RegisterError, Server, ToolResult};
use mcp_hal::asynch::audio::AudioCodec;
use mcp_hal::asynch::switch::Switch;
use mcp_hal::kits::asynch::{audio, mute, relay};

/// The engine's capacities; with [`Sizes`], the firmware's whole memory.
pub type Caps = mcp_core::caps!(
    tools = 4, // three used
    tasks = 0, // mcp-hal without `tasks`: every action confirms within its call
    cache = 2, // answers remembered for retransmissions,
    cache_bytes = 320,
    resources = 0,
    listen = 0,
    // `hold`: the default, 352 bytes for a call held while a person is asked (the garage
    // door): its record (`HOLD_RECORD`) and a message of up to 264 bytes.
);

/// The firmware's memory beside the engine's ([`Caps`]): the buffers a message is read into and
/// answered from.
pub struct Sizes;

impl Sizes {
    /// The `tools/list` page budget.
    pub const PAGE_BYTES: usize = 1024;
    /// The longest message accepted.
    pub const LINE: usize = 1024;
    /// The response buffer: a `tools/list` page and its envelope.
    pub const OUT: usize = 4096;
}

/// The engine over a board `B`.
pub type Engine<B> = Server<'static, B, Caps>;

/// The engine with the board's tools registered.
///
/// # Errors
/// A tool the engine refuses (it holds them all: a test checks it).
pub fn engine<C, R, D>() -> Result<Engine<Board<C, R, D>>, RegisterError>
where
    C: AudioCodec + 'static,
    R: Switch + 'static,
    D: DelayNs + 'static,
{
    let mut engine = Engine::new(
        Config::new("custom-board", env!("CARGO_PKG_VERSION")).page_bytes(Sizes::PAGE_BYTES),
    );
    engine.register_all(Board::<C, R, D>::TOOLS)?;
    Ok(engine)
}

/// The async tools' handler: every kit of the board, the relay kit under the garage door's name.
pub async fn run<C: AudioCodec, R: Switch, D: DelayNs>(
    board: &mut Board<C, R, D>,
    call: Call<'_, '_>,
) -> ToolResult {
    mcp_hal::dispatch_kits!(board, call, [audio, mute, relay as GARAGE_DOOR])
}
