//! The board both ESP32 firmwares drive (`examples/esp32-serial`, `examples/esp32-wifi`): its
//! wiring and its parts, in one place. Each firmware includes this file as its module `wiring`
//! (`#[path = "../../esp-shared/wiring.rs"]`) and re-exports it from its `config`, so
//! `config::board_pins!` and `config::CODEC_ADDRESS` work as before; what differs (the engine's
//! sizes, the link's limits) stays in each `config.rs`. The parts both drive the same way — the
//! relay, the backlight's PWM, the I2C bus settings — are made here ([`relay`], [`backlight`],
//! [`i2c_config`]), and both stop the same way ([`halt`], and a panic restarts the chip).
//!
//! | signal | ESP32-C3 | ESP32-C6 | ESP32-S3 | notes |
//! |---|---|---|---|---|
//! | ES8311 I2C SDA | GPIO4 | GPIO6 | GPIO1 | 4.7 kΩ pull-ups on the codec board |
//! | ES8311 I2C SCL | GPIO5 | GPIO7 | GPIO2 | |
//! | relay coil driver | GPIO6 | GPIO18 | GPIO10 | high = coil on (see `RELAY_ACTIVE_LOW`) |
//! | relay feedback contact | GPIO7 | GPIO19 | GPIO11 | pulled up; contact to GND reads low = closed |
//! | backlight PWM (LEDC) | GPIO10 | GPIO20 | GPIO42 | high = lit |
//!
//! Pins avoided: strapping pins (C3: 2, 8, 9; C6: 8, 9, 15; S3: 0, 3, 45, 46), the USB pins
//! (C3: 18, 19; C6: 12, 13; S3: 19, 20) and the SPI flash pins.

use esp_hal::gpio::{AnyPin, DriveMode, Input, InputConfig, Level, Output, OutputConfig, Pull};
use esp_hal::i2c::master::{BusTimeout, Config as I2cConfig};
use esp_hal::ledc::channel::{self, Channel, ChannelIFace};
use esp_hal::ledc::timer::{self, TimerIFace};
use esp_hal::ledc::{Ledc, LowSpeed};
use esp_hal::time::Rate;
use mcp_hal::drivers::GpioRelay;

/// The pins this firmware uses, type-erased so that the rest of the code is chip-independent.
pub struct Pins {
    /// I2C data line to the ES8311.
    pub i2c_sda: AnyPin<'static>,
    /// I2C clock line to the ES8311.
    pub i2c_scl: AnyPin<'static>,
    /// Relay coil driver (a transistor or a relay module input).
    pub relay_coil: AnyPin<'static>,
    /// The relay's auxiliary contact, read back after switching.
    pub relay_feedback: AnyPin<'static>,
    /// Backlight PWM output.
    pub backlight: AnyPin<'static>,
}

/// Takes the board's pins out of `esp_hal::init`'s peripherals.
#[cfg(feature = "esp32c3")]
macro_rules! board_pins {
    ($p:ident) => {
        $crate::config::Pins {
            i2c_sda: $p.GPIO4.into(),
            i2c_scl: $p.GPIO5.into(),
            relay_coil: $p.GPIO6.into(),
            relay_feedback: $p.GPIO7.into(),
            backlight: $p.GPIO10.into(),
        }
    };
}

/// Takes the board's pins out of `esp_hal::init`'s peripherals.
#[cfg(feature = "esp32c6")]
macro_rules! board_pins {
    ($p:ident) => {
        $crate::config::Pins {
            i2c_sda: $p.GPIO6.into(),
            i2c_scl: $p.GPIO7.into(),
            relay_coil: $p.GPIO18.into(),
            relay_feedback: $p.GPIO19.into(),
            backlight: $p.GPIO20.into(),
        }
    };
}

/// Takes the board's pins out of `esp_hal::init`'s peripherals.
#[cfg(feature = "esp32s3")]
macro_rules! board_pins {
    ($p:ident) => {
        $crate::config::Pins {
            i2c_sda: $p.GPIO1.into(),
            i2c_scl: $p.GPIO2.into(),
            relay_coil: $p.GPIO10.into(),
            relay_feedback: $p.GPIO11.into(),
            backlight: $p.GPIO42.into(),
        }
    };
}

#[cfg(not(any(feature = "esp32c3", feature = "esp32c6", feature = "esp32s3")))]
compile_error!("choose a chip: --features esp32c3, esp32c6 or esp32s3");

pub(crate) use board_pins;

/// ES8311 7-bit address: `0x18` with its CE pin low (most boards), `0x19` with CE high.
pub const CODEC_ADDRESS: u8 = 0x18;
/// I2C clock for the codec's control port.
pub const I2C_KHZ: u32 = 100;
/// The I2C bus timeout, in bus clock cycles: the controller gives up on a transfer whose SCL
/// line stays unchanged this long (a dead chip or a stuck bus). 1000 cycles are 10 ms at
/// 100 kHz (these chips round it up to a power of two of their clock: about 13 ms). esp-hal
/// leaves it off by default on the C3 and C6, and a transfer then waits forever.
pub const I2C_BUS_TIMEOUT_CYCLES: u32 = 1000;
/// The longest one I2C transfer may take, whatever the bus does: esp32-wifi's async ES8311
/// driver gives up after it on embassy-time; esp32-serial gives it to esp-hal as its software
/// timeout (a blocking driver cannot interrupt a blocking call: the bus must end it).
pub const I2C_TRANSFER_TIMEOUT_MS: u32 = 50;
/// `true` for relay modules whose input switches the coil on when driven *low*.
pub const RELAY_ACTIVE_LOW: bool = false;
/// How long the feedback contact may lag the coil (a mechanical relay needs 5 to 20 ms). The
/// relay kit waits it out inside the call (on embassy-time in esp32-wifi, where the executor and
/// Wi-Fi run meanwhile).
pub const RELAY_SETTLE_MS: u32 = 20;
/// `true` when the feedback input reads high while the load is on. With the input pulled up
/// and the contact switching it to GND, "on" reads low.
pub const RELAY_FEEDBACK_ACTIVE_HIGH: bool = false;
/// Backlight PWM frequency.
pub const BACKLIGHT_KHZ: u32 = 24;
/// Backlight brightness at power-up, in percent.
pub const BACKLIGHT_START_PERCENT: u8 = 80;

/// The I2C bus to the codec: [`I2C_KHZ`], and the bus timeout for a stuck SCL line (a dead chip
/// holding it), [`I2C_BUS_TIMEOUT_CYCLES`].
pub fn i2c_config() -> I2cConfig {
    I2cConfig::default()
        .with_frequency(Rate::from_khz(I2C_KHZ))
        .with_timeout(BusTimeout::BusCycles(I2C_BUS_TIMEOUT_CYCLES))
}

/// The relay on its coil and feedback contact, with the board's polarity and settle time.
pub fn relay(
    coil: AnyPin<'static>,
    feedback: AnyPin<'static>,
) -> GpioRelay<Output<'static>, Input<'static>> {
    let coil = Output::new(coil, Level::from(RELAY_ACTIVE_LOW), OutputConfig::default());
    let feedback = Input::new(feedback, InputConfig::default().with_pull(Pull::Up));
    let relay =
        GpioRelay::with_feedback(coil, feedback, RELAY_FEEDBACK_ACTIVE_HIGH, RELAY_SETTLE_MS);
    if RELAY_ACTIVE_LOW {
        relay.active_low()
    } else {
        relay
    }
}

/// The backlight's PWM channel on `pin`, lit at [`BACKLIGHT_START_PERCENT`]: `timer` (LEDC's
/// timer 0, which must outlive the channel that points at it) runs at [`BACKLIGHT_KHZ`] with a
/// 10-bit duty. `None` when LEDC refuses the timer's or the channel's settings.
pub fn backlight(
    ledc: &Ledc<'static>,
    timer: &'static mut timer::Timer<'static, LowSpeed>,
    pin: AnyPin<'static>,
) -> Option<Channel<'static, LowSpeed>> {
    timer
        .configure(timer::config::Config {
            duty: timer::config::Duty::Duty10Bit,
            clock_source: timer::LSClockSource::APBClk,
            frequency: Rate::from_khz(BACKLIGHT_KHZ),
        })
        .ok()?;
    let timer: &'static timer::Timer<'static, LowSpeed> = timer;
    let mut pwm = ledc.channel(channel::Number::Channel0, pin);
    pwm.configure(channel::config::Config {
        timer,
        duty_pct: BACKLIGHT_START_PERCENT,
        drive_mode: DriveMode::PushPull,
    })
    .ok()?;
    Some(pwm)
}

/// A start-up failure (a pin, clock or peripheral that cannot be set, the radio, the tool
/// table): nothing can work.
pub fn halt() -> ! {
    loop {
        core::hint::spin_loop();
    }
}

/// A panic restarts the chip. Nothing is printed: esp32-serial's port carries MCP only.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    esp_hal::system::software_reset()
}
