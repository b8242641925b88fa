//! esp32-serial: an MCP device on an ESP32-C3 or ESP32-C6 (ESP32-S3 with the Xtensa toolchain).
//!
//! MCP runs over the chip's USB-Serial-JTAG port, one JSON message per line — the framing of
//! `device-sim --stdio` — so a host can bridge the serial port to any stdio MCP client. The
//! hardware is driven through mcp-hal's reference drivers and tool kits: an ES8311 codec on I2C
//! (volume read back from its register), a relay on a GPIO with a feedback contact, an LEDC PWM
//! backlight, and `self.reboot`, which schedules `software_reset` one second after answering.
//!
//! The serial port carries MCP only: this firmware prints nothing else on it.
//! Pins and sizes: `src/config.rs`.
#![no_std]
#![no_main]
// The footprint baseline drives the same board without MCP: the tool table goes unused there.
#![cfg_attr(feature = "_footprint-baseline", allow(dead_code, unused_imports))]

extern crate alloc;

#[cfg(feature = "_footprint-baseline")]
mod baseline;
mod board;
mod config;

use alloc::boxed::Box;
use core::mem::MaybeUninit;
use core::ptr::addr_of_mut;

use board::{Board, EspSystem, Screen};
use config::*;
use esp_hal::i2c::master::{I2c, SoftwareTimeout};
use esp_hal::ledc::timer;
use esp_hal::ledc::{LSGlobalClkSource, Ledc, LowSpeed};
use esp_hal::main;
use esp_hal::time::{Duration, Instant};
use esp_hal::usb::usb_serial_jtag::UsbSerialJtag;
use mcp_core::transport::stdio::{LineLink, Port};
use mcp_core::{Config, Principal, Server};
use mcp_hal::Percent;
use mcp_hal::drivers::{Es8311, PwmBacklight};

esp_bootloader_esp_idf::esp_app_desc!();

type Engine = Server<'static, Board, Caps>;

const ENGINE_CONFIG: Config = Config::new("esp32-serial", env!("CARGO_PKG_VERSION"))
    .page_bytes(Sizes::PAGE_BYTES)
    .max_depth(MAX_DEPTH);

/// The engine and its buffers live in statics, not on the stack. The engine is built at start-up
/// (in `serve`), so that its initial value is not stored in flash as initialized data.
static mut ENGINE: MaybeUninit<Engine> = MaybeUninit::uninit();
static mut LINK: LineLink<{ Sizes::LINE }> = LineLink::new();
static mut OUT_BUF: [u8; Sizes::OUT] = [0; Sizes::OUT];

/// Who is on the serial port: the MCP client a host bridges to it speaks for a model. Build
/// with `--features user-console` for a maintenance console where user-only tools are callable.
const PRINCIPAL: Principal = if cfg!(feature = "user-console") {
    Principal::User
} else {
    Principal::Model
};

#[main]
fn main() -> ! {
    let p = esp_hal::init(esp_hal::Config::default());
    esp_alloc::heap_allocator!(size: Sizes::HEAP);
    let pins = config::board_pins!(p);

    // Every transfer bounded: the bus timeout for a stuck SCL line (a dead chip holding it), the
    // software timeout for a controller that never reports completion (an emulated one with no
    // codec). Without them such a bus hangs the firmware in the codec probe.
    let i2c_config = config::i2c_config().with_software_timeout(SoftwareTimeout::Transaction(
        Duration::from_millis(u64::from(I2C_TRANSFER_TIMEOUT_MS)),
    ));
    let i2c = match I2c::new(p.I2C0, i2c_config) {
        Ok(i2c) => i2c.with_sda(pins.i2c_sda).with_scl(pins.i2c_scl),
        Err(_) => halt(),
    };
    let mut codec = Es8311::new(i2c, CODEC_ADDRESS);
    // A codec that fails its probe is not fatal: the firmware serves, and the codec's tools
    // answer the error, naming the ES8311 (not answering, or — after a wrong chip ID, which the
    // driver then refuses to write to — another chip at its address).
    let _ = codec.probe();
    let relay = config::relay(pins.relay_coil, pins.relay_feedback);

    // LEDC: the timer must outlive the channel that points at it; both live for the program.
    let ledc: &'static mut Ledc<'static> = Box::leak(Box::new(Ledc::new(p.LEDC)));
    ledc.set_global_slow_clock(LSGlobalClkSource::APBClk);
    let timer = Box::leak(Box::new(ledc.timer::<LowSpeed>(timer::Number::Timer0)));
    let Some(channel) = config::backlight(ledc, timer, pins.backlight) else {
        halt()
    };
    let start = Percent::new(BACKLIGHT_START_PERCENT).unwrap_or(Percent::MAX);

    let board = Board {
        codec,
        screen: Screen::new(PwmBacklight::new(channel), start),
        relay,
        system: EspSystem::default(),
        delay: esp_hal::delay::Delay::new(),
    };

    let usb = UsbSerialJtag::new(p.USB_DEVICE);
    serve(board, usb)
}

/// The serial port.
type Usb = UsbSerialJtag<'static, esp_hal::Blocking>;

#[cfg(feature = "_footprint-baseline")]
use baseline::serve;

/// MCP over the serial port, one JSON message per line, forever.
#[cfg(not(feature = "_footprint-baseline"))]
fn serve(mut board: Board, mut usb: Usb) -> ! {
    // SAFETY: the only references to these statics, taken once; nothing else runs.
    let (engine, link, out) = unsafe {
        (
            (*addr_of_mut!(ENGINE)).write(Engine::new(ENGINE_CONFIG)),
            &mut *addr_of_mut!(LINK),
            &mut *addr_of_mut!(OUT_BUF),
        )
    };
    if engine.register_all(Board::TOOLS).is_err() {
        halt();
    }

    let boot = Instant::now();
    let mut port = UsbPort(&mut usb);
    loop {
        let now = boot.elapsed().as_millis();
        // Drive long-running actions and send what the engine owes, then one message.
        link.poll(engine, now, &mut board, out, &mut port);
        if board.system.reboot_due() {
            flush(port.0);
            esp_hal::system::software_reset();
        }
        link.serve(engine, PRINCIPAL, &mut board, out, &mut port);
    }
}

/// The serial port as the line link's port.
struct UsbPort<'a>(&'a mut Usb);

impl Port for UsbPort<'_> {
    fn read_byte(&mut self) -> Option<u8> {
        self.0.read_byte().ok()
    }
    fn write(&mut self, bytes: &[u8]) {
        write(self.0, bytes);
    }
}

/// Writes one message and its newline to the host (see [`write`]).
#[cfg(feature = "_footprint-baseline")]
fn send(usb: &mut Usb, bytes: &[u8]) {
    write(usb, bytes);
    write(usb, b"\n");
}

/// Writes bytes to the host: esp-hal's `write` (64-byte chunks, each handed over with
/// `WR_DONE`), with every wait bounded. With no host taking the data (USB unplugged, the port
/// closed) the FIFO stays full and esp-hal's blocking `write` and `flush_tx` would wait forever;
/// here the rest is dropped once the host has taken nothing for [`USB_STALL_MS`]: nobody is there
/// to read it.
fn write(usb: &mut Usb, bytes: &[u8]) {
    for chunk in bytes.chunks(64) {
        for &byte in chunk {
            if !host_takes(|| usb.write_byte_nb(byte)) {
                return;
            }
        }
        if !host_takes(|| usb.flush_tx_nb()) {
            return;
        }
    }
}

/// Hands what the FIFO holds to the host and waits until it is taken, at most [`USB_STALL_MS`].
fn flush(usb: &mut Usb) {
    let _ = host_takes(|| usb.flush_tx_nb());
}

/// Polls `op`, a non-blocking esp-hal call, until it succeeds: `false` when it has not for
/// [`USB_STALL_MS`].
fn host_takes<E>(mut op: impl FnMut() -> Result<(), E>) -> bool {
    if op().is_ok() {
        return true;
    }
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(USB_STALL_MS) {
        if op().is_ok() {
            return true;
        }
    }
    false
}
