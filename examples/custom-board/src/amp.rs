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

use embedded_hal_async::i2c::I2c;
use mcp_hal::asynch::audio::{AudioCodec, VolumeCaps};
use mcp_hal::{ErrorKind, ErrorType, Percent};

/// What the `ID` register reads.
pub const CHIP_ID: u8 = 0xA8;
const ID: u8 = 0x00;
const VOLUME: u8 = 0x04;
const CONTROL: u8 = 0x05;
const MUTE: u8 = 0x01;
/// The levels the chip keeps.
pub const LEVELS: u16 = 64;

/// The amplifier on an I2C bus.
#[derive(Debug)]
pub struct Amp<B> {
    bus: B,
    address: u8,
}

impl<B: I2c> Amp<B> {
    /// The amplifier at `address` on `bus`.
    pub const fn new(bus: B, address: u8) -> Self {
        Amp { bus, address }
    }

    /// Reads the `ID` register.
    pub async fn chip_id(&mut self) -> Result<u8, ErrorKind> {
        self.read(ID).await
    }

    /// The register value for a percentage: the nearest of 256.
    pub const fn register(p: Percent) -> u8 {
        ((p.get() as u16 * 255 + 50) / 100) as u8
    }

    /// The percentage a register value stands for: the nearest whole percent.
    pub const fn percent(register: u8) -> Percent {
        Percent::saturating(((register as u16 * 100 + 127) / 255) as u8)
    }

    async fn read(&mut self, register: u8) -> Result<u8, ErrorKind> {
        let mut value = [0u8];
        self.bus
            .write_read(self.address, &[register], &mut value)
            .await
            .map_err(bus)?;
        Ok(value[0])
    }

    async fn write(&mut self, register: u8, value: u8) -> Result<(), ErrorKind> {
        self.bus
            .write(self.address, &[register, value])
            .await
            .map_err(bus)
    }
}

/// The crate's error kind for a bus error (`From<embedded_hal::i2c::ErrorKind>`).
fn bus<E: embedded_hal::i2c::Error>(e: E) -> ErrorKind {
    ErrorKind::from(e.kind())
}

impl<B> ErrorType for Amp<B> {
    type Error = ErrorKind;
}

impl<B: I2c> AudioCodec for Amp<B> {
    fn volume_caps(&self) -> VolumeCaps {
        VolumeCaps {
            max: Percent::MAX,
            read_back: true,
            settle_ms: 0,
            tolerance: VolumeCaps::tolerance_for_steps(LEVELS),
        }
    }

    async fn set_volume(&mut self, volume: Percent) -> Result<(), ErrorKind> {
        self.write(VOLUME, Self::register(volume)).await
    }

    async fn volume(&mut self) -> Result<Percent, ErrorKind> {
        Ok(Self::percent(self.read(VOLUME).await?))
    }

    async fn set_mute(&mut self, mute: bool) -> Result<(), ErrorKind> {
        let control = self.read(CONTROL).await?;
        let control = if mute {
            control | MUTE
        } else {
            control & !MUTE
        };
        self.write(CONTROL, control).await
    }
}
