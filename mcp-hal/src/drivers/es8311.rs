//! Everest Semiconductor ES8311 mono audio codec, over I2C.
//!
//! Implements [`AudioCodec`] with the DAC digital volume (register `0x32`) and the DAC mute bits
//! (register `0x31`). [`volume`](AudioCodec::volume) reads register `0x32` from the chip on every
//! call, so the kit can claim `read_back` evidence honestly.
//!
//! This driver does *not* bring the codec up: clocking, the serial audio port and power-up are
//! board-specific and belong to the board's init code (Espressif's `esp_codec_dev` or the BSP
//! `es8311` component do it on ESP-IDF). The driver only needs the I2C control port, which
//! answers as soon as the chip is powered.
//!
//! # Register facts
//! From Espressif's drivers (`espressif/esp-adf`:
//! `components/esp_codec_dev/device/es8311/{es8311.c,es8311_reg.h}`, `espressif/esp-bsp`:
//! `components/es8311/{es8311.c,include/es8311.h}`) and the Linux driver
//! (`torvalds/linux`: `sound/soc/codecs/es8311.{c,h}`):
//!
//! | what | value |
//! |---|---|
//! | 7-bit I2C address | `0x18` with CE low, `0x19` with CE high |
//! | register write | `[reg, value]` |
//! | register read | write `[reg]`, repeated start, read one byte |
//! | `0x31` DAC1 | bit 6 `DAC_DSMMUTE`, bit 5 `DAC_DEMMUTE`; both set = muted |
//! | `0x32` DAC2 volume | `0x00` = -95.5 dB, +0.5 dB per step, `0xBF` = 0 dB, `0xFF` = +32 dB |
//! | `0xFD`, `0xFE` chip ID | `0x83`, `0x11` |
//!
//! # Volume mapping
//! [`Percent`] maps linearly onto `0x00..=0xBF`: 0 % is -95.5 dB and 100 % is 0 dB (unity gain),
//! half a dB per register step, so equal percent steps are equal dB steps. The range above 0 dB
//! (digital gain that clips full-scale audio) is never written. Reading back, register values
//! above `0xBF` (set by someone else) report 100 %. Every percent maps to its own register value
//! and back, exactly.
//!
//! # Resolution
//! The range written has [`DAC_VOLUME_STEPS`] (192) steps of 0.5 dB, about 0.52 % each: finer
//! than a percent, and the driver writes the step nearest to the command and reads a step back
//! as the nearest percent. So every percentage reads back as itself, and the caps declare
//! `tolerance` [`VOLUME_TOLERANCE`] = 0, computed from the two mapping functions at compile time
//! (the generic [`VolumeCaps::tolerance_for_steps`] bound, 1 for 192 steps, also allows for a
//! driver that truncates; this one does not).
//!
//! 0 % is -95.5 dB, not silence; use [`set_mute`](AudioCodec::set_mute) for silence.
//!
//! # Example
//! ```
//! # use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
//! use mcp_hal::audio::AudioCodec;
//! use mcp_hal::drivers::Es8311;
//! use mcp_hal::Percent;
//!
//! # let i2c = Mock::new(&[
//! #     Transaction::write(0x18, vec![0x32, 0x4C]),
//! #     Transaction::write_read(0x18, vec![0x32], vec![0x4C]),
//! # ]);
//! let mut codec = Es8311::new(i2c, Es8311::ADDRESS_CE_LOW);
//! let forty = Percent::new(40).unwrap_or_default();
//! codec.set_volume(forty)?;
//! assert_eq!(codec.volume()?, forty);
//! # codec.release().done();
//! # Ok::<(), mcp_hal::drivers::Es8311Error<embedded_hal::i2c::ErrorKind>>(())
//! ```

use core::fmt;

use embedded_hal::i2c::{self, I2c};

use crate::asynch::TimedOut;
use crate::audio::{AudioCodec, VolumeCaps};
use crate::{ErrorKind, ErrorType, Percent};

pub(super) mod asynch;

/// Register `0x31` (DAC1): DAC mute bits, among others.
const REG_DAC_MUTE: u8 = 0x31;
/// Register `0x32` (DAC2): DAC digital volume.
const REG_DAC_VOLUME: u8 = 0x32;
/// Register `0xFD`: chip ID 1.
const REG_CHIP_ID1: u8 = 0xFD;
/// Register `0xFE`: chip ID 2.
const REG_CHIP_ID2: u8 = 0xFE;

/// `DAC_DSMMUTE` (bit 6) and `DAC_DEMMUTE` (bit 5) of register `0x31`.
const DAC_MUTE_BITS: u8 = 0b0110_0000;
/// Register `0x32` value for 0 dB, the top of the range this driver writes.
const DAC_VOLUME_0DB: u8 = 0xBF;

/// The register steps from -95.5 dB (`0x00`) to 0 dB (`0xBF`), the range the driver writes.
pub const DAC_VOLUME_STEPS: u16 = DAC_VOLUME_0DB as u16 + 1;

/// The read-back tolerance of this driver, in percent: the largest difference between a
/// percentage and what it reads back as after [`percent_to_dac_volume`] and
/// [`dac_volume_to_percent`], over all 101 of them. Computed at compile time; it is 0.
pub const VOLUME_TOLERANCE: u8 = {
    let mut worst = 0;
    let mut p = 0;
    while p <= 100 {
        let v = Percent::saturating(p);
        let back = dac_volume_to_percent(percent_to_dac_volume(v)).get();
        let off = back.abs_diff(p);
        if off > worst {
            worst = off;
        }
        p += 1;
    }
    worst
};

/// The DAC volume register value for `volume`: 0 % is `0x00` (-95.5 dB), 100 % is `0xBF` (0 dB),
/// rounded to the nearest step.
pub const fn percent_to_dac_volume(volume: Percent) -> u8 {
    // Widening u8 -> u16; p * 0xBF + 50 <= 19150 fits.
    let p = volume.get() as u16;
    let reg = (p * DAC_VOLUME_0DB as u16 + 50) / 100;
    // `Percent` keeps p <= 100, so reg <= 0xBF; the clamp only makes the cast obviously lossless.
    if reg > DAC_VOLUME_0DB as u16 {
        DAC_VOLUME_0DB
    } else {
        reg as u8
    }
}

/// The percent a DAC volume register value stands for; the inverse of
/// [`percent_to_dac_volume`]. Values above `0xBF` (positive gain) report 100 %.
pub const fn dac_volume_to_percent(reg: u8) -> Percent {
    if reg >= DAC_VOLUME_0DB {
        return Percent::MAX;
    }
    // reg < 0xBF, so the quotient is < 100 and the cast is lossless.
    let p = (reg as u16 * 100 + DAC_VOLUME_0DB as u16 / 2) / DAC_VOLUME_0DB as u16;
    Percent::saturating(p as u8)
}

/// What the driver declares (both the blocking and the async one): the full 0..=100 % range
/// (0 dB at the top), read back from the register, no settling, exact to the percent (see
/// [Resolution](crate::drivers::es8311#resolution)).
const CAPS: VolumeCaps = VolumeCaps {
    max: Percent::MAX,
    read_back: true,
    settle_ms: 0,
    tolerance: VOLUME_TOLERANCE,
};

/// Register `0x31` with the mute bits set (`mute`) or cleared, the other bits kept.
const fn with_mute(reg: u8, mute: bool) -> u8 {
    if mute {
        reg | DAC_MUTE_BITS
    } else {
        reg & !DAC_MUTE_BITS
    }
}

/// `true` when register `0x31` has both mute bits set.
const fn is_mute(reg: u8) -> bool {
    reg & DAC_MUTE_BITS == DAC_MUTE_BITS
}

/// An ES8311 error. Every variant names the chip, in its [`Display`](fmt::Display) and in the
/// [`message`](crate::Error::message) a tool answers with, so that a failed call says which part
/// is missing or broken ("The ES8311 codec did not acknowledge on I2C…").
///
/// Generic over the bus's error so that nothing is lost; [`kind`](crate::Error::kind) maps it
/// onto the crate's [`ErrorKind`] (a NACK stays a NACK).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Es8311Error<E> {
    /// The I2C transfer failed (a NACK: no chip answers at the address; or the bus's own timeout
    /// or another bus error).
    I2c(E),
    /// The transfer did not finish within the async driver's timeout
    /// ([`Es8311::timeout_ms`](crate::drivers::asynch::Es8311::timeout_ms)): the chip or the bus
    /// is not answering. The transfer was cancelled.
    Timeout,
    /// The chip at the address read another chip ID than [`Es8311::CHIP_ID`] in
    /// [`probe`](Es8311::probe): it is not an ES8311. The driver then refuses to write to it
    /// until a probe finds an ES8311.
    WrongChip([u8; 2]),
}

impl<E> Es8311Error<E> {
    /// The bus error, if the bus failed.
    pub fn bus(self) -> Option<E> {
        match self {
            Es8311Error::I2c(e) => Some(e),
            Es8311Error::Timeout | Es8311Error::WrongChip(_) => None,
        }
    }
}

/// An async transfer that ran out of time ([`with_timeout`](crate::asynch::with_timeout)).
impl<E> From<TimedOut> for Es8311Error<E> {
    fn from(_: TimedOut) -> Self {
        Es8311Error::Timeout
    }
}

impl<E: i2c::Error> crate::Error for Es8311Error<E> {
    fn kind(&self) -> ErrorKind {
        match self {
            Es8311Error::I2c(e) => e.kind().into(),
            Es8311Error::Timeout => ErrorKind::Timeout,
            Es8311Error::WrongChip(_) => ErrorKind::WrongDevice,
        }
    }

    /// The kind's message, naming the ES8311 codec.
    fn message(&self) -> &'static str {
        match self.kind() {
            ErrorKind::NoAcknowledge => {
                "The ES8311 codec did not acknowledge on I2C (missing, unpowered or at another \
                 address); nothing was changed"
            }
            ErrorKind::Timeout => {
                "The ES8311 codec did not answer on I2C in time; the state is unknown"
            }
            ErrorKind::WrongDevice => {
                "The chip at the ES8311 codec's I2C address is not an ES8311 (wrong chip ID); \
                 nothing was changed"
            }
            _ => "I2C bus error talking to the ES8311 codec; the state is unknown",
        }
    }
}

impl<E: fmt::Debug> fmt::Display for Es8311Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Es8311Error::I2c(e) => write!(f, "ES8311 codec: I2C error: {e:?}"),
            Es8311Error::Timeout => f.write_str("ES8311 codec: no answer on I2C in time"),
            Es8311Error::WrongChip([a, b]) => write!(
                f,
                "not an ES8311 codec: chip ID {a:#04x} {b:#04x}, expected 0x83 0x11"
            ),
        }
    }
}

impl<E: fmt::Debug> core::error::Error for Es8311Error<E> {}

/// ES8311 codec driver. Owns the I2C bus (or a shared-bus device handle); get it back with
/// [`release`](Es8311::release).
///
/// Each method is one or two I2C transfers and nothing else: no retries, no polling. A transfer
/// that never ends is the bus's to bound — configure the HAL's I2C timeout (esp-hal:
/// `Config::with_timeout` and `with_software_timeout`); a blocking driver cannot interrupt a
/// blocking call. Call [`probe`](Es8311::probe) at start-up.
#[derive(Debug)]
pub struct Es8311<I2C> {
    i2c: I2C,
    address: u8,
    /// The chip ID a [`probe`](Es8311::probe) read that was not an ES8311's: while it is set,
    /// every call is refused with [`Es8311Error::WrongChip`] without touching the bus.
    foreign: Option<[u8; 2]>,
}

// The address constants live on `Es8311<()>` so that `Es8311::ADDRESS_CE_LOW` needs no type
// annotation (the same trick as `HashMap::new` and its default hasher).
impl Es8311<()> {
    /// 7-bit I2C address with the CE pin low.
    pub const ADDRESS_CE_LOW: u8 = 0x18;
    /// 7-bit I2C address with the CE pin high.
    pub const ADDRESS_CE_HIGH: u8 = 0x19;
    /// What the chip ID registers `0xFD`, `0xFE` read on an ES8311.
    pub const CHIP_ID: [u8; 2] = [0x83, 0x11];
}

impl<I2C> Es8311<I2C> {
    /// A driver for the codec at 7-bit `address` (normally [`Es8311::ADDRESS_CE_LOW`] or
    /// [`Es8311::ADDRESS_CE_HIGH`]). Does not touch the bus.
    pub const fn new(i2c: I2C, address: u8) -> Self {
        Self {
            i2c,
            address,
            foreign: None,
        }
    }

    /// The 7-bit I2C address this driver talks to.
    pub const fn address(&self) -> u8 {
        self.address
    }

    /// Gives the bus back.
    pub fn release(self) -> I2C {
        self.i2c
    }

    /// `Err(WrongChip)` while a probe's verdict stands against the chip (both drivers).
    const fn admit<E>(&self) -> Result<(), Es8311Error<E>> {
        match self.foreign {
            Some(id) => Err(Es8311Error::WrongChip(id)),
            None => Ok(()),
        }
    }

    /// Records what a probe read and judges it (both drivers).
    fn judge<E>(&mut self, id: [u8; 2]) -> Result<(), Es8311Error<E>> {
        self.foreign = (id != Es8311::CHIP_ID).then_some(id);
        self.admit()
    }
}

impl<I2C: I2c> Es8311<I2C> {
    fn write_reg(&mut self, reg: u8, value: u8) -> Result<(), Es8311Error<I2C::Error>> {
        self.admit()?;
        self.i2c
            .write(self.address, &[reg, value])
            .map_err(Es8311Error::I2c)
    }

    fn read_reg(&mut self, reg: u8) -> Result<u8, Es8311Error<I2C::Error>> {
        self.admit()?;
        self.read_any(reg)
    }

    /// A register read even from a chip a probe refused (the chip ID).
    fn read_any(&mut self, reg: u8) -> Result<u8, Es8311Error<I2C::Error>> {
        let mut buf = [0u8; 1];
        self.i2c
            .write_read(self.address, &[reg], &mut buf)
            .map_err(Es8311Error::I2c)?;
        let [value] = buf;
        Ok(value)
    }

    /// Reads the chip ID registers `0xFD` and `0xFE`; an ES8311 answers [`Es8311::CHIP_ID`].
    /// [`probe`](Self::probe) reads and checks it.
    pub fn chip_id(&mut self) -> Result<[u8; 2], Es8311Error<I2C::Error>> {
        Ok([self.read_any(REG_CHIP_ID1)?, self.read_any(REG_CHIP_ID2)?])
    }

    /// Checks that an ES8311 answers at the address, at start-up: reads the chip ID (stopping at
    /// the first failed transfer). `Ok` when it is [`Es8311::CHIP_ID`]. Otherwise the error names
    /// the chip: [`Es8311Error::I2c`] with a NACK when nothing answers (with the bus's timeout
    /// error when the bus hangs), [`Es8311Error::WrongChip`] when another chip answers. After
    /// `WrongChip` the driver refuses every call with it, without touching the bus, rather than
    /// write another chip's registers, until a probe finds an ES8311; a probe that fails on the
    /// bus leaves the driver as it was (an absent chip keeps failing each call with a NACK, and
    /// works once it is powered).
    pub fn probe(&mut self) -> Result<(), Es8311Error<I2C::Error>> {
        let id = self.chip_id()?;
        self.judge(id)
    }

    /// Reads the DAC mute bits back: `true` when both are set.
    pub fn is_muted(&mut self) -> Result<bool, Es8311Error<I2C::Error>> {
        self.read_reg(REG_DAC_MUTE).map(is_mute)
    }
}

impl<I2C: I2c> ErrorType for Es8311<I2C> {
    type Error = Es8311Error<I2C::Error>;
}

impl<I2C: I2c> AudioCodec for Es8311<I2C> {
    /// The full 0..=100 % range (0 dB at the top), read back from the register, no settling,
    /// exact to the percent (see [Resolution](crate::drivers::es8311#resolution)).
    fn volume_caps(&self) -> VolumeCaps {
        CAPS
    }

    /// Writes register `0x32` (one I2C write, `[0x32, value]`).
    fn set_volume(&mut self, volume: Percent) -> Result<(), Self::Error> {
        self.write_reg(REG_DAC_VOLUME, percent_to_dac_volume(volume))
    }

    /// Reads register `0x32` from the chip (one I2C write-read); never a cached value.
    fn volume(&mut self) -> Result<Percent, Self::Error> {
        self.read_reg(REG_DAC_VOLUME).map(dac_volume_to_percent)
    }

    /// Read-modify-write of register `0x31`: sets or clears bits 6 and 5, keeps the others.
    /// If the read fails nothing is written.
    fn set_mute(&mut self, mute: bool) -> Result<(), Self::Error> {
        let reg = self.read_reg(REG_DAC_MUTE)?;
        self.write_reg(REG_DAC_MUTE, with_mute(reg, mute))
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::Error as _;
    use crate::asynch::audio::AudioCodec as AsyncCodec;
    use embedded_hal::i2c::{ErrorKind as I2cErrorKind, NoAcknowledgeSource};
    use embedded_hal_mock::eh1::i2c::{Mock, Transaction};

    const ADDR: u8 = Es8311::ADDRESS_CE_LOW;

    fn pct(v: u8) -> Percent {
        Percent::new(v).unwrap()
    }

    type Result<T> = core::result::Result<T, Es8311Error<I2cErrorKind>>;

    /// A driver under test, blocking or async, each call run to completion. The bus scenarios
    /// below are written once and run against both drivers ([`for_both_drivers`]): the async
    /// driver must make exactly the blocking driver's transactions.
    trait Driver {
        fn on(i2c: Mock, address: u8) -> Self;
        fn address(&self) -> u8;
        fn caps(&self) -> VolumeCaps;
        fn set_volume(&mut self, v: Percent) -> Result<()>;
        fn volume(&mut self) -> Result<Percent>;
        fn set_mute(&mut self, mute: bool) -> Result<()>;
        fn is_muted(&mut self) -> Result<bool>;
        fn chip_id(&mut self) -> Result<[u8; 2]>;
        fn probe(&mut self) -> Result<()>;
        fn release(self) -> Mock;
    }

    impl Driver for Es8311<Mock> {
        fn on(i2c: Mock, address: u8) -> Self {
            Es8311::new(i2c, address)
        }
        fn address(&self) -> u8 {
            Es8311::address(self)
        }
        fn caps(&self) -> VolumeCaps {
            AudioCodec::volume_caps(self)
        }
        fn set_volume(&mut self, v: Percent) -> Result<()> {
            AudioCodec::set_volume(self, v)
        }
        fn volume(&mut self) -> Result<Percent> {
            AudioCodec::volume(self)
        }
        fn set_mute(&mut self, mute: bool) -> Result<()> {
            AudioCodec::set_mute(self, mute)
        }
        fn is_muted(&mut self) -> Result<bool> {
            Es8311::is_muted(self)
        }
        fn chip_id(&mut self) -> Result<[u8; 2]> {
            Es8311::chip_id(self)
        }
        fn probe(&mut self) -> Result<()> {
            Es8311::probe(self)
        }
        fn release(self) -> Mock {
            Es8311::release(self)
        }
    }

    /// A delay that never ends: the async driver's timeout cannot fire, so these scenarios see
    /// only the bus (the timeouts are tested in `tests/dead_bus.rs`).
    #[derive(Debug)]
    struct Never;

    impl embedded_hal_async::delay::DelayNs for Never {
        async fn delay_ns(&mut self, _: u32) {
            core::future::pending().await
        }
    }

    /// Runs an async driver call; embedded-hal-mock's futures are ready when first polled.
    fn ready<F: core::future::Future>(f: F) -> F::Output {
        use core::task::{Context, Poll, Waker};
        match core::pin::pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("the mock bus was pending"),
        }
    }

    impl Driver for asynch::Es8311<Mock, Never> {
        fn on(i2c: Mock, address: u8) -> Self {
            asynch::Es8311::new(i2c, address, Never)
        }
        fn address(&self) -> u8 {
            asynch::Es8311::address(self)
        }
        fn caps(&self) -> VolumeCaps {
            AsyncCodec::volume_caps(self)
        }
        fn set_volume(&mut self, v: Percent) -> Result<()> {
            ready(AsyncCodec::set_volume(self, v))
        }
        fn volume(&mut self) -> Result<Percent> {
            ready(AsyncCodec::volume(self))
        }
        fn set_mute(&mut self, mute: bool) -> Result<()> {
            ready(AsyncCodec::set_mute(self, mute))
        }
        fn is_muted(&mut self) -> Result<bool> {
            ready(asynch::Es8311::is_muted(self))
        }
        fn chip_id(&mut self) -> Result<[u8; 2]> {
            ready(asynch::Es8311::chip_id(self))
        }
        fn probe(&mut self) -> Result<()> {
            ready(asynch::Es8311::probe(self))
        }
        fn release(self) -> Mock {
            asynch::Es8311::release(self).0
        }
    }

    fn codec<D: Driver>(expectations: &[Transaction]) -> D {
        D::on(Mock::new(expectations), ADDR)
    }

    /// One `#[test]` per scenario and driver: `blocking::name` and `async_driver::name`.
    macro_rules! for_both_drivers {
        ($($scenario:ident),* $(,)?) => {
            mod blocking {
                $(#[test]
                fn $scenario() {
                    super::$scenario::<super::Es8311<super::Mock>>();
                })*
            }
            mod async_driver {
                $(#[test]
                fn $scenario() {
                    super::$scenario::<super::asynch::Es8311<super::Mock, super::Never>>();
                })*
            }
        };
    }

    for_both_drivers!(
        set_volume_writes_register_0x32,
        uses_the_address_it_was_given,
        volume_reads_register_0x32_every_time,
        set_then_read_back_agrees,
        mute_sets_bits_6_and_5_keeping_the_others,
        unmute_clears_bits_6_and_5_keeping_the_others,
        is_muted_needs_both_bits,
        chip_id_reads_0xfd_and_0xfe,
        nack_on_write_is_an_error_of_kind_no_acknowledge,
        nack_on_read_is_an_error_not_a_volume,
        failed_mute_read_writes_nothing,
        caps_claim_full_range_with_read_back,
        probe_accepts_an_es8311,
        probe_names_the_chip_when_nothing_answers,
        a_failed_probe_leaves_the_driver_usable,
        probe_refuses_another_chip_and_then_every_call,
        a_probe_that_finds_the_es8311_lifts_the_refusal,
    );

    #[test]
    fn addresses_match_the_datasheet() {
        assert_eq!(Es8311::ADDRESS_CE_LOW, 0x18);
        assert_eq!(Es8311::ADDRESS_CE_HIGH, 0x19);
        assert_eq!(asynch::Es8311::ADDRESS_CE_LOW, 0x18);
        assert_eq!(asynch::Es8311::ADDRESS_CE_HIGH, 0x19);
        assert_eq!(asynch::Es8311::CHIP_ID, Es8311::CHIP_ID);
        assert_eq!(Es8311Error::<I2cErrorKind>::Timeout.bus(), None);
    }

    #[test]
    fn mapping_end_points_and_a_middle_value() {
        assert_eq!(percent_to_dac_volume(pct(0)), 0x00);
        assert_eq!(percent_to_dac_volume(pct(40)), 0x4C);
        assert_eq!(percent_to_dac_volume(pct(50)), 0x60);
        assert_eq!(percent_to_dac_volume(pct(100)), 0xBF);
        assert_eq!(dac_volume_to_percent(0x00), pct(0));
        assert_eq!(dac_volume_to_percent(0x4C), pct(40));
        assert_eq!(dac_volume_to_percent(0xBF), pct(100));
    }

    #[test]
    fn mapping_round_trips_every_percent() {
        let mut last = None;
        for p in 0..=100u8 {
            let reg = percent_to_dac_volume(pct(p));
            assert!(reg <= 0xBF, "{p} % -> {reg:#04x} is above 0 dB");
            if let Some(prev) = last {
                assert!(reg > prev, "mapping is not strictly increasing at {p} %");
            }
            last = Some(reg);
            assert_eq!(
                dac_volume_to_percent(reg),
                pct(p),
                "{p} % -> {reg:#04x} -> back"
            );
        }
    }

    #[test]
    fn positive_gain_reads_back_as_full_volume() {
        for reg in 0xBF..=0xFFu8 {
            assert_eq!(dac_volume_to_percent(reg), Percent::MAX, "{reg:#04x}");
        }
        // Every register value maps to some valid percent, monotonically.
        let mut prev = Percent::MIN;
        for reg in 0..=0xFFu8 {
            let p = dac_volume_to_percent(reg);
            assert!(p >= prev, "{reg:#04x}");
            prev = p;
        }
    }

    fn set_volume_writes_register_0x32<D: Driver>() {
        let mut codec: D = codec(&[
            Transaction::write(ADDR, vec![0x32, 0x00]),
            Transaction::write(ADDR, vec![0x32, 0x4C]),
            Transaction::write(ADDR, vec![0x32, 0xBF]),
        ]);
        codec.set_volume(pct(0)).unwrap();
        codec.set_volume(pct(40)).unwrap();
        codec.set_volume(pct(100)).unwrap();
        codec.release().done();
    }

    fn uses_the_address_it_was_given<D: Driver>() {
        let high = Es8311::ADDRESS_CE_HIGH;
        let expectations = [Transaction::write(high, vec![0x32, 0x60])];
        let mut codec = D::on(Mock::new(&expectations), high);
        assert_eq!(codec.address(), 0x19);
        codec.set_volume(pct(50)).unwrap();
        codec.release().done();
    }

    fn volume_reads_register_0x32_every_time<D: Driver>() {
        // Three reads, three bus transactions, different answers: nothing is cached.
        let mut codec: D = codec(&[
            Transaction::write_read(ADDR, vec![0x32], vec![0x4C]),
            Transaction::write_read(ADDR, vec![0x32], vec![0x00]),
            Transaction::write_read(ADDR, vec![0x32], vec![0xFF]),
        ]);
        assert_eq!(codec.volume().unwrap(), pct(40));
        assert_eq!(codec.volume().unwrap(), pct(0));
        assert_eq!(codec.volume().unwrap(), pct(100));
        codec.release().done();
    }

    fn set_then_read_back_agrees<D: Driver>() {
        let mut codec: D = codec(&[
            Transaction::write(ADDR, vec![0x32, 0x9B]),
            Transaction::write_read(ADDR, vec![0x32], vec![0x9B]),
        ]);
        codec.set_volume(pct(81)).unwrap();
        assert_eq!(codec.volume().unwrap(), pct(81));
        codec.release().done();
    }

    fn mute_sets_bits_6_and_5_keeping_the_others<D: Driver>() {
        let mut codec: D = codec(&[
            Transaction::write_read(ADDR, vec![0x31], vec![0x0A]),
            Transaction::write(ADDR, vec![0x31, 0x6A]),
            // Already partly muted: the other bit is added, bit 7 kept.
            Transaction::write_read(ADDR, vec![0x31], vec![0xA0]),
            Transaction::write(ADDR, vec![0x31, 0xE0]),
        ]);
        codec.set_mute(true).unwrap();
        codec.set_mute(true).unwrap();
        codec.release().done();
    }

    fn unmute_clears_bits_6_and_5_keeping_the_others<D: Driver>() {
        let mut codec: D = codec(&[
            Transaction::write_read(ADDR, vec![0x31], vec![0xFF]),
            Transaction::write(ADDR, vec![0x31, 0x9F]),
            Transaction::write_read(ADDR, vec![0x31], vec![0x6A]),
            Transaction::write(ADDR, vec![0x31, 0x0A]),
        ]);
        codec.set_mute(false).unwrap();
        codec.set_mute(false).unwrap();
        codec.release().done();
    }

    fn is_muted_needs_both_bits<D: Driver>() {
        let mut codec: D = codec(&[
            Transaction::write_read(ADDR, vec![0x31], vec![0x60]),
            Transaction::write_read(ADDR, vec![0x31], vec![0x40]),
            Transaction::write_read(ADDR, vec![0x31], vec![0x9F]),
        ]);
        assert!(codec.is_muted().unwrap());
        assert!(!codec.is_muted().unwrap());
        assert!(!codec.is_muted().unwrap());
        codec.release().done();
    }

    fn chip_id_reads_0xfd_and_0xfe<D: Driver>() {
        let mut codec: D = codec(&[
            Transaction::write_read(ADDR, vec![0xFD], vec![0x83]),
            Transaction::write_read(ADDR, vec![0xFE], vec![0x11]),
        ]);
        assert_eq!(codec.chip_id().unwrap(), Es8311::CHIP_ID);
        codec.release().done();
    }

    fn nack_on_write_is_an_error_of_kind_no_acknowledge<D: Driver>() {
        let nack = I2cErrorKind::NoAcknowledge(NoAcknowledgeSource::Address);
        let mut codec: D = codec(&[Transaction::write(ADDR, vec![0x32, 0xBF]).with_error(nack)]);
        let err = codec.set_volume(pct(100)).unwrap_err();
        assert_eq!(err, Es8311Error::I2c(nack));
        assert_eq!(err.kind(), ErrorKind::NoAcknowledge);
        codec.release().done();
    }

    fn nack_on_read_is_an_error_not_a_volume<D: Driver>() {
        let nack = I2cErrorKind::NoAcknowledge(NoAcknowledgeSource::Data);
        let mut codec: D =
            codec(&[Transaction::write_read(ADDR, vec![0x32], vec![0x00]).with_error(nack)]);
        let err = codec.volume().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NoAcknowledge);
        codec.release().done();
    }

    fn failed_mute_read_writes_nothing<D: Driver>() {
        // Only the read is expected; a write after it would fail `done()`.
        let mut codec: D = codec(&[Transaction::write_read(ADDR, vec![0x31], vec![0x00])
            .with_error(I2cErrorKind::ArbitrationLoss)]);
        let err = codec.set_mute(true).unwrap_err();
        assert_eq!(err, Es8311Error::I2c(I2cErrorKind::ArbitrationLoss));
        assert_eq!(err.kind(), ErrorKind::Bus);
        codec.release().done();
    }

    fn caps_claim_full_range_with_read_back<D: Driver>() {
        let codec: D = codec(&[]);
        assert_eq!(
            codec.caps(),
            VolumeCaps {
                max: Percent::MAX,
                read_back: true,
                settle_ms: 0,
                tolerance: 0
            }
        );
        codec.release().done();
    }

    fn probe_accepts_an_es8311<D: Driver>() {
        let mut codec: D = codec(&[
            Transaction::write_read(ADDR, vec![0xFD], vec![0x83]),
            Transaction::write_read(ADDR, vec![0xFE], vec![0x11]),
            Transaction::write(ADDR, vec![0x32, 0x4C]),
        ]);
        assert_eq!(codec.probe(), Ok(()));
        codec.set_volume(pct(40)).unwrap();
        codec.release().done();
    }

    /// No chip at the address: the first read is NACKed, the probe stops there (one transfer,
    /// nothing else) and its error names the chip.
    fn probe_names_the_chip_when_nothing_answers<D: Driver>() {
        let nack = I2cErrorKind::NoAcknowledge(NoAcknowledgeSource::Address);
        let mut codec: D =
            codec(&[Transaction::write_read(ADDR, vec![0xFD], vec![0x00]).with_error(nack)]);
        let err = codec.probe().unwrap_err();
        assert_eq!(err, Es8311Error::I2c(nack));
        assert_eq!(err.kind(), ErrorKind::NoAcknowledge);
        assert!(
            err.message()
                .starts_with("The ES8311 codec did not acknowledge on I2C")
        );
        assert!(
            err.to_string().starts_with("ES8311 codec: I2C error"),
            "{err}"
        );
        codec.release().done();
    }

    /// A chip that is not there yet (unpowered at boot) is not refused: each call goes to the
    /// bus and fails or works on its own.
    fn a_failed_probe_leaves_the_driver_usable<D: Driver>() {
        let nack = I2cErrorKind::NoAcknowledge(NoAcknowledgeSource::Address);
        let mut codec: D = codec(&[
            Transaction::write_read(ADDR, vec![0xFD], vec![0x00]).with_error(nack),
            Transaction::write(ADDR, vec![0x32, 0x4C]),
        ]);
        assert!(codec.probe().is_err());
        codec.set_volume(pct(40)).unwrap();
        codec.release().done();
    }

    /// Another chip answers: the probe says so, and no later call touches the bus (the mock
    /// expects only the two ID reads; a write would fail `done()`).
    fn probe_refuses_another_chip_and_then_every_call<D: Driver>() {
        let mut codec: D = codec(&[
            Transaction::write_read(ADDR, vec![0xFD], vec![0x12]),
            Transaction::write_read(ADDR, vec![0xFE], vec![0x34]),
        ]);
        let wrong = Es8311Error::WrongChip([0x12, 0x34]);
        assert_eq!(codec.probe(), Err(wrong));
        assert_eq!(wrong.kind(), ErrorKind::WrongDevice);
        assert!(wrong.message().contains("is not an ES8311"));
        assert_eq!(
            wrong.to_string(),
            "not an ES8311 codec: chip ID 0x12 0x34, expected 0x83 0x11"
        );
        assert_eq!(codec.set_volume(pct(40)), Err(wrong));
        assert_eq!(codec.volume(), Err(wrong));
        assert_eq!(codec.set_mute(true), Err(wrong));
        assert_eq!(codec.is_muted(), Err(wrong));
        codec.release().done();
    }

    fn a_probe_that_finds_the_es8311_lifts_the_refusal<D: Driver>() {
        let mut codec: D = codec(&[
            Transaction::write_read(ADDR, vec![0xFD], vec![0x12]),
            Transaction::write_read(ADDR, vec![0xFE], vec![0x34]),
            Transaction::write_read(ADDR, vec![0xFD], vec![0x83]),
            Transaction::write_read(ADDR, vec![0xFE], vec![0x11]),
            Transaction::write_read(ADDR, vec![0xFD], vec![0x83]),
            Transaction::write_read(ADDR, vec![0xFE], vec![0x11]),
            Transaction::write_read(ADDR, vec![0x32], vec![0x4C]),
        ]);
        assert!(codec.probe().is_err());
        // The chip ID can still be read while refused (that is how a probe looks again).
        assert_eq!(codec.chip_id(), Ok(Es8311::CHIP_ID));
        assert_eq!(codec.volume(), Err(Es8311Error::WrongChip([0x12, 0x34])));
        assert_eq!(codec.probe(), Ok(()));
        assert_eq!(codec.volume(), Ok(pct(40)));
        codec.release().done();
    }

    /// Every error names the chip, in its message (what a tool answers) and in its `Display`.
    #[test]
    fn every_error_names_the_chip() {
        let errors = [
            Es8311Error::I2c(I2cErrorKind::NoAcknowledge(NoAcknowledgeSource::Address)),
            Es8311Error::I2c(I2cErrorKind::Bus),
            Es8311Error::I2c(I2cErrorKind::Other),
            Es8311Error::Timeout,
            Es8311Error::WrongChip([0, 0]),
        ];
        for e in errors {
            assert!(e.message().contains("ES8311"), "{e:?}: {}", e.message());
            assert_ne!(e.message(), e.kind().message(), "{e:?}");
            assert!(e.to_string().contains("ES8311"), "{e:?}: {e}");
        }
        assert_eq!(
            Es8311Error::<I2cErrorKind>::Timeout.kind(),
            ErrorKind::Timeout
        );
    }

    /// The bus error's kind goes through `From<i2c::ErrorKind>` (tested per variant in
    /// `error.rs`); the error itself is kept whole.
    #[test]
    fn error_kinds_map_onto_the_crate_kinds() {
        for bus in [I2cErrorKind::Overrun, I2cErrorKind::Other] {
            assert_eq!(
                Es8311Error::I2c(bus).kind(),
                ErrorKind::from(bus),
                "{bus:?}"
            );
            assert_eq!(Es8311Error::I2c(bus).bus(), Some(bus));
        }
    }

    #[test]
    fn resolution_is_192_steps_finer_than_a_percent() {
        assert_eq!(DAC_VOLUME_STEPS, 192);
        assert_eq!(VOLUME_TOLERANCE, 0);
        // The generic bound for 192 steps is looser (it allows for truncating drivers).
        assert_eq!(VolumeCaps::tolerance_for_steps(DAC_VOLUME_STEPS), 1);
        // Every register value the driver writes is a distinct step.
        let steps: std::collections::BTreeSet<u8> =
            (0..=100).map(|p| percent_to_dac_volume(pct(p))).collect();
        assert_eq!(steps.len(), 101);
    }
}
