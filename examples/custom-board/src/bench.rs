//! The parts on the bench, for running in QEMU, which has no I2C controller or relay: the
//! amplifier as a register file behind an async I2C bus (each transfer is pending once, as one
//! that waits for its interrupt is), and the relay's coils and auxiliary contact as pins over one
//! shared contact state. The drivers in `amp.rs` and `latch.rs` cannot tell them from hardware.

use core::cell::Cell;
use core::convert::Infallible;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use embedded_hal::i2c::{ErrorKind, ErrorType, NoAcknowledgeSource, Operation};
use embedded_hal_async::delay::DelayNs;

use crate::Board;
use crate::amp::{Amp, CHIP_ID};
use crate::latch::LatchingRelay;

/// The amplifier's I2C address.
pub const AMP_ADDRESS: u8 = 0x2C;

/// The board on the bench parts, every wait on a `D`.
pub type BenchBoard<D> = Board<Amp<AmpBus, D>, LatchingRelay<Coil, Coil, AuxContact, D>, D>;

/// The board on the bench parts: the amplifier at [`AMP_ADDRESS`] (or, when not `fitted`, a bus on
/// which nothing answers: [`AmpBus::new`]), the latching relay on its two coils and auxiliary
/// contact, every wait on `delay`.
///
/// # Errors
/// A coil that cannot be switched off (never, on the bench).
pub fn board<D: DelayNs + Clone>(
    fitted: bool,
    delay: D,
) -> Result<BenchBoard<D>, mcp_hal::ErrorKind> {
    let relay = LatchingRelay::new(
        Coil { closes: true },
        Coil { closes: false },
        AuxContact,
        delay.clone(),
    )?;
    Ok(Board {
        codec: Amp::new(AmpBus::new(AMP_ADDRESS, fitted), AMP_ADDRESS, delay.clone()),
        relay,
        delay,
    })
}

/// A delay for a host, which has no `mtime`: pending once for each millisecond it waits, so a
/// 50 ms timeout loses to a transfer that is pending once and wins over one that never
/// completes.
#[derive(Debug, Clone, Copy, Default)]
pub struct PollDelay;

impl DelayNs for PollDelay {
    async fn delay_ns(&mut self, ns: u32) {
        Polls(ns.div_ceil(1_000_000)).await;
    }
}

/// Pending `n` more times (asking to be polled again each time), then ready.
struct Polls(u32);

impl Future for Polls {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            return Poll::Ready(());
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Pending once, then ready: the shape of an interrupt-driven transfer.
struct Yield(bool);

impl Future for Yield {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

/// The amplifier's registers, on an I2C bus at one address.
#[derive(Debug)]
pub struct AmpBus {
    address: u8,
    /// `false`: no amplifier answers, and no transfer ever completes (see [`AmpBus::new`]).
    fitted: bool,
    registers: [u8; 8],
    /// The register a write-then-read reads from.
    pointer: usize,
}

impl AmpBus {
    /// An amplifier at `address`, at volume 0, unmuted; or, when not `fitted`, a bus on which
    /// nothing answers and no transfer ever completes: a dead chip holding the clock line, or a
    /// controller with its bus timeout off whose completion interrupt never comes (an ESP32-C3
    /// with esp-hal's default I2C configuration and no codec hangs there).
    pub const fn new(address: u8, fitted: bool) -> Self {
        let mut registers = [0u8; 8];
        registers[0] = CHIP_ID;
        AmpBus {
            address,
            fitted,
            registers,
            pointer: 0,
        }
    }
}

impl ErrorType for AmpBus {
    type Error = ErrorKind;
}

impl embedded_hal_async::i2c::I2c for AmpBus {
    async fn transaction(
        &mut self,
        address: u8,
        operations: &mut [Operation<'_>],
    ) -> Result<(), ErrorKind> {
        if !self.fitted {
            return core::future::pending().await;
        }
        Yield(false).await;
        if address != self.address {
            return Err(ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address));
        }
        for op in operations {
            match op {
                Operation::Write(bytes) => {
                    let Some((&register, data)) = bytes.split_first() else {
                        continue;
                    };
                    self.pointer = usize::from(register);
                    for &b in data {
                        // The chip keeps six bits of volume (register 4).
                        let b = if self.pointer == 4 { b & 0xFC } else { b };
                        if let Some(r) = self.registers.get_mut(self.pointer) {
                            *r = b;
                        }
                        self.pointer += 1;
                    }
                }
                Operation::Read(buf) => {
                    for b in buf.iter_mut() {
                        *b = self.registers.get(self.pointer).copied().unwrap_or(0xFF);
                        self.pointer += 1;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Where the relay's contacts are (true: closed).
pub static CONTACTS: critical_section::Mutex<Cell<bool>> =
    critical_section::Mutex::new(Cell::new(false));

fn contacts(closed: bool) {
    critical_section::with(|cs| CONTACTS.borrow(cs).set(closed));
}

/// A coil: energising it moves the contacts to its side.
#[derive(Debug)]
pub struct Coil {
    /// `true` for the set coil (closes), `false` for the reset coil (opens).
    pub closes: bool,
}

impl embedded_hal::digital::ErrorType for Coil {
    type Error = Infallible;
}

impl embedded_hal::digital::OutputPin for Coil {
    fn set_high(&mut self) -> Result<(), Infallible> {
        contacts(self.closes);
        Ok(())
    }
    fn set_low(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}

/// The auxiliary contact.
#[derive(Debug)]
pub struct AuxContact;

impl embedded_hal::digital::ErrorType for AuxContact {
    type Error = Infallible;
}

impl embedded_hal::digital::InputPin for AuxContact {
    fn is_high(&mut self) -> Result<bool, Infallible> {
        Ok(critical_section::with(|cs| CONTACTS.borrow(cs).get()))
    }
    fn is_low(&mut self) -> Result<bool, Infallible> {
        self.is_high().map(|h| !h)
    }
}
