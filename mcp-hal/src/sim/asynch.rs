//! The simulated devices behind the [async twins](crate::asynch) too: every call completes at
//! once (a simulated device never waits), with the same effects, counters and faults as the
//! blocking call. So one simulated board serves the async kits as well as the blocking ones.

use super::{
    SimBacklight, SimBattery, SimButton, SimCodec, SimFan, SimMotor, SimRelay, SimSystem,
    SimThermometer,
};
use crate::asynch::audio::{AudioCodec, VolumeCaps};
use crate::asynch::backlight::Backlight;
use crate::asynch::motor::Actuator;
use crate::asynch::sensor::{Button, Sensor, Unit};
use crate::asynch::setpoint::Setpoint;
use crate::asynch::switch::Switch;
use crate::asynch::system::System;
use crate::motor::Motion;
use crate::{ErrorKind, Percent};

impl AudioCodec for SimCodec {
    fn volume_caps(&self) -> VolumeCaps {
        crate::audio::AudioCodec::volume_caps(self)
    }
    async fn set_volume(&mut self, volume: Percent) -> Result<(), ErrorKind> {
        crate::audio::AudioCodec::set_volume(self, volume)
    }
    async fn volume(&mut self) -> Result<Percent, ErrorKind> {
        crate::audio::AudioCodec::volume(self)
    }
    async fn set_mute(&mut self, mute: bool) -> Result<(), ErrorKind> {
        crate::audio::AudioCodec::set_mute(self, mute)
    }
}

impl Backlight for SimBacklight {
    async fn set_brightness(&mut self, level: Percent) -> Result<(), ErrorKind> {
        crate::backlight::Backlight::set_brightness(self, level)
    }
    async fn brightness(&mut self) -> Result<Option<Percent>, ErrorKind> {
        crate::backlight::Backlight::brightness(self)
    }
    fn tolerance(&self) -> u8 {
        crate::backlight::Backlight::tolerance(self)
    }
}

impl Switch for SimRelay {
    async fn set(&mut self, on: bool) -> Result<(), ErrorKind> {
        crate::switch::Switch::set(self, on)
    }
    async fn feedback(&mut self) -> Result<Option<bool>, ErrorKind> {
        crate::switch::Switch::feedback(self)
    }
    fn settle_ms(&self) -> u32 {
        crate::switch::Switch::settle_ms(self)
    }
}

impl Setpoint for SimFan {
    async fn set(&mut self, value: i64) -> Result<(), ErrorKind> {
        crate::setpoint::Setpoint::set(self, value)
    }
    async fn read(&mut self) -> Result<i64, ErrorKind> {
        crate::setpoint::Setpoint::read(self)
    }
    fn expected(&self, value: i64) -> i64 {
        crate::setpoint::Setpoint::expected(self, value)
    }
    fn tolerance(&self) -> u32 {
        crate::setpoint::Setpoint::tolerance(self)
    }
    fn unit(&self) -> Option<&'static str> {
        crate::setpoint::Setpoint::unit(self)
    }
    fn settle_ms(&self) -> u32 {
        crate::setpoint::Setpoint::settle_ms(self)
    }
}

impl Actuator for SimMotor {
    fn range(&self) -> (i32, i32) {
        crate::motor::Actuator::range(self)
    }
    fn tolerance(&self) -> u32 {
        crate::motor::Actuator::tolerance(self)
    }
    fn unit(&self) -> Option<&'static str> {
        crate::motor::Actuator::unit(self)
    }
    async fn start_move(&mut self, target: i32) -> Result<(), ErrorKind> {
        crate::motor::Actuator::start_move(self, target)
    }
    async fn state(&mut self) -> Result<Motion, ErrorKind> {
        crate::motor::Actuator::state(self)
    }
    async fn stop(&mut self) -> Result<(), ErrorKind> {
        crate::motor::Actuator::stop(self)
    }
}

impl System for SimSystem {
    async fn schedule_reboot(&mut self, delay_ms: u32) -> Result<(), ErrorKind> {
        crate::system::System::schedule_reboot(self, delay_ms)
    }
}

impl Sensor for SimThermometer {
    fn unit(&self) -> Unit {
        crate::sensor::Sensor::unit(self)
    }
    async fn read(&mut self) -> Result<i32, ErrorKind> {
        crate::sensor::Sensor::read(self)
    }
}

impl Sensor for SimBattery {
    fn unit(&self) -> Unit {
        crate::sensor::Sensor::unit(self)
    }
    async fn read(&mut self) -> Result<i32, ErrorKind> {
        crate::sensor::Sensor::read(self)
    }
}

impl Button for SimButton {
    async fn is_pressed(&mut self) -> Result<bool, ErrorKind> {
        crate::sensor::Button::is_pressed(self)
    }
}
