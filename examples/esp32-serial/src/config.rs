//! The firmware's sizes ([`Caps`], [`Sizes`]): the one place to edit for another board. The
//! board's wiring and parts — the same board as `examples/esp32-wifi` — are
//! `examples/esp-shared/wiring.rs`, included here as [`wiring`] and re-exported.

#[path = "../../esp-shared/wiring.rs"]
pub mod wiring;
pub(crate) use wiring::board_pins;
pub use wiring::*;

/// How long a message waits for the host to take any of it before it is dropped (USB unplugged,
/// the port closed: the FIFO stays full). A host polls the port every millisecond.
pub const USB_STALL_MS: u64 = 100;

/// The engine's capacities; with [`Sizes`], the firmware's whole memory.
pub type Caps = mcp_core::caps!(
    tools = 8, // 6 used
    // None: this board's actions confirm within the call (the relay kit waits out the relay's
    // settle time inside it, on the board's delay), and without a task table the engine links
    // no task code.
    tasks = 0,
    // No answers remembered for retransmissions. The cache exists so that a retransmitted call
    // does not act twice; every acting tool of this board is idempotent (a volume, a brightness,
    // a relay state set again is the same state, read back afresh) but `self.reboot`, which
    // restarts the device anyway. Without a cache the engine links no cache code.
    cache = 0,
    cache_bytes = 0,
    // No live resources, listen streams nor held calls (built without the features
    // `resources` and `confirm`).
    resources = 0,
    listen = 0,
    hold = 0
);

/// The firmware's memory beside the engine's ([`Caps`]): the buffers a message is read into and
/// answered from, and the heap. Everything else it keeps is a few words.
pub struct Sizes;

impl Sizes {
    /// The longest message accepted on the serial line.
    pub const LINE: usize = 2048;
    /// The output buffer: a `tools/list` page plus its envelope, or the largest tool result.
    pub const OUT: usize = 3072;
    /// The `tools/list` page budget.
    pub const PAGE_BYTES: usize = 2048;
    /// The heap for `esp-alloc` (the engine allocates only on rare paths: decoding an escaped
    /// free-form string argument).
    pub const HEAP: usize = 8 * 1024;
}

/// The JSON nesting limit (see docs/FOOTPRINT.md: nesting costs the engine no stack).
pub const MAX_DEPTH: u8 = 128;
