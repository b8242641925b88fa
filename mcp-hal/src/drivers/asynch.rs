//! Async reference drivers, for firmware whose buses are `embedded-hal-async` (embassy,
//! esp-hal's async drivers).
//!
//! | driver | async trait | over | evidence it can give |
//! |---|---|---|---|
//! | [`Es8311`] | [`asynch::audio::AudioCodec`](crate::asynch::audio::AudioCodec) | [`embedded_hal_async::i2c::I2c`], each transfer bounded on an [`embedded_hal_async::delay::DelayNs`] | `read_back`: `volume()` reads DAC register `0x32` from the chip |
//! | [`GpioRelay`](crate::drivers::GpioRelay) (the blocking type itself) | [`asynch::switch::Switch`](crate::asynch::switch::Switch) | blocking [`OutputPin`](embedded_hal::digital::OutputPin) (+ [`InputPin`](embedded_hal::digital::InputPin)) | `applied`; `measured` with feedback |
//!
//! The async ES8311 shares everything but its I/O with the blocking
//! [`drivers::Es8311`](crate::drivers::Es8311): the register map, the percent ↔ register
//! mapping ([`percent_to_dac_volume`](crate::drivers::es8311::percent_to_dac_volume)), the caps
//! and its tolerance, the chip ID, the probe's verdict and the error type
//! ([`Es8311Error`](crate::drivers::Es8311Error)). Only the async one can bound its own waits:
//! it races every transfer against its timeout ([`with_timeout`](crate::asynch::with_timeout)),
//! so a bus that never answers gives [`Es8311Error::Timeout`](crate::drivers::Es8311Error::Timeout).
//!
//! GPIO outputs are blocking in `embedded-hal-async` (a pin write completes at once), so the
//! [`GpioRelay`](crate::drivers::GpioRelay) implements the async twin directly: no wrapper, and
//! its `set` is ready when first polled, which keeps the relay kit's interlock and drive in one
//! critical section (see [`kits::asynch::relay`](crate::kits::asynch::relay)).

pub use super::es8311::asynch::Es8311;
