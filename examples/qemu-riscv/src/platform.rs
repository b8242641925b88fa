//! The devices of `qemu-system-riscv32 -machine virt` this firmware uses, as plain MMIO:
//!
//! | device | address | use |
//! |---|---|---|
//! | NS16550A UART | `0x1000_0000` | MCP, one JSON message per line (`-serial stdio`) |
//! | CLINT | `0x0200_0000` | `mtime` (10 MHz) for `Server::poll`, `mtimecmp` to wake up |
//! | PLIC | `0x0c00_0000` | routes the UART's receive interrupt (source 10) to hart 0 |
//! | SiFive test finisher | `0x0010_0000` | exit QEMU (pass/fail) or reset the machine |
//!
//! The firmware never takes an interrupt (`mstatus.MIE` stays clear): it only uses `wfi`, which
//! wakes up on an interrupt that is pending and enabled in `mie` even while interrupts are
//! globally disabled. So the idle loop sleeps instead of spinning a host CPU core.

use core::ptr::{read_volatile, write_volatile};

const UART: usize = 0x1000_0000;
const UART_RBR_THR: usize = UART;
const UART_IER: usize = UART + 1;
const UART_LSR: usize = UART + 5;
const LSR_DATA_READY: u8 = 0x01;
const LSR_THR_EMPTY: u8 = 0x20;

const CLINT: usize = 0x0200_0000;
const CLINT_MTIMECMP: usize = CLINT + 0x4000;
const CLINT_MTIME: usize = CLINT + 0xBFF8;
/// `mtime` ticks per millisecond (virt's timebase is 10 MHz).
const TICKS_PER_MS: u64 = 10_000;

const PLIC: usize = 0x0c00_0000;
const PLIC_UART_SOURCE: usize = 10;
const PLIC_ENABLE_HART0_M: usize = PLIC + 0x2000;
const PLIC_THRESHOLD_HART0_M: usize = PLIC + 0x20_0000;
const PLIC_CLAIM_HART0_M: usize = PLIC + 0x20_0004;

const TEST: usize = 0x0010_0000;
const TEST_FAIL: u32 = 0x3333;
const TEST_RESET: u32 = 0x7777;

/// `mie` bits: machine timer and machine external interrupts.
const MIE_MTIE: usize = 1 << 7;
const MIE_MEIE: usize = 1 << 11;

fn read8(addr: usize) -> u8 {
    // SAFETY: `addr` is one of the device registers above, mapped by QEMU's virt machine.
    unsafe { read_volatile(addr as *const u8) }
}

fn write8(addr: usize, v: u8) {
    // SAFETY: as in `read8`.
    unsafe { write_volatile(addr as *mut u8, v) }
}

fn read32(addr: usize) -> u32 {
    // SAFETY: as in `read8`; the address is 4-byte aligned.
    unsafe { read_volatile(addr as *const u32) }
}

fn write32(addr: usize, v: u32) {
    // SAFETY: as in `read32`.
    unsafe { write_volatile(addr as *mut u32, v) }
}

/// Sets up the UART's receive interrupt, the PLIC route of it, and enables the timer and external
/// interrupts in `mie` as wake-up sources for `wfi`.
///
/// The FIFO control register is left alone: QEMU starts feeding stdin into the UART before the
/// firmware runs, and enabling the FIFOs clears them, which would drop the first bytes of the
/// client's first message. Without FIFOs QEMU hands over one byte at a time and waits until it
/// is read, so nothing is lost. (Line settings do not matter to QEMU's UART.)
pub fn init() {
    write8(UART_IER, 0x01); // interrupt when received data is available
    write32(PLIC + 4 * PLIC_UART_SOURCE, 1); // priority 1
    write32(PLIC_ENABLE_HART0_M, 1 << PLIC_UART_SOURCE);
    write32(PLIC_THRESHOLD_HART0_M, 0);
    // SAFETY: only sets enable bits in `mie`; `mstatus.MIE` stays clear, so no trap is taken.
    unsafe { core::arch::asm!("csrs mie, {0}", in(reg) MIE_MTIE | MIE_MEIE) };
}

/// The next received byte, if one is waiting.
pub fn read_byte() -> Option<u8> {
    (read8(UART_LSR) & LSR_DATA_READY != 0).then(|| read8(UART_RBR_THR))
}

/// Writes bytes to the UART, waiting for room.
pub fn write(bytes: &[u8]) {
    for &b in bytes {
        while read8(UART_LSR) & LSR_THR_EMPTY == 0 {}
        write8(UART_RBR_THR, b);
    }
}

/// `mtime`, in 10 MHz ticks.
pub fn ticks() -> u64 {
    loop {
        let hi = read32(CLINT_MTIME + 4);
        let lo = read32(CLINT_MTIME);
        if read32(CLINT_MTIME + 4) == hi {
            return (u64::from(hi) << 32) | u64::from(lo);
        }
    }
}

/// Milliseconds since power-up.
pub fn now_ms() -> u64 {
    ticks() / TICKS_PER_MS
}

/// Busy-waits at least `ns` nanoseconds on `mtime` (10 MHz: 100 ns per tick, rounded up).
pub fn busy_wait_ns(ns: u32) {
    let end = ticks().saturating_add(u64::from(ns).div_ceil(100));
    while ticks() < end {
        core::hint::spin_loop();
    }
}

/// Sleeps until a byte arrives on the UART or `ms` milliseconds pass (`wfi`; it may return
/// earlier, which is harmless).
pub fn sleep(ms: u64) {
    if read8(UART_LSR) & LSR_DATA_READY != 0 {
        return;
    }
    let at = ticks().saturating_add(ms * TICKS_PER_MS);
    // Writing the high word first to all ones avoids a spurious match between the two writes.
    write32(CLINT_MTIMECMP + 4, u32::MAX);
    write32(CLINT_MTIMECMP, at as u32);
    write32(CLINT_MTIMECMP + 4, (at >> 32) as u32);
    // SAFETY: `wfi` only waits; with `mstatus.MIE` clear, a wake-up does not trap.
    unsafe { core::arch::asm!("wfi") };
    // Acknowledge the UART's interrupt at the PLIC (the UART itself clears its request once
    // the data is read), so that the next `wfi` sleeps again.
    let claim = read32(PLIC_CLAIM_HART0_M);
    if claim != 0 {
        write32(PLIC_CLAIM_HART0_M, claim);
    }
}

/// Ends the QEMU process with exit status `code` (1..=0xffff).
pub fn exit_failure(code: u16) -> ! {
    write32(TEST, (u32::from(code) << 16) | TEST_FAIL);
    // QEMU ends the process on the write; nothing runs after it.
    loop {
        core::hint::spin_loop();
    }
}

/// Resets the machine: QEMU reloads the firmware image and starts it again.
pub fn reset() -> ! {
    write32(TEST, TEST_RESET);
    // QEMU resets the machine on the write; nothing runs after it.
    loop {
        core::hint::spin_loop();
    }
}

/// The kernel command line (`-append "…"`): the `bootargs` property of the flattened device tree
/// QEMU hands over in `a1` at reset. Empty when there is none.
///
/// # Safety
/// `fdt` must be the address QEMU passed in `a1` (or 0).
pub unsafe fn bootargs(fdt: usize) -> &'static [u8] {
    const MAGIC: u32 = 0xd00d_feed;
    if fdt == 0 || !fdt.is_multiple_of(4) {
        return &[];
    }
    // SAFETY: QEMU put a device tree there (caller's promise); its header is 40 bytes.
    let header = unsafe { core::slice::from_raw_parts(fdt as *const u8, 40) };
    if be32(header, 0) != Some(MAGIC) {
        return &[];
    }
    let Some(total) = be32(header, 4) else {
        return &[];
    };
    // SAFETY: `totalsize` bytes from the header's start are the device tree, which QEMU keeps in
    // RAM the firmware never writes.
    let blob = unsafe { core::slice::from_raw_parts(fdt as *const u8, total as usize) };
    find_prop(blob, b"bootargs")
        .map(|v| v.split(|&c| c == 0).next().unwrap_or_default())
        .unwrap_or_default()
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    let bytes = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes(bytes.try_into().ok()?))
}

/// The value of the first property called `name`, walking the structure block (FDT spec 0.4,
/// chapter 5: tokens BEGIN_NODE 1, END_NODE 2, PROP 3, NOP 4, END 9).
fn find_prop<'a>(blob: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let structs = be32(blob, 8)? as usize;
    let strings = be32(blob, 12)? as usize;
    let align = |p: usize| (p + 3) & !3;
    let mut p = structs;
    loop {
        let token = be32(blob, p)?;
        p += 4;
        match token {
            1 => {
                let len = blob.get(p..)?.iter().position(|&c| c == 0)?;
                p = align(p + len + 1);
            }
            2 | 4 => {}
            3 => {
                let len = be32(blob, p)? as usize;
                let name_at = strings + be32(blob, p + 4)? as usize;
                let value = blob.get(p + 8..p + 8 + len)?;
                let prop = blob.get(name_at..)?;
                let end = prop.iter().position(|&c| c == 0)?;
                if prop.get(..end)? == name {
                    return Some(value);
                }
                p = align(p + 8 + len);
            }
            _ => return None,
        }
    }
}
