//! Async twin of [`crate::sensor`]: sensors read in thousandths of their unit, and buttons.
//!
//! Same contract as the blocking [`Sensor`](crate::sensor::Sensor) and
//! [`Button`](crate::sensor::Button): a reading is in milli-units of [`unit`](Sensor::unit),
//! which is a constant of the device and stays a plain `fn`; a button reports its raw level.
//! A driver whose conversion takes time (a one-shot ADC, a sensor that needs 10 ms to measure)
//! awaits it inside [`read`](Sensor::read), so the executor runs other tasks meanwhile.

pub use crate::sensor::{Milli, Unit};
pub use crate::{Error, ErrorKind, ErrorType};

device_trait! {
    /// A sensor (async): one quantity, read in thousandths of its [`Unit`].
    pub trait Sensor: ErrorType {
        /// The unit of [`read`](Self::read)'s values. No I/O.
        fn unit(&self) -> Unit;
        /// Reads the quantity, in thousandths of [`unit`](Self::unit).
        async fn read(&mut self) -> Result<i32, Self::Error>;
    }
    blocking crate::sensor::Sensor
}

device_trait! {
    /// A push button (async).
    pub trait Button: ErrorType {
        /// `true` while the button is held down, as sampled now (raw, bounces included).
        async fn is_pressed(&mut self) -> Result<bool, Self::Error>;
    }
    blocking crate::sensor::Button
}

/// A GPIO button answers at once: its async read is the blocking one.
impl<P: embedded_hal::digital::InputPin> Button for crate::sensor::GpioButton<P> {
    async fn is_pressed(&mut self) -> Result<bool, ErrorKind> {
        crate::sensor::Button::is_pressed(self)
    }
}
