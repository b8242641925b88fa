//! The async ES8311 driver: the blocking driver's register map, volume mapping, caps and chip ID
//! (all in the parent module, used by both), over `embedded_hal_async::i2c::I2c`.

use embedded_hal::i2c;
use embedded_hal_async::delay::DelayNs;
use embedded_hal_async::i2c::I2c;

use super::{
    CAPS, REG_CHIP_ID1, REG_CHIP_ID2, REG_DAC_MUTE, REG_DAC_VOLUME, dac_volume_to_percent, is_mute,
    percent_to_dac_volume, with_mute,
};
use crate::asynch::audio::{AudioCodec, VolumeCaps};
use crate::asynch::with_timeout;
use crate::drivers::Es8311Error;
use crate::{ErrorType, Percent};

/// ES8311 codec driver over an async I2C bus (an embassy or esp-hal async I2C, or a shared-bus
/// device handle): the same transactions as the blocking [`Es8311`](crate::drivers::Es8311),
/// awaited, each for at most [`timeout_ms`](Es8311::timeout_ms) on the board's async delay
/// `D` ([`with_timeout`]). A transfer that has not finished by then (a missing or dead chip, a
/// stuck bus, a HAL with its bus timeout off) is cancelled and the call fails with
/// [`Es8311Error::Timeout`], so a codec that never answers cannot hang the task that calls it.
/// Owns the bus and the delay; get them back with [`release`](Es8311::release).
///
/// ```
/// # use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
/// # use embedded_hal_mock::eh1::delay::NoopDelay as Delay;
/// use mcp_hal::asynch::audio::AudioCodec;
/// use mcp_hal::drivers::asynch::Es8311;
/// use mcp_hal::Percent;
///
/// async fn forty<C: AudioCodec>(codec: &mut C) -> Result<Percent, C::Error> {
///     codec.set_volume(Percent::new(40).unwrap_or_default()).await?;
///     codec.volume().await
/// }
/// # let i2c = Mock::new(&[
/// #     Transaction::write_read(0x18, vec![0xFD], vec![0x83]),
/// #     Transaction::write_read(0x18, vec![0xFE], vec![0x11]),
/// #     Transaction::write(0x18, vec![0x32, 0x4C]),
/// #     Transaction::write_read(0x18, vec![0x32], vec![0x4C]),
/// # ]);
/// // `Delay`: the board's async delay (embassy-time's `Delay` on an embassy firmware).
/// let mut codec = Es8311::new(i2c, Es8311::ADDRESS_CE_LOW, Delay::new());
/// # let got = {
/// #     let mut fut = core::pin::pin!(async {
/// // At start-up: is an ES8311 there? The error names the chip when it is not.
/// codec.probe().await?;
/// forty(&mut codec).await
/// #     });
/// #     let cx = &mut core::task::Context::from_waker(core::task::Waker::noop());
/// #     loop {
/// #         if let core::task::Poll::Ready(v) = fut.as_mut().poll(cx) { break v; }
/// #     }
/// # };
/// # assert_eq!(got.map(Percent::get), Ok(40));
/// # codec.release().0.done();
/// ```
#[derive(Debug)]
pub struct Es8311<I2C, D> {
    /// The blocking driver's state (bus, address, a probe's verdict): only the I/O differs.
    chip: super::Es8311<I2C>,
    /// The delay each transfer is raced against.
    delay: D,
    /// How long one transfer may take.
    timeout_ms: u32,
}

impl Es8311<(), ()> {
    /// 7-bit I2C address with the CE pin low.
    pub const ADDRESS_CE_LOW: u8 = super::Es8311::ADDRESS_CE_LOW;
    /// 7-bit I2C address with the CE pin high.
    pub const ADDRESS_CE_HIGH: u8 = super::Es8311::ADDRESS_CE_HIGH;
    /// What the chip ID registers `0xFD`, `0xFE` read on an ES8311.
    pub const CHIP_ID: [u8; 2] = super::Es8311::CHIP_ID;
    /// How long one transfer may take unless [`with_timeout_ms`](Es8311::with_timeout_ms) says
    /// otherwise: 50 ms, some 150 times what a register access takes at 100 kHz, leaving room for
    /// a shared bus's other users. `set_volume` and its read-back are two transfers, so a dead
    /// codec fails a volume call within the kits' 200 ms call budget.
    pub const TIMEOUT_MS: u32 = 50;
}

impl<I2C, D> Es8311<I2C, D> {
    /// A driver for the codec at 7-bit `address` (normally [`Es8311::ADDRESS_CE_LOW`] or
    /// [`Es8311::ADDRESS_CE_HIGH`]), whose transfers wait at most [`Es8311::TIMEOUT_MS`] on
    /// `delay`, which must be a real async delay (see [`with_timeout`]). Does not touch the bus.
    pub const fn new(i2c: I2C, address: u8, delay: D) -> Self {
        Self {
            chip: super::Es8311::new(i2c, address),
            delay,
            timeout_ms: Es8311::TIMEOUT_MS,
        }
    }

    /// The same driver, each transfer waiting at most `ms` milliseconds.
    #[must_use]
    pub const fn with_timeout_ms(mut self, ms: u32) -> Self {
        self.timeout_ms = ms;
        self
    }

    /// How long one transfer may take, in milliseconds.
    pub const fn timeout_ms(&self) -> u32 {
        self.timeout_ms
    }

    /// The 7-bit I2C address this driver talks to.
    pub const fn address(&self) -> u8 {
        self.chip.address
    }

    /// Gives the bus and the delay back.
    pub fn release(self) -> (I2C, D) {
        (self.chip.release(), self.delay)
    }
}

impl<I2C: I2c, D: DelayNs> Es8311<I2C, D> {
    async fn write_reg(&mut self, reg: u8, value: u8) -> Result<(), Es8311Error<I2C::Error>> {
        self.chip.admit()?;
        let bytes = [reg, value];
        let write = self.chip.i2c.write(self.chip.address, &bytes);
        with_timeout(&mut self.delay, self.timeout_ms, write)
            .await?
            .map_err(Es8311Error::I2c)
    }

    async fn read_reg(&mut self, reg: u8) -> Result<u8, Es8311Error<I2C::Error>> {
        self.chip.admit()?;
        self.read_any(reg).await
    }

    /// A register read even from a chip a probe refused (the chip ID).
    async fn read_any(&mut self, reg: u8) -> Result<u8, Es8311Error<I2C::Error>> {
        let mut buf = [0u8; 1];
        let pointer = [reg];
        let read = self
            .chip
            .i2c
            .write_read(self.chip.address, &pointer, &mut buf);
        with_timeout(&mut self.delay, self.timeout_ms, read)
            .await?
            .map_err(Es8311Error::I2c)?;
        let [value] = buf;
        Ok(value)
    }

    /// Reads the chip ID registers `0xFD` and `0xFE`; an ES8311 answers [`Es8311::CHIP_ID`].
    /// [`probe`](Self::probe) reads and checks it.
    pub async fn chip_id(&mut self) -> Result<[u8; 2], Es8311Error<I2C::Error>> {
        Ok([
            self.read_any(REG_CHIP_ID1).await?,
            self.read_any(REG_CHIP_ID2).await?,
        ])
    }

    /// Checks that an ES8311 answers at the address, at start-up: the blocking
    /// [`probe`](crate::drivers::Es8311::probe), each transfer bounded by the timeout, so a
    /// silent bus gives [`Es8311Error::Timeout`] within [`timeout_ms`](Self::timeout_ms).
    pub async fn probe(&mut self) -> Result<(), Es8311Error<I2C::Error>> {
        let id = self.chip_id().await?;
        self.chip.judge(id)
    }

    /// Reads the DAC mute bits back: `true` when both are set.
    pub async fn is_muted(&mut self) -> Result<bool, Es8311Error<I2C::Error>> {
        self.read_reg(REG_DAC_MUTE).await.map(is_mute)
    }
}

impl<I2C: i2c::ErrorType, D> ErrorType for Es8311<I2C, D> {
    type Error = Es8311Error<I2C::Error>;
}

impl<I2C: I2c, D: DelayNs> AudioCodec for Es8311<I2C, D> {
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
