//! custom-board: a firmware for a board of its own, written the way a firmware author outside
//! this repository writes one — against the public API of `mcp-core` and `mcp-hal` only.
//!
//! - a codec mcp-hal has no driver for ([`amp`]: 8-bit register, 64 real levels, so its read-back
//!   is quantized) and a latching relay ([`latch`]: two coils and an auxiliary contact), both
//!   async (`embedded-hal-async`);
//! - a [`board::Board`] generic over its codec, relay and delay, whose tools are the async kits
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
//! with the parts of [`bench`] standing in for the I2C bus and the relay; MCP goes over the UART,
//! one JSON message per line. On a chip, the board takes the HAL's async I2C, its GPIOs and its
//! timer instead, and nothing else changes.
#![no_std]
#![no_main]

mod amp;
mod bench;
mod board;
mod latch;
mod platform;

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

use mcp_core::transport::stdio::LineLink;
use mcp_core::{Call, Config, Principal, ToolResult, server_type};
use mcp_hal::ErrorKind;
use mcp_hal::kits::asynch::{audio, mute, relay};

use amp::{Amp, AmpError};
use bench::{AmpBus, AuxContact, Coil};
use board::{Board, GARAGE_DOOR};
use latch::LatchingRelay;
use platform::Delay;

/// The amplifier's I2C address.
const AMP_ADDRESS: u8 = 0x2C;
/// Whether the bench has the amplifier on its bus (the feature `no-codec` takes it away).
const AMP_FITTED: bool = !cfg!(feature = "no-codec");
/// The longest message accepted.
const LINE: usize = 1024;
/// The response buffer: a `tools/list` page and its envelope.
const OUT: usize = 4096;
/// The `tools/list` page budget.
const PAGE_BYTES: usize = 1024;

type MyBoard = Board<Amp<AmpBus, Delay>, LatchingRelay<Coil, Coil, AuxContact, Delay>, Delay>;
/// Three tools, no task table (mcp-hal without `tasks`), two remembered calls; no live
/// resources nor listen streams; a call held while a person is asked (the garage door): 352
/// bytes, its record (`HOLD_RECORD`) and a message of up to 264 bytes.
type Engine = server_type!(MyBoard; tools = 4, tasks = 0, cache = 2, cache_bytes = 320,
    resources = 0, listen = 0, hold = 352);

/// The async tools' handler: every kit of the board, the relay kit under the garage door's name.
async fn run(board: &mut MyBoard, call: Call<'_, '_>) -> ToolResult {
    mcp_hal::dispatch_kits!(board, call, [audio, mute, relay as GARAGE_DOOR])
}

/// Polls `f` until it is ready: the whole executor of a firmware with one thing to do.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        core::hint::spin_loop();
    }
}

#[riscv_rt::entry]
fn main() -> ! {
    let Ok(relay) = LatchingRelay::new(
        Coil { closes: true },
        Coil { closes: false },
        AuxContact,
        Delay,
    ) else {
        platform::exit_failure(2)
    };
    let mut board: MyBoard = Board {
        codec: Amp::new(AmpBus::new(AMP_ADDRESS, AMP_FITTED), AMP_ADDRESS, Delay),
        relay,
        delay: Delay,
    };
    // The probe is bounded like every transfer. Another chip at the amplifier's address is the
    // wrong board: writing its registers could do anything, so stop. A missing or dead amplifier
    // is not fatal: the firmware serves, and the codec tools answer an error naming it.
    if block_on(board.codec.probe()) == Err(AmpError(ErrorKind::WrongDevice)) {
        platform::exit_failure(3);
    }
    let mut engine =
        Engine::new(Config::new("custom-board", env!("CARGO_PKG_VERSION")).page_bytes(PAGE_BYTES));
    if engine.register_all(MyBoard::TOOLS).is_err() {
        platform::exit_failure(4);
    }
    let mut link: LineLink<LINE> = LineLink::new();
    let mut uart = platform::Uart;
    let mut out = [0u8; OUT];
    // What a handler emits while it runs (progress, log messages) goes out before its answer.
    let mut notify = |m: &[u8]| {
        platform::write(m);
        platform::write(b"\n");
    };
    loop {
        // What the engine owes (a call a person confirmed runs here), then one message.
        let now = platform::now_ms();
        block_on(link.poll_async(&mut engine, now, &mut board, &mut out, &mut uart, run));
        let read = block_on(link.serve_async(
            &mut engine,
            Principal::Model,
            &mut board,
            &mut out,
            &mut uart,
            &mut notify,
            run,
        ));
        if !read {
            core::hint::spin_loop();
        }
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    platform::exit_failure(101)
}
