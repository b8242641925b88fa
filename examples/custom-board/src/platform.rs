//! The few devices of `qemu-system-riscv32 -machine virt` this firmware needs, as plain MMIO:
//! the 16550 UART at `0x1000_0000` (MCP, one message per line), the CLINT's `mtime` (10 MHz) for
//! the async delay, and the SiFive test device at `0x10_0000` to exit.

use core::future::Future;
use core::pin::Pin;
use core::ptr::{read_volatile, write_volatile};
use core::task::{Context, Poll};

const UART: usize = 0x1000_0000;
const UART_LSR: usize = UART + 5;
const MTIME: usize = 0x0200_0000 + 0xBFF8;
const TEST: usize = 0x0010_0000;

/// Reads the device register at `addr`.
fn load<T: Copy>(addr: usize) -> T {
    // SAFETY: `addr` is one of the registers above, which QEMU's virt machine maps, aligned for
    // `T` (bytes for the UART, words for `mtime`).
    unsafe { read_volatile(addr as *const T) }
}

/// Writes `v` to the device register at `addr`.
fn store<T>(addr: usize, v: T) {
    // SAFETY: as in `load`.
    unsafe { write_volatile(addr as *mut T, v) }
}

/// The next received byte, if one is waiting.
pub fn read_byte() -> Option<u8> {
    (load::<u8>(UART_LSR) & 0x01 != 0).then(|| load(UART))
}

/// Writes bytes, waiting for room.
pub fn write(bytes: &[u8]) {
    for &b in bytes {
        while load::<u8>(UART_LSR) & 0x20 == 0 {}
        store(UART, b);
    }
}

/// `mtime`.
fn ticks() -> u64 {
    loop {
        let hi = load::<u32>(MTIME + 4);
        let lo = load::<u32>(MTIME);
        if load::<u32>(MTIME + 4) == hi {
            return (u64::from(hi) << 32) | u64::from(lo);
        }
    }
}

/// Milliseconds since the machine started (`mtime` runs at 10 MHz).
pub fn now_ms() -> u64 {
    ticks() / 10_000
}

/// The UART as a line link's port.
pub struct Uart;

impl mcp_core::transport::stdio::Port for Uart {
    fn read_byte(&mut self) -> Option<u8> {
        read_byte()
    }
    fn write(&mut self, bytes: &[u8]) {
        write(bytes);
    }
}

/// Ends QEMU with a failure status.
pub fn exit_failure(code: u16) -> ! {
    // The SiFive test device: status in the high half, 0x3333 for a failure.
    store(TEST, (u32::from(code) << 16) | 0x3333);
    loop {
        core::hint::spin_loop();
    }
}

/// An async delay on `mtime`: each wait is a future that is pending until its time has come.
#[derive(Debug, Clone, Copy, Default)]
pub struct Delay;

/// The future of one wait.
#[derive(Debug)]
pub struct Until(u64);

impl Future for Until {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if ticks() >= self.0 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl embedded_hal_async::delay::DelayNs for Delay {
    async fn delay_ns(&mut self, ns: u32) {
        // 10 MHz: 100 ns per tick, rounded up.
        Until(ticks() + u64::from(ns).div_ceil(100)).await;
    }
}
