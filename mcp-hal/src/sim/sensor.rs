//! [`SimThermometer`], [`SimBattery`] and [`SimButton`]: the demo board's readings, set by the
//! simulator (a UI slider, a script, a test) and read through the [sensor traits](crate::sensor).

use super::{Fault, Faults};
use crate::sensor::{Button, Sensor, Unit};
use crate::{ErrorKind, Percent};

/// A deterministic noise source (xorshift32), uniform in `-amplitude..=amplitude`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Noise {
    state: u32,
    amplitude: u32,
}

impl Noise {
    const fn new(seed: u32) -> Self {
        Noise {
            state: seed,
            amplitude: 0,
        }
    }

    fn next(&mut self) -> i32 {
        if self.amplitude == 0 {
            return 0;
        }
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.state = x;
        let span = u64::from(self.amplitude) * 2 + 1;
        let offset = u64::from(x) % span;
        // `offset` < 2 * amplitude + 1 ≤ 2^33: the difference fits an i64, and the result is
        // within ±amplitude, which fits an i32 because amplitude was one.
        i32::try_from(i64::try_from(offset).unwrap_or(0) - i64::from(self.amplitude)).unwrap_or(0)
    }
}

/// A simulated I2C thermometer, in °C ([`Unit::Celsius`]).
///
/// It reads [`millicelsius`](SimThermometer::millicelsius) (set with
/// [`set_millicelsius`](SimThermometer::set_millicelsius); powers up at
/// [`INITIAL`](SimThermometer::INITIAL), 21.5 °C), plus noise when
/// [`set_noise`](SimThermometer::set_noise) asked for some: a noisy ADC, uniform within the
/// amplitude, the same sequence every run.
///
/// Faults: `sensor-nack` fails every read with [`ErrorKind::NoAcknowledge`].
#[derive(Debug, Clone)]
pub struct SimThermometer {
    faults: Faults,
    now_ms: u64,
    millicelsius: i32,
    noise: Noise,
    reads: u32,
}

impl SimThermometer {
    /// The temperature at power-up, in milli-degrees Celsius (21.5 °C).
    pub const INITIAL: i32 = 21_500;

    /// A thermometer at [`INITIAL`](Self::INITIAL), without noise, at time 0.
    pub const fn new(faults: Faults) -> Self {
        SimThermometer {
            faults,
            now_ms: 0,
            millicelsius: Self::INITIAL,
            noise: Noise::new(0x2545_f491),
            reads: 0,
        }
    }

    /// Sets the temperature, in milli-degrees Celsius (31.5 °C is `31_500`).
    pub fn set_millicelsius(&mut self, millicelsius: i32) {
        self.millicelsius = millicelsius;
    }

    /// The temperature set (what a read returns, noise aside).
    pub const fn millicelsius(&self) -> i32 {
        self.millicelsius
    }

    /// Adds noise to every read, uniform within ±`amplitude` milli-degrees (0: none).
    pub fn set_noise(&mut self, amplitude: u32) {
        self.noise.amplitude = amplitude.min(i32::MAX as u32);
    }

    /// Reads that returned a value.
    pub const fn reads(&self) -> u32 {
        self.reads
    }
}

sim_device!(SimThermometer);

impl Sensor for SimThermometer {
    fn unit(&self) -> Unit {
        Unit::Celsius
    }

    fn read(&mut self) -> Result<i32, ErrorKind> {
        if self.faults.contains(Fault::SensorNack) {
            return Err(ErrorKind::NoAcknowledge);
        }
        self.reads = self.reads.saturating_add(1);
        Ok(self.millicelsius.saturating_add(self.noise.next()))
    }
}

/// A simulated battery fuel gauge on I2C, in percent ([`Unit::Percent`]).
///
/// It reads [`millipercent`](SimBattery::millipercent), set with
/// [`set_percent`](SimBattery::set_percent) or [`set_millipercent`](SimBattery::set_millipercent)
/// (powers up at [`INITIAL`](SimBattery::INITIAL), 87 %). Nothing drains it: the simulator
/// decides.
///
/// Faults: `sensor-nack` fails every read with [`ErrorKind::NoAcknowledge`].
#[derive(Debug, Clone)]
pub struct SimBattery {
    faults: Faults,
    now_ms: u64,
    millipercent: i32,
    reads: u32,
}

impl SimBattery {
    /// The charge at power-up, in thousandths of a percent (87 %).
    pub const INITIAL: i32 = 87_000;

    /// A gauge at [`INITIAL`](Self::INITIAL), at time 0.
    pub const fn new(faults: Faults) -> Self {
        SimBattery {
            faults,
            now_ms: 0,
            millipercent: Self::INITIAL,
            reads: 0,
        }
    }

    /// Sets the charge in whole percent.
    pub fn set_percent(&mut self, percent: Percent) {
        self.millipercent = i32::from(percent.get()) * 1000;
    }

    /// Sets the charge in thousandths of a percent, clamped to 0..=100 %.
    pub fn set_millipercent(&mut self, millipercent: i32) {
        self.millipercent = millipercent.clamp(0, 100_000);
    }

    /// The charge set, in thousandths of a percent.
    pub const fn millipercent(&self) -> i32 {
        self.millipercent
    }

    /// Reads that returned a value.
    pub const fn reads(&self) -> u32 {
        self.reads
    }
}

sim_device!(SimBattery);

impl Sensor for SimBattery {
    fn unit(&self) -> Unit {
        Unit::Percent
    }

    fn read(&mut self) -> Result<i32, ErrorKind> {
        if self.faults.contains(Fault::SensorNack) {
            return Err(ErrorKind::NoAcknowledge);
        }
        self.reads = self.reads.saturating_add(1);
        Ok(self.millipercent)
    }
}

/// A simulated push button on a GPIO, with contact bounce.
///
/// [`press`](SimButton::press) is a click: the contact bounces for
/// [`BOUNCE_MS`](SimButton::BOUNCE_MS) (the level alternates each millisecond), is held down
/// until [`HOLD_MS`](SimButton::HOLD_MS) after the press, bounces again as it opens, and stays
/// up for the rest of [`PERIOD_MS`](SimButton::PERIOD_MS). Presses made while one is under way
/// queue up, one period apart, so that each is seen. [`hold`](SimButton::hold) holds it down
/// (no bounce) until released.
///
/// The level follows the button's time ([`set_time`](SimButton::set_time), or the board's): a
/// press is seen only by samples taken during it, so sample at least every 10 ms (as the
/// [button kit](crate::kits::button) says). No fault affects it: it is a pin.
#[derive(Debug, Clone)]
pub struct SimButton {
    faults: Faults,
    now_ms: u64,
    first_down_ms: u64,
    clicks: u32,
    held: bool,
    presses: u32,
}

impl SimButton {
    /// How long a click holds the button down, bounces included, in milliseconds.
    pub const HOLD_MS: u64 = 100;
    /// How long the contact bounces at each edge, in milliseconds.
    pub const BOUNCE_MS: u64 = 4;
    /// The time from one queued click to the next, in milliseconds.
    pub const PERIOD_MS: u64 = 200;

    /// A released button, at time 0.
    pub const fn new(faults: Faults) -> Self {
        SimButton {
            faults,
            now_ms: 0,
            first_down_ms: 0,
            clicks: 0,
            held: false,
            presses: 0,
        }
    }

    /// Clicks the button at `now_ms` (or at the button's time, if that is later); a click
    /// while others are under way comes after them.
    pub fn press(&mut self, now_ms: u64) {
        let now = now_ms.max(self.now_ms);
        let end = self
            .first_down_ms
            .saturating_add(u64::from(self.clicks).saturating_mul(Self::PERIOD_MS));
        if self.clicks > 0 && now < end {
            self.clicks = self.clicks.saturating_add(1);
        } else {
            self.first_down_ms = now;
            self.clicks = 1;
        }
        self.presses = self.presses.saturating_add(1);
    }

    /// Holds the button down (`true`) or lets it go (`false`), without bounce.
    pub fn hold(&mut self, down: bool) {
        self.held = down;
    }

    /// The raw level at the button's time: `true` while down (bounces included).
    pub fn is_down(&self) -> bool {
        self.held || self.clicking(self.now_ms)
    }

    fn clicking(&self, t: u64) -> bool {
        if self.clicks == 0 || t < self.first_down_ms {
            return false;
        }
        let dt = t - self.first_down_ms;
        if dt / Self::PERIOD_MS >= u64::from(self.clicks) {
            return false;
        }
        let phase = dt % Self::PERIOD_MS;
        if phase < Self::BOUNCE_MS {
            phase.is_multiple_of(2)
        } else if phase < Self::HOLD_MS {
            true
        } else if phase < Self::HOLD_MS + Self::BOUNCE_MS {
            !phase.is_multiple_of(2)
        } else {
            false
        }
    }

    /// [`press`](Self::press) calls so far.
    pub const fn presses(&self) -> u32 {
        self.presses
    }
}

sim_device!(SimButton);

impl Button for SimButton {
    fn is_pressed(&mut self) -> Result<bool, ErrorKind> {
        Ok(self.is_down())
    }
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, reason = "a test")] // a test

    use super::*;
    use crate::publish::Debouncer;

    #[test]
    fn the_thermometer_reads_what_is_set_with_bounded_noise() {
        let mut t = SimThermometer::default();
        assert_eq!((t.unit(), t.read()), (Unit::Celsius, Ok(21_500)));
        t.set_millicelsius(-4_250);
        assert_eq!(t.read(), Ok(-4_250));
        t.set_noise(300);
        let reads: Vec<i32> = (0..1000).map(|_| t.read().unwrap()).collect();
        assert!(reads.iter().all(|v| (-4_550..=-3_950).contains(v)));
        assert!(reads.iter().any(|v| *v < -4_400) && reads.iter().any(|v| *v > -4_100));
        assert_eq!(t.reads(), 1002);
        // The same sequence every run.
        let mut again = SimThermometer::default();
        again.set_millicelsius(-4_250);
        again.set_noise(300);
        assert_eq!(again.read().unwrap(), reads[0]);
        assert_eq!(again.read().unwrap(), reads[1]);
    }

    #[test]
    fn sensor_nack_fails_the_sensors_and_only_them() {
        let f = Faults::only(Fault::SensorNack);
        let mut t = SimThermometer::new(f);
        let mut b = SimBattery::new(f);
        assert_eq!(t.read(), Err(ErrorKind::NoAcknowledge));
        assert_eq!(b.read(), Err(ErrorKind::NoAcknowledge));
        assert_eq!((t.reads(), b.reads()), (0, 0));
        let mut button = SimButton::new(f);
        button.hold(true);
        assert_eq!(button.is_pressed(), Ok(true));
        t.set_faults(Faults::NONE);
        b.set_faults(Faults::NONE);
        assert_eq!(t.read(), Ok(21_500));
        assert_eq!(b.read(), Ok(87_000));
        // No other fault touches them.
        for fault in Fault::ALL.into_iter().filter(|f| *f != Fault::SensorNack) {
            assert_eq!(SimThermometer::new(Faults::only(fault)).read(), Ok(21_500));
            assert_eq!(SimBattery::new(Faults::only(fault)).read(), Ok(87_000));
        }
    }

    #[test]
    fn the_battery_is_set_in_percent_or_thousandths() {
        let mut b = SimBattery::default();
        assert_eq!(b.unit(), Unit::Percent);
        b.set_percent(Percent::new(15).unwrap());
        assert_eq!(b.read(), Ok(15_000));
        b.set_millipercent(120_000);
        assert_eq!(b.millipercent(), 100_000);
        b.set_millipercent(-5);
        assert_eq!(b.read(), Ok(0));
    }

    /// The raw level of one click, millisecond by millisecond.
    #[test]
    fn a_click_bounces_then_holds_then_bounces() {
        let mut b = SimButton::default();
        b.set_time(1000);
        b.press(900); // in the past: at the button's time
        let level = |b: &mut SimButton, t| {
            b.set_time(t);
            b.is_pressed().unwrap()
        };
        let seen: Vec<bool> = (1000..1110).map(|t| level(&mut b, t)).collect();
        assert_eq!(&seen[..6], [true, false, true, false, true, true]);
        assert!(seen[4..100].iter().all(|d| *d));
        assert_eq!(&seen[100..106], [false, true, false, true, false, false]);
        assert!(!level(&mut b, 1150));
    }

    /// Three quick presses, sampled every 10 ms through a 20 ms debouncer: three counted.
    #[test]
    fn queued_clicks_are_each_counted_by_a_debouncer() {
        let mut b = SimButton::default();
        b.press(0);
        b.press(5);
        b.press(10);
        assert_eq!(b.presses(), 3);
        let mut d = Debouncer::new(20);
        for t in (0..1000).step_by(10) {
            b.set_time(t);
            d.update(t, b.is_pressed().unwrap());
        }
        assert_eq!(d.presses(), 3);
        // A press after they are over starts at once.
        b.press(1000);
        b.set_time(1050);
        assert!(b.is_down());
        b.hold(true);
        b.set_time(5000);
        assert!(b.is_down());
    }
}
