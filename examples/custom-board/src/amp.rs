//! A driver for a codec mcp-hal does not know: a small I2C amplifier with an 8-bit volume
//! register that keeps only its top six bits (64 levels). Written against the public traits:
//! `embedded_hal_async::i2c::I2c` below, `mcp_hal::asynch::audio::AudioCodec` above.
//!
//! | register | address | meaning |
//! |---|---|---|
//! | `ID` | `0x00` | reads [`CHIP_ID`] |
//! | `VOLUME` | `0x04` | 0 = silent … 255 = loudest; the chip drops the two low bits |
//! | `CONTROL` | `0x05` | bit 0: mute |
//!
//! Because the chip keeps 64 levels, a command of 40 % (register 102) reads back as 100 = 39 %.
//! The driver says so in its caps (`tolerance` for 64 steps), and the kit reports
//! `read_back` with commanded 40, observed 39, tolerance 2 — an honest success, not a mismatch.
//!
//! Every transfer waits at most [`TIMEOUT_MS`] on the board's async delay
//! (`mcp_hal::asynch::with_timeout`): an amplifier that is missing or dead, or a bus that never
//! completes a transfer, gives an error, not a frozen device. Its errors ([`AmpError`]) name the
//! chip in the message a tool answers with.

use embedded_hal_async::delay::DelayNs;
use embedded_hal_async::i2c::I2c;
use mcp_hal::asynch::audio::{AudioCodec, VolumeCaps};
use mcp_hal::asynch::with_timeout;
use mcp_hal::{ErrorKind, ErrorType, Percent};

/// What the `ID` register reads.
pub const CHIP_ID: u8 = 0xA8;
const ID: u8 = 0x00;
const VOLUME: u8 = 0x04;
const CONTROL: u8 = 0x05;
const MUTE: u8 = 0x01;
/// The levels the chip keeps.
pub const LEVELS: u16 = 64;

/// How long one transfer may take.
pub const TIMEOUT_MS: u32 = 50;

/// An amplifier error: its kind, and a message for the tool's answer that names the chip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AmpError(pub ErrorKind);

impl mcp_hal::Error for AmpError {
    fn kind(&self) -> ErrorKind {
        self.0
    }

    fn message(&self) -> &'static str {
        match self.0 {
            ErrorKind::NoAcknowledge => {
                "The amplifier did not acknowledge on I2C; nothing was changed"
            }
            ErrorKind::Timeout => {
                "The amplifier did not answer on I2C in time; the state is unknown"
            }
            ErrorKind::WrongDevice => {
                "The chip at the amplifier's I2C address is not the amplifier (wrong chip ID)"
            }
            _ => "I2C bus error talking to the amplifier; the state is unknown",
        }
    }
}

/// The amplifier on an I2C bus, its transfers bounded on the delay `D`.
#[derive(Debug)]
pub struct Amp<B, D> {
    bus: B,
    address: u8,
    delay: D,
}

impl<B: I2c, D: DelayNs> Amp<B, D> {
    /// The amplifier at `address` on `bus`; `delay` bounds its transfers.
    pub const fn new(bus: B, address: u8, delay: D) -> Self {
        Amp {
            bus,
            address,
            delay,
        }
    }

    /// Checks that the amplifier answers with its [`CHIP_ID`] (at start-up).
    pub async fn probe(&mut self) -> Result<(), AmpError> {
        match self.read(ID).await? {
            CHIP_ID => Ok(()),
            _ => Err(AmpError(ErrorKind::WrongDevice)),
        }
    }

    /// The register value for a percentage: the nearest of 256.
    pub const fn register(p: Percent) -> u8 {
        ((p.get() as u16 * 255 + 50) / 100) as u8
    }

    /// The percentage a register value stands for: the nearest whole percent.
    pub const fn percent(register: u8) -> Percent {
        Percent::saturating(((register as u16 * 100 + 127) / 255) as u8)
    }

    async fn read(&mut self, register: u8) -> Result<u8, AmpError> {
        let mut value = [0u8];
        let pointer = [register];
        let read = self.bus.write_read(self.address, &pointer, &mut value);
        with_timeout(&mut self.delay, TIMEOUT_MS, read)
            .await
            .map_err(timeout)?
            .map_err(bus)?;
        Ok(value[0])
    }

    async fn write(&mut self, register: u8, value: u8) -> Result<(), AmpError> {
        let bytes = [register, value];
        let write = self.bus.write(self.address, &bytes);
        with_timeout(&mut self.delay, TIMEOUT_MS, write)
            .await
            .map_err(timeout)?
            .map_err(bus)
    }
}

/// The amplifier error for a bus error (`From<embedded_hal::i2c::ErrorKind>` gives the kind).
fn bus<E: embedded_hal::i2c::Error>(e: E) -> AmpError {
    AmpError(ErrorKind::from(e.kind()))
}

/// The amplifier error for a transfer that ran out of time.
fn timeout(e: mcp_hal::asynch::TimedOut) -> AmpError {
    AmpError(mcp_hal::Error::kind(&e))
}

impl<B, D> ErrorType for Amp<B, D> {
    type Error = AmpError;
}

impl<B: I2c, D: DelayNs> AudioCodec for Amp<B, D> {
    fn volume_caps(&self) -> VolumeCaps {
        VolumeCaps {
            max: Percent::MAX,
            read_back: true,
            settle_ms: 0,
            tolerance: VolumeCaps::tolerance_for_steps(LEVELS),
        }
    }

    async fn set_volume(&mut self, volume: Percent) -> Result<(), AmpError> {
        self.write(VOLUME, Self::register(volume)).await
    }

    async fn volume(&mut self) -> Result<Percent, AmpError> {
        Ok(Self::percent(self.read(VOLUME).await?))
    }

    async fn set_mute(&mut self, mute: bool) -> Result<(), AmpError> {
        let control = self.read(CONTROL).await?;
        let control = if mute {
            control | MUTE
        } else {
            control & !MUTE
        };
        self.write(CONTROL, control).await
    }
}
