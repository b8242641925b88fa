//! Reference drivers over `embedded-hal` 1.0, implementing this crate's device traits.
//!
//! Each driver owns its peripheral (`Driver<P> { p: P }`, get it back with `release`), allocates
//! nothing, and never panics. Each has its own `Copy`-friendly error type that wraps the bus or
//! pin error generically and maps it onto [`ErrorKind`](crate::ErrorKind).
//!
//! | driver | trait | over | evidence it can give |
//! |---|---|---|---|
//! | [`Es8311`] | [`AudioCodec`](crate::audio::AudioCodec) | [`I2c`](embedded_hal::i2c::I2c) | `read_back`: `volume()` reads DAC register `0x32` from the chip |
//! | [`GpioRelay`] | [`Switch`](crate::switch::Switch) | [`OutputPin`](embedded_hal::digital::OutputPin) | `applied`; `measured` with a feedback [`InputPin`](embedded_hal::digital::InputPin) |
//! | [`PwmBacklight`] | [`Backlight`](crate::backlight::Backlight) | [`SetDutyCycle`](embedded_hal::pwm::SetDutyCycle) | `applied` only: a PWM output cannot be read back |
//!
//! A driver claims no more than its hardware can prove: `Ok(())` from a setter means "issued", and
//! a read-back method either reads the device or says it cannot (`Ok(None)`), never returns a
//! cached copy of the last command.
//!
//! For async code: [`asynch`] has the async ES8311 (over `embedded-hal-async` I2C), the
//! [`GpioRelay`] implements the async [`Switch`](crate::asynch::switch::Switch) twin itself, and
//! any other driver can be wrapped in [`BlockingAsync`](crate::asynch::BlockingAsync).

pub mod asynch;
pub mod es8311;
pub mod gpio_relay;
pub mod pwm_backlight;

pub use es8311::{Es8311, Es8311Error};
pub use gpio_relay::{GpioRelay, GpioRelayError, NoFeedback};
pub use pwm_backlight::{PwmBacklight, PwmBacklightError};
