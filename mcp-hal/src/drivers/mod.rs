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
//! # Every wait is bounded
//! A missing or dead chip must give an error, not a frozen device. None of these drivers loops,
//! retries or polls a status bit: each method is a fixed, short sequence of bus transfers or pin
//! operations, and what is left to bound is a transfer that never ends.
//!
//! - Blocking drivers cannot interrupt a blocking bus call: the HAL's bus timeout bounds it, and
//!   the firmware must set it (esp-hal's I2C has none by default on the ESP32-C3: set
//!   `Config::with_timeout` and `with_software_timeout`, as `examples/esp32-serial` does). The
//!   error it then returns is the driver's error, naming the chip.
//! - The async ES8311 awaits each transfer for at most its timeout on the board's async delay
//!   ([`with_timeout`](crate::asynch::with_timeout)), so a bus future that never completes ends
//!   in [`Es8311Error::Timeout`].
//! - GPIO and PWM writes complete at once; a relay's feedback is waited for by the kit, at most
//!   its settle time, paced on the board's delay.
//! - [`Es8311::probe`] checks the chip at start-up: a NACK, a timeout or a wrong chip ID is an
//!   error that names the ES8311, and the tools answer with it ([`Error::message`](crate::Error::message)).
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
