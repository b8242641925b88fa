//! The engine's sizes: the one place to edit for another board. The board's wiring and parts —
//! the same board as `examples/esp32-wifi` — are `examples/esp-shared/wiring.rs`, included here
//! as [`wiring`] and re-exported.

#[path = "../../esp-shared/wiring.rs"]
pub mod wiring;
pub(crate) use wiring::board_pins;
pub use wiring::*;

/// How long a message waits for the host to take any of it before it is dropped (USB unplugged,
/// the port closed: the FIFO stays full). A host polls the port every millisecond.
pub const USB_STALL_MS: u64 = 100;

/// Tool slots in the table (6 used).
pub const TOOL_CAPACITY: usize = 8;
/// Long-running actions tracked at once: none. This board's actions confirm within the call (the
/// relay kit waits out the relay's settle time inside the call, on the board's delay), so the
/// engine needs no task table, and without one it links no task code.
pub const TASKS: usize = 0;
/// Recent calls remembered for retransmissions: none. The cache exists so that a retransmitted
/// call does not act twice; every acting tool of this board is idempotent (a volume, a
/// brightness, a relay state set again is the same state, read back afresh) but `self.reboot`,
/// which restarts the device anyway. Without a cache the engine links no cache code.
pub const CACHE: usize = 0;
/// Response bytes kept per remembered call (none are kept).
pub const CACHE_BYTES: usize = 0;
/// The longest message accepted on the serial line.
pub const LINE: usize = 2048;
/// The output buffer: a `tools/list` page plus its envelope, or the largest tool result.
pub const OUT: usize = 3072;
/// The `tools/list` page budget.
pub const PAGE_BYTES: usize = 2048;
/// The JSON nesting limit (see docs/FOOTPRINT.md: nesting costs the engine no stack).
pub const MAX_DEPTH: u8 = 128;
/// The heap for `esp-alloc` (the engine allocates only on rare paths: decoding an escaped
/// free-form string argument).
pub const HEAP_SIZE: usize = 8 * 1024;
