//! custom-board: a firmware for a board of its own, written the way a firmware author outside
//! this repository writes one — against the public API of `mcp-core` and `mcp-hal` only. The
//! board, its drivers and its tools are the library (`src/lib.rs`), which the host test
//! (`tests/host.rs`) drives too; this file adds the machine.
//!
//! - a codec mcp-hal has no driver for ([`amp`](custom_board::amp): 8-bit register, 64 real levels, so its read-back
//!   is quantized) and a latching relay ([`latch`](custom_board::latch): two coils and an auxiliary contact), both
//!   async (`embedded-hal-async`);
//! - a [`Board`](custom_board::Board) generic over its codec, relay and delay, whose tools are the async kits
//!   (`self.audio_speaker.set_volume`, `self.audio_speaker.set_mute`, and the relay kit renamed
//!   `self.garage_door.set`, which asks a person before the door opens), registered with
//!   `Server::register_all` and served over the UART by `LineLink` with `Server::handle_async`
//!   (a call the person confirmed runs from `LineLink::poll_async`);
//! - no heap: neither crate links `alloc` with these features, and there is no global allocator
//!   (a build that needed one would not link);
//! - a minimal executor: the one future in flight is polled until it is ready;
//! - every bus transfer bounded on the async delay, so a missing or dead amplifier (the feature
//!   `no-codec`: nothing on the bus answers, ever) gives tool errors naming it, not a hang.
//!
//! It runs on `qemu-system-riscv32 -machine virt` (riscv32imc, the ESP32-C3's instruction set),
//! with the parts of [`bench`](custom_board::bench) standing in for the I2C bus and the relay; MCP goes over the UART,
//! one JSON message per line. On a chip, the board takes the HAL's async I2C, its GPIOs and its
//! timer instead, and nothing else changes.
// On the host (`cargo test` builds every binary of a package with integration tests) there is
// no machine to run on: `main` below says so. The firmware is the riscv32imc build.
#![cfg_attr(target_os = "none", no_std)]
#![cfg_attr(target_os = "none", no_main)]

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("custom-board is a riscv32imc firmware: run it with examples/custom-board/run");
    std::process::exit(2);
}

#[cfg(target_os = "none")]
mod firmware;
#[cfg(target_os = "none")]
mod platform;
