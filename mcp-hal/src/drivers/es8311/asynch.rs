//! The async ES8311 driver: the blocking driver's register map, volume mapping, caps and chip ID
//! (all in the parent module, used by both), over `embedded_hal_async::i2c::I2c`.

use embedded_hal::i2c;
use embedded_hal_async::i2c::I2c;

use super::{
    CAPS, REG_CHIP_ID1, REG_CHIP_ID2, REG_DAC_MUTE, REG_DAC_VOLUME, dac_volume_to_percent, is_mute,
    percent_to_dac_volume, with_mute,
};
use crate::asynch::audio::{AudioCodec, VolumeCaps};
use crate::drivers::Es8311Error;
use crate::{ErrorType, Percent};

/// ES8311 codec driver over an async I2C bus (an embassy or esp-hal async I2C, or a shared-bus
/// device handle): the same transactions as the blocking [`Es8311`](crate::drivers::Es8311),
/// awaited. Owns the bus; get it back with [`release`](Es8311::release).
///
/// ```
/// # use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
/// use mcp_hal::asynch::audio::AudioCodec;
/// use mcp_hal::drivers::asynch::Es8311;
/// use mcp_hal::Percent;
///
/// async fn forty<C: AudioCodec>(codec: &mut C) -> Result<Percent, C::Error> {
///     codec.set_volume(Percent::new(40).unwrap_or_default()).await?;
///     codec.volume().await
/// }
/// # let i2c = Mock::new(&[
/// #     Transaction::write(0x18, vec![0x32, 0x4C]),
/// #     Transaction::write_read(0x18, vec![0x32], vec![0x4C]),
/// # ]);
/// let mut codec = Es8311::new(i2c, Es8311::ADDRESS_CE_LOW);
/// # let got = {
/// #     let mut fut = core::pin::pin!(forty(&mut codec));
/// #     let cx = &mut core::task::Context::from_waker(core::task::Waker::noop());
/// #     loop {
/// #         if let core::task::Poll::Ready(v) = fut.as_mut().poll(cx) { break v; }
/// #     }
/// # };
/// # assert_eq!(got.map(Percent::get), Ok(40));
/// # codec.release().done();
/// ```
#[derive(Debug)]
pub struct Es8311<I2C> {
    /// The blocking driver's state (bus and address): only the I/O differs.
    chip: super::Es8311<I2C>,
}

impl Es8311<()> {
    /// 7-bit I2C address with the CE pin low.
    pub const ADDRESS_CE_LOW: u8 = super::Es8311::ADDRESS_CE_LOW;
    /// 7-bit I2C address with the CE pin high.
    pub const ADDRESS_CE_HIGH: u8 = super::Es8311::ADDRESS_CE_HIGH;
    /// What the chip ID registers `0xFD`, `0xFE` read on an ES8311.
    pub const CHIP_ID: [u8; 2] = super::Es8311::CHIP_ID;
}

impl<I2C> Es8311<I2C> {
    /// A driver for the codec at 7-bit `address` (normally [`Es8311::ADDRESS_CE_LOW`] or
    /// [`Es8311::ADDRESS_CE_HIGH`]). Does not touch the bus.
    pub const fn new(i2c: I2C, address: u8) -> Self {
        Self {
            chip: super::Es8311::new(i2c, address),
        }
    }

    /// The 7-bit I2C address this driver talks to.
    pub const fn address(&self) -> u8 {
        self.chip.address
    }

    /// Gives the bus back.
    pub fn release(self) -> I2C {
        self.chip.release()
    }
}

impl<I2C: I2c> Es8311<I2C> {
    async fn write_reg(&mut self, reg: u8, value: u8) -> Result<(), Es8311Error<I2C::Error>> {
        let address = self.chip.address;
        self.chip
            .i2c
            .write(address, &[reg, value])
            .await
            .map_err(Es8311Error::I2c)
    }

    async fn read_reg(&mut self, reg: u8) -> Result<u8, Es8311Error<I2C::Error>> {
        let mut buf = [0u8; 1];
        let address = self.chip.address;
        self.chip
            .i2c
            .write_read(address, &[reg], &mut buf)
            .await
            .map_err(Es8311Error::I2c)?;
        let [value] = buf;
        Ok(value)
    }

    /// Reads the chip ID registers `0xFD` and `0xFE`; an ES8311 answers [`Es8311::CHIP_ID`].
    /// Use it at start-up to check that the device at the address is really an ES8311.
    pub async fn chip_id(&mut self) -> Result<[u8; 2], Es8311Error<I2C::Error>> {
        Ok([
            self.read_reg(REG_CHIP_ID1).await?,
            self.read_reg(REG_CHIP_ID2).await?,
        ])
    }

    /// Reads the DAC mute bits back: `true` when both are set.
    pub async fn is_muted(&mut self) -> Result<bool, Es8311Error<I2C::Error>> {
        self.read_reg(REG_DAC_MUTE).await.map(is_mute)
    }
}

impl<I2C: i2c::ErrorType> ErrorType for Es8311<I2C> {
    type Error = Es8311Error<I2C::Error>;
}

impl<I2C: I2c> AudioCodec for Es8311<I2C> {
    /// The blocking driver's caps: full range, read back, no settling, exact to the percent.
    fn volume_caps(&self) -> VolumeCaps {
        CAPS
    }

    /// Writes register `0x32` (one I2C write, `[0x32, value]`).
    async fn set_volume(&mut self, volume: Percent) -> Result<(), Self::Error> {
        self.write_reg(REG_DAC_VOLUME, percent_to_dac_volume(volume))
            .await
    }

    /// Reads register `0x32` from the chip (one I2C write-read); never a cached value.
    async fn volume(&mut self) -> Result<Percent, Self::Error> {
        self.read_reg(REG_DAC_VOLUME)
            .await
            .map(dac_volume_to_percent)
    }

    /// Read-modify-write of register `0x31`: sets or clears bits 6 and 5, keeps the others.
    /// If the read fails nothing is written.
    async fn set_mute(&mut self, mute: bool) -> Result<(), Self::Error> {
        let reg = self.read_reg(REG_DAC_MUTE).await?;
        self.write_reg(REG_DAC_MUTE, with_mute(reg, mute)).await
    }
}
