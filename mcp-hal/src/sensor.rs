//! Sensors that read a quantity (a temperature, a battery's charge) and buttons.
//!
//! # The model
//! A [`Sensor`] reads one quantity as an integer in **thousandths of its [`Unit`]** (milli-units):
//! 21.5 °C is `21_500`, 87 % is `87_000`. Integers, so that a firmware without a float printer
//! (mcp-core without its feature `float`) reports readings exactly; an `i32` of milli-units spans
//! ±2 147 483 units, more than any sensor here needs. [`Milli`] prints such a value as a decimal
//! (`21.5`) without floats.
//!
//! A [`Button`] reports whether it is held down now: the raw, undebounced level. Counting presses
//! (debouncing) is the job of [`publish::Debouncer`](crate::publish::Debouncer), not the driver.
//!
//! A reading says nothing about *when* to tell a client: that is a
//! [`publish::Policy`](crate::publish::Policy) (threshold, hysteresis, minimum interval), applied
//! by the resource kits ([`kits::temperature`](crate::kits::temperature),
//! [`kits::battery`](crate::kits::battery), [`kits::button`](crate::kits::button)).
//!
//! # For driver authors
//! Convert to the unit [`unit`](Sensor::unit) declares inside [`read`](Sensor::read), with
//! integer arithmetic, and map bus errors to an [`ErrorKind`](crate::ErrorKind) (`e.kind().into()`
//! for an `embedded-hal` I2C error). A conversion you cannot do (a register that reads "not
//! ready") is an error, never a made-up value. A driver that owns its bus:
//!
//! ```
//! use embedded_hal::i2c::{I2c, Error as _};
//! use mcp_hal::sensor::{Sensor, Unit};
//! use mcp_hal::{ErrorKind, ErrorType};
//!
//! /// A TMP102-style thermometer: a 12-bit register in 1/16 °C.
//! pub struct Tmp102<B> { bus: B, address: u8 }
//!
//! impl<B: I2c> ErrorType for Tmp102<B> { type Error = ErrorKind; }
//!
//! impl<B: I2c> Sensor for Tmp102<B> {
//!     fn unit(&self) -> Unit { Unit::Celsius }
//!     fn read(&mut self) -> Result<i32, ErrorKind> {
//!         let mut raw = [0u8; 2];
//!         self.bus
//!             .write_read(self.address, &[0x00], &mut raw)
//!             .map_err(|e| ErrorKind::from(e.kind()))?;
//!         let sixteenths = i32::from(i16::from_be_bytes(raw) >> 4);
//!         Ok(sixteenths * 1000 / 16)
//!     }
//! }
//! # use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
//! # let bus = Mock::new(&[Transaction::write_read(0x48, vec![0x00], vec![0x15, 0x80])]);
//! let mut t = Tmp102 { bus, address: 0x48 };
//! assert_eq!(t.read(), Ok(21_500)); // 0x158 sixteenths: 21.5 °C
//! # t.bus.done();
//! ```
//!
//! A button is usually a GPIO: [`GpioButton`] adapts any `embedded-hal`
//! [`InputPin`](embedded_hal::digital::InputPin), with the level that means "pressed".
//!
//! # For HAL users
//! Generic code takes `S: Sensor` (or `&mut S`, through the blanket impl) and reads
//! `(value, unit)`:
//!
//! ```
//! use mcp_hal::sensor::{Milli, Sensor};
//!
//! fn describe<S: Sensor>(s: &mut S) -> Option<String> {
//!     let v = s.read().ok()?;
//!     Some(format!("{} {}", Milli(v), s.unit().symbol()))
//! }
//! # struct Fixed;
//! # impl mcp_hal::ErrorType for Fixed { type Error = mcp_hal::ErrorKind; }
//! # impl Sensor for Fixed {
//! #     fn unit(&self) -> mcp_hal::sensor::Unit { mcp_hal::sensor::Unit::Celsius }
//! #     fn read(&mut self) -> Result<i32, mcp_hal::ErrorKind> { Ok(-1_250) }
//! # }
//! assert_eq!(describe(&mut Fixed).as_deref(), Some("-1.25 °C"));
//! ```

use core::fmt;

use crate::ErrorType;

/// The unit of a [`Sensor`]'s readings (which are in thousandths of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Unit {
    /// Degrees Celsius (°C).
    Celsius,
    /// Percent (%): a battery's state of charge, a duty cycle.
    Percent,
    /// Relative humidity, percent (%RH).
    RelativeHumidity,
    /// Volts (V).
    Volt,
    /// Amperes (A).
    Ampere,
    /// Lux (lx).
    Lux,
    /// Hectopascals (hPa).
    Hectopascal,
}

impl Unit {
    /// The symbol, for people: `"°C"`, `"%"`, `"V"`.
    pub const fn symbol(self) -> &'static str {
        match self {
            Unit::Celsius => "°C",
            Unit::Percent => "%",
            Unit::RelativeHumidity => "%RH",
            Unit::Volt => "V",
            Unit::Ampere => "A",
            Unit::Lux => "lx",
            Unit::Hectopascal => "hPa",
        }
    }

    /// The name, as a JSON key of a resource's contents (`{"celsius":21.5}`): lower case ASCII,
    /// no escaping needed.
    pub const fn key(self) -> &'static str {
        match self {
            Unit::Celsius => "celsius",
            Unit::Percent => "percent",
            Unit::RelativeHumidity => "relative_humidity",
            Unit::Volt => "volts",
            Unit::Ampere => "amperes",
            Unit::Lux => "lux",
            Unit::Hectopascal => "hectopascals",
        }
    }
}

device_trait! {
    /// A sensor: one quantity, read in thousandths of its [`Unit`].
    pub trait Sensor: ErrorType {
        /// The unit of [`read`](Self::read)'s values. A constant of the device: no I/O.
        fn unit(&self) -> Unit;
        /// Reads the quantity now, in thousandths of [`unit`](Self::unit) (21.5 °C is `21_500`).
        fn read(&mut self) -> Result<i32, Self::Error>;
    }
}

device_trait! {
    /// A push button (or any digital input whose presses are counted).
    pub trait Button: ErrorType {
        /// `true` while the button is held down, as sampled now: the raw level, bounces included
        /// (debounce with [`Debouncer`](crate::publish::Debouncer)).
        fn is_pressed(&mut self) -> Result<bool, Self::Error>;
    }
}

/// A [`Button`] on a GPIO input: pressed when the pin reads the `pressed` level (`false` for the
/// usual button to ground with a pull-up, "active low"). Implements the blocking trait and its
/// async twin, `asynch::sensor::Button` (a GPIO read is immediate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpioButton<P> {
    pin: P,
    pressed_high: bool,
}

impl<P> GpioButton<P> {
    /// A button to ground with a pull-up: pressed while the pin reads low.
    pub const fn active_low(pin: P) -> Self {
        GpioButton {
            pin,
            pressed_high: false,
        }
    }

    /// A button to the supply with a pull-down: pressed while the pin reads high.
    pub const fn active_high(pin: P) -> Self {
        GpioButton {
            pin,
            pressed_high: true,
        }
    }

    /// Gives the pin back.
    pub fn release(self) -> P {
        self.pin
    }
}

impl<P: embedded_hal::digital::ErrorType> ErrorType for GpioButton<P> {
    type Error = crate::ErrorKind;
}

impl<P: embedded_hal::digital::InputPin> Button for GpioButton<P> {
    fn is_pressed(&mut self) -> Result<bool, crate::ErrorKind> {
        use embedded_hal::digital::Error as _;
        let high = self
            .pin
            .is_high()
            .map_err(|e| crate::ErrorKind::from(e.kind()))?;
        Ok(high == self.pressed_high)
    }
}

/// A value in thousandths, printed as a decimal without floats: `Milli(21_500)` is `21.5`,
/// `Milli(-250)` is `-0.25`, `Milli(87_000)` is `87` (no trailing zeros, no exponent: a valid
/// JSON number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Milli(pub i32);

impl fmt::Display for Milli {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = i64::from(self.0);
        let (whole, mut frac) = (v.abs() / 1000, v.abs() % 1000);
        if v < 0 {
            f.write_str("-")?;
        }
        write!(f, "{whole}")?;
        if frac == 0 {
            return Ok(());
        }
        let mut digits = 3;
        while frac % 10 == 0 {
            frac /= 10;
            digits -= 1;
        }
        write!(f, ".{frac:0digits$}")
    }
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, reason = "a test")] // a test

    use super::*;
    use embedded_hal_mock::eh1::digital::{Mock, State, Transaction};

    #[test]
    fn milli_prints_a_json_decimal() {
        for (v, want) in [
            (21_500, "21.5"),
            (0, "0"),
            (87_000, "87"),
            (-250, "-0.25"),
            (-1, "-0.001"),
            (1_010, "1.01"),
            (100_001, "100.001"),
            (-40_000, "-40"),
            (i32::MAX, "2147483.647"),
            (i32::MIN, "-2147483.648"),
        ] {
            assert_eq!(Milli(v).to_string(), want, "{v}");
            // What it prints is a JSON number with that value.
            let parsed: f64 = serde_json::from_str(want).unwrap();
            assert!((parsed * 1000.0 - f64::from(v)).abs() < 0.5, "{want}");
        }
    }

    #[test]
    fn units_have_symbols_and_plain_keys() {
        for u in [
            Unit::Celsius,
            Unit::Percent,
            Unit::RelativeHumidity,
            Unit::Volt,
            Unit::Ampere,
            Unit::Lux,
            Unit::Hectopascal,
        ] {
            assert!(!u.symbol().is_empty());
            assert!(u.key().bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
        }
        assert_eq!(Unit::Celsius.key(), "celsius");
        assert_eq!(Unit::Percent.symbol(), "%");
    }

    #[test]
    fn a_gpio_button_honours_its_active_level() {
        let pin = Mock::new(&[Transaction::get(State::Low), Transaction::get(State::High)]);
        let mut b = GpioButton::active_low(pin);
        assert_eq!(b.is_pressed(), Ok(true));
        // Through the blanket `&mut T` impl.
        fn sample<B: Button>(mut button: B) -> Result<bool, B::Error> {
            button.is_pressed()
        }
        assert_eq!(sample(&mut b), Ok(false));
        b.release().done();
        let pin = Mock::new(&[Transaction::get(State::High)]);
        let mut b = GpioButton::active_high(pin);
        assert_eq!(b.is_pressed(), Ok(true));
        b.release().done();
    }
}
