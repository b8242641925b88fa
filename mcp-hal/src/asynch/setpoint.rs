//! Async twin of [`crate::setpoint`]: devices driven to a setpoint that a sensor measures.
//!
//! Same contract as the blocking [`Setpoint`](crate::setpoint::Setpoint); the queries without
//! I/O ([`expected`](Setpoint::expected), [`tolerance`](Setpoint::tolerance),
//! [`unit`](Setpoint::unit), [`settle_ms`](Setpoint::settle_ms)) stay plain `fn`s.

pub use crate::{Error, ErrorKind, ErrorType};

/// A device driven to a value and measured by a sensor of its own (async).
#[allow(
    async_fn_in_trait,
    reason = "no Send bound: embedded executors run on one core, as embedded-hal-async's traits"
)]
pub trait Setpoint: ErrorType {
    /// Commands `value`.
    async fn set(&mut self, value: i64) -> Result<(), Self::Error>;
    /// Reads the measurement.
    async fn read(&mut self) -> Result<i64, Self::Error>;
    /// The measurement `value` should give once settled. No I/O.
    fn expected(&self, value: i64) -> i64 {
        value
    }
    /// How far the measurement may be from the expected one, in its unit. No I/O.
    fn tolerance(&self) -> u32 {
        0
    }
    /// The measurement's unit, if the parameter does not say it. No I/O.
    fn unit(&self) -> Option<&'static str> {
        None
    }
    /// Milliseconds the measurement may lag the command. No I/O.
    fn settle_ms(&self) -> u32;
}

impl<T: Setpoint + ?Sized> Setpoint for &mut T {
    #[inline]
    async fn set(&mut self, value: i64) -> Result<(), Self::Error> {
        T::set(self, value).await
    }
    #[inline]
    async fn read(&mut self) -> Result<i64, Self::Error> {
        T::read(self).await
    }
    #[inline]
    fn expected(&self, value: i64) -> i64 {
        T::expected(self, value)
    }
    #[inline]
    fn unit(&self) -> Option<&'static str> {
        T::unit(self)
    }
    #[inline]
    fn tolerance(&self) -> u32 {
        T::tolerance(self)
    }
    #[inline]
    fn settle_ms(&self) -> u32 {
        T::settle_ms(self)
    }
}
