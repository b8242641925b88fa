//! qemu-riscv: mcp-core and mcp-hal on a bare-metal riscv32imc machine (the ESP32-C3's
//! instruction set), emulated by `qemu-system-riscv32 -machine virt`.
//!
//! MCP runs over the 16550 UART, one JSON message per line. Started with `-serial stdio` (see the
//! `run` script next to this crate), the QEMU process *is* a stdio MCP server: any MCP client can
//! launch it as its server command.
//!
//! The board is mcp-hal's simulated one, with the same tools as `examples/device-sim`, plus the
//! user-only `self.device.get_diagnostics`, which reports the firmware's own stack and heap use,
//! and firmware upgrades over MCP (`self.upgrade_firmware`, `self.firmware.write`,
//! `self.firmware.status`: mcp-hal's `kits::firmware` over a `SimFirmware` whose boot record and
//! two image slots live in a RAM region that QEMU's reset leaves alone, see `memory.x`). An
//! upgrade ends in a real reset of the emulated machine; the new version confirms itself once it
//! has answered a message, and an image the simulated bootloader cannot start is rolled back.
//!
//! Start-up options come from the kernel command line, QEMU's `-append "…"` (the `run` script
//! sets it), read from the device tree QEMU hands over:
//!
//! | word | effect |
//! |---|---|
//! | `principal=user` (default `model`) | who is on the UART |
//! | `fault=NAME` (repeatable) | inject a simulated hardware fault (`codec-clamp`, `relay-stuck`, …) |
//! | `door=open` (default `closed`) | the relay interlock's door sensor |
#![no_std]
#![no_main]

extern crate alloc;

mod board;
mod measure;
mod platform;

use core::mem::{MaybeUninit, size_of};
use core::ptr::addr_of_mut;

use board::{Board, DIAGNOSTICS, ENGINE_SIZES, EngineSizes, PlatformTime};
use mcp_core::transport::stdio::{LineLink, Port};
use mcp_core::{Capacities, Config, Principal, Server};
use mcp_hal::kits::firmware::{Ota, came_up};
use mcp_hal::sim::{Fault, Faults, SimFirmware};
use measure::{TrackingHeap, Work, measured};

/// The engine's capacities; with [`Sizes`], the firmware's whole memory. The cache and the
/// buffers match examples/esp32-serial's; this firmware keeps the full engine (default features,
/// a task table), so its stack and heap figures are an upper bound for the minimal engine that
/// esp32-serial builds.
type Caps = mcp_core::caps!(
    // The demo board's tools, the diagnostics and the three firmware-upgrade tools.
    tools = mcp_hal::sim::DEMO_TOOLS + 1 + Board::FIRMWARE_TOOLS.len(),
    tasks = 2, // motor moves, slow read-backs, a firmware upgrade
    cache = 2, // answers remembered for retransmissions,
    // each: this board's action results take 260 to 290 bytes with a short id; a longer one
    // is remembered as "executed, not replayable".
    cache_bytes = 320,
    // This firmware serves tools only: no live resources, listen streams nor held calls, so
    // they cost no RAM though the features `resources` and `confirm` are on (a tool that asks
    // a person first would be refused at registration); examples/footprint.sh's builds use
    // them ([`USED`]).
    resources = USED.0,
    listen = USED.1,
    hold = USED.2
);

/// The live resources, listen streams and held-call bytes of examples/footprint.sh's builds that
/// use them (`_footprint-use`, see Cargo.toml); none otherwise.
const USED: (usize, usize, usize) = (
    if cfg!(all(feature = "_footprint-use", feature = "resources")) {
        3
    } else {
        0
    },
    if cfg!(all(feature = "_footprint-use", feature = "resources")) {
        1
    } else {
        0
    },
    if cfg!(all(feature = "_footprint-use", feature = "confirm")) {
        256
    } else {
        0
    },
);

/// The firmware's memory beside the engine's ([`Caps`]): the buffers a message is read into and
/// answered from, and the heap.
struct Sizes;

impl Sizes {
    /// The longest message accepted on the UART, in bytes: a `self.firmware.write` of the
    /// largest piece (1,368 characters of base64) with its envelope takes about 1,550.
    const LINE: usize = 2048;
    /// The output buffer: a `tools/list` page plus its envelope, and room for the largest tool
    /// result (the diagnostics, rendered as `structuredContent` and as text).
    const OUT: usize = 3072;
    /// The `tools/list` page budget: smaller than xiaozhi's 8000 so that the output buffer
    /// stays small (the tool list takes two pages).
    const PAGE_BYTES: usize = 2048;
    /// The heap given to `embedded-alloc`.
    const HEAP: usize = 16 * 1024;
}

/// The JSON nesting limit. The engine's checker is iterative: `docs/FOOTPRINT.md` shows the
/// stack used per message does not grow with nesting, so the limit is the checker's own maximum
/// (128), far beyond any real client (< 10 levels), with the whole stack region as margin.
const MAX_DEPTH: u8 = 128;

/// The name in the header of an image this firmware's bootloader starts.
const BOARD_NAME: &str = "qemu-riscv";

// The firmware store (memory.x's FLASH region): its bounds, from the linker script.
unsafe extern "C" {
    static mut _flash_store_start: u8;
    static _flash_store_end: u8;
}

/// The firmware store: the boot record and the two image slots of the upgrades, in the RAM
/// region memory.x sets aside, which QEMU's reset does not touch.
///
/// # Safety
/// Call once: the slice is the only reference to the region.
unsafe fn flash_store() -> &'static mut [u8] {
    let start = addr_of_mut!(_flash_store_start);
    let len = (&raw const _flash_store_end as usize) - (start as usize);
    // SAFETY: memory.x reserves [start, start + len) inside QEMU virt's RAM and places no section
    // there, so nothing else (code, data, bss, heap, stack) uses it; u8 has no alignment or
    // validity requirement, and the caller promises this is the only reference.
    unsafe { core::slice::from_raw_parts_mut(start, len) }
}

#[cfg(all(feature = "_footprint-use", feature = "async"))]
compile_error!("_footprint-use is for the blocking build");

type Engine = Server<'static, Board, Caps>;

const CONFIG: Config = Config::new("qemu-riscv", env!("CARGO_PKG_VERSION"))
    .page_bytes(Sizes::PAGE_BYTES)
    .max_depth(MAX_DEPTH);

/// The firmware's `Server` with other capacities (for [`SIZES`]).
type With<
    const N: usize,
    const T: usize,
    const CA: usize,
    const R: usize,
    const L: usize,
    const H: usize,
> = Server<
    'static,
    Board,
    mcp_core::Caps<N, T, CA, { <Caps as Capacities>::CACHE_BYTES }, R, L, H>,
>;

/// What the engine costs, computed for this target by the compiler.
const SIZES: EngineSizes = {
    // The capacities, short, to spell the engine with one more of each.
    const N: usize = <Caps as Capacities>::TOOLS;
    const T: usize = <Caps as Capacities>::TASKS;
    const CA: usize = <Caps as Capacities>::CACHE;
    const R: usize = <Caps as Capacities>::RESOURCES;
    const L: usize = <Caps as Capacities>::LISTEN;
    const H: usize = <Caps as Capacities>::HOLD;
    EngineSizes {
        server: size_of::<Engine>(),
        tool_slots: N,
        per_tool: size_of::<With<{ N + 1 }, T, CA, R, L, H>>() - size_of::<Engine>(),
        per_task: size_of::<With<N, { T + 1 }, CA, R, L, H>>() - size_of::<Engine>(),
        per_cache_slot: size_of::<With<N, T, { CA + 1 }, R, L, H>>() - size_of::<Engine>(),
        server_without_tasks_and_cache: size_of::<With<N, 0, 0, R, L, H>>(),
        // (Eight slots, divided: one may fit in padding.)
        per_resource: (size_of::<With<N, T, CA, { R + 8 }, L, H>>() - size_of::<Engine>()) / 8,
        per_listen: size_of::<With<N, T, CA, R, { L + 1 }, H>>() - size_of::<Engine>(),
        hold_256: size_of::<With<N, T, CA, R, L, { H + 256 }>>() - size_of::<Engine>(),
        line_buffer: size_of::<LineLink<{ Sizes::LINE }>>(),
        out_buffer: Sizes::OUT,
        max_depth: MAX_DEPTH,
    }
};

/// All of the firmware's state, in one static (nothing large lives on the stack).
struct Firmware {
    engine: Engine,
    board: Board,
    link: LineLink<{ Sizes::LINE }>,
    out: [u8; Sizes::OUT],
}

static mut FIRMWARE: Firmware = Firmware {
    engine: Engine::new(CONFIG),
    board: Board::with_timebase(PlatformTime, Faults::NONE, false),
    link: LineLink::new(),
    out: [0; Sizes::OUT],
};

#[global_allocator]
static HEAP: TrackingHeap = TrackingHeap::empty();

static mut HEAP_MEMORY: [MaybeUninit<u8>; Sizes::HEAP] = [MaybeUninit::uninit(); Sizes::HEAP];

/// Applies the start-up options (the kernel command line) to the board; returns the principal.
fn options(cmdline: &[u8], board: &mut Board) -> Principal {
    let mut principal = Principal::Model;
    let mut faults = Faults::NONE;
    for word in cmdline
        .split(|c| c.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
    {
        match word {
            b"principal=user" => principal = Principal::User,
            b"principal=model" => principal = Principal::Model,
            b"door=open" => board.door_open = true,
            b"door=closed" => board.door_open = false,
            _ => {
                let fault = word
                    .strip_prefix(b"fault=")
                    .and_then(|n| core::str::from_utf8(n).ok())
                    .and_then(Fault::from_name);
                match fault {
                    Some(f) => faults.insert(f),
                    // A typo must not silently run a fault-free board.
                    None => platform::exit_failure(2),
                }
            }
        }
    }
    board.sim.set_faults(faults);
    principal
}

/// The UART as the line link's port.
struct Uart;

impl Port for Uart {
    fn read_byte(&mut self) -> Option<u8> {
        platform::read_byte()
    }
    fn write(&mut self, bytes: &[u8]) {
        platform::write(bytes);
    }
}

// riscv-rt's `pre-init` hook, empty: enabling it makes riscv-rt keep `a0..a2` for `main`, and
// QEMU passes the device tree's address in `a1`.
core::arch::global_asm!(
    r#".section .init.pre_init, "ax"
    .global __pre_init
__pre_init:
    ret"#
);

#[riscv_rt::entry]
fn main(_hart: usize, fdt: usize, _: usize) -> ! {
    measure::paint_stack();
    // SAFETY: called once, before any allocation; HEAP_MEMORY is used by nothing else.
    unsafe { HEAP.init(addr_of_mut!(HEAP_MEMORY) as usize, Sizes::HEAP) };
    // SAFETY: the only reference to FIRMWARE, taken once; single hart, no interrupt handlers.
    let fw = unsafe { &mut *addr_of_mut!(FIRMWARE) };
    critical_section::with(|cs| ENGINE_SIZES.borrow(cs).set(Some(SIZES)));
    platform::init();
    // SAFETY: `fdt` is the value QEMU's reset code put in `a1`.
    let cmdline = unsafe { platform::bootargs(fdt) };
    let principal = options(cmdline, &mut fw.board);
    // The bootloader's decision: an image activated before the reset starts on trial, or is
    // rolled back, as the boot record in the store says.
    fw.board.firmware = Ota::new(SimFirmware::new(BOARD_NAME, env!("CARGO_PKG_VERSION")));
    // SAFETY: the only call.
    fw.board.firmware.slot.attach(unsafe { flash_store() });
    // The demo board's tools (a column of its table), the diagnostics, the firmware upgrades.
    let registered = fw
        .engine
        .register_all(TOOLS)
        .and_then(|e| e.register(&DIAGNOSTICS))
        .and_then(|e| e.register_all(Board::FIRMWARE_TOOLS));
    if registered.is_err() {
        platform::exit_failure(3);
    }
    #[cfg(all(feature = "_footprint-use", feature = "resources"))]
    for r in Board::RESOURCES {
        if fw.engine.register_resource(r).is_err() {
            platform::exit_failure(3);
        }
    }

    // Whether this start-up has answered a tool call yet: the first one (a handler ran and its
    // answer went out) confirms a trial image; the handshake alone does not.
    let mut came_up_yet = false;
    loop {
        let now = platform::now_ms();
        fw.board.sim.set_time(now);
        #[cfg(all(feature = "_footprint-use", feature = "resources"))]
        for uri in fw.board.poll_resources(now) {
            fw.engine.publish(uri);
        }
        // Drive long-running actions and send what the engine owes (task results, progress).
        let (engine, board) = (&mut fw.engine, &mut fw.board);
        measured(Work::Poll, || {
            fw.link.poll(engine, now, board, &mut fw.out, &mut Uart);
        });
        if fw.board.sim.system.take_reboot() {
            // The answer went out a second ago; restart for real (QEMU reloads the image).
            platform::reset();
        }
        // Take the bytes that are waiting, up to one complete message; each dispatch measured.
        let (engine, board) = (&mut fw.engine, &mut fw.board);
        let mut answered = false;
        let read = fw.link.serve_with(&mut fw.out, &mut Uart, |msg, out| {
            let (n, ran) = measured(Work::Handle, || {
                dispatch(engine, msg, principal, board, out)
            })
            .unwrap_or((0, false));
            answered |= n > 0 && ran;
            n
        });
        if answered && !came_up_yet {
            // A tool's answer is out: this version runs and its tools work, so a trial image
            // is kept.
            came_up_yet = true;
            if came_up(&mut fw.board.firmware).is_err() {
                platform::exit_failure(4);
            }
        }
        if !read {
            // Sleep until a byte arrives, or 10 ms for the next poll of running tasks.
            platform::sleep(10);
        }
    }
}

/// The tool set: the demo board's blocking kits, or (feature `async`) its async kits.
#[cfg(not(any(
    feature = "async",
    all(feature = "_footprint-use", feature = "confirm")
)))]
const TOOLS: &[&mcp_core::Tool<Board>] = Board::TOOLS;
#[cfg(all(feature = "_footprint-use", feature = "confirm"))]
const TOOLS: &[&mcp_core::Tool<Board>] = Board::CONFIRMED_TOOLS;
#[cfg(feature = "async")]
const TOOLS: &[&mcp_core::Tool<Board>] = Board::ASYNC_TOOLS;

/// One message through the engine: `Server::handle`, or with the feature `async`
/// `Server::handle_async` run to completion by [`block_on`]. The answer's length, and whether a
/// tool's handler ran.
fn dispatch(
    engine: &mut Engine,
    msg: &[u8],
    principal: Principal,
    board: &mut Board,
    out: &mut [u8],
) -> Result<(usize, bool), mcp_core::HandleError> {
    #[cfg(not(feature = "async"))]
    let handled = engine.handle(msg, principal, board, out);
    #[cfg(feature = "async")]
    let handled = {
        let input = mcp_core::Input::new(msg, principal);
        let run =
            async |board: &mut Board, call: mcp_core::Call<'_, '_>| board.call_async(call).await;
        block_on(engine.handle_async(input, board, out, &mut |_: &[u8]| {}, run))
    };
    handled.map(|h| (h.len, h.ran.is_some()))
}

/// The whole executor of this firmware: polls the one future in flight until it is ready,
/// sleeping on `wfi` (up to 1 ms) between polls. Nothing here needs a waker: the future is polled
/// again after every wake-up.
#[cfg(feature = "async")]
fn block_on<F: core::future::Future>(f: F) -> F::Output {
    let mut f = core::pin::pin!(f);
    let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
    loop {
        if let core::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        platform::sleep(1);
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // The UART carries MCP: nothing is printed there. QEMU exits with status 101, so the client
    // sees the server process end.
    platform::exit_failure(101)
}
