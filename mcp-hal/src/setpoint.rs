//! Devices driven to a setpoint that a sensor then measures: a fan's duty cycle and its
//! tachometer, a valve's opening and a flow meter, a heater's power and a thermometer.
//!
//! # For driver authors
//! [`set`](Setpoint::set) commands the value (its unit is the tool parameter's: percent of full
//! speed, of opening) and returns once the command is issued, without waiting for the effect.
//! [`read`](Setpoint::read) is the independent measurement (rpm, l/min), and
//! [`expected`](Setpoint::expected) what that measurement should be for a commanded value once
//! the device has settled (`rpm_at(duty)`); the two agree within
//! [`tolerance`](Setpoint::tolerance), in the measurement's [`unit`](Setpoint::unit). Declare how
//! long the effect takes in [`settle_ms`](Setpoint::settle_ms): the kit
//! ([`kits::setpoint`](crate::kits::setpoint)) waits it out inside the call when it fits the call
//! budget, and makes the call a task when it does not
//! ([settle times](crate::kits#settle-times-waiting-in-the-call-or-a-task)).

use crate::ErrorType;

/// A device driven to a value and measured by a sensor of its own.
pub trait Setpoint: ErrorType {
    /// Commands `value` (already checked against the tool's declared range).
    fn set(&mut self, value: i64) -> Result<(), Self::Error>;
    /// Reads the measurement.
    fn read(&mut self) -> Result<i64, Self::Error>;
    /// The measurement `value` should give once settled (the identity by default: a device
    /// whose measurement is in the command's unit).
    fn expected(&self, value: i64) -> i64 {
        value
    }
    /// How far the measurement may be from [`expected`](Self::expected) and still agree, in
    /// its unit (0: exactly).
    fn tolerance(&self) -> u32 {
        0
    }
    /// The measurement's unit (`"rpm"`), or `None` when the command's parameter says it.
    fn unit(&self) -> Option<&'static str> {
        None
    }
    /// Milliseconds the measurement may lag the command (0: at once).
    fn settle_ms(&self) -> u32;
}

impl<T: Setpoint + ?Sized> Setpoint for &mut T {
    fn set(&mut self, value: i64) -> Result<(), Self::Error> {
        T::set(self, value)
    }
    fn read(&mut self) -> Result<i64, Self::Error> {
        T::read(self)
    }
    fn expected(&self, value: i64) -> i64 {
        T::expected(self, value)
    }
    fn tolerance(&self) -> u32 {
        T::tolerance(self)
    }
    fn unit(&self) -> Option<&'static str> {
        T::unit(self)
    }
    fn settle_ms(&self) -> u32 {
        T::settle_ms(self)
    }
}
