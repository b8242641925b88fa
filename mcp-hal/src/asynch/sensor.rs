//! Async twin of [`crate::sensor`]: sensors read in thousandths of their unit, and buttons.
//!
//! Same contract as the blocking [`Sensor`](crate::sensor::Sensor) and
//! [`Button`](crate::sensor::Button): a reading is in milli-units of [`unit`](Sensor::unit),
//! which is a constant of the device and stays a plain `fn`; a button reports its raw level.
//! A driver whose conversion takes time (a one-shot ADC, a sensor that needs 10 ms to measure)
//! awaits it inside [`read`](Sensor::read), so the executor runs other tasks meanwhile.

pub use crate::sensor::{Milli, Unit};
pub use crate::{Error, ErrorKind, ErrorType};

/// A sensor (async): one quantity, read in thousandths of its [`Unit`].
#[allow(
    async_fn_in_trait,
    reason = "no Send bound: embedded executors run on one core, as embedded-hal-async's traits"
)]
pub trait Sensor: ErrorType {
    /// The unit of [`read`](Self::read)'s values. No I/O.
    fn unit(&self) -> Unit;
    /// Reads the quantity, in thousandths of [`unit`](Self::unit).
    async fn read(&mut self) -> Result<i32, Self::Error>;
}

impl<T: Sensor + ?Sized> Sensor for &mut T {
    #[inline]
    fn unit(&self) -> Unit {
        T::unit(self)
    }
    #[inline]
    async fn read(&mut self) -> Result<i32, Self::Error> {
        T::read(self).await
    }
}

/// A push button (async).
#[allow(
    async_fn_in_trait,
    reason = "no Send bound: embedded executors run on one core, as embedded-hal-async's traits"
)]
pub trait Button: ErrorType {
    /// `true` while the button is held down, as sampled now (raw, bounces included).
    async fn is_pressed(&mut self) -> Result<bool, Self::Error>;
}

impl<T: Button + ?Sized> Button for &mut T {
    #[inline]
    async fn is_pressed(&mut self) -> Result<bool, Self::Error> {
        T::is_pressed(self).await
    }
}
